// lantern/sampling.h — turning one position's logits into the next token.
//
// The sampler chain, applied in this order (the order changes results, so it is part of the API):
//
//   1. penalties    over the last `penalty_last_n` tokens of the sequence, per distinct token id t
//                   that occurs there `count` times:
//                     repetition (llama.cpp): logit = logit > 0 ? logit / repeat_penalty
//                                                              : logit * repeat_penalty
//                     then additive (OpenAI / llama.cpp):
//                       logit -= count * frequency_penalty + (count > 0 ? presence_penalty : 0)
//                   With ignore_eos, the end-of-generation tokens (Sampler::set_eos_tokens) are
//                   masked to -inf here as well.
//   2. temperature  probabilities are softmax(logit / temperature). temperature == 0 means greedy:
//                   the highest logit wins, ties go to the lowest token id, and steps 3-6 are
//                   skipped (the argmax survives every truncation anyway).
//   3. top-k        keeps the k best tokens, best = higher logit, then lower token id. So exactly
//                   k survive even when several tokens tie at the k-th place: the lower ids are
//                   kept. k == 0 or k >= vocabulary size keeps everything.
//   4. top-p        in best-first order, keeps the shortest prefix whose probability (renormalised
//                   over the tokens still present) adds up to at least top_p; ties at the cut are
//                   split by the same order (lower ids kept). top_p == 1 keeps everything (including
//                   tokens whose probability rounds to 0); top_p == 0 keeps only the best token.
//   5. min-p        keeps every token whose probability is at least min_p times the probability of
//                   the most likely remaining token (inclusive, so tied tokens stay together).
//                   min_p == 0 keeps everything.
//   6. draw         one uniform double u in [0, 1) from the sampler's PRNG; the chosen token is the
//                   first one (in the current candidate order) at which the running sum of
//                   probabilities exceeds u. Exactly one number is drawn per token sampled with
//                   temperature > 0; greedy tokens draw none.
//
// All-equal logits are not special: every step above is defined by the best-first order, so with
// equal logits the lowest ids are the ones kept and greedy picks token 0.
//
// Reproducibility: the PRNG (SplitMix64 seeding xoshiro256**, see Rng) is ours, so a seed gives
// the same stream of numbers on every platform and compiler; probabilities are computed in double.
// Same seed + settings + logits gives the same tokens (across C libraries, exp() may differ in the
// last bit, which can only matter when a draw lands within ~1e-16 of a boundary).
//
// Changing settings while generating: the UI thread stores a new SamplingSettings in a
// SettingsSlot; the generating thread loads the current snapshot before each token, so the change
// applies from the next token on. The seed is read once, when a generation starts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lantern {

// Everything a user can set about one generation. The Sampler reads the chain's fields and
// ignore_eos / n_probs; seed, max_new_tokens and stop are for the generation loop that drives it.
struct SamplingSettings {
    // Defaults follow llama.cpp's, so results are comparable with the peer runner.
    float temperature = 0.8f;        // >= 0; 0 = greedy
    int32_t top_k = 40;              // >= 0; 0 = off
    float top_p = 0.95f;             // [0, 1]; 1 = off
    float min_p = 0.05f;             // [0, 1]; 0 = off
    float repeat_penalty = 1.0f;     // > 0; 1 = off
    float presence_penalty = 0.0f;   // any finite value; 0 = off
    float frequency_penalty = 0.0f;  // any finite value; 0 = off
    int32_t penalty_last_n = 64;     // window of recent tokens the penalties look at; 0 = none,
                                     // -1 = every token passed to Sampler::sample
    std::optional<uint64_t> seed;    // nullopt = pick one with Sampler::random_seed() and report it
    int32_t max_new_tokens = 512;    // >= 0; 0 = no limit but the context length
    std::vector<std::string> stop;   // stop strings, matched on decoded text (StopStringMatcher)
    bool ignore_eos = false;         // never pick an end-of-generation token
    int32_t n_probs = 0;             // how many top candidates to report with each token; 0 = none

    bool operator==(const SamplingSettings&) const = default;
};

// Throws Error(InvalidArgument) naming the first field that is out of the range documented above
// (NaN and infinities included; an empty stop string is rejected because it would match at once).
void validate(const SamplingSettings& settings);

// The current settings of a generation, shared between the thread that edits them (the UI) and
// the thread that generates. Every load() returns a complete snapshot, never a mix of two stores;
// a snapshot stays valid (and unchanged) for as long as its holder keeps the pointer. Neither side
// ever waits for the other's work: store() and load() only swap or copy a pointer (the standard
// library guards that copy with a lock of its own, held for those few instructions only).
class SettingsSlot {
public:
    SettingsSlot();  // holds default settings
    explicit SettingsSlot(SamplingSettings initial);

