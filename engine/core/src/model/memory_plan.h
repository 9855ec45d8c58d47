// The engine's side of lantern/memory_plan.h: the limits a model is built with, from the options,
// and the plan for given limits (LlamaModel checks it before its first allocation).
#pragma once
#include "lantern/memory_plan.h"
#include "model/llama_model.h"
#include "runtime/engine_test_hooks.h"

namespace lantern::model {

// The context (the option, else min(trained, 4096), never past the trained context) and the KV
// pool (room for every sequence at full context, unless a byte budget is given), as Engine::load
// builds the model.
ModelLimits limits_for(const ModelInfo& model, const EngineOptions& options,
                       const EngineTestHooks& hooks = {});

MemoryPlan plan_memory(const ModelInfo& model, const DeviceInfo& device, const ModelLimits& limits);

}  // namespace lantern::model
