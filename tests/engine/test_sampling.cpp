// Sampler chain, PRNG, settings slot and stop strings (issue 6). Expected numbers were computed
// by hand / with an independent Python script, never by the code under test.
#include <QTest>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lantern/error.h"
#include "lantern/sampling.h"

using namespace lantern;

namespace {

// No truncation, temperature 1, every survivor reported: each test switches on what it examines.
SamplingSettings plain() {
    SamplingSettings s;
    s.temperature = 1.0f;
    s.top_k = 0;
    s.top_p = 1.0f;
    s.min_p = 0.0f;
    s.n_probs = 1000;
    return s;
}

std::vector<int32_t> ids(const Sample& sample) {
    std::vector<int32_t> out;
    for (const TokenProbability& c : sample.candidates) out.push_back(c.id);
    return out;
}

float probability_of(const Sample& sample, int32_t id) {
    for (const TokenProbability& c : sample.candidates)
        if (c.id == id) return c.probability;
    return -1.0f;
}

// Logits whose softmax (temperature 1) is exactly the given distribution, up to float rounding.
std::vector<float> logits_for(const std::vector<double>& probabilities) {
    std::vector<float> out;
    for (double p : probabilities) out.push_back(static_cast<float>(std::log(p)));
    return out;
}

bool throws_invalid_argument(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.code() == ErrorCode::InvalidArgument;
    }
    return false;
}

// Pearson's chi-square statistic of observed counts against expected probabilities.
double chi_square(const std::vector<int>& observed, const std::vector<double>& expected, int draws) {
    double statistic = 0.0;
    for (size_t i = 0; i < observed.size(); ++i) {
        const double e = expected[i] * draws;
        statistic += (observed[i] - e) * (observed[i] - e) / e;
    }
    return statistic;
}

}  // namespace

class TestSampling : public QObject {
    Q_OBJECT

private slots:
    // ---- PRNG -----------------------------------------------------------------------------
    void prngKnownOutputs() {
        // SplitMix64 seeding + xoshiro256**, values from an independent Python implementation
        // (whose SplitMix64 reproduces the published stream e220a8397b1dcdaf, 6e789e6aa1b965f4...).
        Rng zero(0);
        QCOMPARE(zero.next(), 0x99ec5f36cb75f2b4ULL);
        QCOMPARE(zero.next(), 0xbf6e1f784956452aULL);
        QCOMPARE(zero.next(), 0x1a5f849d4933e6e0ULL);
        Rng forty_two(42);
        QCOMPARE(forty_two.next(), 0x15780b2e0c2ec716ULL);
        QCOMPARE(forty_two.next(), 0x6104d9866d113a7eULL);
        // (0xbe6a36374160d49b >> 11) * 2^-53
        Rng doubles(12345);
        QCOMPARE(doubles.next_double(), 0.7438081631565894);
    }

    void prngReproducible() {
        Rng a(2024), b(2024), c(2025);
        bool all_same = true, any_differs = false, in_range = true;
        for (int i = 0; i < 1000; ++i) {
            const uint64_t x = a.next(), y = b.next(), z = c.next();
            all_same = all_same && x == y;
            any_differs = any_differs || x != z;
            const double u = a.next_double();
            b.next_double();
            c.next_double();
            in_range = in_range && u >= 0.0 && u < 1.0;
        }
        QVERIFY(all_same);
        QVERIFY(any_differs);
        QVERIFY(in_range);
    }

    void samplerReproducible() {
        const std::vector<float> logits{0.3f, 1.2f, -0.5f, 0.9f, 0.0f, 1.1f, 0.2f};
        SamplingSettings s = plain();
        s.temperature = 1.3f;
        s.top_k = 5;
        s.top_p = 0.9f;
        Sampler a(99), b(99), c(100);
        QCOMPARE(a.seed(), uint64_t{99});
        std::vector<int32_t> ta, tb, tc;
        for (int i = 0; i < 300; ++i) {
            ta.push_back(a.sample(logits, s, ta).token);
            tb.push_back(b.sample(logits, s, tb).token);
            tc.push_back(c.sample(logits, s, tc).token);
        }
        QVERIFY(ta == tb);
        QVERIFY(ta != tc);
        QVERIFY(Sampler::random_seed() != Sampler::random_seed());
    }

