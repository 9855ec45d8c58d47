#include "ops/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include "gpu_tiles.h"  // shaders/: the tile shapes the GPU prefill kernels share with this file
#include "lantern/error.h"

namespace lantern::ops {

namespace {
struct Push {
    uint32_t K, N, T, x_stride, y_stride, y_offset, flags;
    float eps;
    uint32_t row_units, tile_rows;
    uint32_t n_head, n_kv, hd, n_rot, block;  // RoPE + KV-store epilogue only
};
constexpr uint32_t kTokensPerGroup = 8;  // MAX_T in matmul.comp
// The tiled GEMM (TILED in matmul.comp): its workgroup and the rows and tokens of its tile
// (shaders/gpu_tiles.h), and its shared memory: the tiles and the kernel's other shared arrays.
constexpr uint32_t kTiledLanes = LANTERN_TILED_LANES, kTiledRows = LANTERN_TILED_ROWS,
                   kTiledTokens = LANTERN_TILED_TOKENS;
constexpr uint32_t kTiledTileVec4s = LANTERN_TILED_GEMM_SHARED_BYTES / 16;
constexpr uint32_t kTiledSharedBytes = LANTERN_TILED_GEMM_SHARED_BYTES + 1024;

// Rows per decode lane for a matrix of `rows` rows. A workgroup (8 lanes) is the unit of work a
// CPU driver's thread takes, so a small matrix in big bands leaves threads idle (768 rows in bands
// of 256 are 3 bands for 2 threads: one thread idles half the time). Fewer rows per lane reuse
// each input fetch less (GEMV microbenchmark on lavapipe, tiles matching the bands: 16 rows ~10 %
// slower per weight than 32, 8 rows ~20 %). Picks the best product of the two; on this 2-core
// machine the 110M model's 768-row matrices get 16 rows (A/B within noise), on a 16-thread one 8.
uint32_t decode_rows_for(uint64_t rows, uint32_t threads) {
    uint32_t best = kCpuRows;
    double best_score = 0;
    for (auto [r, speed] :
         {std::pair{kCpuRows, 1.0}, std::pair{kCpuRows / 2, 0.9}, std::pair{kCpuRows / 4, 0.8}}) {
        const uint64_t band = uint64_t{kCpuLanes} * r;
        const uint64_t bands = (rows + band - 1) / band, rounds = (bands + threads - 1) / threads;
        const double score = speed * static_cast<double>(rows) / static_cast<double>(rounds * threads * band);
        if (score > best_score + 1e-9) {
            best = r;
            best_score = score;
        }
    }
    return best;
}
}  // namespace

// Split-K on GPUs: {workgroup size, rows per workgroup} for decode. 128 lanes and 4 rows unless
// LANTERN_SPLITK_DECODE="WG,ROWS" says otherwise — a knob for tuning sweeps on a new GPU
// (lantern-bench under several settings), not a user setting. Sweep on an H200 (decode tok/s,
// tinyllama Q8_0 / 7B Q8_0 / 110M Q8_0): 64,4: 553/187/1341; 32,4: 546/192/1346;
// 128,4: 612/205/1420; 256,4: 566/195/1303; 64,8: 505/194/1228; 128,8: 575/210/1260;
// 64,2: 540/144/1450. 128,4 is best or within 3 % of it on every shape.
std::pair<uint32_t, uint32_t> splitk_decode_shape() {
    static const std::pair<uint32_t, uint32_t> shape = [] {
        std::pair<uint32_t, uint32_t> s{128, 4};
        if (const char* env = std::getenv("LANTERN_SPLITK_DECODE")) {
            unsigned wg = 0, rows = 0;
            if (std::sscanf(env, "%u,%u", &wg, &rows) == 2 && wg >= 32 && wg <= 1024 && wg % 32 == 0 &&
                rows >= 1 && rows <= 16)
                s = {wg, rows};
            else
                throw Error(
                    ErrorCode::InvalidArgument,
                    std::string("LANTERN_SPLITK_DECODE must be \"WG,ROWS\" (WG a multiple of 32 up to 1024, "
                                "ROWS 1-16), not \"") +
                        env + "\"");
        }
        return s;
    }();
    return shape;
}

bool lanes_own_rows(const vk::Context& ctx, MatmulSplit split) {
    return split == MatmulSplit::ForDevice ? ctx.info().type == DeviceType::Cpu
                                           : split == MatmulSplit::LanesOwnRows;
}

uint32_t matmul_tile_rows(const vk::Context& ctx, uint64_t rows, MatmulSplit split) {
    // One decode workgroup's band, so that each workgroup streams through whole tiles (bands of half
    // a tile read 4 KiB pieces 8 KiB apart, which the prefetchers do not follow: 110M Q8_0 decode
    // ran at 36 instead of 56 tok/s). Prefill's bands of kCpuRows rows divide it.
    if (!lanes_own_rows(ctx, split)) return 1;
    return kCpuLanes * decode_rows_for(rows, vk::cpu_driver_threads());
}

MatmulOp::MatmulOp(vk::Context& ctx, const DeviceWeight& w, MatmulInput input, vk::BufferRange x,
                   vk::BufferRange y, vk::BufferRange norm_weight, vk::BufferRange rowmap,
                   const MatmulOptions& options)
    : ctx_(&ctx), w_(&w) {
    const MatmulSplit split = options.split;
    // The kernel's main loop takes whole groups of units (one scale fetch each, see GPS in
    // shaders/weights.glsl); quantized rows must therefore be whole blocks, as GGUF requires.
    if (w.format->block_elements > 1 && w.cols % w.format->block_elements != 0)
        throw Error(ErrorCode::InvalidModelFile, "a quantized weight row of " + std::to_string(w.cols) +
                                                     " elements is not a whole number of blocks");
    shaders::ShaderId id = input == MatmulInput::Norm   ? w.format->matmul_norm
                           : input == MatmulInput::Silu ? w.format->matmul_silu
                                                        : w.format->matmul;
    if (options.rope_kv) {
        rope_kv_ = *options.rope_kv;
        const auto& e = rope_kv_.shape;
        if (input != MatmulInput::Norm)
            throw Error(ErrorCode::Internal,
                        "the RoPE + KV-store epilogue comes with the RMSNorm input only");
        if (e.n_head == 0 || e.n_kv == 0 || e.head_dim % 2 != 0 || e.n_rot > e.head_dim || e.n_rot % 2 != 0 ||
            e.block == 0 || w.rows % 2 != 0 || w.rows > uint64_t{e.n_head + 2 * e.n_kv} * e.head_dim)
            throw Error(ErrorCode::Internal,
                        "RoPE + KV-store epilogue: the weight is not (part of) the Q/K/V heads");
        id = e.kv_f16 ? w.format->matmul_rope_kvf16 : w.format->matmul_rope_kvf32;
    }
    if (options.swiglu) {
        if (options.rope_kv || input != MatmulInput::Norm || w.rows % 2 != 0)
            throw Error(ErrorCode::Internal,
                        "the SwiGLU epilogue needs the RMSNorm input and gate/up row pairs");
        id = w.format->matmul_swiglu;
    }
    pairs_ = options.rope_kv || options.swiglu;
    gelu_ = options.gelu;
    for (const auto& part : w.parts)
        if (pairs_ && part.first_row % 2 != 0)
            throw Error(ErrorCode::Internal,
                        "a matmul epilogue over row pairs got a weight part at an odd row");
    // CPU drivers (lavapipe) run a workgroup's lanes as SIMD lanes of one thread: there each lane
    // owns whole rows (decode) or a token (prefill), so that one fetch of the input (decode) or of
    // a weight unit (prefill) serves many rows or tokens. GPUs want coalesced weight reads: lanes
    // split the row (split-K).
    lane_per_row_ = lanes_own_rows(ctx, split);
    // The tiled GEMM's tiles take 16 KiB of shared memory and the kernel's other arrays a little
    // more: past Vulkan's guaranteed 16 KiB, so a device must offer it (every desktop GPU has 32+).
    tiled_ = !lane_per_row_ && ctx.info().max_shared_memory >= kTiledSharedBytes;
    using vk::BindingKind;
    std::vector<BindingKind> kinds = {
        BindingKind::TexelUint4, BindingKind::TexelFloat, BindingKind::TexelFloat,  BindingKind::Storage,
        BindingKind::TexelFloat, BindingKind::Storage,    BindingKind::TexelFloat4, BindingKind::TexelFloat4};
    if (rope_kv_.shape.n_head)  // token info, RoPE table, K cache, V cache, Q/K/V biases
        kinds.insert(kinds.end(), {BindingKind::TexelUint4, BindingKind::TexelFloat, BindingKind::Storage,
                                   BindingKind::Storage, BindingKind::TexelFloat});
    // Spec constants: {workgroup size, ROWS, TOKENS, LANE_PER_ROW, LANE_PER_TOKEN, VEC4_INPUT,
    // TOKENS_PER_LANE[, TILED, TILE_VEC4]}.
    std::vector<uint32_t> decode_spec, prefill_spec;
    if (lane_per_row_) {
        // kCpuRows rows per lane (decode) or per workgroup (prefill): one input fetch serves that
        // many weight rows. Prefill lanes own 2 tokens each, so one weight unpack serves both:
        // +17-35 % over 1; long steps 4 (PrefillFourPerLane, see record).
        group_ = decode_group_ = kCpuLanes;
        prefill_rows_ = kCpuRows;
        // Each decode workgroup walks one weight tile (see matmul_tile_rows).
        decode_rows_ = w.tile_rows / group_;
        prefill_tokens_per_lane_ = 2;
        // A workgroup's band of rows must lie in one weight tile, and a decode lane's rows must
        // fill whole scale texels of its lane stream (4 rows each; dot_rows in
        // shaders/matmul_rows.glsl, weights.glsl).
        if (w.tile_rows == 1 || w.tile_rows % group_ != 0 || decode_rows_ > kCpuRows ||
            decode_rows_ % 4 != 0 || w.tile_rows % prefill_rows_ != 0)
            throw Error(ErrorCode::Internal, "weight tiles of " + std::to_string(w.tile_rows) +
                                                 " rows do not fit the matmul's row bands");
        decode_spec = {decode_group_, decode_rows_, 1, 1, 0, 0, 1};
        prefill_spec = {prefill_group_, prefill_rows_, 1, 0, 1, 0, prefill_tokens_per_lane_};
    } else {
        if (w.tile_rows != 1)
            throw Error(ErrorCode::Internal, "split-K matmuls read row-major weights (tiles of 1 row)");
        std::tie(decode_group_, decode_rows_) = splitk_decode_shape();
        if (pairs_) decode_rows_ += decode_rows_ % 2;  // the epilogue takes row pairs
        group_ = 64;
        prefill_rows_ = 4;
        decode_spec = {decode_group_, decode_rows_, 1, 0, 0, 0, 1};
        prefill_spec = {group_, prefill_rows_, kTokensPerGroup, 0, 0, 0, 1};
    }
    id_ = id;
    kinds_ = kinds;
    for (uint32_t vec4 = 0; vec4 < 2; ++vec4) {
        decode_spec[5] = prefill_spec[5] = vec4;
        specs_[vec4][Decode] = decode_spec;
        specs_[vec4][PrefillOnePerLane] = prefill_spec;
        specs_[vec4][PrefillOnePerLane][6] = 1;
        specs_[vec4][PrefillTwoPerLane] = prefill_spec;
        specs_[vec4][DecodeFew] = decode_spec;
        specs_[vec4][DecodeFew][6] = kRowLayoutTokensPerLane;  // CPU drivers only (see record)
        specs_[vec4][PrefillFourPerLane] = prefill_spec;
        specs_[vec4][PrefillFourPerLane][6] = 4;  // CPU drivers only (see record)
        // Split-K devices only (see record): 128 lanes, the weight and input tiles of 32 x 64 floats.
        specs_[vec4][PrefillTiled] = {kTiledLanes,    4, 1, 0, 0, vec4, 1, 1,
                                      kTiledTileVec4s};  // (ROWS 4: dot_rows' arrays)
    }
    const uint32_t vec4 = w.cols % 4 == 0 ? 1 : 0;
    std::vector<vk::KernelSpec> now;
    for (Variant v : {Decode, PrefillOnePerLane, PrefillTwoPerLane})
        now.push_back({id, kinds, sizeof(Push), specs_[vec4][v]});
    const auto made = ctx.kernels(now);
    for (size_t i = 0; i < made.size(); ++i) kernels_[vec4][i] = made[i];
    for (const auto& part : w.parts) {
        vk::BufferRange scales = part.scales.buffer ? part.scales : part.values;  // float types: unused
        std::vector<vk::BufferRange> ranges = {part.values, scales, x, y,
                                               norm_weight, rowmap, x, norm_weight};
        if (rope_kv_.shape.n_head)
            ranges.insert(ranges.end(), {rope_kv_.tok_info, rope_kv_.rope, rope_kv_.k_cache, rope_kv_.v_cache,
                                         rope_kv_.qkv_bias.buffer ? rope_kv_.qkv_bias : rope_kv_.rope});
        sets_.push_back(ctx.make_set(*kernels_[vec4][Decode], ranges));  // every variant has these bindings
    }
}

const vk::Kernel& MatmulOp::variant(uint32_t vec4, Variant v) const {
    // Made on first use: the variant K's alignment did not predict, and the few-tokens one (made
    // at load it added ~0.7 s to cold and warm starts alike on lavapipe, and a model that never
    // runs such a step skips it).
    if (!kernels_[vec4][v]) kernels_[vec4][v] = &ctx_->kernel(id_, kinds_, sizeof(Push), specs_[vec4][v]);
    return *kernels_[vec4][v];
}

void MatmulOp::record(VkCommandBuffer cmd, const MatmulShape& s) const {
    const uint32_t vec4 = (s.x_stride % 4 == 0 && w_->cols % 4 == 0) ? 1 : 0;
    for (size_t i = 0; i < sets_.size(); ++i) {
        const auto& part = w_->parts[i];
        Push p{static_cast<uint32_t>(w_->cols),
               static_cast<uint32_t>(part.rows),
               s.tokens,
               s.x_stride,
               s.y_stride,
               s.y_offset + static_cast<uint32_t>(part.first_row),
               (s.accumulate ? 1u : 0u) | (s.use_rowmap ? 2u : 0u) | (rope_kv_.qkv_bias.buffer ? 4u : 0u) |
                   (gelu_ ? 8u : 0u),
               s.eps,
               static_cast<uint32_t>(w_->row_units),
               w_->tile_rows,
               rope_kv_.shape.n_head,
               rope_kv_.shape.n_kv,
               rope_kv_.shape.head_dim,
               rope_kv_.shape.n_rot,
               rope_kv_.shape.block};
        // The decode layout: every one-token step, and on CPU drivers steps of up to
        // kRowLayoutMaxTokens (see there), kRowLayoutTokensPerLane tokens per workgroup row.
        const bool one = s.tokens == 1 || (lane_per_row_ && s.tokens <= kRowLayoutMaxTokens);
        const bool two = s.tokens > prefill_group_ && prefill_tokens_per_lane_ > 1;
        // Four tokens per lane unpack each weight once per four tokens: on lavapipe 1.26-1.48x the
        // prefill rate of two where the workgroups' 128 token slots fill (pp128-pp256, 110M Q8_0 /
        // Q6_K and TinyLlama Q8_0, interleaved A/B), but lanes past the last token compute copies:
        // at pp64 half the slots are empty (0.68x). So four when their slots, at 1.3x the speed,
        // cost less than two's.
        const auto slots = [&](uint32_t per_group) {
            return (s.tokens + per_group - 1) / per_group * per_group;
        };
        const bool four =
            lane_per_row_ && two && slots(prefill_group_ * 4) * 10 < slots(prefill_group_ * 2) * 13;
        uint32_t gx, gy;
        if (one) {
            uint64_t rows_per_group = decode_rows_ * (lane_per_row_ ? decode_group_ : 1);
            gx = static_cast<uint32_t>((part.rows + rows_per_group - 1) / rows_per_group);
            gy = s.tokens;
        } else {
            gx = static_cast<uint32_t>((part.rows + prefill_rows_ - 1) / prefill_rows_);
            // CPU layouts: a workgroup's 32 rows come from several lane streams of a tile
            // (matmul_rows in shaders/matmul_rows.glsl), so the grid covers whole tiles.
            if (lane_per_row_)
                gx = static_cast<uint32_t>((part.rows + w_->tile_rows - 1) / w_->tile_rows *
                                           (w_->tile_rows / prefill_rows_));
            uint32_t tokens_per_group = lane_per_row_ ? prefill_group_ * (four  ? 4
                                                                          : two ? prefill_tokens_per_lane_
                                                                                : 1)
                                                      : kTokensPerGroup;
            gy = (s.tokens + tokens_per_group - 1) / tokens_per_group;
        }
        Variant v = one ? Decode : four ? PrefillFourPerLane : two ? PrefillTwoPerLane : PrefillOnePerLane;
        if (tiled_ && s.tokens >= kTiledMinTokens) {
            v = PrefillTiled;
            gx = static_cast<uint32_t>((part.rows + kTiledRows - 1) / kTiledRows);
            gy = (s.tokens + kTiledTokens - 1) / kTiledTokens;
        }
        if (one &&
            s.tokens >= kRowLayoutTokensPerLane) {  // CPU drivers: the lanes' rows for several tokens each
            v = DecodeFew;
            gy = (s.tokens + kRowLayoutTokensPerLane - 1) / kRowLayoutTokensPerLane;
        }
        ctx_->dispatch(cmd, variant(vec4, v), sets_[i], &p, gx, gy);
    }
}

namespace {
// 1 / sqrt(mean(x^2) + eps).
double rms_scale(const float* x, uint32_t n, float eps) {
    double ss = 0;
    for (uint32_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    return 1.0 / std::sqrt(ss / n + eps);
}
}  // namespace

void reference_rms_norm(const float* x, const float* w, float* out, uint32_t n, float eps) {
    const double inv = rms_scale(x, n, eps);
    for (uint32_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] * inv * w[i]);
}

uint32_t fixed_point_input(bool lanes_own_rows, uint32_t ggml_type, uint32_t tokens) {
    const WeightFormat* f = find_weight_format(ggml_type);
    const bool fixed = lanes_own_rows && tokens <= kRowLayoutMaxTokens && f && f->scales_per_group > 0;
    return fixed ? f->unit_elements * f->group_units : 0;
}

uint32_t fixed_point_input(const vk::Context& ctx, MatmulSplit split, uint32_t ggml_type, uint32_t tokens) {
    return fixed_point_input(lanes_own_rows(ctx, split), ggml_type, tokens);
}

void to_fixed_point(std::span<float> v, uint32_t group) {
    for (size_t g0 = 0; g0 < v.size(); g0 += group) {
        const size_t end = std::min(v.size(), g0 + group);
        float amax = 0;
        for (size_t i = g0; i < end; ++i) amax = std::max(amax, std::fabs(v[i]));
        uint32_t bits;
        std::memcpy(&bits, &amax, sizeof bits);
        const int e = static_cast<int>(std::min(bits >> 23, 254u));  // biased exponent of amax
        for (size_t i = g0; i < end; ++i)
            v[i] = e < 16 ? 0.0f
                          : std::ldexp(std::clamp(std::nearbyint(v[i] * std::ldexp(1.0f, 141 - e)), -32767.0f,
                                                  32767.0f),
                                       e - 141);
    }
}

double reference_gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)));
}

