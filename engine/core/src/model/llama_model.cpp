#include "model/llama_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <numeric>

#include "lantern/error.h"
#include "model/memory_plan.h"

namespace lantern::model {

std::vector<uint8_t> interleave_rope_rows(std::span<const uint8_t> data, uint64_t row_bytes, uint32_t heads,
                                          uint32_t head_dim, uint32_t n_rot) {
    std::vector<uint8_t> out(data.begin(), data.end());
    const uint32_t half = n_rot / 2;
    for (uint64_t h = 0; h < heads; ++h)
        for (uint32_t i = 0; i < half; ++i)
            for (uint32_t side = 0; side < 2; ++side) {
                const uint64_t from = h * head_dim + i + side * half, to = h * head_dim + 2 * i + side;
                std::memcpy(out.data() + to * row_bytes, data.data() + from * row_bytes, row_bytes);
            }
    return out;
}

namespace {
enum OpLabel : uint32_t {
    kEmbed,
    kQkv,
    kAttention,
    kAttnOut,
    kFfnGateUp,
    kFfnDown,
    kFusedLayer,
    kLmHead,
    kLabelCount
};
const char* kLabelNames[] = {"embed",       "qkv+rope+kv", "attention",   "attn_output",
                             "ffn_gate_up", "ffn_down",    "fused_layer", "lm_head"};
static_assert(kLabelCount <= LlamaModel::kProfileLabels);
}  // namespace

LlamaModel::LlamaModel(vk::Context& ctx, const GgufFile& gguf, const ModelInfo& m, const ModelLimits& limits)
    : ctx_(ctx), info_(m), limits_(limits) {
    // The destructor does not run for a constructor that throws (an unsupported tensor type halfway
    // through, device memory running out): release what was allocated so far on the way out.
    struct ReleaseOnThrow {
        LlamaModel* model;
        int pending = std::uncaught_exceptions();
        ~ReleaseOnThrow() {
            if (std::uncaught_exceptions() > pending) model->release();
        }
    } release_on_throw{this};
    const auto& lim = ctx.limits();
    const uint64_t kv_dim = static_cast<uint64_t>(m.n_kv_heads) * m.head_dim;
    qkv_width_ = static_cast<uint32_t>(m.q_dim() + 2 * kv_dim);
    const uint32_t T = limits.max_step_tokens, S = limits.max_logit_rows;

    // Fit check before any large allocation: a clear message beats a driver OOM halfway through.
    // The weights count as the slabs that will hold them, not as the file holds them (a Q4_K_M
    // model takes about a third more once repacked).
    ModelInfo planned = m;
    planned.weight_bytes = planned_weight_bytes_ = plan_weights(gguf, m);
    const MemoryPlan plan = plan_memory(planned, ctx.info(), limits);
    if (!plan.fits()) throw Error(ErrorCode::ModelTooLarge, plan.refusal);
    const uint64_t kv_layer_bytes = plan.kv_layer_bytes, kv_local_layer_bytes = plan.kv_local_layer_bytes;
    kv_bytes_ = plan.kv_bytes;
    const bool local_pool = limits.kv_blocks_local > 0;

    // Weights.
    embed_ = &upload(gguf, "token_embd.weight", m.vocab, m.dim);
    out_norm_ = &upload_norm(gguf, "output_norm.weight", m.dim);
    lm_head_ = m.tied_output ? embed_ : &upload(gguf, "output.weight", m.vocab, m.dim);

    using vk::MemoryUse;
    {
        // x | q/k/v | attention out | gate/up (or silu(gate) * up), each at an offset every binding
        // kind accepts (and a multiple of 16 bytes, so vec4 views line up).
        const uint64_t align =
            std::max<uint64_t>({lim.minStorageBufferOffsetAlignment, lim.minTexelBufferOffsetAlignment, 16});
        uint64_t used = 0;
        auto region = [&](uint64_t bytes) {
            const uint64_t off = used;
            used += (bytes + align - 1) / align * align;
            return std::pair{off, bytes};
        };
        const auto rx = region(4ull * T * m.dim), rq = region(4ull * T * qkv_width_),
                   ra = region(4ull * T * m.q_dim()), rf = region(8ull * T * m.ffn_dim),
                   rp = region(m.post_norms ? 4ull * T * m.dim : 0);
        act_ = ctx.create_buffer(used, MemoryUse::DeviceLocal);
        if (m.post_norms) post_ = {&act_, rp.first, rp.second};
        x_ = {&act_, rx.first, rx.second};
        qkv_ = {&act_, rq.first, rq.second};
        attn_ = {&act_, ra.first, ra.second};
        gate_up_ = {&act_, rf.first, rf.second};
    }
    // The fused layers' counters, then (devices with a shader clock) their clock events in profiled steps.
    fused_groups_ = ops::DecodeLayerOp::workgroups_for(ctx);
    const uint32_t counters = 1 + 10 * m.n_layers;
    const uint32_t clock_words =
        ctx.shader_device_clock() ? ops::DecodeLayerOp::clock_words(m.n_layers, fused_groups_) : 0;
    clock_base_ = clock_words ? counters : 0;
    sync_ = ctx.create_buffer(4ull * (counters + clock_words), MemoryUse::Upload);
    sync_counter_bytes_ = 4ull * counters;
    logits_ = ctx.create_buffer(4ull * S * m.vocab, MemoryUse::Readback);
    tokens_ = ctx.create_buffer(4ull * T, MemoryUse::Upload);
    tok_info_ = ctx.create_buffer(16ull * T, MemoryUse::Upload);
    uint32_t max_table = T * ((limits.context_length + limits.block_tokens - 1) / limits.block_tokens + 1);
    tables_ = ctx.create_buffer(4ull * std::min<uint64_t>(max_table, 1u << 20), MemoryUse::Upload);
    if (local_pool) {
        tok_info_local_ = ctx.create_buffer(16ull * T, MemoryUse::Upload);
        tables_local_ = ctx.create_buffer(4ull * std::min<uint64_t>(max_table, 1u << 20), MemoryUse::Upload);
    }
    rowmap_ = ctx.create_buffer(4ull * S, MemoryUse::Upload);
    capture_ = ctx.create_buffer(4ull * m.n_heads * (limits.context_length + 2), MemoryUse::Readback);
    dummy_ = ctx.create_buffer(16, MemoryUse::DeviceLocal);
    RopeScaling rope_scaling = m.rope_scaling;  // LongRoPE: the long factors for a long context
    rope_scaling.frequency_factors = m.rope_scaling.factors_for(limits.context_length);
    auto rope = ops::rope_table(limits.context_length, m.n_rot, m.rope_freq_base, rope_scaling);
    rope_ = ctx.create_buffer(rope.size() * 4, MemoryUse::DeviceLocal);
    ctx.upload(rope_, 0, rope.data(), rope.size() * 4);
    // Local layers with a RoPE of their own (Gemma 3: base 10000, unscaled; its global layers 1e6,
    // scaled where the file says).
    const bool local_rope =
        !m.local_layers.empty() && (m.rope_freq_base_local != m.rope_freq_base ||
                                    (!m.rope_local_scaled && m.rope_scaling.type != RopeScaling::Type::None));
    if (local_rope) {
        auto local = ops::rope_table(limits.context_length, m.n_rot, m.rope_freq_base_local,
                                     m.rope_local_scaled ? rope_scaling : RopeScaling{});
        rope_local_ = ctx.create_buffer(local.size() * 4, MemoryUse::DeviceLocal);
        ctx.upload(rope_local_, 0, local.data(), local.size() * 4);
    }

    embed_op_ = ops::EmbedOp(ctx, *embed_, {&tokens_}, x_, m.embed_scale > 0 ? m.embed_scale : 1.0f);
    dispatches_ = 1;

    ops::AttentionShape ashape;
    ashape.n_head = m.n_heads;
    ashape.n_kv = m.n_kv_heads;
    ashape.head_dim = m.head_dim;
    ashape.block = limits.block_tokens;
    ashape.n_rot = m.n_rot;
    ashape.qkv_stride = qkv_width_;
    ashape.out_stride = m.q_dim();
    ashape.kv_f16 = limits.kv_f16;
    ashape.scale = m.attn_scale;
    ashape.softcap = m.attn_softcap;

    layers_.resize(m.n_layers);
    // Layers per KV buffer: as many as one view reaches (a run of fused layers binds its caches as
    // one) and one allocation holds.
    uint64_t kv_buffer_max =
        std::min<uint64_t>(lim.maxStorageBufferRange, 16ull * lim.maxTexelBufferElements);
    if (ctx.info().max_allocation_bytes)
        kv_buffer_max = std::min<uint64_t>(kv_buffer_max, ctx.info().max_allocation_bytes);
    uint32_t kv_per_buffer = static_cast<uint32_t>(std::max<uint64_t>(1, kv_buffer_max / kv_layer_bytes));
    if (limits.kv_layers_per_buffer_for_test)
        kv_per_buffer = std::min(kv_per_buffer, limits.kv_layers_per_buffer_for_test);
    // With a local pool the sliding-window layers' caches are buffers of their own, as many such
    // layers per buffer as a view reaches; layer counters per kind place each layer in its kind's.
    const uint32_t n_local =
        local_pool ? static_cast<uint32_t>(std::count(m.local_layers.begin(), m.local_layers.end(), true))
                   : 0;
    const uint32_t n_main = m.n_layers - n_local;
    const uint32_t kv_local_per_buffer =
        local_pool ? static_cast<uint32_t>(std::max<uint64_t>(1, kv_buffer_max / kv_local_layer_bytes)) : 1;
    kv_buffers_.reserve(
        2 * ((n_main + kv_per_buffer - 1) / kv_per_buffer +
             (n_local + kv_local_per_buffer - 1) / kv_local_per_buffer));  // the layers point into it
    uint32_t main_index = 0, local_index = 0;  // this layer's place among its kind
    size_t main_pair = 0, local_pair = 0;      // its kind's current K buffer in kv_buffers_
    std::vector<ops::DecodeLayerInput> fused_inputs;
    ops::DecodeLayerShape fused_shape;
    for (uint32_t l = 0; l < m.n_layers; ++l) {
        auto& L = layers_[l];
        std::string p = "blk." + std::to_string(l) + ".";
        L.attn_norm = &upload_norm(gguf, p + "attn_norm.weight", m.dim);
        L.ffn_norm = &upload_norm(gguf, p + "ffn_norm.weight", m.dim);
        if (m.post_norms) {
            L.post_attn_norm = &upload_norm(gguf, p + "post_attention_norm.weight", m.dim);
            L.post_ffn_norm = &upload_norm(gguf, p + "post_ffw_norm.weight", m.dim);
        }
        if (m.qkv_bias) L.qkv_bias = &upload_vectors(gguf, p + "attn_qkv.bias", qkv_bias_pieces(p));
        if (m.qk_norm) L.qk_norm = &upload_vectors(gguf, p + "attn_qk_norm.weight", qk_norm_pieces(p));
        auto wqkv = upload_stacked(gguf, {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"},
                                   {m.q_dim(), kv_dim, kv_dim}, m.dim,
                                   {m.rope_neox ? m.n_heads : 0u, m.rope_neox ? m.n_kv_heads : 0u, 0u});
        const auto* wo = &upload(gguf, p + "attn_output.weight", m.dim, m.q_dim());
        // Gate and up rows interleaved, SwiGLU in the gate/up matmul's epilogue; when their types
        // differ, two matmuls and SwiGLU in the down matmul's prologue.
        const ops::DeviceWeight* wgu_pairs =
            upload_interleaved(gguf, p + "ffn_gate.weight", p + "ffn_up.weight", m.ffn_dim, m.dim);
        L.swiglu_fused = wgu_pairs != nullptr;
        auto wgu = L.swiglu_fused ? std::vector<const ops::DeviceWeight*>{wgu_pairs}
                                  : upload_stacked(gguf, {p + "ffn_gate.weight", p + "ffn_up.weight"},
                                                   {m.ffn_dim, m.ffn_dim}, m.dim);
        const auto* wd = &upload(gguf, p + "ffn_down.weight", m.dim, m.ffn_dim);
        vk::BufferRange attn_norm_w = L.attn_norm->parts[0].values, ffn_norm_w = L.ffn_norm->parts[0].values;
        // K and V caches: the next slice of this kind's buffers (a new pair every per-buffer layers).
        const bool windowed = local_pool && m.local_layer(l);
        uint32_t& index = windowed ? local_index : main_index;
        size_t& pair = windowed ? local_pair : main_pair;
        const uint32_t per_buffer = windowed ? kv_local_per_buffer : kv_per_buffer;
        const uint64_t cache_bytes = windowed ? kv_local_layer_bytes : kv_layer_bytes;
        if (index % per_buffer == 0) {
            const uint64_t n = std::min<uint64_t>(per_buffer, (windowed ? n_local : n_main) - index);
            pair = kv_buffers_.size();
            for (int kv = 0; kv < 2; ++kv)
                kv_buffers_.push_back(ctx.create_buffer(n * cache_bytes, MemoryUse::DeviceLocal));
        }
        const VkDeviceSize kv_at = (index % per_buffer) * cache_bytes;
        ++index;
        L.k_cache = {&kv_buffers_[pair], kv_at, cache_bytes};
        L.v_cache = {&kv_buffers_[pair + 1], kv_at, cache_bytes};
        // The step inputs its cache is addressed by: the local pool's for a windowed layer.
        vk::Buffer& layer_tok_info = windowed ? tok_info_local_ : tok_info_;
        vk::Buffer& layer_tables = windowed ? tables_local_ : tables_;
        // This layer's attention: a sliding window in a local layer, with its own RoPE where it has one.
        ops::AttentionShape layer_shape = ashape;
        if (m.local_layer(l)) layer_shape.window = m.sliding_window;
        vk::Buffer& layer_rope = m.local_layer(l) && local_rope ? rope_local_ : rope_;
        // Q/K/V with RoPE and the KV-cache store fused into the matmul's epilogue.
        ops::RopeKvEpilogue rope_kv;
        rope_kv.shape = layer_shape;
        rope_kv.tok_info = {&layer_tok_info};
        rope_kv.rope = {&layer_rope};
        rope_kv.k_cache = L.k_cache;
        rope_kv.v_cache = L.v_cache;
        if (L.qkv_bias) rope_kv.qkv_bias = L.qkv_bias->parts[0].values;
        // Each matmul's weight bytes go to its profile label (bytes read per step, for GB/s per op).
        std::array<uint64_t, kProfileLabels> layer_bytes{};
        auto counted = [&](uint32_t label, auto&& build) {
            const uint64_t before = matmul_bytes_;
            build();
            layer_bytes[label] += matmul_bytes_ - before;
        };
        std::vector<uint32_t> unused;
        // With per-head Q/K norms the matmul stores its rows plainly and the QkNormRopeOp normalises,
        // rotates and stores whole heads.
        counted(kQkv, [&] {
            build_linear(L.qkv, L.qkv_offsets, wqkv, ops::MatmulInput::Norm, x_, qkv_, attn_norm_w,
                         L.qk_norm ? nullptr : &rope_kv);
        });
        if (L.qk_norm)
            L.qk_norm_op = ops::QkNormRopeOp(ctx, layer_shape, m.rms_eps, qkv_, {&layer_tok_info},
                                             {&layer_rope}, L.qk_norm->parts[0].values, L.k_cache, L.v_cache);
        // With post-norms the O and down matmuls store into post_ and a NormAddOp adds it to x;
        // otherwise they add into x themselves.
        const vk::BufferRange sublayer_out = m.post_norms ? post_ : x_;
        counted(kAttnOut, [&] {
            build_linear(L.o, unused, {wo}, ops::MatmulInput::Plain, attn_, sublayer_out, {&dummy_});
        });
        counted(kFfnGateUp, [&] {
            build_linear(L.gate_up, L.gate_up_offsets, wgu, ops::MatmulInput::Norm, x_, gate_up_, ffn_norm_w,
                         nullptr, L.swiglu_fused, m.gelu);
        });
        counted(kFfnDown, [&] {
            build_linear(L.down, unused, {wd},
                         L.swiglu_fused ? ops::MatmulInput::Plain : ops::MatmulInput::Silu, gate_up_,
                         sublayer_out, {&dummy_}, nullptr, false, m.gelu);
        });
        if (m.post_norms) {
            L.post_attn = ops::NormAddOp(ctx, m.dim, m.rms_eps, x_, post_, L.post_attn_norm->parts[0].values);
            L.post_ffn = ops::NormAddOp(ctx, m.dim, m.rms_eps, x_, post_, L.post_ffn_norm->parts[0].values);
        }
        // The whole layer as one dispatch for steps of a few tokens, where the device and the weights allow.
        const ops::DecodeLayerWeights fw{wqkv.size() <= 2 ? wqkv[0] : nullptr,
                                         wqkv.size() == 2 ? wqkv[1] : nullptr,
                                         wo,
                                         L.swiglu_fused ? wgu[0] : nullptr,
                                         wd,
                                         L.attn_norm,
                                         L.ffn_norm,
                                         L.qkv_bias,
                                         L.qk_norm};
        ops::DecodeLayerShape fs;
        fs.attention = ashape;
        fs.dim = m.dim;
        fs.q_dim = m.q_dim();
        fs.ffn_dim = m.ffn_dim;
        fs.eps = m.rms_eps;
        const bool gemma_pieces = m.post_norms || m.gelu || layer_shape.softcap > 0 ||
                                  layer_shape.window > 0 || layer_shape.scale > 0 || m.embed_scale > 0 ||
                                  local_rope;
        const std::string why =
            !limits.fused_decode ? "turned off"
            : gemma_pieces ? "post-norms, GeGLU, soft-capped or windowed attention are not in the fused layer"
                           : ops::DecodeLayerOp::unsupported(ctx, fw, fs);
        if (!why.empty() && fused_why_.empty()) fused_why_ = "layer " + std::to_string(l) + ": " + why;
        L.has_fused = why.empty();
        L.attention = ops::AttentionOp(
            ctx, layer_shape, qkv_, L.k_cache, L.v_cache, {&layer_tok_info}, {&layer_tables}, attn_,
            {&capture_}, 0,
            limits.gpu_layouts ? ops::AttentionSplit::LanesSplitKeys : ops::AttentionSplit::ForDevice);
        // The fused layer's attention splits the work as the separate kernel does for one token
        // (forward() runs it only for steps where the separate kernel would do the same), so a step
        // on the separate kernels (an attention capture, a fallback) computes exactly what it does.
        fs.lanes_own_heads = L.attention.lanes_own_heads(1);
        fs.heads_per_lane = L.attention.heads_per_lane();
        // Profile bytes: a step on the separate kernels, and a fused step (where this layer's
        // matmuls are one "fused_layer" entry if it is fused).
        for (uint32_t label : {kQkv, kAttnOut, kFfnGateUp, kFfnDown}) {
            label_bytes_[label] += layer_bytes[label];
            (L.has_fused ? fused_label_bytes_[kFusedLayer] : fused_label_bytes_[label]) += layer_bytes[label];
            if (L.has_fused) inside_fused_bytes_[label] += layer_bytes[label];
        }
        if (L.has_fused) {
            fused_inputs.push_back({fw, L.k_cache, L.v_cache, l});
            fused_shape = fs;
        }
        uint32_t separate = (L.qk_norm ? 2 : 1) + (m.post_norms ? 2 : 0);  // attention (Q/K norm, post-norms)
        for (auto* v : {&L.qkv, &L.o, &L.gate_up, &L.down})
            for (auto& op : *v) separate += op.dispatches();
        dispatches_ += separate;
        fused_dispatches_ += L.has_fused ? 0 : separate;
    }
    // The fused layers as runs of consecutive layers, one dispatch each.
    if (!fused_inputs.empty()) {
        const ops::DecodeLayerActivations arena{{&act_},
                                                static_cast<uint32_t>(x_.offset / 4),
                                                static_cast<uint32_t>(qkv_.offset / 4),
                                                static_cast<uint32_t>(attn_.offset / 4),
                                                static_cast<uint32_t>(gate_up_.offset / 4)};
        const std::span<const ops::DecodeLayerInput> all(fused_inputs);
        for (size_t i = 0; i < all.size();) {
            size_t n = 1;
            while (i + n < all.size() && ops::DecodeLayerOp::joins(ctx, all.subspan(i, n), all[i + n])) ++n;
            for (size_t k = i; k < i + n; ++k)
                layers_[all[k].slot].fused_run = static_cast<int32_t>(fused_runs_.size());
            fused_runs_.emplace_back(ctx, all.subspan(i, n), fused_shape, arena, vk::BufferRange{&tok_info_},
                                     vk::BufferRange{&rope_}, vk::BufferRange{&tables_},
                                     vk::BufferRange{&sync_}, clock_base_);
            i += n;
        }
        fused_dispatches_ += static_cast<uint32_t>(fused_runs_.size());
    }
    std::vector<uint32_t> unused;
    const uint64_t before_lm_head = matmul_bytes_;
    build_linear(lm_head_op_, unused, {lm_head_}, ops::MatmulInput::Norm, x_, {&logits_},
                 out_norm_->parts[0].values);
    label_bytes_[kLmHead] = fused_label_bytes_[kLmHead] = matmul_bytes_ - before_lm_head;
    fused_ok_ = std::any_of(layers_.begin(), layers_.end(), [](const Layer& L) { return L.has_fused; });
    fused_dispatches_ += 1 + static_cast<uint32_t>(lm_head_op_.size());  // embedding, LM head
    for (auto& op : lm_head_op_) dispatches_ += op.dispatches();
    scratch_ = {};  // every weight is on the device now
    formats_.clear();
    if (next_piece_ != placement_.pieces())
        throw Error(ErrorCode::Internal, "the weights' upload placed " + std::to_string(next_piece_) +
                                             " of the " + std::to_string(placement_.pieces()) +
                                             " pieces it planned");
}

LlamaModel::~LlamaModel() {
    release();
}

void LlamaModel::release() {
    for (auto* b : {&act_, &logits_, &tokens_, &tok_info_, &tables_, &rowmap_, &capture_, &rope_,
                    &rope_local_, &dummy_, &sync_, &tok_info_local_, &tables_local_})
        ctx_.destroy(*b);
    for (auto& b : kv_buffers_) ctx_.destroy(b);
    for (auto& s : slabs_) ctx_.destroy(s);
}

ops::Repacked& LlamaModel::scratch(const ops::WeightFormat& fmt, uint64_t rows, uint64_t cols) {
    // One buffer for every matrix of the load, grown to the largest: fresh memory per matrix cost
    // a page fault per 4 KiB on first touch (most of a lavapipe load's time in this VM), and
    // repack_rows writes every word, so nothing needs clearing.
    scratch_.row_units = ops::repacked_row_units(fmt, cols);
    scratch_.scales_per_group = fmt.scales_per_group;
    scratch_.values.resize(rows * scratch_.row_units * 4);
    scratch_.scales.resize(rows * ops::repacked_row_scales(fmt, cols));
    return scratch_;
}

std::pair<vk::BufferRange, uint8_t*> LlamaModel::reserve(uint64_t bytes) {
    // Where the plan put this piece (model/weight_placement.h); an upload that asks for other
    // pieces than the plan counted is a bug, caught here rather than as memory the plan missed.
    if (next_piece_ >= placement_.pieces() || placement_.piece(next_piece_).bytes != bytes)
        throw Error(
            ErrorCode::Internal,
            "the weights' upload left its plan at piece " + std::to_string(next_piece_) + " (" +
                std::to_string(bytes) + " bytes, planned " +
                (next_piece_ < placement_.pieces() ? std::to_string(placement_.piece(next_piece_).bytes)
                                                   : "none") +
                ")");
    const WeightPlacement::Spot spot = placement_.spot(next_piece_++);
    if (spot.slab == slabs_.size()) {
        slabs_.push_back(ctx_.create_buffer(placement_.slab_sizes()[spot.slab], vk::MemoryUse::DeviceLocal));
        weight_bytes_ += slabs_.back().size;
    }
    const vk::Buffer& slab = slabs_[spot.slab];
    uint8_t* at = slab.mapped && slab.coherent ? static_cast<uint8_t*>(slab.mapped) + spot.offset : nullptr;
    return {{&slab, spot.offset, bytes}, at};
}

vk::BufferRange LlamaModel::place(const void* data, uint64_t bytes) {
    auto [range, at] = reserve(bytes);
    ctx_.upload(*range.buffer, range.offset, data, bytes);
    return range;
}

const GgufTensorInfo& LlamaModel::checked_tensor(const GgufFile& gguf, const std::string& name, uint64_t rows,
                                                 uint64_t cols) {
    const auto* t = gguf.find_tensor(name);
    if (!t) throw Error(ErrorCode::InvalidModelFile, gguf.path() + ": tensor " + name + " is missing");
    uint64_t t_cols = t->shape[0], t_rows = t->elements() / t->shape[0];
    if (t_cols != cols || t_rows != rows)
        throw Error(ErrorCode::InvalidModelFile, gguf.path() + ": tensor " + name + " has shape " +
                                                     std::to_string(t_cols) + " x " + std::to_string(t_rows) +
                                                     ", expected " + std::to_string(cols) + " x " +
                                                     std::to_string(rows));
    return *t;
}

const ops::DeviceWeight& LlamaModel::upload(const GgufFile& gguf, const std::string& name, uint64_t rows,
                                            uint64_t cols) {
    const auto& t = checked_tensor(gguf, name, rows, cols);
    const auto& fmt = format_of(gguf, t, name);
    ops::Repacked& r = scratch(fmt, rows, cols);
    ops::repack_rows(fmt, gguf.tensor_data(t), rows, cols, r.values.data(), r.row_units * 4, r.scales.data(),
                     ops::repacked_row_scales(fmt, cols));
    return upload_repacked(name, fmt, r, rows, cols);
}

const ops::DeviceWeight& LlamaModel::upload_norm(const GgufFile& gguf, const std::string& name, uint64_t n) {
    const auto& t = checked_tensor(gguf, name, 1, n);
    const auto& fmt = ops::weight_format_for(t.type, name);
    const auto& f32 = *ops::find_weight_format(static_cast<uint32_t>(GgmlType::F32));
    if (&fmt == &f32) return upload(gguf, name, 1, n);
    // Converted files keep 1-D tensors in F32, but nothing in GGUF says they must: an F16 or BF16
    // norm would otherwise be read as the floats it is not.
    std::vector<float> v(n);
    fmt.dequantize_row(gguf.tensor_data(t).data(), v.data(), n);
    ops::Repacked& r = scratch(f32, 1, n);
    f32.repack_row(reinterpret_cast<const uint8_t*>(v.data()), n, r.values.data(), nullptr);
    return upload_repacked(name, f32, r, 1, n);
}

std::vector<LlamaModel::VectorPiece> LlamaModel::qkv_bias_pieces(const std::string& prefix) const {
    const auto& m = info_;
    const uint64_t kv_dim = static_cast<uint64_t>(m.n_kv_heads) * m.head_dim;
    return {{prefix + "attn_q.bias", m.q_dim(), m.rope_neox ? m.n_heads : 0u},
            {prefix + "attn_k.bias", kv_dim, m.rope_neox ? m.n_kv_heads : 0u},
            {prefix + "attn_v.bias", kv_dim, 0u}};
}

std::vector<LlamaModel::VectorPiece> LlamaModel::qk_norm_pieces(const std::string& prefix) const {
    const auto& m = info_;
    return {{prefix + "attn_q_norm.weight", m.head_dim, m.rope_neox ? 1u : 0u},
            {prefix + "attn_k_norm.weight", m.head_dim, m.rope_neox ? 1u : 0u}};
}

const ops::DeviceWeight& LlamaModel::upload_vectors(const GgufFile& gguf, const std::string& label,
                                                    const std::vector<VectorPiece>& pieces) {
    const auto& f32 = *ops::find_weight_format(static_cast<uint32_t>(GgmlType::F32));
    uint64_t total = 0;
    for (const auto& p : pieces) total += p.n;
    std::vector<float> v(total);
    uint64_t at = 0;
    for (const auto& p : pieces) {
        const auto& t = checked_tensor(gguf, p.name, 1, p.n);
        ops::weight_format_for(t.type, p.name).dequantize_row(gguf.tensor_data(t).data(), v.data() + at, p.n);
        if (p.rope_heads) {  // the same order as the Q and K rows
            const auto bytes = std::span(reinterpret_cast<const uint8_t*>(v.data() + at), 4 * p.n);
            const auto moved = interleave_rope_rows(bytes, 4, p.rope_heads, info_.head_dim, info_.n_rot);
            std::memcpy(v.data() + at, moved.data(), moved.size());
        }
        at += p.n;
    }
    ops::Repacked& r = scratch(f32, 1, total);
    f32.repack_row(reinterpret_cast<const uint8_t*>(v.data()), total, r.values.data(), nullptr);
    return upload_repacked(label, f32, r, 1, total);
}

std::vector<const ops::DeviceWeight*> LlamaModel::upload_stacked(const GgufFile& gguf,
                                                                 const std::vector<std::string>& names,
                                                                 const std::vector<uint64_t>& rows,
                                                                 uint64_t cols,
                                                                 const std::vector<uint32_t>& rope_heads) {
    std::vector<const GgufTensorInfo*> ts;
    std::vector<const ops::WeightFormat*> fmts;
    for (size_t i = 0; i < names.size(); ++i) {
        ts.push_back(&checked_tensor(gguf, names[i], rows[i], cols));
        fmts.push_back(&format_of(gguf, *ts[i], names[i]));
    }
    // Each run of neighbours of one format is one stack: a Q4_K_M layer's Q and K (Q4_K) stack,
    // its V (Q6_K) stands alone, and the fused decode layer runs the two as one op.
    std::vector<const ops::DeviceWeight*> out;
    for (size_t begin = 0, end; begin < ts.size(); begin = end) {
        for (end = begin + 1; end < ts.size() && fmts[end] == fmts[begin];) ++end;
        const auto& fmt = *fmts[begin];
        const uint64_t total_rows = std::accumulate(rows.begin() + begin, rows.begin() + end, uint64_t{0});
        ops::Repacked& all = scratch(fmt, total_rows, cols);
        const uint64_t words = all.row_units * 4, groups = ops::repacked_row_scales(fmt, cols);
        uint64_t first = 0;  // each matrix's rows go straight to their place in the stack
        for (size_t i = begin; i < end; ++i) {
            std::span<const uint8_t> data = gguf.tensor_data(*ts[i]);
            std::vector<uint8_t> reordered;
            if (i < rope_heads.size() && rope_heads[i]) {
                reordered = interleave_rope_rows(data, data.size() / rows[i], rope_heads[i], info_.head_dim,
                                                 info_.n_rot);
                data = reordered;
            }
            ops::repack_rows(fmt, data, rows[i], cols, all.values.data() + first * words, words,
                             all.scales.data() + first * groups, groups);
            first += rows[i];
        }
        std::string label = names[begin];
        for (size_t i = begin + 1; i < end; ++i) label += "+" + names[i];
        out.push_back(&upload_repacked(label, fmt, all, total_rows, cols));
    }
    return out;
}

const ops::DeviceWeight* LlamaModel::upload_interleaved(const GgufFile& gguf, const std::string& first,
                                                        const std::string& second, uint64_t rows,
                                                        uint64_t cols) {
    const auto& ta = checked_tensor(gguf, first, rows, cols);
    const auto& tb = checked_tensor(gguf, second, rows, cols);
    const auto& fmt = format_of(gguf, ta, first);
    if (&format_of(gguf, tb, second) != &fmt) return nullptr;
    ops::Repacked& both = scratch(fmt, 2 * rows, cols);
    const uint64_t words = both.row_units * 4, groups = ops::repacked_row_scales(fmt, cols);
    // a's rows to the even rows, b's to the odd ones, each written in place.
    ops::repack_rows(fmt, gguf.tensor_data(ta), rows, cols, both.values.data(), 2 * words, both.scales.data(),
                     2 * groups);
    ops::repack_rows(fmt, gguf.tensor_data(tb), rows, cols, both.values.data() + words, 2 * words,
                     both.scales.data() + groups, 2 * groups);
    return &upload_repacked(first + "|" + second, fmt, both, 2 * rows, cols);
}

const ops::DeviceWeight& LlamaModel::upload_repacked(const std::string& name, const ops::WeightFormat& fmt,
                                                     const ops::Repacked& r, uint64_t rows, uint64_t cols) {
    ops::DeviceWeight w;
    w.format = &fmt;
    w.rows = rows;
    w.cols = cols;
    w.row_units = r.row_units;
    const Layout layout = layout_for(name, fmt, rows, cols);
    w.tile_rows = layout.tile_rows;
    const uint64_t rows_per_part = layout.rows_per_part;
    const uint64_t scales_per_row = r.row_units / fmt.group_units * fmt.scales_per_group;
    const uint64_t slack = w.tile_rows > 1 ? ops::kTiledSlackWords * 4 : 0;
    for (uint64_t r0 = 0; r0 < rows; r0 += rows_per_part) {
        uint64_t n = std::min(rows_per_part, rows - r0);
        ops::DeviceWeight::Part part;
        part.first_row = r0;
        part.rows = n;
        if (w.tile_rows == 1) {
            // Row-major: the part is a slice of r, uploaded from where it is.
            part.values = place(r.values.data() + r0 * r.row_units * 4, n * r.row_units * 16);
            if (!r.scales.empty())
                part.scales = place(r.scales.data() + r0 * scales_per_row, n * scales_per_row * 4);
        } else {
            // Tiled straight into the slab where it is mapped (CPU devices, unified memory):
            // building the tiles in a vector first and copying them cost a 1.1 GB model's load
            // ~2.5 s on lavapipe, mostly page faults of the vector's fresh memory.
            const uint64_t words =
                ops::tiled_words(r.row_units, r.scales_per_group, n, w.tile_rows, fmt.group_units);
            auto [range, at] = reserve(words * 4);
            if (at) {
                ops::tile_rows_into(r, r0, n, w.tile_rows, fmt.group_units, reinterpret_cast<uint32_t*>(at));
            } else {
                const ops::Repacked tiled = ops::tile_rows_of(r, r0, n, w.tile_rows, fmt.group_units);
                ctx_.upload(*range.buffer, range.offset, tiled.values.data(), words * 4);
            }
            part.values = range;
            part.slack_bytes = slack;
        }
        w.parts.push_back(part);
    }
    weights_.push_back(std::move(w));
    return weights_.back();
}

const ops::WeightFormat& LlamaModel::format_of(const GgufFile& gguf, const GgufTensorInfo& t,
                                               const std::string& name) {
    // Decided once per tensor: for BF16 the decision reads every value (are they in F16's range?),
    // and plan_weights and the upload both ask.
    if (auto it = formats_.find(name); it != formats_.end()) return *it->second;
    const auto& f = ops::weight_format_for_data(t.type, gguf.tensor_data(t), name);
    formats_.emplace(name, &f);
    return f;
}

LlamaModel::Layout LlamaModel::layout_for(const std::string& name, const ops::WeightFormat& fmt,
                                          uint64_t rows, uint64_t cols) const {
    Layout layout;
    layout.tile_rows = ops::matmul_tile_rows(ctx_, rows, matmul_split());
    // Split by rows so that no texel view exceeds maxTexelBufferElements (16-byte value texels,
    // 4-byte scale texels; weights are read only through texel views, see shaders/weights.glsl);
    // each part is laid out as a matrix of its own.
    const uint64_t row_units = ops::repacked_row_units(fmt, cols);
    const uint64_t scales_per_row = ops::repacked_row_scales(fmt, cols);
    const bool scaled = fmt.scales_per_group > 0, tiled = layout.tile_rows > 1;
    // (Tiled parts end with a few zero texels, see ops::kTiledSlackWords.)
    const uint64_t slack = tiled ? ops::kTiledSlackWords * 4 : 0;
    const uint64_t texels = ctx_.limits().maxTexelBufferElements - slack / 16;
    uint64_t rows_per_part = std::min(texels / std::max<uint64_t>(row_units, 1), rows);
    if (scaled && !tiled)  // scales in their own array
        rows_per_part = std::min(rows_per_part, texels / std::max<uint64_t>(scales_per_row, 1));
    if (scaled && tiled)  // scales inline, read through a float view of the values
        rows_per_part = std::min(rows_per_part, texels / 4 / (row_units + scales_per_row));
    // Parts start at even rows: the RoPE and SwiGLU epilogues finish rows in pairs (2i, 2i + 1).
    // Tiled parts also keep room for the zero rows that pad a short last tile's lane streams.
    if (rows_per_part < rows) {
        if (tiled && rows_per_part > 16) rows_per_part -= 8;
        rows_per_part -= rows_per_part % 2;
    }
    if (rows_per_part == 0)
        throw Error(ErrorCode::ModelTooLarge,
                    "tensor " + name + " cannot be split for the device's binding range");
    layout.rows_per_part = rows_per_part;
    return layout;
}

void LlamaModel::add_pieces(const std::string& name, const ops::WeightFormat& fmt, uint64_t rows,
                            uint64_t cols, int32_t layer, std::vector<WeightPiece>& out) const {
    // upload_repacked's reserve() calls, in its order: per part, the tiles (with their scales
    // inline), or a row-major part's values and then, for scaled formats, its scales.
    const Layout layout = layout_for(name, fmt, rows, cols);
    const uint64_t row_units = ops::repacked_row_units(fmt, cols),
                   scales_per_row = ops::repacked_row_scales(fmt, cols);
    for (uint64_t r0 = 0; r0 < rows; r0 += layout.rows_per_part) {
        const uint64_t n = std::min(layout.rows_per_part, rows - r0);
        if (layout.tile_rows > 1) {
            out.push_back(
                {4 * ops::tiled_words(row_units, fmt.scales_per_group, n, layout.tile_rows, fmt.group_units),
                 layer});
            continue;
        }
        out.push_back({n * row_units * 16, layer});
        if (scales_per_row) out.push_back({n * scales_per_row * 4, layer});
    }
}

uint64_t LlamaModel::plan_weights(const GgufFile& gguf, const ModelInfo& m) {
    const auto& f32 = *ops::find_weight_format(static_cast<uint32_t>(GgmlType::F32));
    const uint64_t kv_dim = static_cast<uint64_t>(m.n_kv_heads) * m.head_dim;
    std::vector<WeightPiece> pieces;
    int32_t layer = -1;
    auto checked_format = [&](const std::string& name, uint64_t rows,
                              uint64_t cols) -> const ops::WeightFormat& {
        return format_of(gguf, checked_tensor(gguf, name, rows, cols), name);
    };
    auto matrix = [&](const std::string& name, uint64_t rows, uint64_t cols) {
        add_pieces(name, checked_format(name, rows, cols), rows, cols, layer, pieces);
    };
    auto norm = [&](const std::string& name, uint64_t n) {
        checked_tensor(gguf, name, 1, n);
        add_pieces(name, f32, 1, n, layer, pieces);  // upload_norm converts any type to F32
    };
    // upload_stacked (and upload_interleaved, the same rows when the types agree): each run of
    // neighbours of one format is one matrix.
    auto stacked = [&](const std::vector<std::string>& names, const std::vector<uint64_t>& rows,
                       uint64_t cols) {
        std::vector<const ops::WeightFormat*> fmts;
        for (size_t i = 0; i < names.size(); ++i) fmts.push_back(&checked_format(names[i], rows[i], cols));
        for (size_t begin = 0, end; begin < names.size(); begin = end) {
            uint64_t run_rows = rows[begin];
            for (end = begin + 1; end < names.size() && fmts[end] == fmts[begin]; ++end)
                run_rows += rows[end];
            add_pieces(names[begin], *fmts[begin], run_rows, cols, layer, pieces);
        }
    };
    // In the constructor's order of uploads.
    matrix("token_embd.weight", m.vocab, m.dim);
    norm("output_norm.weight", m.dim);
    if (!m.tied_output) matrix("output.weight", m.vocab, m.dim);
    for (uint32_t l = 0; l < m.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        layer = static_cast<int32_t>(l);
        norm(p + "attn_norm.weight", m.dim);
        norm(p + "ffn_norm.weight", m.dim);
        if (m.post_norms) {
            norm(p + "post_attention_norm.weight", m.dim);
            norm(p + "post_ffw_norm.weight", m.dim);
        }
        // upload_vectors: each list as one F32 vector
        for (const auto& [on, list] :
             {std::pair{m.qkv_bias, qkv_bias_pieces(p)}, std::pair{m.qk_norm, qk_norm_pieces(p)}}) {
            if (!on) continue;
            uint64_t total = 0;
            for (const auto& piece : list) {
                checked_tensor(gguf, piece.name, 1, piece.n);
                total += piece.n;
            }
            add_pieces(list[0].name, f32, 1, total, layer, pieces);
        }
        stacked({p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}, {m.q_dim(), kv_dim, kv_dim},
                m.dim);
        matrix(p + "attn_output.weight", m.dim, m.q_dim());
        stacked({p + "ffn_gate.weight", p + "ffn_up.weight"}, {m.ffn_dim, m.ffn_dim}, m.dim);
        matrix(p + "ffn_down.weight", m.dim, m.ffn_dim);
    }
    const auto& lim = ctx_.limits();
    const uint64_t align =
        std::max<uint64_t>({lim.minStorageBufferOffsetAlignment, lim.minTexelBufferOffsetAlignment, 16});
    // For the fused decode layer, which reads a layer's weights through one view, each layer in
    // one slab; only where fused layers run.
    const bool keep_layers = limits_.fused_decode && ops::DecodeLayerOp::device_supported(ctx_);
    placement_ = WeightPlacement(std::move(pieces), limits_.weight_slab_bytes,
                                 ctx_.info().max_allocation_bytes, align, keep_layers);
    next_piece_ = 0;
    return placement_.slab_bytes();
}

void LlamaModel::build_linear(std::vector<ops::MatmulOp>& out, std::vector<uint32_t>& offsets,
                              const std::vector<const ops::DeviceWeight*>& weights, ops::MatmulInput input,
                              vk::BufferRange x, vk::BufferRange y, vk::BufferRange norm,
                              const ops::RopeKvEpilogue* rope_kv, bool swiglu, bool gelu) {
    uint32_t off = 0;
    for (const auto* w : weights) {
        for (const auto& part : w->parts) {
            const uint64_t bytes =
                part.values.size - part.slack_bytes + (part.scales.buffer ? part.scales.size : 0);
            matmul_bytes_ += bytes;
            matmul_bytes_by_layout_[w->format->device_type] += bytes;
        }
        ops::MatmulOptions options;
        options.split = matmul_split();
        options.rope_kv = rope_kv;
        options.swiglu = swiglu;
        options.gelu = gelu;
        out.emplace_back(ctx_, *w, input, x, y, norm, vk::BufferRange{&rowmap_}, options);
        offsets.push_back(off);
        off += static_cast<uint32_t>(w->rows);
    }
}

void LlamaModel::record_lm_head(VkCommandBuffer cmd, uint32_t S) {
    for (const auto& op : lm_head_op_) {
        ops::MatmulShape s;
        s.tokens = S;
        s.x_stride = info_.dim;
        s.y_stride = info_.vocab;
        s.use_rowmap = true;
        s.eps = info_.rms_eps;
        op.record(cmd, s);
    }
}

// Records one step of T tokens with S logit rows (see forward); `fused`: one dispatch per run of
// fused layers (steps of 1-4 tokens).
void LlamaModel::record_step(VkCommandBuffer cmd, uint32_t T, uint32_t S, bool timing, int32_t capture_layer,
                             int32_t capture_token, bool fused, uint32_t sequences) {
    const auto& m = info_;
    if (timing) ctx_.begin_timing(cmd);
    auto mark = [&](uint32_t label) {
        if (timing) ctx_.mark(cmd, label);
    };
    auto linear = [&](const std::vector<ops::MatmulOp>& ops, const std::vector<uint32_t>& offsets,
                      uint32_t x_stride, uint32_t y_stride, bool accumulate) {
        for (size_t i = 0; i < ops.size(); ++i) {
            ops::MatmulShape s;
            s.tokens = T;
            s.x_stride = x_stride;
            s.y_stride = y_stride;
            s.y_offset = offsets.empty() ? 0 : offsets[i];
            s.accumulate = accumulate;
            s.eps = m.rms_eps;
            ops[i].record(cmd, s);
        }
    };

    embed_op_.record(cmd, T);
    mark(kEmbed);
    ctx_.barrier(cmd);
    static const std::vector<uint32_t> kNoOffsets;
    for (uint32_t l = 0; l < m.n_layers; ++l) {
        auto& L = layers_[l];
        if (fused && L.has_fused) {
            // A run's layers all run fused: the dispatch is recorded at its first layer.
            const auto& run = fused_runs_[L.fused_run];
            if (run.first_layer() == l) {
                run.record(cmd, T, timing && run.clocks());
                mark(kFusedLayer);
                ctx_.barrier(cmd);
            }
            continue;
        }
        linear(L.qkv, L.qkv_offsets, m.dim, qkv_width_, false);
        if (L.qk_norm) {
            ctx_.barrier(cmd);
            L.qk_norm_op.record(cmd, T);
        }
        mark(kQkv);
        ctx_.barrier(cmd);
        L.attention.record(cmd, T, static_cast<int32_t>(l) == capture_layer ? capture_token : -1,
                           limits_.context_length, sequences);
        mark(kAttention);
        ctx_.barrier(cmd);
        linear(L.o, kNoOffsets, m.q_dim(), m.dim, !m.post_norms);
        if (m.post_norms) {
            ctx_.barrier(cmd);
            L.post_attn.record(cmd, T);
        }
        mark(kAttnOut);
        ctx_.barrier(cmd);
        // gate_up_ holds silu(gate) * up (ffn_dim per token) when SwiGLU is the epilogue, else
        // [gate | up] (2 ffn_dim per token).
        const uint32_t ffn_width = L.swiglu_fused ? m.ffn_dim : 2 * m.ffn_dim;
        linear(L.gate_up, L.gate_up_offsets, m.dim, ffn_width, false);
        mark(kFfnGateUp);
        ctx_.barrier(cmd);
        linear(L.down, kNoOffsets, ffn_width, m.dim, !m.post_norms);
        if (m.post_norms) {
            ctx_.barrier(cmd);
            L.post_ffn.record(cmd, T);
        }
        mark(kFfnDown);
        ctx_.barrier(cmd);
    }
    if (S) {
        record_lm_head(cmd, S);
        mark(kLmHead);
        ctx_.barrier(cmd);
    }
}

// The fused layers' time by op family, from their clocks (ops::DecodeLayerOp::op_times). The
// clock counts nanoseconds on lavapipe, the only driver running fused layers; what the
// timestamps measured for the dispatches beyond the kernels' own span is the driver starting
// and ending them ("fused_start"). A clock that does not count nanoseconds (its span longer than
// the dispatches) is scaled to the timestamps instead.
void LlamaModel::fused_op_times(StepProfile& prof, uint64_t kv_read) const {
    uint32_t fused_layers = 0;
    for (const auto& L : layers_) fused_layers += L.has_fused ? 1 : 0;
    double fused_ms = 0;
    for (const auto& o : prof.ops)
        if (o.op == kLabelNames[kFusedLayer]) fused_ms = o.ms;
    // Clock slots by layer index; a layer that ran on the separate kernels left its slot at 0,
    // which op_times skips.
    const auto* words = static_cast<const uint32_t*>(sync_.mapped) + clock_base_;
    const uint32_t n = info_.n_layers;
    const ops::FusedOpTimes t = ops::DecodeLayerOp::op_times(
        {words, ops::DecodeLayerOp::clock_words(n, fused_groups_)}, n, fused_groups_);
    if (t.layers != fused_layers || fused_ms <= 0 || t.span_ns <= 0) return;
    const double span_ms = t.span_ns / 1e6;
    const double scale = span_ms > fused_ms ? fused_ms / span_ms : 1.0;
    const uint32_t labels[ops::FusedOpTimes::kOps] = {kQkv, kAttention, kAttnOut, kFfnGateUp, kFfnDown};
    for (uint32_t k = 0; k < ops::FusedOpTimes::kOps; ++k) {
        OpTime o;
        o.op = kLabelNames[labels[k]];
        o.ms = t.ns[k] / 1e6 * scale;
        o.dispatches = 0;
        o.bytes = labels[k] == kAttention ? kv_read * fused_layers / n : inside_fused_bytes_[labels[k]];
        o.idle_fraction = t.ns[k] > 0 ? t.idle_ns[k] / (t.ns[k] * fused_groups_) : 0;
        prof.fused_ops.push_back(o);
    }
    OpTime start;
    start.op = "fused_start";
    // (Not below 0: where the clocks spanned the whole dispatch time, and were scaled to it, the
    // difference is rounding.)
    start.ms = std::max(0.0, fused_ms - span_ms * scale);
    start.dispatches = static_cast<uint32_t>(fused_runs_.size());
    prof.fused_ops.push_back(start);
}

void LlamaModel::forward(const StepInput& in, std::vector<float>& logits, bool profile, StepProfile* prof,
                         AttentionSnapshot* capture) {
    const auto t_start = std::chrono::steady_clock::now();
    const auto& m = info_;
    const uint32_t T = static_cast<uint32_t>(in.tokens.size());
    const uint32_t S = static_cast<uint32_t>(in.logit_rows.size());
    if (T == 0 || T > limits_.max_step_tokens || S > limits_.max_logit_rows || in.info.size() != T)
        throw Error(ErrorCode::InvalidArgument, "step of " + std::to_string(T) + " tokens / " +
                                                    std::to_string(S) +
                                                    " logit rows is outside the engine's limits");
    if (in.tables.size() * 4 > tables_.size || in.tables_local.size() * 4 > tables_local_.size)
        throw Error(ErrorCode::InvalidArgument, "block tables too large");
    if (tok_info_local_.buffer && in.info_local.size() != T)
        throw Error(ErrorCode::Internal, "a step without the sliding-window layers' token info");
    for (int32_t tok : in.tokens)
        if (tok < 0 || static_cast<uint32_t>(tok) >= m.vocab)
            throw Error(ErrorCode::InvalidArgument,
                        "token id " + std::to_string(tok) + " is outside the vocabulary");

    ctx_.upload(tokens_, 0, in.tokens.data(), 4ull * T);
    ctx_.upload(tok_info_, 0, in.info.data(), 16ull * T);
    if (!in.tables.empty()) ctx_.upload(tables_, 0, in.tables.data(), 4 * in.tables.size());
    if (tok_info_local_.buffer) {
        ctx_.upload(tok_info_local_, 0, in.info_local.data(), 16ull * T);
        if (!in.tables_local.empty())
            ctx_.upload(tables_local_, 0, in.tables_local.data(), 4 * in.tables_local.size());
    }
    if (S) ctx_.upload(rowmap_, 0, in.logit_rows.data(), 4ull * S);

    const bool timing = profile && ctx_.timestamps_supported();
    // The step's sequences (its tokens come grouped by batch item): attention's tiled prefill
    // kernel pays off only where its query blocks hold few of them (ops::AttentionOp::tiled_for).
    uint32_t sequences = T ? 1 : 0;
    for (uint32_t t = 1; t < T; ++t) sequences += in.info[t].item != in.info[t - 1].item;
    int32_t capture_token = -1;
    if (capture && in.capture_layer >= 0 && S > 0) capture_token = static_cast<int32_t>(in.logit_rows.back());
    // Every step-dependent value lives in the buffers uploaded above, except the counts T and S
    // (push constants, grid sizes) and the capture and timing commands: a step like the last one
    // resubmits its recording.
    const bool reusable = !timing && capture_token < 0;
    // Steps of 1-4 tokens run fused layers (a run of layers per dispatch) where possible (2-4 tokens read
    // each weight once for all of them, ops::DecodeLayerOp's tokens-per-lane variants): not while capturing
    // attention (the capture is the separate attention kernel's), and only when the separate
    // attention kernel would split the work as the fused layer was built to (it decides by the
    // step's token count), so that both compute the same bits. From 5 tokens on the separate
    // kernels run (110M Q8_0: 5-8 sequences fused as two groups of four were no faster).
    // 4 sequences: 67-71 -> 117-124 tok/s in all.
    bool fused = fused_ok_ && T <= ops::kRowLayoutTokensPerLane && capture_token < 0;
    for (const auto& L : layers_)
        if (fused && L.has_fused &&
            L.attention.lanes_own_heads(T) != fused_runs_[L.fused_run].lanes_own_heads())
            fused = false;
    auto run = [&](bool fused_step) {
        if (fused_step) {
            // The op counters start at 0, and so do the clocks of a profiled step.
            std::memset(sync_.mapped, 0, timing ? sync_.size : sync_counter_bytes_);
            if (const int32_t l = limits_.fused_stall_layer_for_test;
                l >= 0 && l < static_cast<int32_t>(m.n_layers))
                static_cast<uint32_t*>(sync_.mapped)[1 + 10 * l + 2] =
                    1u << 30;  // op_counter(1): attention items all claimed
        }
        if (reusable && step_recorded_ && step_tokens_ == T && step_logit_rows_ == S &&
            step_fused_ == fused_step && step_sequences_ == sequences) {
            ctx_.submit_recorded_and_wait(step_cmd_);
            return;
        }
        VkCommandBuffer cmd;
        if (reusable) {
            if (!step_cmd_) step_cmd_ = ctx_.create_reusable_command_buffer();
            step_recorded_ = false;
            ctx_.begin_reusable(step_cmd_);
            cmd = step_cmd_;
        } else {
            cmd = ctx_.begin();
        }
        record_step(cmd, T, S, timing, in.capture_layer, capture_token, fused_step, sequences);
        if (reusable) {
            ctx_.end(cmd);
            ctx_.submit_recorded_and_wait(cmd);
            step_recorded_ = true;
            step_tokens_ = T;
            step_logit_rows_ = S;
            step_fused_ = fused_step;
            step_sequences_ = sequences;
        } else {
            ctx_.submit_and_wait(cmd);
        }
    };
    run(fused);
    if (fused && static_cast<const volatile uint32_t*>(sync_.mapped)[0] != 0) {
        // A fused layer waited too long for an op's last item (the thread that claimed it was
        // preempted for ~50 ms): run the step again with the separate kernels, which rewrite
        // everything it wrote (x from the embedding, this step's KV slots). After a few such
        // steps in a row the fused layers stay off for this model.
        ++fused_fallbacks_;
        if (++fused_fallbacks_in_a_row_ >= kFusedFallbackLimit) {
            fused_ok_ = false;
            fused_why_ = "its waits timed out in " + std::to_string(kFusedFallbackLimit) + " steps in a row";
        }
        fused = false;
        run(false);
    } else if (fused) {
        fused_fallbacks_in_a_row_ = 0;
    }

    logits.resize(static_cast<size_t>(S) * m.vocab);
    logits.resize(static_cast<size_t>(S) * m.vocab);
    if (S) ctx_.download(logits_, 0, logits.data(), logits.size() * 4);
    if (const float cap = m.final_softcap; cap > 0)  // Gemma 2: c * tanh(logit / c), as llama.cpp in float
        for (float& v : logits) v = cap * std::tanh(v / cap);

    if (capture_token >= 0 && capture) {
        const uint32_t stride = limits_.context_length;
        std::vector<float> raw(static_cast<size_t>(m.n_heads) * (stride + 2));
        ctx_.download(capture_, 0, raw.data(), raw.size() * 4);
        const uint32_t n = in.info[capture_token].pos + 1;
        capture->layer = static_cast<uint32_t>(in.capture_layer);
        capture->n_heads = m.n_heads;
        capture->n_positions = n;
        capture->position = in.info[capture_token].pos;
        capture->probs.assign(static_cast<size_t>(m.n_heads) * n, 0.0f);
        for (uint32_t h = 0; h < m.n_heads; ++h) {
            float mx = raw[static_cast<size_t>(m.n_heads) * stride + 2 * h];
            float sum = raw[static_cast<size_t>(m.n_heads) * stride + 2 * h + 1];
            for (uint32_t j = 0; j < n; ++j)
                capture->probs[static_cast<size_t>(h) * n + j] =
                    std::exp(raw[static_cast<size_t>(h) * stride + j] - mx) / sum;
        }
    }

    if (prof) {
        prof->dispatches = fused ? fused_dispatches_ : dispatches_;
        prof->fused_layers = fused;
        prof->fused_fallbacks = fused_fallbacks_;
        prof->ops.clear();
        prof->fused_ops.clear();
        prof->gpu_ms = 0;
        if (timing) {
            std::map<uint32_t, OpTime> by;
            // The cache rows attention reads: every token's keys and values, all layers.
            uint64_t keys = 0;
            for (const auto& t : in.info) keys += t.pos + 1u;
            const uint64_t kv_read = keys * kv_bytes_per_token(m, limits_.kv_f16);
            for (auto& [label, ns] : ctx_.read_timing()) {
                auto& o = by[label];
                o.op = kLabelNames[label];
                const auto& bytes = fused ? fused_label_bytes_ : label_bytes_;
                o.bytes = label == kAttention ? kv_read
                          : label == kLmHead  ? (S ? bytes[label] : 0)
                                              : bytes[label];
                o.ms += ns / 1e6;
                o.dispatches++;
                prof->gpu_ms += ns / 1e6;
            }
            for (auto& [label, o] : by) prof->ops.push_back(o);
            if (fused && clock_base_) fused_op_times(*prof, kv_read);
        }
        prof->total_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count();
    }
}

}  // namespace lantern::model
