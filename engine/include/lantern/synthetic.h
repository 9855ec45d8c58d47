// lantern/synthetic.h — random-weight Llama models written with our own GGUF writer, so that
// benchmarks and tests need no download. The weights are random (N(0, 0.02) for matrices, 1 for
// norms); the vocabulary is a valid sentencepiece-style one (<unk>, <s>, </s>, 256 byte pieces,
// then filler pieces), so the tokenizer, chat session and CLI work on them too.
#pragma once
#include <cstdint>
#include <string>

namespace lantern {

struct SyntheticShape {
    std::string name;
    uint32_t dim = 64, n_layers = 5, n_heads = 8, n_kv_heads = 4, ffn_dim = 172, vocab = 512;
    uint32_t context_length = 2048;
    bool tied_output = true;
};

// "tiny" (stories260K-like), "110m" (768/12 layers/12 heads/FFN 2048/vocab 32000),
// "tinyllama" (2048/22 layers/32 heads/4 KV heads/FFN 5632/vocab 32000),
// "llama3-1b" (Llama 3.2 1B: 2048/16 layers/32 heads/8 KV heads/FFN 8192/vocab 128256, tied),
// "7b" (Llama 2 7B: 4096/32 layers/32 heads/FFN 11008/vocab 32000; for GPUs), or any shape as
// "DIM/LAYERS/HEADS/KV_HEADS/FFN/VOCAB" (untied LM head). Throws Error(InvalidArgument) for other
// names and for shapes the engine cannot run (heads not dividing the width into even head
// dimensions, KV heads not dividing the heads).
SyntheticShape synthetic_shape(const std::string& name);

class GgufWriter;

// Writes a sentencepiece-style ("llama") vocabulary of `vocab` pieces: <unk>, <s>, </s>, the 256
// byte-fallback pieces <0x00>..<0xFF>, "▁", the letters a-z, then numbered whole-word pieces.
// Any text encodes (letters as pieces, everything else as bytes). Needs vocab >= 286.
void add_synthetic_vocabulary(GgufWriter& writer, uint32_t vocab);

// A mix of types like llama.cpp's Q4_K_M files (what most users download): Q4_K, with Q6_K for
// output.weight and for attn_v and ffn_down in the first and last eighth of the layers and every
// third layer between. Pass it as the type to write_synthetic_model.
constexpr uint32_t kSyntheticQ4KM = 0x10000 + 12;

// Writes the model to `path`. `ggml_type`: type of the 2-D weights (F32, F16, Q8_0, Q4_0, Q4_K,
// Q5_K, Q6_K; the K-quants need rows of whole 256-element blocks), or kSyntheticQ4KM.
void write_synthetic_model(const SyntheticShape& shape, uint32_t ggml_type, const std::string& path,
                           uint64_t seed = 1234);

}  // namespace lantern
