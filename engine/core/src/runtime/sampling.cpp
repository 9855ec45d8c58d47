// runtime/sampling.cpp — the sampler chain, its PRNG, the settings slot and stop-string matching.
// The semantics (order of the chain, ties, edge cases) are specified in lantern/sampling.h.
#include "lantern/sampling.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "lantern/error.h"

namespace lantern {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
constexpr float kPlusInfinity = std::numeric_limits<float>::infinity();

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCode::InvalidArgument, message);
}

// For fixed messages only: per-token checks build their message after the test fails, since
// formatting it on every call would cost more than the whole sampler.
void require(bool ok, const char* message) {
    if (!ok) invalid(message);
}

template <typename T>
void require_field(bool ok, const char* field, T value, const char* expected) {
    if (!ok)
        invalid(std::string("sampling setting ") + field + " = " + std::to_string(value) +
                " is out of range (" + expected + ")");
}

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

SamplingSettings validated(SamplingSettings settings) {
    validate(settings);
    return settings;
}

// Unnormalised probability of a logit relative to the largest one: exp((l - max) / T). Working
// from the difference keeps it in [0, 1] for any temperature, where logit / T alone could overflow.
double weight(float logit, float max_logit, double temperature) {
    return std::exp((static_cast<double>(logit) - static_cast<double>(max_logit)) / temperature);
}

}  // namespace

void validate(const SamplingSettings& s) {
    require_field(std::isfinite(s.temperature) && s.temperature >= 0.0f, "temperature", s.temperature,
                  "a finite number >= 0");
    require_field(s.top_k >= 0, "top_k", s.top_k, ">= 0");
    require_field(s.top_p >= 0.0f && s.top_p <= 1.0f, "top_p", s.top_p, "0 to 1");
    require_field(s.min_p >= 0.0f && s.min_p <= 1.0f, "min_p", s.min_p, "0 to 1");
    require_field(std::isfinite(s.repeat_penalty) && s.repeat_penalty > 0.0f, "repeat_penalty",
                  s.repeat_penalty, "a finite number > 0");
    require_field(std::isfinite(s.presence_penalty), "presence_penalty", s.presence_penalty,
                  "a finite number");
    require_field(std::isfinite(s.frequency_penalty), "frequency_penalty", s.frequency_penalty,
                  "a finite number");
    require_field(s.penalty_last_n >= -1, "penalty_last_n", s.penalty_last_n, ">= -1");
    require_field(s.max_new_tokens >= 0, "max_new_tokens", s.max_new_tokens, ">= 0");
    require_field(s.n_probs >= 0, "n_probs", s.n_probs, ">= 0");
    for (const std::string& stop : s.stop)
        require(!stop.empty(), "sampling setting stop contains an empty string (it would stop at once)");
}

// ---------------------------------------------------------------------------------------------
// SettingsSlot

SettingsSlot::SettingsSlot() : SettingsSlot(SamplingSettings{}) {}

SettingsSlot::SettingsSlot(SamplingSettings initial)
    : current_(std::make_shared<const SamplingSettings>(validated(std::move(initial)))) {}

// The shared_ptr overloads of std::atomic_load/std::atomic_store are deprecated in C++20 in
// favour of std::atomic<std::shared_ptr>, which we avoid (see the header); they remain correct.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

void SettingsSlot::store(SamplingSettings settings) {
    // The snapshot is built completely before it is published, so a reader sees all or nothing.
    std::atomic_store(&current_, std::make_shared<const SamplingSettings>(validated(std::move(settings))));
}

std::shared_ptr<const SamplingSettings> SettingsSlot::load() const {
    return std::atomic_load(&current_);
}

#pragma GCC diagnostic pop

// ---------------------------------------------------------------------------------------------
// Rng

Rng::Rng(uint64_t seed) {
    // SplitMix64 is a bijection of its counter, so the four words are never all zero (the one
    // state xoshiro cannot leave).
    uint64_t state = seed;
    for (uint64_t& word : s_) word = splitmix64(state);
}

uint64_t Rng::next() {
    const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
}