    // Validates first (throws Error(InvalidArgument) and keeps the old settings if invalid).
    void store(SamplingSettings settings);
    std::shared_ptr<const SamplingSettings> load() const;

private:
    // Accessed only through std::atomic_load / std::atomic_store. Not std::atomic<shared_ptr>:
    // libc++ lacks it, and GCC 12's version unlocks load() with relaxed ordering, which
    // ThreadSanitizer reports as a race (google/sanitizers#1558).
    std::shared_ptr<const SamplingSettings> current_;
};

// The sampler's PRNG, fixed so that a seed means the same numbers everywhere:
//   state  = four successive outputs of SplitMix64 started at `seed`
//            (x += 0x9e3779b97f4a7c15; z = x; z = (z ^ z>>30) * 0xbf58476d1ce4e5b9;
//             z = (z ^ z>>27) * 0x94d049bb133111eb; output z ^ z>>31)
//   next() = xoshiro256** 1.0 (Blackman & Vigna): rotl(s1 * 5, 7) * 9, then the xoshiro256 step
//   next_double() = (next() >> 11) * 2^-53, a uniform double in [0, 1) from the top 53 bits.
class Rng {
public:
    explicit Rng(uint64_t seed);
    uint64_t next();
    double next_double();

private:
    uint64_t s_[4];
};

struct TokenProbability {
    int32_t id = 0;
    float probability = 0.0f;

    bool operator==(const TokenProbability&) const = default;
};

struct Sample {
    int32_t token = 0;
    // Probability of `token` after the chain (renormalised over the surviving tokens, at the
    // temperature used). For greedy tokens: its probability under softmax(penalised logits).
    float probability = 0.0f;
    // The min(n_probs, surviving) most likely tokens after the chain, most likely first (ties:
    // lower id first), with the same probabilities as above. Greedy tokens report the top
    // n_probs of softmax(penalised logits), i.e. what the model would have offered at temperature 1.
    std::vector<TokenProbability> candidates;
};

class Sampler {
public:
    explicit Sampler(uint64_t seed);

    // Token ids that end a generation (EOS/EOT); masked when settings.ignore_eos is set.
    void set_eos_tokens(std::vector<int32_t> ids);

    // Runs the chain documented at the top of this file on one position's logits.
    //  recent_tokens: the sequence so far (prompt and generated tokens), oldest first; the last
    //                 settings.penalty_last_n of them feed the penalties.
    // Copies the logits once into a buffer kept between calls; nothing else is vocabulary-sized.
    // Throws Error(InvalidArgument) for invalid settings, empty logits, a NaN or +inf logit (also
    // after the penalties), a token id in the penalty window or an EOS id (with ignore_eos) outside
    // the vocabulary, or when every logit is -inf (nothing can be drawn).
    Sample sample(std::span<const float> logits, const SamplingSettings& settings,
                  std::span<const int32_t> recent_tokens);

    uint64_t seed() const { return seed_; }

    // A seed from the operating system's entropy source (mixed with the clock, since some
    // platforms' std::random_device is deterministic). Report it so a run can be repeated.
    static uint64_t random_seed();

private:
    struct Candidate {
        int32_t id;
        float logit;
    };

    uint64_t seed_;
    Rng rng_;
    std::vector<int32_t> eos_tokens_;
    std::vector<Candidate> candidates_;  // the one copy of the vocabulary, reused between calls
    std::vector<int32_t> window_;        // sorted copy of the penalty window
    bool sorted_ = false;                // candidates_ is in best-first order

    void apply_penalties(const SamplingSettings& settings, std::span<const int32_t> recent_tokens);
    void mask_eos_tokens();
    void truncate(const SamplingSettings& settings, double temperature);
    float max_logit() const;
    double weight_sum(float max_logit, double temperature) const;
    void report(Sample& out, size_t n_probs, float max_logit, double temperature, double total);
};

// Stop strings are matched on the decoded text, because one stop string can be spelled by many
// different token sequences. Feed every text delta of a generation; the matcher returns what can be
// shown now and holds back a tail that might be the start of a stop string. When a stop string is
// completed, the text before it is returned, `stopped` is set, and the stop string and everything
// after it are dropped (never shown). The earliest occurrence of any stop string wins.
// Given valid UTF-8 stop strings and text, the cuts always fall on character boundaries.
class StopStringMatcher {
public:
    // Throws Error(InvalidArgument) for an empty stop string. No stop strings = pass-through.
    explicit StopStringMatcher(std::vector<std::string> stop_strings);

    struct Result {
        std::string text;      // safe to show now
        bool stopped = false;  // a stop string was completed: end the generation
    };
    // After a stop, returns empty results with stopped = true.
    Result feed(std::string_view delta);
    // End of generation without a stop: the held-back text, which turned out to be ordinary text.
    std::string flush();
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace lantern
