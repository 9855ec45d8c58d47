// The llama hyper-parameters, read from GGUF metadata (llama.* keys) and checked for consistency.
#pragma once
#include <cstdint>
#include <string>

#include "lantern/engine.h"
#include "lantern/gguf.h"

namespace lantern::model {

// Throws Error(UnsupportedArchitecture) for anything but "llama", Error(InvalidModelFile) for
// missing or inconsistent keys and tensors.
ModelInfo read_llama_config(const GgufFile& gguf);

}  // namespace lantern::model
