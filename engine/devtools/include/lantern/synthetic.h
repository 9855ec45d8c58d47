// lantern/synthetic.h — random-weight Llama models written with our own GGUF writer, so that
// benchmarks and tests need no download. The weights are random (N(0, 0.02) for matrices, 1 for
// norms); the vocabulary is a valid sentencepiece-style one (<unk>, <s>, </s>, 256 byte pieces,
// then filler pieces), so the tokenizer, chat session and CLI work on them too.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lantern {

struct SyntheticShape {
    std::string name;
    std::string architecture = "llama";  // general.architecture: llama, qwen2, qwen3, phi3, gemma2, gemma3
    uint32_t dim = 64, n_layers = 5, n_heads = 8, n_kv_heads = 4, ffn_dim = 172, vocab = 512;
    uint32_t head_dim = 0;  // 0: dim / n_heads (Qwen3's heads are wider: key_length)
    uint32_t context_length = 2048;
    float rope_base = 10000.0f;
    bool tied_output = true;
    bool qkv_bias = false;  // attn_{q,k,v}.bias, N(0, 0.5) (qwen2)
    bool qk_norm = false;   // attn_{q,k}_norm.weight per head (qwen3), drawn around 1
    // Standard deviation of output.weight (untied only); 0 = 0.02 as the other matrices. A larger
    // one "sharpens" the head: the winning logit stands further from the rest, so greedy decisions
    // of two engines are no coin flips on a random model.
    float output_std = 0;
    // Standard deviation of token_embd.weight; 0 = 0.02. Larger embeddings keep the token in the
    // residual stream next to the layers' outputs, so a random model's next token depends on its
    // input (with 0.02 the Q/K/V biases and layer outputs drown it and greedy text repeats).
    float embed_std = 0;
    // phi3: Q, K and V as one attn_qkv matrix and the gate and up rows as one ffn_up (gate first).
    bool fused_matrices = false;
    uint32_t rope_dims = 0;       // rope.dimension_count; 0 = the head size (Phi-4-mini: 96 of 128)
    uint32_t sliding_window = 0;  // written as attention.sliding_window when > 0 (phi3, gemma)
    // Gemma (gemma2, gemma3: GeGLU, post-norms, a Gemma-layout vocabulary, RMS epsilon 1e-6):
    uint32_t swa_pattern = 0;   // attention.sliding_window_pattern when > 0 (a period of layers)
    float rope_linear = 0;      // rope.scaling.type linear with this factor when > 0 (Gemma 3 4B)
    float rope_base_local = 0;  // rope.freq_base_swa when > 0
    float attn_softcap = 0, final_softcap = 0;  // {attn,final}_logit_softcapping when > 0
    bool gemma() const { return architecture == "gemma2" || architecture == "gemma3"; }
    // LongRoPE when > 0 (Phi-3.5, Phi-4-mini): rope.scaling.original_context_length, its
    // attn_factor, and rope_factors_short/long.weight (short near 1, long up to ~30).
    uint32_t original_context = 0;
    // Control tokens that end the vocabulary (the phi shapes: Phi-3's <|endoftext|>, <|user|>, ...;
    // llama.cpp looks some of them up by text in a model it takes for Phi-3).
    std::vector<std::string> special_tokens;
    std::string chat_template;  // written as tokenizer.chat_template when set (tests of chat formats)
    uint32_t head_size() const { return head_dim ? head_dim : dim / n_heads; }
};