    void drawFollowsDocumentedRule() {
        // Without truncation the candidates stay in id order; the token is the first whose
        // running probability exceeds u, u being the Rng's next_double() for the same seed.
        const std::vector<double> p{0.1, 0.4, 0.2, 0.3};
        const std::vector<float> logits = logits_for(p);
        Sampler sampler(7);
        Rng rng(7);
        for (int i = 0; i < 2000; ++i) {
            const double u = rng.next_double();
            int32_t expected = 0;
            double cumulative = 0.0;
            for (int32_t id = 0; id < 4; ++id) {
                cumulative += p[static_cast<size_t>(id)];
                if (cumulative > u) {
                    expected = id;
                    break;
                }
            }
            QCOMPARE(sampler.sample(logits, plain(), {}).token, expected);
        }
    }

    void greedyDrawsNoRandomNumber() {
        const std::vector<float> logits{0.1f, 0.5f, 0.3f};
        SamplingSettings greedy = plain();
        greedy.temperature = 0.0f;
        Sampler a(5), b(5);
        a.sample(logits, greedy, {});
        a.sample(logits, greedy, {});
        for (int i = 0; i < 50; ++i)
            QCOMPARE(a.sample(logits, plain(), {}).token, b.sample(logits, plain(), {}).token);
    }

