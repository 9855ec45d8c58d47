#include "ops/decode_layer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "lantern/error.h"
#include "ops/matmul.h"

namespace lantern::ops {

namespace {
// The layer's weights that are present (qkv_b and qkv_bias are optional).
std::vector<const DeviceWeight*> present(const DecodeLayerWeights& w) {
    std::vector<const DeviceWeight*> all;
    for (const DeviceWeight* d :
         {w.qkv, w.qkv_b, w.o, w.gate_up, w.down, w.attn_norm, w.ffn_norm, w.qkv_bias, w.qk_norm})
        if (d) all.push_back(d);
    return all;
}

// The byte range of a layer's weights inside their slab: [first, end).
std::pair<VkDeviceSize, VkDeviceSize> span_of(const DecodeLayerWeights& w) {
    VkDeviceSize first = ~VkDeviceSize{0}, end = 0;
    for (const DeviceWeight* d : present(w)) {
        const auto& v = d->parts[0].values;
        first = std::min(first, v.offset);
        end = std::max(end, v.offset + v.size);
    }
    return {first, end};
}

uint32_t lane_rows(const DeviceWeight* d) {
    return d->tile_rows / kCpuLanes;
}
uint32_t type_of(const DeviceWeight* d) {
    return d ? d->format->device_type : 0u;
}

// What a layer's weights make of the kernel: each matmul's rows per lane and type (the
// specialization constants that differ between layers of one model).
std::vector<uint32_t> matmul_spec(const DecodeLayerWeights& w) {
    return {lane_rows(w.qkv),
            lane_rows(w.o),
            lane_rows(w.gate_up),
            lane_rows(w.down),
            w.qkv_b ? lane_rows(w.qkv_b) : 0u,
            type_of(w.qkv),
            type_of(w.qkv_b ? w.qkv_b : w.qkv),
            type_of(w.o),
            type_of(w.gate_up),
            type_of(w.down)};
}

// The bytes a run's view of its caches covers: from the first layer's cache to the last's end.
VkDeviceSize cache_span(std::span<const DecodeLayerInput> run, bool k) {
    const auto& first = k ? run.front().k_cache : run.front().v_cache;
    const auto& last = k ? run.back().k_cache : run.back().v_cache;
    return last.offset + last.size - first.offset;
}
}  // namespace

bool DecodeLayerOp::device_supported(const vk::Context& ctx) {
    return ctx.info().type == DeviceType::Cpu && ctx.info().name.find("llvmpipe") != std::string::npos;
}

std::string DecodeLayerOp::unsupported(const vk::Context& ctx, const DecodeLayerWeights& w,
                                       const DecodeLayerShape& s) {
    // Measured and tested on lavapipe only; the kernel is correct however a driver schedules its
    // workgroups, but it reads data written earlier in the same dispatch through texel views,
    // which only a CPU driver's plain memory makes safe. GPUs keep their separate kernels (their
    // dispatches are cheap, and their layouts are not the CPU ones this kernel runs).
    if (!device_supported(ctx)) return "not lavapipe";
    if (!w.qkv) return "Q, K and V are in more than two stacks (three types)";
    if (!w.gate_up) return "gate and up have different types";
    for (const DeviceWeight* d : {w.o, w.down, w.attn_norm, w.ffn_norm})
        if (!d) return "a layer weight is missing";
    const auto all = present(w);
    for (const DeviceWeight* d : all)
        if (d->parts.size() != 1) return "a weight is split into parts";
    for (const DeviceWeight* d : {w.attn_norm, w.ffn_norm})
        if (d->format->ggml_type != 0) return "a norm weight is not F32";
    if (w.qkv_bias && w.qkv_bias->format->ggml_type != 0) return "the Q/K/V bias is not F32";
    if (w.qk_norm) {
        // Each Q/K/V band (a lane-rows tile) must hold whole heads: its workgroup normalises them.
        const uint32_t hd = s.attention.head_dim;
        if (w.qk_norm->format->ggml_type != 0) return "the Q/K norm is not F32";
        if (w.qkv->tile_rows % hd != 0 || w.qkv->rows % hd != 0 || (w.qkv_b && w.qkv_b->tile_rows % hd != 0))
            return "a Q/K/V band would split a head that the Q/K norm needs whole";
    }
    for (const DeviceWeight* d : all)
        if (d->parts[0].values.buffer != w.qkv->parts[0].values.buffer)
            return "the layer's weights span two slabs";
    // The kernel finds a matrix's tiles from its rows per lane (tile rows = lanes x rows) and its
    // row units from its type and width (whole groups, repacked_row_units).
    for (const DeviceWeight* d : {w.qkv, w.qkv_b, w.o, w.gate_up, w.down})
        if (d &&
            (d->tile_rows % kCpuLanes != 0 || d->tile_rows / kCpuLanes == 0 ||
             d->tile_rows / kCpuLanes > kCpuRows || d->row_units != repacked_row_units(*d->format, d->cols)))
            return "a matrix is not in the CPU tile layout";
    if (w.qkv_b && w.qkv->rows % 2 != 0) return "the first Q/K/V stack ends inside a RoPE pair";
    const auto [first, end] = span_of(w);
    if ((end - first) / 4 > ctx.limits().maxTexelBufferElements)
        return "the layer's weights exceed one texel view";
    if (s.attention.head_dim > 256 || s.attention.head_dim % 2 != 0) return "unsupported head dimension";
    return {};
}

bool DecodeLayerOp::joins(const vk::Context& ctx, std::span<const DecodeLayerInput> run,
                          const DecodeLayerInput& next) {
    if (run.empty()) return false;
    const DecodeLayerInput& first = run.front();
    const DecodeLayerInput& last = run.back();
    if (next.slot != last.slot + 1 || matmul_spec(next.weights) != matmul_spec(first.weights)) return false;
    // The push constants hold the first layer's Q/K/V rows for all (the first part's and in all).
    const auto rows = [](const DecodeLayerWeights& w) {
        return std::pair{w.qkv->rows, w.qkv_b ? w.qkv_b->rows : 0};
    };
    if (rows(next.weights) != rows(first.weights)) return false;
    if (next.weights.qkv->parts[0].values.buffer != first.weights.qkv->parts[0].values.buffer) return false;
    // The caches follow each other in one buffer, K and V at the same offsets (the shader keeps
    // one offset per layer for both).
    const auto follows = [](const vk::BufferRange& a, const vk::BufferRange& b) {
        return b.buffer == a.buffer && b.offset == a.offset + a.size && b.size == a.size;
    };
    if (!follows(last.k_cache, next.k_cache) || !follows(last.v_cache, next.v_cache)) return false;
    if (next.k_cache.offset - first.k_cache.offset != next.v_cache.offset - first.v_cache.offset)
        return false;
    // Every weight one stride after the last layer's (the kernel finds layer r's at the first's
    // plus r strides; the layers already in the run lie so, having joined).
    const auto offsets = [](const DecodeLayerWeights& w) {
        std::array<VkDeviceSize, 9> o{};
        const DeviceWeight* all[] = {w.qkv,       w.qkv_b,    w.o,        w.gate_up, w.down,
                                     w.attn_norm, w.ffn_norm, w.qkv_bias, w.qk_norm};
        for (size_t i = 0; i < o.size(); ++i)
            o[i] = all[i] ? all[i]->parts[0].values.offset + 1 : 0;  // 0: absent
        return o;
    };
    const auto a = offsets(run.size() >= 2 ? run[run.size() - 2].weights : last.weights);
    const auto b = offsets(last.weights), c = offsets(next.weights);
    if (c[0] <= b[0]) return false;
    const VkDeviceSize stride = run.size() >= 2 ? b[0] - a[0] : c[0] - b[0];
    if (stride % 16 != 0) return false;
    for (size_t i = 0; i < c.size(); ++i)
        if ((b[i] == 0) != (c[i] == 0) || (c[i] != 0 && c[i] != b[i] + stride)) return false;
    const auto& lim = ctx.limits();
    for (VkDeviceSize bytes : {next.k_cache.offset + next.k_cache.size - first.k_cache.offset,
                               next.v_cache.offset + next.v_cache.size - first.v_cache.offset})
        if (bytes > lim.maxStorageBufferRange || bytes / 16 > lim.maxTexelBufferElements) return false;
    const VkDeviceSize w_first = span_of(first.weights).first, w_end = span_of(next.weights).second;
    // Binding 1 views the weights as floats: four bytes a texel.
    return w_end > w_first && (w_end - w_first) / 4 <= lim.maxTexelBufferElements;
}

DecodeLayerOp::DecodeLayerOp(vk::Context& ctx, std::span<const DecodeLayerInput> layers,
                             const DecodeLayerShape& s, const DecodeLayerActivations& act,
                             vk::BufferRange tok_info, vk::BufferRange rope, vk::BufferRange tables,
                             vk::BufferRange sync, uint32_t clock_base)
    : ctx_(&ctx) {
    if (layers.empty()) throw Error(ErrorCode::Internal, "fused decode layers: an empty run");
    for (size_t i = 0; i < layers.size(); ++i) {
        if (std::string why = unsupported(ctx, layers[i].weights, s); !why.empty())
            throw Error(ErrorCode::Internal, "fused decode layer: " + why);
        if (i > 0 && !joins(ctx, layers.subspan(0, i), layers[i]))
            throw Error(ErrorCode::Internal, "fused decode layers: layer " + std::to_string(layers[i].slot) +
                                                 " cannot join the run before it");
    }
    const auto& a = s.attention;
    const DecodeLayerWeights& w = layers.front().weights;
    const VkDeviceSize first = span_of(w).first, end = span_of(layers.back().weights).second;
    const vk::BufferRange weights{w.qkv->parts[0].values.buffer, first, end - first};
    const vk::BufferRange k_cache{layers.front().k_cache.buffer, layers.front().k_cache.offset,
                                  cache_span(layers, true)};
    const vk::BufferRange v_cache{layers.front().v_cache.buffer, layers.front().v_cache.offset,
                                  cache_span(layers, false)};
    auto unit = [&](const DeviceWeight* d) {
        return static_cast<uint32_t>((d->parts[0].values.offset - first) / 16);
    };

    // One workgroup per driver thread, so every thread can take part (a late one finds less work).
    groups_ = workgroups_for(ctx);
    const bool vec4 = s.dim % 4 == 0 && s.ffn_dim % 4 == 0 && s.q_dim % 4 == 0 && act.x % 4 == 0 &&
                      act.attn % 4 == 0 && act.ffn % 4 == 0;
    const bool q_vec4 = a.qkv_stride % 4 == 0 && a.head_dim % 4 == 0 && act.qkv % 4 == 0;
    using vk::BindingKind;
    const std::vector<BindingKind> kinds = {
        BindingKind::TexelUint4,  BindingKind::TexelFloat, BindingKind::TexelFloat, BindingKind::Storage,
        BindingKind::TexelFloat4, BindingKind::TexelUint4, BindingKind::TexelFloat, BindingKind::Storage,
        BindingKind::Storage,     BindingKind::TexelUint4, BindingKind::TexelUint4, BindingKind::TexelUint,
        BindingKind::Storage};
    shader_ = a.kv_f16 ? shaders::ShaderId::decode_layer_kvf16 : shaders::ShaderId::decode_layer_kvf32;
    clock_shader_ =
        a.kv_f16 ? shaders::ShaderId::decode_layer_kvf16_clock : shaders::ShaderId::decode_layer_kvf32_clock;
    clocks_ = clock_base != 0 && ctx.shader_device_clock();
    kinds_ = kinds;
    const std::vector<uint32_t> m = matmul_spec(w);
    spec_ = {kCpuLanes,
             m[0],
             m[1],
             m[2],
             m[3],
             vec4 ? 1u : 0u,
             a.head_dim,
             q_vec4 ? 1u : 0u,
             s.lanes_own_heads ? 1u : 0u,
             m[4],
             m[5],
             m[6],
             m[7],
             m[8],
             m[9]};
    ranges_ = {weights, weights, act.arena, act.arena, act.arena, tok_info, rope,
               k_cache, v_cache, k_cache,   v_cache,   tables,    sync};
    own_heads_ = s.lanes_own_heads;
    heads_per_lane_ = s.lanes_own_heads ? s.heads_per_lane : 1u;
    variant(1, false);  // the one-token kernel, which every decode step uses, at load

    push_.T = 1;
    push_.slot = layers.front().slot;
    push_.layers = static_cast<uint32_t>(layers.size());
    push_.dim = s.dim;
    push_.ffn = s.ffn_dim;
    push_.qdim = s.q_dim ? s.q_dim : s.dim;
    push_.qkv_a_rows = static_cast<uint32_t>(w.qkv->rows);
    push_.qkv_rows = push_.qkv_a_rows + (w.qkv_b ? static_cast<uint32_t>(w.qkv_b->rows) : 0u);
    push_.w_qkv = unit(w.qkv);
    push_.w_qkv_b = w.qkv_b ? unit(w.qkv_b) : 0u;
    push_.w_o = unit(w.o);
    push_.w_gu = unit(w.gate_up);
    push_.w_down = unit(w.down);
    push_.norm_attn = unit(w.attn_norm) * 4;
    push_.norm_ffn = unit(w.ffn_norm) * 4;
    push_.bias_qkv = w.qkv_bias ? unit(w.qkv_bias) * 4 : ~0u;
    push_.norm_qk = w.qk_norm ? unit(w.qk_norm) * 4 : ~0u;
    // Strides between the layers (joins checked that they are equal); one layer: none.
    push_.layer_units = layers.size() > 1 ? unit(layers[1].weights.qkv) - unit(w.qkv) : 0u;
    push_.layer_kv =
        layers.size() > 1 ? static_cast<uint32_t>((layers[1].k_cache.offset - k_cache.offset) / 16) : 0u;
    push_.act_x = act.x;
    push_.act_qkv = act.qkv;
    push_.act_attn = act.attn;
    push_.act_ffn = act.ffn;
    push_.n_head = a.n_head;
    push_.n_kv = a.n_kv;
    push_.n_rot = a.n_rot;
    push_.block = a.block;
    push_.eps = s.eps;
    push_.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.head_dim)));
    push_.clock_base = clock_base;
}

