// Test hooks of the engine: ways to steer Engine::load that only tests need (how fused layers
// form runs, their fallback, the GPU layouts on a CPU driver). Internal to lantern_core (tests
// reach it through lantern_core_internals); the public EngineOptions carries none of them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "lantern/engine.h"

namespace lantern {

struct EngineTestHooks {
    // At most this many layers' K (and V) caches per buffer, so runs of fused layers end where a
    // buffer does (0 = as many as one storage-buffer view reaches).
    uint32_t kv_layers_per_buffer = 0;
    // Every fused step stalls in this layer's attention, so its wait gives up and the step runs
    // again with the separate kernels (-1 = off).
    int32_t fused_decode_stall_layer = -1;
    // On a CPU driver, lay out and run everything as on a GPU (row-major weights, split-K matmuls,
    // attention lanes splitting the keys), so the path GPUs take is checked on every machine.
    bool gpu_layouts = false;
};

// Engine::load with hooks (same errors). model::limits_for takes them too (model/memory_plan.h).
std::unique_ptr<Engine> load_engine_for_test(const std::string& gguf_path, const EngineOptions& options,
                                             const EngineTestHooks& hooks);

}  // namespace lantern