    // ---- greedy and temperature ------------------------------------------------------------
    void greedyTieGoesToLowestId() {
        SamplingSettings s = plain();
        s.temperature = 0.0f;
        Sampler sampler(1);
        QCOMPARE(sampler.sample(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}, s, {}).token, 1);
        QCOMPARE(sampler.sample(std::vector<float>{3.0f, 1.0f, 3.0f}, s, {}).token, 0);
        QCOMPARE(sampler.sample(std::vector<float>{-2.0f, -2.0f, -2.0f, -2.0f}, s, {}).token, 0);
        // Greedy ignores the truncation settings (the argmax survives all of them).
        s.top_k = 1;
        s.top_p = 0.1f;
        s.min_p = 0.9f;
        QCOMPARE(sampler.sample(std::vector<float>{0.0f, 0.0f, 5.0f}, s, {}).token, 2);
    }

    void greedyReportsTemperatureOneProbabilities() {
        SamplingSettings s = plain();
        s.temperature = 0.0f;
        s.n_probs = 2;
        Sampler sampler(1);
        const Sample out = sampler.sample(std::vector<float>{1.0f, 2.0f, 3.0f}, s, {});
        QCOMPARE(out.token, 2);
        // softmax{1,2,3} = {0.0900306, 0.2447285, 0.6652410}
        QCOMPARE(ids(out), (std::vector<int32_t>{2, 1}));
        QVERIFY(std::abs(out.probability - 0.6652410f) < 1e-6f);
        QVERIFY(std::abs(out.candidates[1].probability - 0.2447285f) < 1e-6f);
    }

    void temperatureScaling() {
        Sampler sampler(1);
        SamplingSettings s = plain();
        const std::vector<float> logits{1.0f, 2.0f, 3.0f};
        // softmax({1,2,3} / 2) and softmax({1,2,3} / 0.5), computed independently.
        s.temperature = 2.0f;
        Sample hot = sampler.sample(logits, s, {});
        QCOMPARE(ids(hot), (std::vector<int32_t>{2, 1, 0}));
        QVERIFY(std::abs(probability_of(hot, 0) - 0.1863237232f) < 1e-6f);
        QVERIFY(std::abs(probability_of(hot, 1) - 0.3071958857f) < 1e-6f);
        QVERIFY(std::abs(probability_of(hot, 2) - 0.5064803911f) < 1e-6f);
        s.temperature = 0.5f;
        Sample cold = sampler.sample(logits, s, {});
        QVERIFY(std::abs(probability_of(cold, 0) - 0.0158762400f) < 1e-6f);
        QVERIFY(std::abs(probability_of(cold, 1) - 0.1173104278f) < 1e-6f);
        QVERIFY(std::abs(probability_of(cold, 2) - 0.8668133322f) < 1e-6f);
        // The reported probability of the chosen token is the same number.
        QCOMPARE(cold.probability, probability_of(cold, cold.token));
    }

    // ---- truncation ------------------------------------------------------------------------
    void topKExactSets() {
        // Best-first order: id1 (2.0), id3 (2.0), id2 (1.0), id5 (1.0), id0 (0.5), id4 (-1.0).
        const std::vector<float> logits{0.5f, 2.0f, 1.0f, 2.0f, -1.0f, 1.0f};
        Sampler sampler(3);
        SamplingSettings s = plain();
        s.top_k = 3;  // id2 and id5 tie at third place: the lower id stays
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1, 3, 2}));
        s.top_k = 1;  // id1 and id3 tie at the top
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1}));
        s.top_k = 6;  // k == vocabulary
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1, 3, 2, 5, 0, 4}));
        s.top_k = 100;  // k > vocabulary
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1, 3, 2, 5, 0, 4}));
        s.top_k = 0;  // off
        QCOMPARE(ids(sampler.sample(logits, s, {})).size(), size_t{6});

        // Survivors are renormalised: softmax{2, 2, 1}.
        s.top_k = 3;
        const Sample out = sampler.sample(logits, s, {});
        QVERIFY(std::abs(probability_of(out, 1) - 0.4223187983f) < 1e-6f);
        QVERIFY(std::abs(probability_of(out, 3) - 0.4223187983f) < 1e-6f);
        QVERIFY(std::abs(probability_of(out, 2) - 0.1553624035f) < 1e-6f);
        QVERIFY(out.token == 1 || out.token == 3 || out.token == 2);

        // All-equal logits: the lowest ids.
        s.top_k = 2;
        QCOMPARE(ids(sampler.sample(std::vector<float>(5, 0.7f), s, {})), (std::vector<int32_t>{0, 1}));
    }

    void topPExactSets() {
        // Probabilities 0.1, 0.4, 0.2, 0.3: best first is id1, id3, id2, id0; cumulative 0.4, 0.7, 0.9, 1.
        const std::vector<float> logits = logits_for({0.1, 0.4, 0.2, 0.3});
        Sampler sampler(3);
        SamplingSettings s = plain();
        s.top_p = 0.35f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1}));
        s.top_p = 0.65f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1, 3}));
        s.top_p = 0.75f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1, 3, 2}));
        s.top_p = 0.95f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1, 3, 2, 0}));
        s.top_p = 0.0f;  // only the best token
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{1}));
        // Renormalised over {1, 3}: 0.4/0.7 and 0.3/0.7.
        s.top_p = 0.65f;
        const Sample two = sampler.sample(logits, s, {});
        QVERIFY(std::abs(probability_of(two, 1) - 0.5714286f) < 1e-5f);
        QVERIFY(std::abs(probability_of(two, 3) - 0.4285714f) < 1e-5f);

        // All-equal logits, 4 tokens: the running sum reaches exactly 0.5 at the second token
        // (inclusive), and the tie is split by id.
        const std::vector<float> equal(4, 1.5f);
        s.top_p = 0.5f;
        QCOMPARE(ids(sampler.sample(equal, s, {})), (std::vector<int32_t>{0, 1}));
        s.top_p = 0.6f;
        QCOMPARE(ids(sampler.sample(equal, s, {})), (std::vector<int32_t>{0, 1, 2}));

        // top_p = 1 keeps everything, even a token that can never be drawn.
        s.top_p = 1.0f;
        const float minus_infinity = -std::numeric_limits<float>::infinity();
        const Sample all = sampler.sample(std::vector<float>{0.0f, minus_infinity, 1.0f, 0.5f}, s, {});
        QCOMPARE(ids(all), (std::vector<int32_t>{2, 3, 0, 1}));
        QCOMPARE(probability_of(all, 1), 0.0f);
        QVERIFY(all.token != 1);
    }

    void minPExactSets() {
        // Probabilities 0.5, 0.25, 0.15, 0.1: relative to the max 1, 0.5, 0.3, 0.2.
        const std::vector<float> logits = logits_for({0.5, 0.25, 0.15, 0.1});
        Sampler sampler(3);
        SamplingSettings s = plain();
        s.min_p = 0.25f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{0, 1, 2}));
        s.min_p = 0.4f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{0, 1}));
        s.min_p = 0.6f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{0}));
        s.min_p = 0.1f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{0, 1, 2, 3}));
        // Inclusive: tokens tied with the maximum stay, even at min_p = 1.
        s.min_p = 1.0f;
        QCOMPARE(ids(sampler.sample(std::vector<float>{2.0f, 1.0f, 2.0f}, s, {})),
                 (std::vector<int32_t>{0, 2}));
        // All-equal logits: nothing is removed.
        s.min_p = 0.9f;
        QCOMPARE(ids(sampler.sample(std::vector<float>(4, -3.0f), s, {})),
                 (std::vector<int32_t>{0, 1, 2, 3}));
        // Applied after temperature: a ratio of 0.5 at T=1 becomes sqrt(0.5) = 0.707 at T=2.
        const std::vector<float> pair{0.0f, static_cast<float>(-std::log(2.0))};
        s.min_p = 0.6f;
        QCOMPARE(ids(sampler.sample(pair, s, {})), (std::vector<int32_t>{0}));
        s.temperature = 2.0f;
        QCOMPARE(ids(sampler.sample(pair, s, {})), (std::vector<int32_t>{0, 1}));
    }

    void chainOrder() {
        // 0.4, 0.3, 0.2, 0.1. top-p alone at 0.5 keeps {0, 1} (0.4 < 0.5 <= 0.7); after top-k = 2
        // the survivors are renormalised to 0.571, 0.429, so top-p = 0.5 keeps {0} alone.
        const std::vector<float> logits = logits_for({0.4, 0.3, 0.2, 0.1});
        Sampler sampler(3);
        SamplingSettings s = plain();
        s.top_p = 0.5f;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{0, 1}));
        s.top_k = 2;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{0}));
        // n_probs smaller than the survivors: the most likely ones.
        s.top_k = 0;
        s.top_p = 1.0f;
        s.n_probs = 2;
        QCOMPARE(ids(sampler.sample(logits, s, {})), (std::vector<int32_t>{0, 1}));
        s.n_probs = 0;
        QVERIFY(sampler.sample(logits, s, {}).candidates.empty());
    }

    void truncationMatchesStraightforwardReference() {
        // The sampler orders only what it must (partial sorts, a prefilter before top-p); a
        // direct transcription of the documented rules (sort everything, cut) must agree.
        Rng random(77);
        auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * random.next_double(); };
        const float minus_infinity = -std::numeric_limits<float>::infinity();
        int checked = 0;
        for (int round = 0; round < 400; ++round) {
            const size_t vocab = 1 + static_cast<size_t>(random.next() % 300);
            std::vector<float> logits(vocab);
            for (float& l : logits) {
                // Half-steps make ties common; a few tokens are masked.
                l = static_cast<float>(std::round(uniform(-12.0, 12.0) * 2.0) / 2.0);
                if (random.next() % 20 == 0) l = minus_infinity;
            }
            logits[random.next() % vocab] = 3.0f;  // at least one token can be drawn
            SamplingSettings s = plain();
            s.temperature = static_cast<float>(uniform(0.2, 2.5));
            s.top_k = random.next() % 3 == 0 ? 0 : static_cast<int32_t>(random.next() % (vocab + 3));
            s.top_p = random.next() % 3 == 0 ? 1.0f : static_cast<float>(uniform(0.0, 1.0));
            s.min_p = random.next() % 3 == 0 ? 0.0f : static_cast<float>(uniform(0.0, 0.5));
            s.n_probs = static_cast<int32_t>(vocab);

            std::vector<int32_t> order(vocab);
            for (size_t i = 0; i < vocab; ++i) order[i] = static_cast<int32_t>(i);
            auto logit = [&](int32_t id) { return static_cast<double>(logits[static_cast<size_t>(id)]); };
            std::stable_sort(order.begin(), order.end(),
                             [&](int32_t a, int32_t b) { return logit(a) > logit(b); });
            if (s.top_k > 0 && static_cast<size_t>(s.top_k) < order.size())
                order.resize(static_cast<size_t>(s.top_k));
            const double t = s.temperature, best = logit(order.front());
            auto w = [&](int32_t id) { return std::exp((logit(id) - best) / t); };
            if (s.top_p < 1.0f) {
                double total = 0.0;
                for (int32_t id : order) total += w(id);
                double cumulative = 0.0;
                for (size_t i = 0; i < order.size(); ++i) {
                    cumulative += w(order[i]);
                    if (cumulative >= s.top_p * total) {
                        order.resize(i + 1);
                        break;
                    }
                }
            }
            std::erase_if(order, [&](int32_t id) { return w(id) < s.min_p; });
            double total = 0.0;
            for (int32_t id : order) total += w(id);

            Sampler sampler(static_cast<uint64_t>(round));
            const Sample out = sampler.sample(logits, s, {});
            if (ids(out) != order) {
                qWarning("round %d: vocab %zu T %.3f k %d p %.4f min_p %.4f: %zu survivors, expected %zu",
                         round, vocab, t, s.top_k, double(s.top_p), double(s.min_p), out.candidates.size(),
                         order.size());
                QFAIL("survivors differ from the reference");
            }
            for (const TokenProbability& c : out.candidates)
                QVERIFY(std::abs(c.probability - w(c.id) / total) < 1e-6);
            ++checked;
        }
        QCOMPARE(checked, 400);
    }

    // ---- penalties -------------------------------------------------------------------------
    void penaltiesNumerically() {
        const std::vector<float> logits{2.0f, -1.0f, 0.5f, 3.0f, 0.0f};
        const std::vector<int32_t> recent{0, 1, 0, 3, 3, 3};
        SamplingSettings s = plain();
        s.temperature = 0.0f;  // greedy reports softmax(penalised logits)
        s.repeat_penalty = 1.5f;
        s.frequency_penalty = 0.1f;
        s.presence_penalty = 0.2f;
        // By hand:
        //   id0 (2 times): 2 / 1.5 - (2 * 0.1 + 0.2) = 0.933333
        //   id1 (once):   -1 * 1.5 - (0.1 + 0.2)     = -1.8
        //   id2, id4 unchanged: 0.5, 0
        //   id3 (3 times): 3 / 1.5 - (3 * 0.1 + 0.2) = 1.5
        auto check = [&](const std::vector<int32_t>& window, const std::vector<double>& expected) {
            Sampler sampler(1);
            const Sample out = sampler.sample(logits, s, window);
            // log(p_i / p_4) = l_i - l_4: the softmax's constant cancels out.
            for (int32_t id = 0; id < 5; ++id) {
                const double difference = std::log(static_cast<double>(probability_of(out, id))) -
                                          std::log(static_cast<double>(probability_of(out, 4)));
                const double want = expected[static_cast<size_t>(id)] - expected[4];
                if (std::abs(difference - want) > 1e-5) {
                    qWarning("token %d: penalised logit difference %.7f, expected %.7f", id, difference,
                             want);
                    return false;
                }
            }
            return true;
        };
        s.penalty_last_n = 64;
        QVERIFY(check(recent, {0.9333333, -1.8, 0.5, 1.5, 0.0}));
        s.penalty_last_n = -1;
        QVERIFY(check(recent, {0.9333333, -1.8, 0.5, 1.5, 0.0}));
        // Only the last two tokens (3, 3): 3 / 1.5 - (2 * 0.1 + 0.2) = 1.6.
        s.penalty_last_n = 2;
        QVERIFY(check(recent, {2.0, -1.0, 0.5, 1.6, 0.0}));
        s.penalty_last_n = 0;
        QVERIFY(check(recent, {2.0, -1.0, 0.5, 3.0, 0.0}));
        // A zero logit is multiplied (stays 0) before the additive part: 0 - (0.1 + 0.2) = -0.3;
        // compared against id2 untouched.
        s.penalty_last_n = 64;
        {
            Sampler sampler(1);
            const Sample out = sampler.sample(logits, s, std::vector<int32_t>{4});
            const double difference = std::log(static_cast<double>(probability_of(out, 4))) -
                                      std::log(static_cast<double>(probability_of(out, 2)));
            QVERIFY(std::abs(difference - (-0.3 - 0.5)) < 1e-5);
        }
        // The repetition penalty alone changes the greedy choice: 3 / 2 = 1.5 < 2.
        SamplingSettings repeat = plain();
        repeat.temperature = 0.0f;
        repeat.repeat_penalty = 2.0f;
        Sampler sampler(1);
        QCOMPARE(sampler.sample(logits, repeat, std::vector<int32_t>{3}).token, 0);
        QCOMPARE(sampler.sample(logits, repeat, std::vector<int32_t>{}).token, 3);
        // A negative presence penalty encourages: 0.5 + 3 = 3.5 > 3.
        SamplingSettings encourage = plain();
        encourage.temperature = 0.0f;
        encourage.presence_penalty = -3.0f;
        QCOMPARE(sampler.sample(logits, encourage, std::vector<int32_t>{2}).token, 2);
    }

    void ignoreEos() {
        const std::vector<float> logits{0.1f, 0.2f, 5.0f, 0.3f};
        SamplingSettings s = plain();
        s.temperature = 0.0f;
        Sampler sampler(1);
        sampler.set_eos_tokens({2});
        QCOMPARE(sampler.sample(logits, s, {}).token, 2);
        s.ignore_eos = true;
        QCOMPARE(sampler.sample(logits, s, {}).token, 3);
        s.temperature = 1.0f;
        bool never_eos = true;
        for (int i = 0; i < 500; ++i) never_eos = never_eos && sampler.sample(logits, s, {}).token != 2;
        QVERIFY(never_eos);
        sampler.set_eos_tokens({7});
        QVERIFY(throws_invalid_argument([&] { sampler.sample(logits, s, {}); }));
    }

    // ---- statistics ------------------------------------------------------------------------
    void chiSquareFullDistribution() {
        const std::vector<float> logits{1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.0f};
        // softmax(logits), computed independently.
        const std::vector<double> expected{0.15439846129297186,  0.41969853167472265, 0.09364740058664171,
                                           0.020895559490381528, 0.2545600272970931,  0.05680001965818906};
        const int draws = 100000;
        std::vector<int> counts(6, 0);
        Sampler sampler(42);
        for (int i = 0; i < draws; ++i)
            ++counts[static_cast<size_t>(sampler.sample(logits, plain(), {}).token)];
        const double statistic = chi_square(counts, expected, draws);
        qInfo("chi-square %.3f with 5 degrees of freedom (critical value at p = 0.001: 20.515)", statistic);
        QVERIFY(statistic < 20.515);
    }

    void chiSquareAfterTruncation() {
        // top-k 4 keeps ids 1, 4, 0, 2; at T = 0.7 their probabilities relative to the best are
        // 1, 0.4895, 0.2397, 0.1173, so min-p 0.2 removes id 2. Renormalised softmax(l / 0.7) of
        // ids 1, 4, 0: computed independently below as exp(l / 0.7) shares.
        const std::vector<float> logits{1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.0f};
        SamplingSettings s = plain();
        s.temperature = 0.7f;
        s.top_k = 4;
        s.min_p = 0.2f;
        const double w1 = std::exp(2.0 / 0.7), w4 = std::exp(1.5 / 0.7), w0 = std::exp(1.0 / 0.7);
        const double total = w1 + w4 + w0;
        const std::vector<double> expected{w1 / total, w4 / total, w0 / total};
        const int draws = 100000;
        std::vector<int> counts(3, 0);
        int outside = 0;
        Sampler sampler(20240601);
        for (int i = 0; i < draws; ++i) {
            const int32_t token = sampler.sample(logits, s, {}).token;
            if (token == 1)
                ++counts[0];
            else if (token == 4)
                ++counts[1];
            else if (token == 0)
                ++counts[2];
            else
                ++outside;
        }
        QCOMPARE(outside, 0);
        const double statistic = chi_square(counts, expected, draws);
        qInfo("chi-square %.3f with 2 degrees of freedom (critical value at p = 0.001: 13.816)", statistic);
        QVERIFY(statistic < 13.816);
    }

    // ---- settings ----------------------------------------------------------------------------
    void validation() {
        const std::vector<float> logits{0.0f, 1.0f};
        Sampler sampler(1);
        auto rejected = [&](auto change) {
            SamplingSettings s = plain();
            change(s);
            return throws_invalid_argument([&] { validate(s); }) &&
                   throws_invalid_argument([&] { sampler.sample(logits, s, {}); });
        };
        QVERIFY(rejected([](SamplingSettings& s) { s.temperature = -0.1f; }));
        QVERIFY(rejected([](SamplingSettings& s) { s.temperature = std::nanf(""); }));
        QVERIFY(rejected([](SamplingSettings& s) { s.top_k = -1; }));
        QVERIFY(rejected([](SamplingSettings& s) { s.top_p = 1.5f; }));
        QVERIFY(rejected([](SamplingSettings& s) { s.min_p = -0.1f; }));
        QVERIFY(rejected([](SamplingSettings& s) { s.repeat_penalty = 0.0f; }));
        QVERIFY(rejected(
            [](SamplingSettings& s) { s.frequency_penalty = std::numeric_limits<float>::infinity(); }));
        QVERIFY(rejected([](SamplingSettings& s) { s.penalty_last_n = -2; }));
        QVERIFY(rejected([](SamplingSettings& s) { s.stop = {"ok", ""}; }));
        validate(SamplingSettings{});

        SamplingSettings s = plain();
        QVERIFY(throws_invalid_argument([&] { sampler.sample(std::vector<float>{}, s, {}); }));
        QVERIFY(throws_invalid_argument([&] {
            sampler.sample(std::vector<float>{0.0f, std::nanf("")}, s, {});
        }));
        const float minus_infinity = -std::numeric_limits<float>::infinity();
        QVERIFY(throws_invalid_argument([&] {
            sampler.sample(std::vector<float>{minus_infinity, minus_infinity}, s, {});
        }));
        s.repeat_penalty = 1.2f;
        QVERIFY(throws_invalid_argument([&] { sampler.sample(logits, s, std::vector<int32_t>{5}); }));

        SettingsSlot slot;
        SamplingSettings bad = plain();
        bad.top_p = 2.0f;
        QVERIFY(throws_invalid_argument([&] { slot.store(bad); }));
        QVERIFY(*slot.load() == SamplingSettings{});
    }

    void settingsEquality() {
        SamplingSettings a, b;
        QVERIFY(a == b);
        b.stop.push_back("###");
        QVERIFY(!(a == b));
        b = a;
        b.seed = 3;
        QVERIFY(!(a == b));
    }

    void settingsSlotConcurrent() {
        // The writer stores settings whose fields all encode one number; the reader checks that
        // every snapshot is whole (all fields agree) and that snapshots never go back in time.
        auto make = [](int i) {
            SamplingSettings s;
            s.temperature = static_cast<float>(i);
            s.top_k = i;
            s.n_probs = i;
            s.seed = static_cast<uint64_t>(i);
            s.stop = {std::string(static_cast<size_t>(i % 13) + 1, 'x') + std::to_string(i)};
            return s;
        };
        SettingsSlot slot(make(0));
        constexpr int kStores = 20000;
        std::atomic<bool> done{false};
        std::thread writer([&] {
            for (int i = 1; i <= kStores; ++i) slot.store(make(i));
            done = true;
        });
        int torn = 0, backwards = 0, last = 0, reads = 0;
        auto read_once = [&] {
            const std::shared_ptr<const SamplingSettings> s = slot.load();
            const int i = s->top_k;
            if (!(*s == make(i))) ++torn;
            if (i < last) ++backwards;
            last = i;
            ++reads;
        };
        while (!done) read_once();
        read_once();
        writer.join();
        QCOMPARE(torn, 0);
        QCOMPARE(backwards, 0);
        QCOMPARE(last, kStores);
        qInfo("%d snapshots read while %d were stored", reads, kStores);
    }

    // ---- stop strings ------------------------------------------------------------------------
    void stopStringSplitAcrossDeltas() {
        StopStringMatcher m({"</s>"});
        auto r = m.feed("Hello <");
        QCOMPARE(r.text, std::string("Hello "));
        QVERIFY(!r.stopped);
        r = m.feed("/");
        QCOMPARE(r.text, std::string());
        r = m.feed("s>tail");
        QCOMPARE(r.text, std::string());
        QVERIFY(r.stopped);
        QVERIFY(m.stopped());
        r = m.feed("more");
        QVERIFY(r.stopped);
        QCOMPARE(r.text, std::string());
        QCOMPARE(m.flush(), std::string());
    }

    void stopStringPrefixThatIsNotAStop() {
        StopStringMatcher m({"</s>"});
        QCOMPARE(m.feed("a <").text, std::string("a "));
        const auto r = m.feed("/b> c");
        QCOMPARE(r.text, std::string("</b> c"));
        QVERIFY(!r.stopped);
        QCOMPARE(m.feed("x</").text, std::string("x"));
        QCOMPARE(m.flush(), std::string("</"));  // the generation ended: it was ordinary text
        QVERIFY(!m.stopped());
    }

    void stopStringMultiple() {
        StopStringMatcher m({"\nUser:", "###"});
        QCOMPARE(m.feed("Answer\nUs").text, std::string("Answer"));
        QCOMPARE(m.feed("e").text, std::string());
        QCOMPARE(m.feed("d ##").text, std::string("\nUsed "));
        const auto r = m.feed("# next");
        QVERIFY(r.stopped);
        QCOMPARE(r.text, std::string());

        // The earliest occurrence wins, whichever stop string it is.
        StopStringMatcher earliest({"bc", "ab"});
        const auto e = earliest.feed("xabc");
        QVERIFY(e.stopped);
        QCOMPARE(e.text, std::string("x"));

        // A stop string that overlaps itself.
        StopStringMatcher overlap({"abc"});
        QCOMPARE(overlap.feed("abab").text, std::string("ab"));
        const auto o = overlap.feed("c");
        QVERIFY(o.stopped);
        QCOMPARE(o.text, std::string());
    }

    void stopStringAtVeryStart() {
        StopStringMatcher m({"###"});
        const auto r = m.feed("###hi");
        QVERIFY(r.stopped);
        QCOMPARE(r.text, std::string());

        StopStringMatcher split({"###"});
        QCOMPARE(split.feed("#").text, std::string());
        QVERIFY(split.feed("##").stopped);
    }

    void stopStringUtf8AndPassThrough() {
        // "。" is E3 80 82; the held-back bytes never split a character of the shown text.
        StopStringMatcher m({"\xe3\x80\x82"});
        QCOMPARE(m.feed("\xe4\xbd\xa0\xe5\xa5\xbd\xe3").text, std::string("\xe4\xbd\xa0\xe5\xa5\xbd"));
        const auto r = m.feed("\x80\x82\xe5\x86\x8d");
        QVERIFY(r.stopped);
        QCOMPARE(r.text, std::string());

        StopStringMatcher none({});
        QCOMPARE(none.feed("anything </s>").text, std::string("anything </s>"));
        QCOMPARE(none.flush(), std::string());

        QVERIFY(throws_invalid_argument([] { StopStringMatcher bad({"x", ""}); }));
    }
};

QTEST_APPLESS_MAIN(TestSampling)
#include "test_sampling.moc"