void reference_matmul(std::span<const float> W, uint32_t rows, uint32_t cols, MatmulInput input,
                      std::span<const float> x, std::span<float> y, std::span<const float> norm_weight,
                      std::span<const uint32_t> rowmap, const MatmulShape& s, uint32_t fixed_point,
                      bool gelu) {
    std::vector<float> in(cols);
    for (uint32_t t = 0; t < s.tokens; ++t) {
        uint32_t xr = s.use_rowmap ? rowmap[t] : t;
        const float* xp = x.data() + static_cast<size_t>(xr) * s.x_stride;
        double scale = 1.0;  // the Norm input's RMS scale when it is applied after the products
        switch (input) {
            case MatmulInput::Plain:
                for (uint32_t k = 0; k < cols; ++k) in[k] = xp[k];
                break;
            case MatmulInput::Norm:
                if (!fixed_point) {
                    reference_rms_norm(xp, norm_weight.data(), in.data(), cols, s.eps);
                    break;
                }
                // As the device: x * weight rounded to fixed point, the RMS scale on the sums.
                for (uint32_t k = 0; k < cols; ++k) in[k] = xp[k] * norm_weight[k];
                scale = rms_scale(xp, cols, s.eps);
                break;
            case MatmulInput::Silu:
                for (uint32_t k = 0; k < cols; ++k) {
                    double g = xp[k];
                    in[k] = static_cast<float>((gelu ? reference_gelu_tanh(g) : g / (1.0 + std::exp(-g))) *
                                               xp[cols + k]);
                }
                break;
        }
        if (fixed_point) to_fixed_point(in, fixed_point);
        for (uint32_t n = 0; n < rows; ++n) {
            double acc = 0;
            const float* wr = W.data() + static_cast<size_t>(n) * cols;
            for (uint32_t k = 0; k < cols; ++k) acc += static_cast<double>(wr[k]) * in[k];
            acc *= scale;
            float& out = y[static_cast<size_t>(t) * s.y_stride + s.y_offset + n];
            out = s.accumulate ? out + static_cast<float>(acc) : static_cast<float>(acc);
        }
    }
}

}  // namespace lantern::ops
