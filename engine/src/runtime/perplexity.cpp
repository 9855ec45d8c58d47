#include "lantern/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/tokenizer.h"

namespace lantern {

namespace {

// -log softmax(logits)[target], in double (the logits' max taken off first).
double negative_log_likelihood(const std::vector<float>& logits, int32_t target) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
    return std::log(sum) - (static_cast<double>(logits[static_cast<size_t>(target)]) - max);
}

}  // namespace

PerplexityResult measure_perplexity(Engine& engine, std::span<const int32_t> tokens, const PerplexityOptions& options,
                                    const std::function<void(uint32_t, double)>& on_chunk) {
    const uint32_t n_ctx = options.context;
    if (n_ctx < 4)
        throw Error(ErrorCode::InvalidArgument, "a perplexity chunk needs at least 4 tokens, got " + std::to_string(n_ctx));
    if (n_ctx > engine.context_length())
        throw Error(ErrorCode::InvalidArgument, "perplexity chunks of " + std::to_string(n_ctx) +
                                                    " tokens do not fit the engine's context of " +
                                                    std::to_string(engine.context_length()));
    uint32_t chunks = static_cast<uint32_t>(tokens.size() / n_ctx);
    if (chunks == 0)
        throw Error(ErrorCode::InvalidArgument, "the text has " + std::to_string(tokens.size()) +
                                                    " tokens, fewer than one chunk of " + std::to_string(n_ctx));
    if (options.max_chunks) chunks = std::min(chunks, options.max_chunks);
    const uint32_t step = std::max<uint32_t>(1, options.step_tokens);
    const int32_t bos = engine.tokenizer().bos_id();
    const uint32_t first = n_ctx / 2;  // scored: predictions made from positions first .. n_ctx - 2
    const uint32_t vocab = engine.model().vocab;
    for (int32_t t : tokens)
        if (t < 0 || static_cast<uint32_t>(t) >= vocab)
            throw Error(ErrorCode::InvalidArgument, "token id " + std::to_string(t) + " is outside the vocabulary");

    PerplexityResult r;
    double nll = 0, nll2 = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t c = 0; c < chunks; ++c) {
        std::vector<int32_t> chunk(tokens.begin() + static_cast<ptrdiff_t>(c) * n_ctx,
                                   tokens.begin() + static_cast<ptrdiff_t>(c + 1) * n_ctx);
        if (bos >= 0) chunk[0] = bos;  // every chunk starts as a text does
        const SequenceId seq = engine.create_sequence();
        try {
            for (uint32_t at = 0; at < n_ctx; at += step) {
                const uint32_t n = std::min(step, n_ctx - at);
                // Logits only where they are scored (positions first .. n_ctx - 2).
                const bool scored = at + n > first;
                StepItem item{seq, std::vector<int32_t>(chunk.begin() + at, chunk.begin() + at + n), scored, scored};
                const auto rows = engine.step(std::span<const StepItem>(&item, 1));
                if (!scored) continue;
                for (uint32_t j = 0; j < n; ++j) {
                    const uint32_t pos = at + j;
                    if (pos < first || pos + 1 >= n_ctx) continue;
                    const double v = negative_log_likelihood(rows[j], chunk[pos + 1]);
                    nll += v;
                    nll2 += v * v;
                    ++r.scored_tokens;
                }
            }
        } catch (...) {
            engine.free_sequence(seq);
            throw;
        }
        engine.free_sequence(seq);
        ++r.chunks;
        if (on_chunk) on_chunk(c, std::exp(nll / r.scored_tokens));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.tokens_per_second = r.seconds > 0 ? double(r.chunks) * n_ctx / r.seconds : 0;
    r.mean_nll = nll / r.scored_tokens;
    r.perplexity = std::exp(r.mean_nll);
    // The mean NLL's standard error, carried to the perplexity (d exp(x) = exp(x) dx).
    const double n = r.scored_tokens;
    const double var = n > 1 ? std::max(0.0, (nll2 / n - r.mean_nll * r.mean_nll) / (n - 1)) : 0.0;
    r.std_error = r.perplexity * std::sqrt(var);
    return r;
}

}  // namespace lantern
