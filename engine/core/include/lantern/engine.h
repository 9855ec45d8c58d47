// lantern/engine.h — the engine's front door: load a GGUF Llama model onto a Vulkan device and run
// it over sequences that share one paged KV cache.
//
//   auto engine = lantern::Engine::load("model.gguf", {});
//   auto seq = engine->create_sequence();
//   auto logits = engine->prefill(seq, prompt_tokens);   // reuses cached prefix blocks
//   ... sample a token, then engine->decode({{seq, token}}) per step ...
//
// Threading: an Engine is used from one thread at a time (the app's inference worker). Stats and
// block maps are returned as values, safe to send to another thread.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lantern/device.h"
#include "lantern/kv_cache.h"
#include "lantern/rope.h"

namespace lantern {

class Tokenizer;

struct ModelInfo {
    std::string path, name, architecture;
    uint32_t n_layers = 0, dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn_dim = 0, vocab = 0;
    // Q's width (and the attention output's): heads x head_dim, which need not be dim (Qwen3-0.6B:
    // 16 heads of 128 on a width of 1024).
    uint32_t q_dim() const { return n_heads * head_dim; }
    uint32_t context_length = 0;  // the model's trained context
    uint32_t n_rot = 0;
    float rope_freq_base = 10000.0f, rms_eps = 1e-5f;
    RopeScaling rope_scaling;  // context-extended models (lantern/rope.h)
    bool tied_output = false;  // LM head = token_embd
    bool qkv_bias = false;     // Q, K and V add a bias (attn_{q,k,v}.bias; Qwen2)
    bool qk_norm = false;      // RMSNorm per Q and K head before RoPE (attn_{q,k}_norm; Qwen3)
    // RoPE rotates dimension pairs (i, i + n_rot / 2) of a head (llama.cpp's NEOX style: qwen2),
    // not (2i, 2i + 1); the loader reorders Q's and K's rows so the kernels rotate neighbours.
    bool rope_neox = false;
    // Gemma 2 and 3 (gemma2, gemma3; llama.cpp's reading of the same keys):
    float embed_scale = 0;    // > 0: token embeddings are multiplied by it (Gemma: sqrt(dim))
    bool post_norms = false;  // RMSNorm of the attention and FFN outputs before each residual add
    bool gelu = false;        // the FFN's gate takes GELU (tanh form: GeGLU), not SiLU (SwiGLU)
    float attn_scale = 0;     // scores' scale; 0 = 1 / sqrt(head_dim)
    float attn_softcap = 0;   // > 0: scores become c * tanh(s / c) (gemma2.attn_logit_softcapping)
    float final_softcap = 0;  // > 0: the same on the logits (final_logit_softcapping)
    // Sliding-window attention: local_layers[l] says layer l attends to the last sliding_window
    // positions only (a token at p sees p - sliding_window + 1 .. p); empty = every layer global.
    uint32_t sliding_window = 0;
    std::vector<bool> local_layers;
    // RoPE of the local layers: their base, and whether rope_scaling applies to them too
    // (Gemma 2: the global layers' base and scaling; Gemma 3: base 10000, unscaled).
    float rope_freq_base_local = 10000.0f;
    bool rope_local_scaled = true;
    bool local_layer(uint32_t l) const { return l < local_layers.size() && local_layers[l]; }
    std::string weight_types;                                   // e.g. "Q8_0 x 36, F32 x 11"
    uint64_t parameters = 0, file_bytes = 0, weight_bytes = 0;  // weight_bytes: on the device
    uint64_t decode_read_bytes = 0;  // weight bytes one decode step must read (all matmuls + LM head)
    // The same bytes by the device layout they are stored in (the ggml type number of the layout:
    // 0 F32, 1 F16, 8 Q8_0, 2 Q4_0, 12 Q4_K, 13 Q5_K, 14 Q6_K; other file types are repacked into
    // one of these), so a benchmark can weigh each against that layout's arithmetic roofline.
    std::vector<std::pair<uint32_t, uint64_t>> decode_read_bytes_by_layout;
};

// Whether Engine::load runs models of this general.architecture: "llama" (which Mistral's and many
// fine-tunes' files also carry), "qwen2" (Qwen2, Qwen2.5, DeepSeek-R1-Distill-Qwen: Llama's
// layers with a bias on Q, K and V) and "qwen3" (dense Qwen3: per-head Q/K norms, heads that need
// not divide the width), "phi3" (Phi-3, Phi-3.5, Phi-4-mini), "gemma2" and "gemma3" (text; GeGLU,
// post-norms, soft-capping, sliding-window layers). Others are refused by name.
bool supported_architecture(std::string_view architecture);

struct EngineOptions {
    std::string device_selector;  // see lantern/device.h; empty = env LANTERN_DEVICE / preference
    bool validation = false;      // Khronos validation layer (also env LANTERN_VALIDATION=1)
    std::function<void(const std::string&)> on_validation_message;
    std::string pipeline_cache_dir;  // empty = user cache dir; "-" = none
    uint32_t context_length = 0;     // per sequence; 0 = min(model's, 4096)
    // The KV cache's size, the first of these that is set: kv_tokens (rounded up to whole
    // blocks), kv_budget_bytes, kv_sequences x context_length, max_sequences x context_length.
    // Sequences share it, so a server can run more replies than fit at full length at once (the
    // Scheduler admits and preempts them by free blocks).
    uint32_t kv_tokens = 0;
    uint64_t kv_budget_bytes = 0;
    uint32_t kv_sequences = 0;  // conversations at full length the cache has room for
    uint32_t kv_block_tokens = 16;
    bool kv_f16 = true;  // K/V element type: f16 (default) or f32 (exact references)
    uint32_t max_sequences = 4;
    uint32_t max_step_tokens = 256;  // prefill chunk / per-step token budget
    uint32_t max_logit_rows = 0;     // logit rows per step; 0 = max_sequences
    bool profile = false;            // per-op GPU timestamps (see last_step_profile)
    uint64_t weight_slab_bytes = 0;  // weight sub-allocation block; 0 = 256 MiB (tests use tiny ones)
    // Fused decode layers: on CPU drivers such as lavapipe (the only driver that runs them today),
    // a step of 1-4 tokens without an attention capture runs each run of consecutive layers as one
    // dispatch; logits are bit-identical either way. false = the separate kernels (comparisons).
    // No effect on other devices. Why and what it costs: docs/decisions/0017-fused-decode-layer.md.
    bool fused_decode = true;
    // Sliding-window layers (Gemma's local layers) keep only their window in a KV pool of their own,
    // blocks that left every window going back to it; false = they keep every position as the
    // other layers do (comparisons: the logits are the same bits either way).
    bool kv_release_windows = true;
};

// One sequence's slice of a batched step.
struct StepItem {
    SequenceId sequence = 0;
    std::vector<int32_t> tokens;   // appended to the sequence
    bool want_logits = true;       // logits of the last token of this item
    bool want_all_logits = false;  // logits of every token of this item (tests, perplexity)
};

struct OpTime {
    std::string op;  // "embed", "qkv+rope+kv" (Q/K/V matmul, RoPE, KV store), "attention", "attn_output",
                     // "ffn_gate_up" (gate/up matmul with SwiGLU), "ffn_down", "lm_head", or
                     // "fused_layer" (a whole layer in one dispatch, see StepProfile::fused_layers)
    double ms = 0;
    uint32_t dispatches = 0;
    uint64_t bytes = 0;  // what the op reads from memory in the step: weights, or (attention) K/V rows
    // Inside fused layers (StepProfile::fused_ops): of the driver threads' time in the op, the
    // fraction spent not working on it — waiting for another thread's last item. -1 elsewhere.
    double idle_fraction = -1;
};

struct StepProfile {
    double total_ms = 0;  // wall time of the step (record + submit + wait + readback)
    double gpu_ms = 0;    // sum of op times (timestamps), 0 when not profiled
    uint32_t dispatches = 0;
    bool fused_layers = false;     // layers ran fused, a run per dispatch (EngineOptions::fused_decode)
    uint32_t fused_fallbacks = 0;  // fused steps so far that gave up and ran on the separate kernels
    std::vector<OpTime> ops;       // empty when not profiled
    // Where the "fused_layer" entry's time goes, per op family, from clocks inside the kernel
    // (devices with VK_KHR_shader_clock; empty otherwise), "qkv+rope+kv" ... "ffn_down" as in
    // `ops`, then "fused_start" (the dispatches' time before their first workgroup starts and
    // after their last ends: the driver waking its threads). Their times add up to fused_layer's.
    std::vector<OpTime> fused_ops;
};

// Attention weights of one token (the heatmap): probs[head][j] over positions j < n_positions.
struct AttentionSnapshot {
    uint32_t layer = 0, n_heads = 0, n_positions = 0, position = 0;
    std::vector<float> probs;
};

class Engine {
public:
    // Throws lantern::Error (lantern/error.h) for the file (Io, InvalidModelFile, UnsupportedArchitecture,
    // UnsupportedTensorType, UnsupportedTokenizer), the device (NoVulkanDevice; ModelTooLarge, the
    // memory plan's refusal before any allocation, lantern/memory_plan.h; OutOfDeviceMemory), or
    // options it cannot honour (InvalidArgument).
    static std::unique_ptr<Engine> load(const std::string& gguf_path, const EngineOptions& options = {});
    virtual ~Engine() = default;

