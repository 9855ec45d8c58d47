#include "ops/attention.h"

#include <algorithm>
#include <cmath>

#include "gpu_tiles.h"  // shaders/: the tile shapes the GPU prefill kernels share with this file
#include "lantern/error.h"

namespace lantern::ops {

namespace {
struct AttnPush {
    uint32_t n_head, n_kv, hd, qkv_stride, out_stride, block;
    float scale;
    uint32_t flags, capture_token, capture_stride;
    float softcap;
    uint32_t window;
};
// attention_tiled.comp's: the same, then the step's token count.
struct TiledPush {
    AttnPush base;
    uint32_t tokens;
};
constexpr uint32_t kTiledQueries = LANTERN_TILED_QUERIES;  // tokens per workgroup of attention_tiled.comp
}  // namespace

std::vector<float> rope_table(uint32_t positions, uint32_t n_rot, double freq_base, const RopeScaling& s) {
    std::vector<float> t(static_cast<size_t>(positions) * n_rot);
    const uint32_t pairs = n_rot / 2;
    if (!s.frequency_factors.empty() && s.frequency_factors.size() != pairs)
        throw Error(ErrorCode::Internal,
                    "RoPE frequency factors: " + std::to_string(s.frequency_factors.size()) + " for " +
                        std::to_string(pairs) + " pairs");
    // Per pair: how much of the interpolated angle (p / factor) it takes, the rest being the
    // plain one. Linear: all of it. YaRN (as llama.cpp's rope_yarn): the pairs between the
    // correction dims `low` and `high` ramp from plain to interpolated; a pair's dim is where it
    // turns `beta` times over the original context.
    std::vector<double> interpolated(pairs, s.type == RopeScaling::Type::None ? 0.0 : 1.0);
    double magnitude = s.attn_factor;
    if (s.type == RopeScaling::Type::Yarn) {
        const auto corr_dim = [&](double beta) {
            return n_rot * std::log(s.original_context / (beta * 2 * 3.14159265358979323846)) /
                   (2 * std::log(freq_base));
        };
        const double low = std::max(0.0, std::floor(corr_dim(s.beta_fast)));
        const double high = std::min(double(n_rot - 1), std::ceil(corr_dim(s.beta_slow)));
        for (uint32_t i = 0; i < pairs; ++i)
            interpolated[i] = std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
        if (s.factor > 1.0f) magnitude *= 1.0 + 0.1 * std::log(double(s.factor));
    }
    // The pair's position multiplier: 1/factor (llama.cpp's freq_scale) where interpolated, 1
    // where plain, a blend between; exact at both ends, so with a linear factor of 2 or 4 position
    // 2p or 4p has exactly the angles of p, and no scaling gives exactly the unscaled table.
    const double position_scale = s.type == RopeScaling::Type::None ? 1.0 : 1.0 / s.factor;
    std::vector<double> multiplier(pairs);
    for (uint32_t i = 0; i < pairs; ++i)
        multiplier[i] = interpolated[i] * position_scale + (1.0 - interpolated[i]);
    for (uint32_t p = 0; p < positions; ++p)
        for (uint32_t i = 0; i < pairs; ++i) {
            const double factor = s.frequency_factors.empty() ? 1.0 : double(s.frequency_factors[i]);
            const double theta = p * multiplier[i] * std::pow(freq_base, -2.0 * i / n_rot) / factor;
            t[(static_cast<size_t>(p) * pairs + i) * 2] = static_cast<float>(magnitude * std::cos(theta));
            t[(static_cast<size_t>(p) * pairs + i) * 2 + 1] = static_cast<float>(magnitude * std::sin(theta));
        }
    return t;
}

AttentionOp::AttentionOp(vk::Context& ctx, const AttentionShape& shape, vk::BufferRange qkv,
                         vk::BufferRange k_cache, vk::BufferRange v_cache, vk::BufferRange tok_info,
                         vk::BufferRange tables, vk::BufferRange out, vk::BufferRange capture, uint32_t lanes,
                         AttentionSplit split, uint32_t heads_per_lane)
    : ctx_(&ctx), shape_(shape) {
    if (shape.head_dim > 256 || shape.head_dim % 2 != 0)
        throw Error(ErrorCode::UnsupportedArchitecture, "head dimension " + std::to_string(shape.head_dim) +
                                                            " is not supported (even, at most 256)");
    if (shape.n_kv == 0 || shape.n_head % shape.n_kv != 0)
        throw Error(ErrorCode::InvalidModelFile, "attention heads (" + std::to_string(shape.n_head) +
                                                     ") are not a multiple of KV heads (" +
                                                     std::to_string(shape.n_kv) + ")");
    // One subgroup per workgroup where possible (8 lanes on lavapipe, 32/64 on GPUs): split keys'
    // partial softmax results then merge with subgroup operations alone, and on a CPU driver a
    // subgroup is one thread's SIMD group.
    group_ = lanes ? lanes : std::clamp<uint32_t>(ctx.info().subgroup_size, 8, 64);
    // At most MAX_SUBGROUPS (8) subgroups in the shader, even if a driver runs 8-lane subgroups
    // narrower than the size it reports: at most 64 lanes.
    if (group_ > 64) throw Error(ErrorCode::Internal, "attention workgroups have at most 64 lanes");
    using vk::BindingKind;
    const std::vector<BindingKind> kinds = {
        BindingKind::TexelFloat, BindingKind::Storage,    BindingKind::Storage, BindingKind::TexelUint4,
        BindingKind::TexelUint,  BindingKind::Storage,    BindingKind::Storage, BindingKind::TexelUint4,
        BindingKind::TexelUint4, BindingKind::TexelFloat4};
    const vk::BufferRange r[] = {qkv, k_cache, v_cache, tok_info, tables,
                                 out, capture, k_cache, v_cache,  qkv};
    auto make = [&](bool own_heads, Layout& layout) {
        layout.kernel = &ctx.kernel(
            shape.kv_f16 ? shaders::ShaderId::attention_f16 : shaders::ShaderId::attention_f32, kinds,
            sizeof(AttnPush),
            {group_, shape.head_dim, shape.qkv_stride % 4 == 0 && shape.head_dim % 4 == 0 ? 1u : 0u,
             own_heads ? 1u : 0u, own_heads ? heads_per_lane_ : 1u});
        layout.set = ctx.make_set(*layout.kernel, r);
    };
    // ForDevice on a CPU driver: lanes own heads wherever a step has a workgroup for each of the
    // driver's threads; steps with fewer (one decode token of a model with few heads: 8 heads are
    // one workgroup) split keys instead, so that every thread works. Narrower workgroups would not
    // do it: each thread would still walk every key, its SIMD group merely emptier.
    const bool cpu = ctx.info().type == DeviceType::Cpu;
    threads_ = cpu ? vk::cpu_driver_threads() : 1;
    heads_per_lane_ = heads_per_lane ? heads_per_lane : heads_per_lane_for(shape, group_, threads_);
    if ((heads_per_lane_ != 1 && heads_per_lane_ != 2 && heads_per_lane_ != 4) ||
        (shape.n_head / shape.n_kv) % heads_per_lane_ != 0)
        throw Error(ErrorCode::Internal, std::to_string(heads_per_lane_) + " query heads per lane with " +
                                             std::to_string(shape.n_head / shape.n_kv) + " per KV head");
    if (split == AttentionSplit::ForDevice ? cpu : split == AttentionSplit::LanesOwnHeads)
        make(true, own_heads_);
    if (split == AttentionSplit::ForDevice || split == AttentionSplit::LanesSplitKeys) {
        make(false, split_keys_);
        // Prefill steps where lanes split keys: the tiled kernel (made on first use, see record),
        // whose K and V tiles take 16 KiB of shared memory (shaders/gpu_tiles.h) and its sequence
        // bounds a few bytes more: past Vulkan's guaranteed 16 KiB, so only where the device offers it.
        if (ctx.info().max_shared_memory >= LANTERN_TILED_ATTENTION_SHARED_BYTES + 64) {
            tiled_ranges_.assign(std::begin(r), std::end(r));
            tiled_kinds_ = kinds;
        }
    }
}

const AttentionOp::Layout& AttentionOp::tiled() const {
    if (!tiled_.kernel) {
        tiled_.kernel = &ctx_->kernel(
            shape_.kv_f16 ? shaders::ShaderId::attention_tiled_f16 : shaders::ShaderId::attention_tiled_f32,
            tiled_kinds_, sizeof(TiledPush), {LANTERN_TILED_LANES, shape_.head_dim});
        tiled_.set = ctx_->make_set(*tiled_.kernel, tiled_ranges_);
    }
    return tiled_;
}

bool AttentionOp::tiled_for(uint32_t tokens, int32_t capture_token, uint32_t sequences) const {
    return split_keys_.kernel && !tiled_ranges_.empty() && !lanes_own_heads(tokens) &&
           tokens >= kTiledAttentionMinTokens * std::max(sequences, 1u) && capture_token < 0;
}

uint32_t heads_per_lane_for(const AttentionShape& s, uint32_t lanes, uint32_t threads) {
    // Each K and V chunk a lane fetches then serves both heads: on lavapipe a texel fetch is a
    // call that gathers lane by lane, much of attention's time (measured in
    // docs/decisions/0016-attention-layouts-per-device.md). Four per lane were slower (their q and output
    // rows spill), and heads that leave part of a workgroup empty cost as much as full ones.
    const bool two =
        (s.n_head / s.n_kv) % 2 == 0 && s.n_head % (2 * lanes) == 0 && s.n_head / (2 * lanes) >= threads;
    return two ? 2 : 1;
}

bool AttentionOp::lanes_own_heads(uint32_t tokens) const {
    if (!own_heads_.kernel) return false;
    if (!split_keys_.kernel) return true;
    const uint32_t heads = group_ * heads_per_lane_;
    return uint64_t{(shape_.n_head + heads - 1) / heads} * tokens >= threads_;
}

void AttentionOp::record(VkCommandBuffer cmd, uint32_t tokens, int32_t capture_token, uint32_t capture_stride,
                         uint32_t sequences) const {
    const auto& s = shape_;
    AttnPush p{s.n_head,
               s.n_kv,
               s.head_dim,
               s.qkv_stride,
               s.out_stride,
               s.block,
               static_cast<float>(s.score_scale()),
               capture_token >= 0 ? 1u : 0u,
               capture_token >= 0 ? static_cast<uint32_t>(capture_token) : 0u,
               capture_stride,
               s.softcap,
               s.window};
    if (tiled_for(tokens, capture_token, sequences)) {
        const TiledPush tp{p, tokens};
        const Layout& t = tiled();
        ctx_->dispatch(cmd, *t.kernel, t.set, &tp, s.n_head, (tokens + kTiledQueries - 1) / kTiledQueries);
        return;
    }
    const bool own_heads = lanes_own_heads(tokens);
    const Layout& l = own_heads ? own_heads_ : split_keys_;
    const uint32_t heads_per_group = group_ * heads_per_lane_;
    ctx_->dispatch(cmd, *l.kernel, l.set, &p,
                   own_heads ? (s.n_head + heads_per_group - 1) / heads_per_group : s.n_head, tokens);
}

void reference_rope_store(const AttentionShape& s, std::span<float> qkv, std::span<const TokenInfo> tok,
                          std::span<const float> rope, ReferenceKv& kv, bool neox) {
    const uint32_t hd = s.head_dim;
    for (size_t t = 0; t < tok.size(); ++t) {
        float* row = qkv.data() + t * s.qkv_stride;
        for (uint32_t h = 0; h < s.n_head + s.n_kv; ++h)
            for (uint32_t i = 0; 2 * i < s.n_rot; ++i) {
                float c = rope[(static_cast<size_t>(tok[t].pos) * (s.n_rot / 2) + i) * 2];
                float sn = rope[(static_cast<size_t>(tok[t].pos) * (s.n_rot / 2) + i) * 2 + 1];
                float* v0 = row + h * hd + (neox ? i : 2 * i);
                float* v1 = neox ? v0 + s.n_rot / 2 : v0 + 1;
                float a = *v0, b = *v1;
                *v0 = a * c - b * sn;
                *v1 = a * sn + b * c;
            }
        for (uint32_t h = 0; h < s.n_kv; ++h)
            for (uint32_t d = 0; d < hd; ++d) {
                kv.k[kv.index(tok[t].slot, h, d)] = row[(s.n_head + h) * hd + d];
                kv.v[kv.index(tok[t].slot, h, d)] = row[(s.n_head + s.n_kv + h) * hd + d];
            }
    }
}

void reference_attention(const AttentionShape& s, std::span<const float> qkv, std::span<const TokenInfo> tok,
                         std::span<const uint32_t> tables, const ReferenceKv& kv, std::span<float> out) {
    const uint32_t hd = s.head_dim;
    const double scale = static_cast<float>(s.score_scale());  // the kernel's float scale
    std::vector<double> scores, acc(hd);
    for (size_t t = 0; t < tok.size(); ++t) {
        uint32_t n_ctx = tok[t].pos + 1;
        const uint32_t first = s.window > 0 && n_ctx > s.window ? n_ctx - s.window : 0;
        for (uint32_t h = 0; h < s.n_head; ++h) {
            scores.assign(n_ctx, -INFINITY);  // keys before a sliding window weigh 0
            uint32_t kvh = h / (s.n_head / s.n_kv);
            const float* q = qkv.data() + t * s.qkv_stride + h * hd;
            double mx = -INFINITY;
            for (uint32_t j = first; j < n_ctx; ++j) {
                uint32_t slot = tables[tok[t].table_offset + j / s.block] * s.block + j % s.block;
                double d = 0;
                for (uint32_t i = 0; i < hd; ++i)
                    d += static_cast<double>(q[i]) * kv.k[kv.index(slot, kvh, i)];
                scores[j] = d * scale;
                if (s.softcap > 0) scores[j] = s.softcap * std::tanh(scores[j] / s.softcap);
                mx = std::max(mx, scores[j]);
            }
            double sum = 0;
            for (auto& v : scores) sum += (v = std::exp(v - mx));
            std::fill(acc.begin(), acc.end(), 0.0);
            for (uint32_t j = first; j < n_ctx; ++j) {
                uint32_t slot = tables[tok[t].table_offset + j / s.block] * s.block + j % s.block;
                for (uint32_t i = 0; i < hd; ++i) acc[i] += scores[j] / sum * kv.v[kv.index(slot, kvh, i)];
            }
            for (uint32_t i = 0; i < hd; ++i) out[t * s.out_stride + h * hd + i] = static_cast<float>(acc[i]);
        }
    }
}

}  // namespace lantern::ops

namespace lantern {

const char* rope_scaling_name(RopeScaling::Type type) {
    switch (type) {
        case RopeScaling::Type::None:
            return "none";
        case RopeScaling::Type::Linear:
            return "linear";
        case RopeScaling::Type::Yarn:
            return "yarn";
    }
    return "?";
}

}  // namespace lantern
