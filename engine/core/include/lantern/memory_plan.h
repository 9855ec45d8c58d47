// lantern/memory_plan.h — the device memory a model needs, worked out before anything is allocated.
//
// Engine::load refuses a model whose plan does not fit the device (ErrorCode::ModelTooLarge, the
// plan's refusal as the message), and the app's Context Length dialog shows the same plan while a
// length is picked: what the dialog promises and what loading does cannot drift apart.
#pragma once
#include <cstdint>
#include <string>

#include "lantern/device.h"
#include "lantern/engine.h"

namespace lantern {

// What refuses a plan: the reach of one buffer view (one layer's KV cache is too long), or the
// device's memory (everything together is too much).
enum class MemoryLimit { None, BufferRange, DeviceMemory };

struct MemoryPlan {
    uint32_t context_length = 0;  // per sequence: EngineOptions::context_length within the trained context
    uint32_t sequences = 0;       // sequences the KV pool holds at full length (EngineOptions::max_sequences)
    uint32_t kv_blocks = 0;       // the pool's blocks, EngineOptions::kv_block_tokens tokens each
    // The weights on the device: ModelInfo::weight_bytes where known (a loaded model's), else the
    // GGUF file's size (K-quants take up to a third more once repacked). Engine::load's own check
    // knows them exactly before uploading any: it works them out from the tensors' types and the
    // device's layout (LlamaModel::plan_weights).
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;        // the whole KV pool, every layer's K and V
    uint64_t kv_layer_bytes = 0;  // one layer's K (or V) cache, which one storage-buffer view must reach
    // Sliding-window layers (Gemma's local layers) with a pool of their own that holds each
    // sequence's window only: its blocks and one such layer's K (or V) cache; 0 when every layer
    // keeps every position (no local layers, or a window no shorter than the context).
    uint32_t kv_local_blocks = 0;
    uint64_t kv_local_layer_bytes = 0;
    uint64_t kv_flat_bytes = 0;             // what kv_bytes would be with every layer keeping every position
    uint64_t work_bytes = 0;                // activations and logits of the largest step
    MemoryLimit limit = MemoryLimit::None;  // the first limit the plan is past
    uint64_t limit_bytes = 0;               // that limit on this device
    std::string refusal;                    // why the device cannot hold it, in words; empty when it can

    uint64_t total_bytes() const { return weight_bytes + kv_bytes + work_bytes; }
    bool fits() const { return refusal.empty(); }
};

// `model` as Engine::model() reports it (its shape, trained context and weight or file bytes are used),
// `device` as list_devices() or Engine::device() does. Throws Error(InvalidArgument) for options
// Engine::load would refuse as such (a KV budget smaller than one block).
MemoryPlan plan_memory(const ModelInfo& model, const DeviceInfo& device, const EngineOptions& options);

}  // namespace lantern
