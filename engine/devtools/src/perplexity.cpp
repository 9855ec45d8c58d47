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

// log sum exp(logits), in double (the max taken off first): log softmax(logits)[i] = logits[i] - it.
double log_normalizer(const std::vector<float>& logits) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
    return max + std::log(sum);
}

// The chunks of a text as llama-perplexity cuts them (see the header), checked against the engine.
struct Chunks {
    uint32_t n_ctx = 0, count = 0, first = 0;
};

Chunks plan_chunks(const Engine& engine, std::span<const int32_t> tokens, const PerplexityOptions& options) {
    Chunks c;
    c.n_ctx = options.context;
    if (c.n_ctx < 4)
        throw Error(ErrorCode::InvalidArgument,
                    "a perplexity chunk needs at least 4 tokens, got " + std::to_string(c.n_ctx));
    if (c.n_ctx > engine.context_length())
        throw Error(ErrorCode::InvalidArgument, "perplexity chunks of " + std::to_string(c.n_ctx) +
                                                    " tokens do not fit the engine's context of " +
                                                    std::to_string(engine.context_length()));
    c.count = static_cast<uint32_t>(tokens.size() / c.n_ctx);
    if (c.count == 0)
        throw Error(ErrorCode::InvalidArgument, "the text has " + std::to_string(tokens.size()) +
                                                    " tokens, fewer than one chunk of " +
                                                    std::to_string(c.n_ctx));
    if (options.max_chunks) c.count = std::min(c.count, options.max_chunks);
    c.first = c.n_ctx / 2;  // scored: predictions made from positions first .. n_ctx - 2
    const uint32_t vocab = engine.model().vocab;
    for (int32_t t : tokens)
        if (t < 0 || static_cast<uint32_t>(t) >= vocab)
            throw Error(ErrorCode::InvalidArgument,
                        "token id " + std::to_string(t) + " is outside the vocabulary");
    return c;
}

// Runs chunk `c` through the engine as a fresh sequence (first token BOS); returns the logits of
// the scored positions first .. n_ctx - 2 (row i: position first + i) and the chunk's tokens.
std::vector<std::vector<float>> scored_rows(Engine& engine, std::span<const int32_t> tokens,
                                            const Chunks& plan, uint32_t c, uint32_t step_tokens,
                                            std::vector<int32_t>& chunk) {
    chunk.assign(tokens.begin() + static_cast<ptrdiff_t>(c) * plan.n_ctx,
                 tokens.begin() + static_cast<ptrdiff_t>(c + 1) * plan.n_ctx);
    // Every chunk starts as a text does (llama-perplexity: only where the vocabulary adds BOS).
    if (const int32_t bos = engine.tokenizer().bos_id(); bos >= 0 && engine.tokenizer().add_bos())
        chunk[0] = bos;
    const uint32_t step = std::max<uint32_t>(1, step_tokens);
    std::vector<std::vector<float>> scored;
    const SequenceId seq = engine.create_sequence();
    try {
        for (uint32_t at = 0; at < plan.n_ctx; at += step) {
            const uint32_t n = std::min(step, plan.n_ctx - at);
            const bool wanted = at + n > plan.first;  // logits only where they are scored
            StepItem item{seq, std::vector<int32_t>(chunk.begin() + at, chunk.begin() + at + n), wanted,
                          wanted};
            auto rows = engine.step(std::span<const StepItem>(&item, 1));
            if (!wanted) continue;
            for (uint32_t j = 0; j < n; ++j)
                if (at + j >= plan.first && at + j + 1 < plan.n_ctx) scored.push_back(std::move(rows[j]));
        }
    } catch (...) {
        engine.free_sequence(seq);
        throw;
    }
    engine.free_sequence(seq);
    return scored;
}

// Running sums of NLLs, turned into a PerplexityResult.
struct NllSums {
    double nll = 0, nll2 = 0;
    uint32_t n = 0, chunks = 0;
    void add(double v) {
        nll += v;
        nll2 += v * v;
        ++n;
    }
    double perplexity() const { return std::exp(nll / n); }
    PerplexityResult result(double seconds, uint32_t n_ctx) const {
        PerplexityResult r;
        r.chunks = chunks;
        r.scored_tokens = n;
        r.seconds = seconds;
        r.tokens_per_second = seconds > 0 ? double(chunks) * n_ctx / seconds : 0;
        r.mean_nll = nll / n;
        r.perplexity = std::exp(r.mean_nll);
        // The mean NLL's standard error, carried to the perplexity (d exp(x) = exp(x) dx).
        const double var = n > 1 ? std::max(0.0, (nll2 / n - r.mean_nll * r.mean_nll) / (n - 1)) : 0.0;
        r.std_error = r.perplexity * std::sqrt(var);
        return r;
    }
};