double Rng::next_double() {
    return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

// ---------------------------------------------------------------------------------------------
// Sampler

Sampler::Sampler(uint64_t seed) : seed_(seed), rng_(seed) {}

void Sampler::set_eos_tokens(std::vector<int32_t> ids) {
    eos_tokens_ = std::move(ids);
}

uint64_t Sampler::random_seed() {
    // Two seeds asked for within one clock tick must still differ.
    static std::atomic<uint64_t> calls{0};
    uint64_t state =
        static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
    state ^= calls.fetch_add(1) * 0xd1b54a32d192ed03ULL;
    try {
        std::random_device device;
        state ^= (static_cast<uint64_t>(device()) << 32) ^ device();
    } catch (const std::exception&) {
        // No entropy source: the clock and the counter alone still give distinct seeds.
    }
    return splitmix64(state);
}

void Sampler::apply_penalties(const SamplingSettings& settings, std::span<const int32_t> recent_tokens) {
    const bool any = settings.repeat_penalty != 1.0f || settings.presence_penalty != 0.0f ||
                     settings.frequency_penalty != 0.0f;
    const size_t n = settings.penalty_last_n < 0
                         ? recent_tokens.size()
                         : std::min(recent_tokens.size(), static_cast<size_t>(settings.penalty_last_n));
    if (!any || n == 0) return;

    // Counting by sorting the (small) window keeps the work proportional to the window, not to
    // the vocabulary, and needs no hash map.
    window_.assign(recent_tokens.end() - static_cast<std::ptrdiff_t>(n), recent_tokens.end());
    std::sort(window_.begin(), window_.end());
    const auto vocab = static_cast<int64_t>(candidates_.size());
    for (size_t i = 0; i < n;) {
        const int32_t id = window_[i];
        size_t j = i;
        while (j < n && window_[j] == id) ++j;
        const size_t count = j - i;
        i = j;
        if (id < 0 || id >= vocab)
            invalid("sampling: recent token id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(vocab));
        // candidates_ is still indexed by token id here.
        float& logit = candidates_[static_cast<size_t>(id)].logit;
        if (settings.repeat_penalty != 1.0f)
            logit = logit > 0.0f ? logit / settings.repeat_penalty : logit * settings.repeat_penalty;
        logit -= static_cast<float>(count) * settings.frequency_penalty + settings.presence_penalty;
    }
}

void Sampler::mask_eos_tokens() {
    for (int32_t id : eos_tokens_) {
        if (id < 0 || static_cast<size_t>(id) >= candidates_.size())
            invalid("sampling: end-of-generation token id " + std::to_string(id) +
                    " is outside the vocabulary of " + std::to_string(candidates_.size()));
        candidates_[static_cast<size_t>(id)].logit = kMinusInfinity;
    }
}

float Sampler::max_logit() const {
    if (sorted_) return candidates_.front().logit;
    float best = kMinusInfinity;
    for (const Candidate& c : candidates_) best = std::max(best, c.logit);
    return best;
}

double Sampler::weight_sum(float max, double temperature) const {
    // Summed in the current candidate order: the draw walks the same order, so its running sum
    // ends exactly at this total.
    double total = 0.0;
    for (const Candidate& c : candidates_) total += weight(c.logit, max, temperature);
    return total;
}

namespace {
// Best first: higher logit, then lower token id. Every tie rule of the chain comes from this.
struct RanksBefore {
    template <typename C>
    bool operator()(const C& a, const C& b) const {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    }
};
}  // namespace

void Sampler::truncate(const SamplingSettings& settings, double temperature) {
    const size_t k = static_cast<size_t>(settings.top_k);
    if (k > 0 && k < candidates_.size()) {
        std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(k),
                          candidates_.end(), RanksBefore{});
        candidates_.resize(k);
        sorted_ = true;
    }

    if (settings.top_p < 1.0f) {
        const float max = max_logit();
        const double total = weight_sum(max, temperature);
        const double threshold = static_cast<double>(settings.top_p) * total;
        const auto first = candidates_.begin();
        auto sorted_end = candidates_.end();
        if (!sorted_) {
            // Tokens lighter than (1 - top_p) * total / n weigh less than (1 - top_p) * total all
            // together, so the heavier ones already reach top_p and the nucleus ends among them:
            // only those need ordering, usually a small part of the vocabulary. (Compared in the
            // log domain to spare an exp per token.)
            const double n = static_cast<double>(candidates_.size());
            const double log_light = std::log((1.0 - static_cast<double>(settings.top_p)) * total / n);
            sorted_end = std::partition(first, candidates_.end(), [&](const Candidate& c) {
                return (static_cast<double>(c.logit) - max) / temperature >= log_light;
            });
            std::sort(first, sorted_end, RanksBefore{});
        }
        size_t keep = candidates_.size();
        double cumulative = 0.0;
        for (auto it = first; it != candidates_.end(); ++it) {
            if (it == sorted_end)  // rounding left the heavy tokens just short: order the rest too
                std::sort(it, candidates_.end(), RanksBefore{});
            cumulative += weight(it->logit, max, temperature);
            if (cumulative >= threshold) {
                keep = static_cast<size_t>(it - first) + 1;
                break;
            }
        }
        candidates_.resize(keep);
        sorted_ = true;  // the kept tokens are a sorted prefix
    }

    if (settings.min_p > 0.0f) {
        // p_i / p_max = exp((l_i - l_max) / T) >= min_p, compared in the log domain to spare an
        // exp per token. The best token always passes since min_p <= 1; ties with it too.
        const double max = max_logit();
        const double log_min_p = std::log(static_cast<double>(settings.min_p));
        std::erase_if(candidates_, [&](const Candidate& c) {
            return (static_cast<double>(c.logit) - max) / temperature < log_min_p;
        });
    }
}

void Sampler::report(Sample& out, size_t n_probs, float max, double temperature, double total) {
    const size_t count = std::min(n_probs, candidates_.size());
    if (count == 0) return;
    if (!sorted_)
        std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(count),
                          candidates_.end(), RanksBefore{});
    out.candidates.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        const Candidate& c = candidates_[i];
        out.candidates.push_back({c.id, static_cast<float>(weight(c.logit, max, temperature) / total)});
    }
}