uint32_t DecodeLayerOp::workgroups_for(const vk::Context&) {
    return vk::cpu_driver_threads();
}

void DecodeLayerOp::record(VkCommandBuffer cmd, uint32_t tokens, bool clocked) const {
    if (tokens == 0 || tokens > kRowLayoutMaxTokens)
        throw Error(ErrorCode::Internal, "a fused decode layer takes 1-" +
                                             std::to_string(kRowLayoutMaxTokens) +
                                             " tokens (one workgroup row per token)");
    if (clocked && !clocks_)
        throw Error(ErrorCode::Internal, "this fused decode layer has no clocked variant");
    Push p = push_;
    p.T = tokens;
    const auto [kernel, set] = variant(std::min(tokens, kMaxTokensPerLane), clocked);
    ctx_->dispatch(cmd, *kernel, set, &p, groups_);
}

std::pair<const vk::Kernel*, VkDescriptorSet> DecodeLayerOp::variant(uint32_t tokens_per_lane,
                                                                     bool clocked) const {
    // The clocked variant is made at the first profiled step (lantern-bench --profile), never otherwise.
    const uint32_t i = (clocked ? kMaxTokensPerLane : 0u) + tokens_per_lane - 1;
    if (!kernels_[i]) {
        std::vector<uint32_t> spec = spec_;
        spec.push_back(tokens_per_lane);
        spec.push_back(heads_per_lane_);
        kernels_[i] = &ctx_->kernel(clocked ? clock_shader_ : shader_, kinds_, sizeof(Push), std::move(spec));
        sets_[i] = ctx_->make_set(*kernels_[i], ranges_);
    }
    return {kernels_[i], sets_[i]};
}

