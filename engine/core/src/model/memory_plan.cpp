#include "model/memory_plan.h"

#include <algorithm>

#include "lantern/error.h"

namespace lantern {
namespace model {

ModelLimits limits_for(const ModelInfo& m, const EngineOptions& o, const EngineTestHooks& hooks) {
    ModelLimits lim;
    lim.context_length = o.context_length ? std::min(o.context_length, m.context_length)
                                          : std::min<uint32_t>(m.context_length, 4096);
    lim.max_step_tokens = std::max<uint32_t>(1, o.max_step_tokens);
    lim.max_logit_rows =
        std::max<uint32_t>(1, o.max_logit_rows ? o.max_logit_rows : std::min<uint32_t>(o.max_sequences, 64));
    lim.block_tokens = std::max<uint32_t>(1, o.kv_block_tokens);
    lim.kv_f16 = o.kv_f16;
    if (o.weight_slab_bytes) lim.weight_slab_bytes = o.weight_slab_bytes;
    lim.fused_decode = o.fused_decode;
    lim.fused_stall_layer_for_test = hooks.fused_decode_stall_layer;
    lim.kv_layers_per_buffer_for_test = hooks.kv_layers_per_buffer;
    lim.gpu_layouts = hooks.gpu_layouts;

    const uint64_t per_token = LlamaModel::kv_bytes_per_token(m, o.kv_f16);
    const uint64_t blocks_per_context = (lim.context_length + lim.block_tokens - 1) / lim.block_tokens;
    const uint64_t blocks =
        o.kv_tokens ? (uint64_t{o.kv_tokens} + lim.block_tokens - 1) / lim.block_tokens
        : o.kv_budget_bytes
            ? o.kv_budget_bytes / (per_token * lim.block_tokens)
            : blocks_per_context * std::max<uint32_t>(1, o.kv_sequences ? o.kv_sequences : o.max_sequences);
    if (blocks < 1) throw Error(ErrorCode::InvalidArgument, "the KV budget holds not even one block");
    lim.kv_blocks = static_cast<uint32_t>(std::min<uint64_t>(blocks, 1u << 24));
    // Sliding-window layers: each sequence holds at most its window plus one step (the blocks of
    // positions pos - window + 1 .. pos + step, block-aligned), for as many sequences as the pool
    // is sized for; a pool of their own only where that is smaller than the main one.
    if (o.kv_release_windows && m.sliding_window > 0 &&
        std::find(m.local_layers.begin(), m.local_layers.end(), true) != m.local_layers.end()) {
        const uint64_t per_sequence =
            (uint64_t{m.sliding_window} - 1 + lim.max_step_tokens + lim.block_tokens - 1) / lim.block_tokens +
            1;
        const uint64_t local =
            per_sequence * std::max<uint32_t>(1, o.kv_sequences ? o.kv_sequences : o.max_sequences);
        if (local < lim.kv_blocks) lim.kv_blocks_local = static_cast<uint32_t>(local);
    }
    return lim;
}

static std::string mib(uint64_t bytes) {
    return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}

MemoryPlan plan_memory(const ModelInfo& m, const DeviceInfo& device, const ModelLimits& limits) {
    MemoryPlan p;
    p.context_length = limits.context_length;
    const uint64_t per_context =
        (static_cast<uint64_t>(limits.context_length) + limits.block_tokens - 1) / limits.block_tokens;
    p.sequences = static_cast<uint32_t>(limits.kv_blocks / std::max<uint64_t>(1, per_context));
    p.kv_blocks = limits.kv_blocks;
    // What the weights take on the device once loaded (a loaded model's ModelInfo says; K-quants are
    // repacked larger than the file), else the file's size.
    p.weight_bytes = m.weight_bytes ? m.weight_bytes : m.file_bytes;
    // Rounded up to 256 bytes: the layers' caches lie side by side in buffers, and each must start
    // where any device lets a view start.
    const uint64_t kv_dim = static_cast<uint64_t>(m.n_kv_heads) * m.head_dim;
    p.kv_layer_bytes =
        (static_cast<uint64_t>(limits.kv_blocks) * limits.block_tokens * kv_dim * (limits.kv_f16 ? 2 : 4) +
         255) /
        256 * 256;
    p.kv_bytes = p.kv_flat_bytes = p.kv_layer_bytes * 2 * m.n_layers;
    if (limits.kv_blocks_local) {
        const auto local =
            static_cast<uint32_t>(std::count(m.local_layers.begin(), m.local_layers.end(), true));
        p.kv_local_blocks = limits.kv_blocks_local;
        p.kv_local_layer_bytes = (static_cast<uint64_t>(limits.kv_blocks_local) * limits.block_tokens *
                                      kv_dim * (limits.kv_f16 ? 2 : 4) +
                                  255) /
                                 256 * 256;
        p.kv_bytes = p.kv_layer_bytes * 2 * (m.n_layers - local) + p.kv_local_layer_bytes * 2 * local;
    }
    const uint64_t qkv_width = m.q_dim() + 2 * kv_dim;
    // x | q/k/v | attention out (Q's width) | gate/up | post-norm input (Gemma), as LlamaModel lays them out
    p.work_bytes = 4ull * limits.max_step_tokens *
                       (m.dim + m.q_dim() + qkv_width + 2ull * m.ffn_dim + (m.post_norms ? m.dim : 0)) +
                   4ull * limits.max_logit_rows * m.vocab;

    const bool range = device.max_storage_buffer_range && p.kv_layer_bytes > device.max_storage_buffer_range;
    const bool texels =
        device.max_texel_buffer_elements && p.kv_layer_bytes / 16 > device.max_texel_buffer_elements;
    if (range || texels) {
        p.limit = MemoryLimit::BufferRange;
        p.limit_bytes = range ? device.max_storage_buffer_range : device.max_texel_buffer_elements * 16;
        const std::string room = p.sequences ? std::to_string(limits.context_length) + " tokens x " +
                                                   std::to_string(p.sequences) + " sequences"
                                             : std::to_string(p.kv_blocks) + " blocks of " +
                                                   std::to_string(limits.block_tokens) + " tokens";
        p.refusal = "the KV cache of one layer (" + mib(p.kv_layer_bytes) + " for " + room +
                    ") exceeds what " + device.name + " lets one buffer view reach (" + mib(p.limit_bytes) +
                    "); lower the context";
    } else if (device.device_local_bytes && p.total_bytes() > device.device_local_bytes) {
        p.limit = MemoryLimit::DeviceMemory;
        p.limit_bytes = device.device_local_bytes;
        p.refusal = "the model needs about " + mib(p.total_bytes()) + " of device memory (weights " +
                    mib(p.weight_bytes) + " + KV cache " + mib(p.kv_bytes) + " for " +
                    std::to_string(limits.context_length) + " tokens), but " + device.name + " has " +
                    mib(device.device_local_bytes);
    }
    return p;
}

}  // namespace model

MemoryPlan plan_memory(const ModelInfo& model, const DeviceInfo& device, const EngineOptions& options) {
    return model::plan_memory(model, device, model::limits_for(model, options));
}

}  // namespace lantern