Sample Sampler::sample(std::span<const float> logits, const SamplingSettings& settings,
                       std::span<const int32_t> recent_tokens) {
    validate(settings);
    require(!logits.empty(), "sampling: the logits are empty");
    require(logits.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
            "sampling: more logits than token ids can address");

    // The one copy of the vocabulary; everything after works on it in place.
    candidates_.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        if (std::isnan(logits[i]) || logits[i] == kPlusInfinity)
            invalid("sampling: the logit of token " + std::to_string(i) + " is not a finite number");
        candidates_[i] = {static_cast<int32_t>(i), logits[i]};
    }
    sorted_ = false;

    apply_penalties(settings, recent_tokens);
    if (settings.ignore_eos) mask_eos_tokens();

    // Best token after the penalties: the greedy choice, and the reference for every softmax.
    Candidate best{0, kMinusInfinity};
    for (const Candidate& c : candidates_) {
        if (std::isnan(c.logit) || c.logit == kPlusInfinity)
            invalid("sampling: the penalised logit of token " + std::to_string(c.id) +
                    " is not a finite number");
        if (c.logit > best.logit) best = c;  // strict: the lowest id wins a tie
    }
    require(best.logit != kMinusInfinity, "sampling: every token is masked (all logits are -inf)");

    Sample out;
    const size_t n_probs = static_cast<size_t>(settings.n_probs);
    if (settings.temperature == 0.0f) {
        const double total = weight_sum(best.logit, 1.0);
        out.token = best.id;
        out.probability = static_cast<float>(weight(best.logit, best.logit, 1.0) / total);
        report(out, n_probs, best.logit, 1.0, total);
        return out;
    }

    const double temperature = settings.temperature;
    truncate(settings, temperature);

    const float max = max_logit();
    const double total = weight_sum(max, temperature);
    const double target = rng_.next_double() * total;
    double cumulative = 0.0;
    const Candidate* chosen = nullptr;
    for (const Candidate& c : candidates_) {
        const double w = weight(c.logit, max, temperature);
        if (w == 0.0) continue;
        chosen = &c;
        cumulative += w;
        // When u * total rounds up to total itself, no running sum exceeds it: the last token
        // with a non-zero weight is the right answer then.
        if (cumulative > target) break;
    }
    out.token = chosen->id;
    out.probability = static_cast<float>(weight(chosen->logit, max, temperature) / total);
    report(out, n_probs, max, temperature, total);
    return out;
}

// ---------------------------------------------------------------------------------------------
// StopStringMatcher

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings)
    : stops_(std::move(stop_strings)) {
    for (const std::string& stop : stops_)
        require(!stop.empty(), "stop strings must not be empty (an empty one would stop at once)");
}

StopStringMatcher::Result StopStringMatcher::feed(std::string_view delta) {
    if (stopped_) return {{}, true};
    held_.append(delta);

    // held_ starts right after the last text shown, and every stop string that could still be
    // completed starts inside it, so searching held_ alone finds the earliest one.
    size_t first = std::string::npos;
    for (const std::string& stop : stops_) first = std::min(first, held_.find(stop));
    if (first != std::string::npos) {
        Result result{held_.substr(0, first), true};
        held_.clear();
        stopped_ = true;
        return result;
    }

    // Hold back the longest tail that is the beginning of some stop string.
    size_t hold = 0;
    for (const std::string& stop : stops_) {
        for (size_t length = std::min(stop.size() - 1, held_.size()); length > hold; --length) {
            if (held_.compare(held_.size() - length, length, stop, 0, length) == 0) {
                hold = length;
                break;
            }
        }
    }
    Result result{held_.substr(0, held_.size() - hold), false};
    held_.erase(0, held_.size() - hold);
    return result;
}

std::string StopStringMatcher::flush() {
    std::string rest;
    rest.swap(held_);
    return rest;
}

}  // namespace lantern