// "tiny" (stories260K-like), "110m" (768/12 layers/12 heads/FFN 2048/vocab 32000),
// "tinyllama" (2048/22 layers/32 heads/4 KV heads/FFN 5632/vocab 32000),
// "llama3-1b" (Llama 3.2 1B: 2048/16 layers/32 heads/8 KV heads/FFN 8192/vocab 128256, tied),
// "7b" (Llama 2 7B: 4096/32 layers/32 heads/FFN 11008/vocab 32000; for GPUs), the Qwen family's
// shapes (vocab 151936, tied, RoPE base 1e6): "qwen2.5-0.5b" (896/24/14 heads/2 KV/FFN 4864, Q/K/V
// biases), "qwen2.5-1.5b" (1536/28/12/2/8960, biases), "qwen3-0.6b" (1024/28/16 heads of 128/8 KV/
// FFN 3072, Q/K norms), "qwen3-1.7b" (2048/28/16 of 128/8/6144, Q/K norms), the Phi family's
// (phi3, fused Q/K/V and gate/up, RoPE base 1e4): "phi3-mini" (Phi-3-mini-4k: 3072/32/32 heads/32
// KV/FFN 8192/vocab 32064, untied, window 2047), "phi3.5-mini" (the same with LongRoPE to 128k
// from 4k), "phi4-mini" (3072/32/24 heads of 128/8 KV/8192/vocab 200064, tied, RoPE on 96 of each
// head's 128 dims, LongRoPE), or any shape as "DIM/LAYERS/HEADS/KV_HEADS/FFN/VOCAB" (llama, untied
// LM head). A name may end in modifiers, each ",key=value": layers=N, vocab=N, untied=1,
// output_std=F, embed_std=F, orig=N (LongRoPE's original context; the long factors apply to longer
// runs) (e.g. "qwen3-0.6b,layers=2,vocab=1024"), and for the Gemma shapes ("gemma2-2b": 2304/26/8
// heads of 256/4 KV/FFN 9216/vocab 256000, window 4096 on every second layer, soft-capping 50 and
// 30; "gemma3-1b": 1152/26/4 heads of 256/1 KV/6912/262144, window 512, five local layers to one
// global, RoPE 1e6 global and 1e4 local; "gemma3-4b": 2560/34/8 of 256/4/10240/262208, window
// 1024, linear RoPE scaling 8 on the global layers) window=N and swa_pattern=N (a period).
// Throws Error(InvalidArgument) for other names and modifiers and for shapes the engine cannot run
// (heads not dividing the width into even head dimensions, KV heads not dividing the heads).
SyntheticShape synthetic_shape(const std::string& name);

class GgufWriter;

// Writes a sentencepiece-style ("llama") vocabulary of `vocab` pieces: <unk>, <s>, </s>, the 256
// byte-fallback pieces <0x00>..<0xFF>, "▁", the letters a-z, then numbered whole-word pieces.
// Any text encodes (letters as pieces, everything else as bytes). Needs vocab >= 286. `specials`
// take the last ids, as control tokens. `gemma`: Gemma's layout instead — <pad>, <eos>, <bos>,
// <unk>, <mask>, <start_of_turn>, <end_of_turn> first, user-defined pieces after the bytes ("▁▁",
// "▁▁▁", "<table>", "<tr>", two tabs), then besides the letters capitals, digits, punctuation, line
// breaks and merged pieces ("the", "▁Hello", "你好", ...), no space prefix
// (tokenizer.ggml.add_space_prefix false), BOS 2 and EOS 1; needs vocab >= 400.
void add_synthetic_vocabulary(GgufWriter& writer, uint32_t vocab,
                              const std::vector<std::string>& specials = {}, bool gemma = false);

// A mix of types like llama.cpp's Q4_K_M files (what most users download): Q4_K, with Q6_K for
// output.weight and for attn_v and ffn_down in the first and last eighth of the layers and every
// third layer between. Pass it as the type to write_synthetic_model.
constexpr uint32_t kSyntheticQ4KM = 0x10000 + 12;

// Writes the model to `path` as shape.architecture's GGUF (its keys and tensors: qwen2 with Q/K/V
// biases, qwen3 with key_length/value_length and per-head Q/K norms). Same seed, same file on
// every machine. `ggml_type`: type of the 2-D weights (F32, F16, Q8_0, Q4_0, Q4_K,
// Q5_K, Q6_K; the K-quants need rows of whole 256-element blocks), or kSyntheticQ4KM.
void write_synthetic_model(const SyntheticShape& shape, uint32_t ggml_type, const std::string& path,
                           uint64_t seed = 1234);

}  // namespace lantern