FusedOpTimes DecodeLayerOp::op_times(std::span<const uint32_t> clock, uint32_t layers, uint32_t workgroups) {
    FusedOpTimes out;
    if (clock.size() < clock_words(layers, workgroups)) return out;
    constexpr uint32_t kOps = FusedOpTimes::kOps;
    for (uint32_t l = 0; l < layers; ++l) {
        // t[w][e]: workgroup w's clock at event e (0: start; 1 + 2k: its share of op k done;
        // 2 + 2k: its wait for op k's last item over, k < 4), 0 where it was not written.
        std::vector<std::array<uint64_t, kClockEvents>> t;
        for (uint32_t w = 0; w < workgroups; ++w) {
            std::array<uint64_t, kClockEvents> e{};
            bool complete = true;
            for (uint32_t i = 0; i < kClockEvents; ++i) {
                const size_t at = (static_cast<size_t>(l * workgroups + w) * kClockEvents + i) * 2;
                e[i] = clock[at] | (uint64_t{clock[at + 1]} << 32);
                complete = complete && e[i] != 0;
            }
            if (complete) t.push_back(e);
        }
        if (t.size() != workgroups) continue;  // a workgroup gave up (the step ran on the separate kernels)
        auto earliest = [&](uint32_t e) {
            uint64_t v = ~uint64_t{0};
            for (const auto& w : t) v = std::min(v, w[e]);
            return v;
        };
        auto latest = [&](uint32_t e) {
            uint64_t v = 0;
            for (const auto& w : t) v = std::max(v, w[e]);
            return v;
        };
        uint64_t begin = earliest(0);
        const uint64_t first = begin;
        for (uint32_t k = 0; k < kOps; ++k) {
            // The op ends when its last item is finished: the first workgroup to see that is the
            // closest clock to it. Down has no wait: it ends with the last workgroup.
            const uint64_t end =
                std::max(begin, k + 1 < kOps ? earliest(2 + 2 * k) : latest(kClockEvents - 1));
            double busy = 0;
            for (const auto& w : t) {
                const uint64_t from = std::max(begin, k == 0 ? w[0] : w[2 * k]),
                               to = std::min(end, w[1 + 2 * k]);
                if (to > from) busy += static_cast<double>(to - from);
            }
            const double span = static_cast<double>(end - begin);
            out.ns[k] += span;
            out.idle_ns[k] += std::max(0.0, span * workgroups - busy);
            begin = end;
        }
        out.span_ns += static_cast<double>(begin - first);
        ++out.layers;
    }
    return out;
}

}  // namespace lantern::ops
