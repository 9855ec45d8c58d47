// The model's hyper-parameters, read from GGUF metadata (<architecture>.* keys: llama, qwen2) and
// checked for consistency, with the optional pieces its tensors carry (Q/K/V biases).
#pragma once
#include <cstdint>
#include <string>

#include "lantern/engine.h"
#include "lantern/gguf.h"

namespace lantern::model {

// Throws Error(UnsupportedArchitecture) for an architecture supported_architecture() refuses or a
// piece Lantern does not run (a bias outside Q/K/V), Error(InvalidModelFile) for missing or
// inconsistent keys and tensors.
ModelInfo read_llama_config(const GgufFile& gguf);

}  // namespace lantern::model