    virtual const ModelInfo& model() const = 0;
    virtual const DeviceInfo& device() const = 0;
    virtual const Tokenizer& tokenizer() const = 0;
    // The GGUF's tokenizer.chat_template, as written (empty if none). lantern/chat_template.h
    // recognises its format: ChatTemplate::for_engine(engine).
    virtual const std::string& chat_template_source() const = 0;
    virtual uint32_t context_length() const = 0;

    // Sequences (see lantern/kv_cache.h for the block semantics).
    virtual SequenceId create_sequence() = 0;
    // New sequence sharing `from`'s full KV blocks; its last partial block is recomputed.
    virtual SequenceId fork_sequence(SequenceId from) = 0;
    virtual void free_sequence(SequenceId seq) = 0;
    virtual uint32_t sequence_length(SequenceId seq) const = 0;
    virtual std::vector<int32_t> sequence_tokens(SequenceId seq) const = 0;

    // Feeds `tokens` after the sequence's current content (reusing cached prefix blocks when the
    // sequence is empty), in chunks of max_step_tokens, and returns the last token's logits.
    // Throws Error(ContextFull) before touching anything when the tokens do not fit.
    std::vector<float> prefill(SequenceId seq, std::span<const int32_t> tokens) {
        return prefill(seq, tokens, {});
    }
    // The same, told after every chunk but the last how far it is: `done` of the `total` tokens
    // it computes (those from the prefix cache not counted). Returning false stops it there, so
    // that a long prompt can be abandoned (on a CPU driver one takes minutes): the chunks done stay
    // in the sequence, so a later prefill of the same prompt goes on from them, and it returns no
    // logits.
    using PrefillProgress = std::function<bool(uint32_t done, uint32_t total)>;
    virtual std::vector<float> prefill(SequenceId seq, std::span<const int32_t> tokens,
                                       const PrefillProgress& progress) = 0;
    // For an empty sequence: takes the cached KV blocks that hold the start of `prompt` (the
    // prefix cache, as prefill() does by itself) and returns how many tokens they hold — always
    // fewer than prompt.size(), so the last token is still computed and gives logits. For callers
    // that feed a prompt through step() in chunks (the Scheduler): they go on from that token.
    virtual uint32_t attach_cached_prefix(SequenceId seq, std::span<const int32_t> prompt) = 0;
    // One batched step over several sequences (decodes and prefill chunks together, one command
    // buffer, one submit). Returns one logits row per item with want_logits (per token for
    // want_all_logits), in item order. Throws Error(ContextFull) when a sequence or the KV cache
    // has no room, Error(InvalidArgument) for an item without tokens; a step that throws leaves
    // every sequence as it was.
    virtual std::vector<std::vector<float>> step(std::span<const StepItem> items) = 0;

