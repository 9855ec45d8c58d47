// The model's hyper-parameters, read from GGUF metadata (<architecture>.* keys: llama, qwen2, qwen3,
// phi3, gemma2, gemma3) and checked for consistency, with the optional pieces its tensors carry (Q/K/V
// biases, Q/K norms, RoPE frequency factors).
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

// Where the file fuses matrices the loader reads separately, row views under the separate names
// (GgufFile::add_row_view): phi3's attn_qkv as attn_q, attn_k and attn_v, and its ffn_up (gate
// rows, then up rows: llama.cpp's SwiGLU takes SiLU of the first half) as ffn_gate and ffn_up.
// Nothing for the other architectures. Throws Error(InvalidModelFile) for a fused tensor of the
// wrong shape or one that is missing.
void add_fused_tensor_views(GgufFile& gguf, const ModelInfo& model);

}  // namespace lantern::model
