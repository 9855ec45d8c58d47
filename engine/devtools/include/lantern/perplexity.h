// lantern/perplexity.h — how well a model predicts a text, measured the way llama.cpp's
// llama-perplexity measures it, so the numbers compare across tools and quantizations.
//
// The tokens (BOS first where the vocabulary adds one: Tokenizer::encode(text, add_bos())) are cut
// into chunks of `context` tokens; each chunk runs as a fresh sequence with its first token
// replaced by BOS (where the vocabulary adds one), and
// the second half of each chunk is scored: the negative log-likelihood of token j + 1 given tokens
// 0..j, for j from context/2 to context - 2. Perplexity = exp(mean NLL).
#pragma once
#include <cstdint>
#include <functional>
#include <span>

namespace lantern {

class Engine;

struct PerplexityOptions {
    uint32_t context = 512;     // tokens per chunk (at most the engine's context length)
    uint32_t max_chunks = 0;    // 0 = every whole chunk of the text
    uint32_t step_tokens = 64;  // tokens per engine step; the engine's max_step_tokens and
                                // max_logit_rows must allow that many
};

struct PerplexityResult {
    double perplexity = 0;
    double std_error = 0;  // of the perplexity, from the NLLs' spread (as llama.cpp reports it)
    double mean_nll = 0;
    uint32_t chunks = 0, scored_tokens = 0;
    double seconds = 0, tokens_per_second = 0;  // all tokens run through the model
};

// How far a model (typically a quantization) is from a base model (its F16/F32 original) on a
// text, as llama-perplexity --kl-divergence reports it: on every scored token both models'
// next-token distributions, the Kullback-Leibler divergence KL(base || test), and whether their
// most likely tokens agree; plus each model's perplexity. Both engines must share a vocabulary.
struct ModelAgreement {
    PerplexityResult base, test;
    double mean_kld = 0, max_kld = 0, kld_p99 = 0;  // nats
    double top1_agreement = 0;                      // fraction of scored tokens
    uint32_t scored_tokens = 0;
};
ModelAgreement compare_models(Engine& base, Engine& test, std::span<const int32_t> tokens,
                              const PerplexityOptions& options,
                              const std::function<void(uint32_t, double)>& on_chunk = {});

// Runs the measurement. `on_chunk(chunk, running_perplexity)` is called after each chunk (may be
// empty). Throws Error(InvalidArgument) when the text is shorter than one chunk or the chunk is
// longer than the engine's context.
PerplexityResult measure_perplexity(Engine& engine, std::span<const int32_t> tokens,
                                    const PerplexityOptions& options,
                                    const std::function<void(uint32_t, double)>& on_chunk = {});

}  // namespace lantern