    // Tokens of the last prefill() that came from the prefix cache / were computed.
    virtual uint32_t last_reused_tokens() const = 0;
    virtual uint32_t last_computed_tokens() const = 0;

    virtual KvStats kv_stats() const = 0;
    // KV blocks a sequence can take now (empty, or cached and so evictable): kv_stats()'s
    // empty_blocks + cached_blocks without walking the pool, for a scheduler asking every step.
    virtual uint32_t kv_free_blocks() const = 0;
    virtual std::vector<KvBlockInfo> kv_block_map() const = 0;

    virtual const StepProfile& last_step_profile() const = 0;
    // Times the next `steps` steps per op, as EngineOptions::profile times every step, so that a
    // running model can show where one step's time goes (the app's Step Profile panel); each
    // step's profile is in last_step_profile() after it. Timed steps compute the same logits; they
    // record their commands afresh, and the first may compile the timed kernels' variants (slow on
    // a driver that compiles kernels at first dispatch), so look at the last of two. Warm-ups do not
    // count. 0 cancels.
    virtual void profile_steps(uint32_t steps) = 0;
    // Capture the attention weights of the last token of the next step, for `layer` (-1 = off).
    virtual void capture_attention(int32_t layer) = 0;
    virtual const AttentionSnapshot& last_attention() const = 0;