// log softmax of a row, in double.
std::vector<double> log_softmax(const std::vector<float>& logits) {
    const double norm = log_normalizer(logits);
    std::vector<double> out(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - norm;
    return out;
}

}  // namespace

PerplexityResult measure_perplexity(Engine& engine, std::span<const int32_t> tokens,
                                    const PerplexityOptions& options,
                                    const std::function<void(uint32_t, double)>& on_chunk) {
    const Chunks plan = plan_chunks(engine, tokens, options);
    NllSums sums;
    std::vector<int32_t> chunk;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t c = 0; c < plan.count; ++c) {
        const auto rows = scored_rows(engine, tokens, plan, c, options.step_tokens, chunk);
        for (size_t i = 0; i < rows.size(); ++i)
            sums.add(log_normalizer(rows[i]) - rows[i][static_cast<size_t>(chunk[plan.first + i + 1])]);
        ++sums.chunks;
        if (on_chunk) on_chunk(c, sums.perplexity());
    }
    return sums.result(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                       plan.n_ctx);
}

ModelAgreement compare_models(Engine& base, Engine& test, std::span<const int32_t> tokens,
                              const PerplexityOptions& options,
                              const std::function<void(uint32_t, double)>& on_chunk) {
    if (base.model().vocab != test.model().vocab)
        throw Error(ErrorCode::InvalidArgument, "the models have different vocabularies (" +
                                                    std::to_string(base.model().vocab) + " and " +
                                                    std::to_string(test.model().vocab) + " tokens)");
    const Chunks plan = plan_chunks(base, tokens, options);
    plan_chunks(test, tokens, options);  // the same checks against the other engine
    NllSums base_sums, test_sums;
    std::vector<double> klds;
    uint32_t agree = 0;
    double base_s = 0, test_s = 0;
    std::vector<int32_t> chunk;
    for (uint32_t c = 0; c < plan.count; ++c) {
        auto t0 = std::chrono::steady_clock::now();
        const auto want = scored_rows(base, tokens, plan, c, options.step_tokens, chunk);
        auto t1 = std::chrono::steady_clock::now();
        const auto got = scored_rows(test, tokens, plan, c, options.step_tokens, chunk);
        auto t2 = std::chrono::steady_clock::now();
        base_s += std::chrono::duration<double>(t1 - t0).count();
        test_s += std::chrono::duration<double>(t2 - t1).count();
        for (size_t i = 0; i < want.size(); ++i) {
            const int32_t target = chunk[plan.first + i + 1];
            const auto p = log_softmax(want[i]), q = log_softmax(got[i]);
            base_sums.add(-p[static_cast<size_t>(target)]);
            test_sums.add(-q[static_cast<size_t>(target)]);
            double kld = 0;
            for (size_t v = 0; v < p.size(); ++v) kld += std::exp(p[v]) * (p[v] - q[v]);
            klds.push_back(std::max(0.0, kld));  // (rounding can leave -1e-17 for equal rows)
            agree += std::max_element(p.begin(), p.end()) - p.begin() ==
                     std::max_element(q.begin(), q.end()) - q.begin();
        }
        ++base_sums.chunks;
        ++test_sums.chunks;
        if (on_chunk) {
            double sum = 0;
            for (double k : klds) sum += k;
            on_chunk(c, sum / static_cast<double>(klds.size()));
        }
    }
    ModelAgreement a;
    a.base = base_sums.result(base_s, plan.n_ctx);
    a.test = test_sums.result(test_s, plan.n_ctx);
    a.scored_tokens = static_cast<uint32_t>(klds.size());
    for (double k : klds) a.mean_kld += k;
    a.mean_kld /= static_cast<double>(klds.size());
    std::vector<double> sorted = klds;
    std::sort(sorted.begin(), sorted.end());
    a.max_kld = sorted.back();
    a.kld_p99 =
        sorted[std::min(sorted.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(sorted.size())))];
    a.top1_agreement = static_cast<double>(agree) / static_cast<double>(klds.size());
    return a;
}

}  // namespace lantern