    // Warm-up: one step of each shape a chat uses — a prompt, a decode step, a few tokens, a short
    // prompt, a decode step with an attention capture, a long prompt — on a scratch sequence that is then
    // dropped without a trace (no KV blocks, no prefix-cache entries; profile and capture settings
    // as they were). Why: a driver that compiles kernels at their first dispatch would otherwise
    // do so inside the user's first reply (docs/decisions/0013-warm-up-after-load.md). Run it after
    // load() while the user is busy; on a warm start it costs a few steps.
    // warm_up(i) runs shape i (0 <= i < kWarmUpShapes; the first two are what a first reply
    // needs), so a caller can let other work in between; a shape the KV cache has no empty blocks
    // for is skipped. Both return the wall time in milliseconds; Error(InvalidArgument) for
    // i >= kWarmUpShapes, and a failed step's error as step() throws it (nothing is left behind).
    static constexpr uint32_t kWarmUpShapes = 6;
    virtual double warm_up(uint32_t shape) = 0;
    double warm_up() {
        double ms = 0;
        for (uint32_t i = 0; i < kWarmUpShapes; ++i) ms += warm_up(i);
        return ms;
    }

    // Warm-up of a batched decode step: `sequences` sequences (2 up to max_logit_rows) one token
    // each, as continuous batching runs them (lantern/scheduler.h, the API server), whose kernels
    // differ from one sequence's (decision 0013). Leaves no trace, as warm_up(), and is skipped
    // while the KV cache lacks empty blocks for it; returns the wall time in milliseconds.
    // Error(InvalidArgument) for `sequences` outside 2..max_logit_rows.
    virtual double warm_up_batched_decode(uint32_t sequences) = 0;

    // Timings of load(): pipeline creation (cold vs warm pipeline cache) and weight upload.
    virtual double load_ms() const = 0;
    virtual double pipelines_ms() const = 0;
    virtual bool pipeline_cache_was_warm() const = 0;
};

}  // namespace lantern
