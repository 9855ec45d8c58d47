// The paged KV cache seen through lantern::Engine (issue 5), on the real stories260K model:
// multi-turn prefix reuse (only the new tokens are computed, logits equal a full recompute),
// several sequences in one batched step (same tokens and logits as each alone), fork (shared prefix
// blocks, correct divergence), the memory budget and ContextFull (a failed call changes nothing),
// and LRU eviction under pressure.
//
// Expected block ids, reuse counts and byte figures are derived by hand from the documented policy
// (16-token blocks, empty blocks handed out first, LRU eviction, tail blocks released first) and
// the model's shape (5 layers, 4 KV heads, head_dim 8); reference logits come from a fresh engine
// that computes the whole prompt with no cache.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/synthetic.h"
#include "lantern/tokenizer.h"
#include "test_support.h"

using namespace lantern;

namespace {

using Tokens = std::vector<int32_t>;
using Logits = std::vector<float>;

// stories260K: K and V x 5 layers x 4 KV heads x head_dim 8 x element bytes.
constexpr uint64_t kBytesPerTokenF16 = 2 * 5 * 4 * 8 * 2;  // 640
constexpr uint64_t kBytesPerTokenF32 = 2 * 5 * 4 * 8 * 4;  // 1280

const char* kStoryA =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
    "One day, she saw a big red ball under a tree. She ran to get it, but a small dog took the ball "
    "and ran away. Lily was sad, but then the dog came back and dropped the ball at her feet. They "
    "played together all day and became best friends.";
const char* kStoryB =
    "Tom had a blue car that he loved very much. Every morning he drove it around the garden and "
    "made loud noises. His mom smiled and said he was a good driver. One day the car broke, and Tom "
    "cried. His dad took the car, fixed the wheel and gave it back. Tom was happy again and said "
    "thank you to his dad.";

std::string model_path() {
    return test::shared_path("models/stories260K.gguf");
}

// A random-weight GQA model with a wider group than stories260K: 8 query heads share each of
// 2 KV heads (head_dim 16, 2 layers). Written once per process with lantern's own GGUF writer.
std::string gqa_model_path() {
    static const std::string path = [] {
        SyntheticShape shape;
        shape.name = "kv-gqa";
        shape.dim = 128;
        shape.n_layers = 2;
        shape.n_heads = 8;
        shape.n_kv_heads = 2;
        shape.ffn_dim = 256;
        shape.vocab = 512;
        shape.context_length = 512;
        std::string p = test::temp_dir() + "/kv-gqa.gguf";
        write_synthetic_model(shape, static_cast<uint32_t>(GgmlType::F32), p, 77);
        return p;
    }();
    return path;
}

struct Config {
    bool kv_f16 = false;
    uint32_t budget_blocks = 0;  // 0 = the engine's default
    uint32_t context = 512;
    uint32_t step_tokens = 64;
    uint32_t block_tokens = 16;
    std::string model;  // empty = stories260K
};

EngineOptions options(const Config& c) {
    EngineOptions o = test::validated_engine_options();
    o.kv_f16 = c.kv_f16;
    o.context_length = c.context;
    o.max_step_tokens = c.step_tokens;
    o.max_sequences = 4;
    o.max_logit_rows = 4;
    o.kv_block_tokens = c.block_tokens;
    if (c.budget_blocks)
        o.kv_budget_bytes =
            uint64_t(c.budget_blocks) * 16 * (c.kv_f16 ? kBytesPerTokenF16 : kBytesPerTokenF32);
    return o;
}

std::unique_ptr<Engine> load(const Config& c) {
    return Engine::load(c.model.empty() ? model_path() : c.model, options(c));
}

Tokens head(const Tokens& t, size_t n) {
    return Tokens(t.begin(), t.begin() + static_cast<ptrdiff_t>(n));
}
Tokens cat(Tokens a, const Tokens& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

int32_t argmax(const Logits& l) {
    return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
}
int32_t second_best(const Logits& l) {
    int32_t best = argmax(l), second = best == 0 ? 1 : 0;
    for (int32_t i = 0; i < static_cast<int32_t>(l.size()); ++i)
        if (i != best && l[static_cast<size_t>(i)] > l[static_cast<size_t>(second)]) second = i;
    return second;
}

double max_abs_diff(const Logits& a, const Logits& b) {
    if (a.size() != b.size() || a.empty()) return 1e30;
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    return d;
}

Logits decode_one(Engine& e, SequenceId seq, int32_t token) {
    StepItem item{seq, {token}, true, false};
    return e.step(std::span<const StepItem>(&item, 1)).at(0);
}

// The logits after the whole prompt, computed by a fresh engine (no cache, nothing reused).
Logits recompute(const Tokens& prompt, Config c) {
    c.budget_blocks = 0;
    auto e = load(c);
    auto seq = e->create_sequence();
    auto l = e->prefill(seq, prompt);
    if (e->last_reused_tokens() != 0 || e->last_computed_tokens() != prompt.size()) return {};
    return l;
}
Logits recompute(const Tokens& prompt, bool kv_f16) {
    Config c;
    c.kv_f16 = kv_f16;
    return recompute(prompt, c);
}

// Invariants every statistics snapshot must satisfy; an empty string when all hold.
QString stats_problem(const KvStats& s, uint32_t layers = 5, uint32_t kv_heads = 4, uint32_t head_dim = 8) {
    if (s.used_blocks + s.cached_blocks + s.empty_blocks != s.total_blocks)
        return QString("used %1 + cached %2 + empty %3 != total %4")
            .arg(s.used_blocks)
            .arg(s.cached_blocks)
            .arg(s.empty_blocks)
            .arg(s.total_blocks);
    if (s.capacity_tokens != uint64_t(s.total_blocks) * s.block_tokens) return "capacity_tokens";
    if (s.capacity_bytes != s.capacity_tokens * s.bytes_per_token) return "capacity_bytes";
    if (s.bytes_per_token != 2ull * s.layers * s.kv_heads * s.head_dim * s.element_bytes)
        return "bytes_per_token";
    if (s.layers != layers || s.kv_heads != kv_heads || s.head_dim != head_dim) return "model shape";
    if (s.peak_used_blocks < s.used_blocks || s.peak_used_blocks > s.total_blocks) return "peak_used_blocks";
    uint32_t sum = 0;
    for (const auto& q : s.sequences) {
        if (q.blocks != (q.tokens + s.block_tokens - 1) / s.block_tokens) return "blocks of a sequence";
        sum += q.blocks;
    }
    if (sum < s.used_blocks) return "sequences hold fewer blocks than are used";
    return {};
}

#define VERIFY_STATS(engine)                                         \
    do {                                                             \
        const QString problem_ = stats_problem((engine).kv_stats()); \
        QVERIFY2(problem_.isEmpty(), qPrintable(problem_));          \
    } while (0)

#define VERIFY_GQA_STATS(engine)                                               \
    do {                                                                       \
        const QString problem_ = stats_problem((engine).kv_stats(), 2, 2, 16); \
        QVERIFY2(problem_.isEmpty(), qPrintable(problem_));                    \
    } while (0)

std::vector<SequenceId> owners_of(const std::vector<KvBlockInfo>& map, uint32_t block) {
    auto o = map.at(block).owners;
    std::sort(o.begin(), o.end());
    return o;
}

// Blocks held by `seq`, in block-id order (the map does not give table order).
std::vector<uint32_t> blocks_of(const std::vector<KvBlockInfo>& map, SequenceId seq) {
    std::vector<uint32_t> out;
    for (const auto& b : map)
        if (std::find(b.owners.begin(), b.owners.end(), seq) != b.owners.end()) out.push_back(b.block);
    return out;
}

// Runs f, which must throw Error(ContextFull); returns its message, or "" when it did not throw it.
template <class F>
std::string context_full_message(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.code() == ErrorCode::ContextFull ? std::string(e.what()) : std::string();
    }
    return {};
}

bool same_counts(const KvStats& a, const KvStats& b) {
    if (a.used_blocks != b.used_blocks || a.cached_blocks != b.cached_blocks ||
        a.empty_blocks != b.empty_blocks || a.evictions != b.evictions ||
        a.sequences.size() != b.sequences.size())
        return false;
    for (size_t i = 0; i < a.sequences.size(); ++i)
        if (a.sequences[i].id != b.sequences[i].id || a.sequences[i].tokens != b.sequences[i].tokens ||
            a.sequences[i].blocks != b.sequences[i].blocks)
            return false;
    return true;
}

// A profiled fused step (lavapipe) says where the fused layers' time went, from clocks inside the
// kernel: the five op families and the dispatches' start-up, adding up to the fused layers'
// timestamp time, every op taking some, each matmul with its weights' bytes. Empty when it does.
QString fused_op_times_problem(const StepProfile& prof) {
    const OpTime* fused = nullptr;
    for (const auto& o : prof.ops)
        if (o.op == "fused_layer") fused = &o;
    if (!fused) return "a fused step's profile has no fused_layer entry";
    if (prof.fused_ops.size() != 6)
        return QString(
                   "%1 entries inside the fused layers, not the 5 op families and the start-up (lavapipe has "
                   "VK_KHR_shader_clock)")
            .arg(prof.fused_ops.size());
    const char* names[] = {"qkv+rope+kv", "attention", "attn_output",
                           "ffn_gate_up", "ffn_down",  "fused_start"};
    double ms = 0;
    uint64_t matmul_bytes = 0;
    for (size_t i = 0; i < 6; ++i) {
        const OpTime& o = prof.fused_ops[i];
        if (o.op != names[i]) return QString("entry %1 is %2, not %3").arg(i).arg(o.op.c_str()).arg(names[i]);
        ms += o.ms;
        if (i == 5) {
            if (o.ms < 0) return "the kernels' clocks span more than their dispatches' timestamps";
            continue;
        }
        if (o.ms <= 0) return QString("%1 took no time").arg(names[i]);
        if (o.idle_fraction < 0 || o.idle_fraction > 1)
            return QString("%1: idle fraction %2").arg(names[i]).arg(o.idle_fraction);
        if (o.bytes == 0) return QString("%1 read no bytes").arg(names[i]);
        if (i != 1) matmul_bytes += o.bytes;
    }
    if (std::fabs(ms - fused->ms) > 1e-6 * fused->ms)
        return QString("the entries add up to %1 ms, fused_layer took %2").arg(ms).arg(fused->ms);
    if (matmul_bytes != fused->bytes)
        return QString("the matmuls read %1 bytes, fused_layer %2").arg(matmul_bytes).arg(fused->bytes);
    return {};
}

}  // namespace

class KvEngineTest : public QObject {
    Q_OBJECT
private slots:
    void multi_turn_computes_only_the_new_tokens_data() {
        QTest::addColumn<bool>("kv_f16");
        QTest::addColumn<double>("tolerance");
        QTest::newRow("f32 KV") << false << 1e-4;
        // f16 K/V: the cached turn-1 entries and the recomputed ones round the same f32 values.
        QTest::newRow("f16 KV") << true << 1e-3;
    }
    void multi_turn_computes_only_the_new_tokens() {
        QFETCH(bool, kv_f16);
        QFETCH(double, tolerance);
        Config c;
        c.kv_f16 = kv_f16;
        auto e = load(c);
        const Tokens story = e->tokenizer().encode(kStoryA, true);
        QVERIFY(story.size() >= 40);
        // Turn 1: a 20-token prompt, then greedy tokens until the sequence holds 45 tokens
        // (2 full blocks + 13).
        const Tokens p1 = head(story, 20);
        auto s1 = e->create_sequence();
        Logits l = e->prefill(s1, p1);
        QCOMPARE(e->last_reused_tokens(), 0u);
        QCOMPARE(e->last_computed_tokens(), 20u);
        while (e->sequence_length(s1) < 45) l = decode_one(*e, s1, argmax(l));
        const Tokens turn1 = e->sequence_tokens(s1);
        QCOMPARE(turn1.size(), size_t(45));
        QCOMPARE(head(turn1, 20), p1);
        e->free_sequence(s1);
        auto st = e->kv_stats();
        QCOMPARE(st.used_blocks, 0u);
        QCOMPARE(st.cached_blocks, 2u);  // the partial third block is not kept
        VERIFY_STATS(*e);

        // Turn 2: everything of turn 1 plus the user's next line.
        const Tokens user = e->tokenizer().encode_fragment(" She said hello to the dog.", false);
        QVERIFY(!user.empty());
        const Tokens p2 = cat(turn1, user);
        auto s2 = e->create_sequence();
        Logits l2 = e->prefill(s2, p2);
        QCOMPARE(e->last_reused_tokens(), 32u);
        QCOMPARE(e->last_computed_tokens(), uint32_t(p2.size() - 32));
        st = e->kv_stats();
        QCOMPARE(st.last_query_tokens, uint32_t(p2.size()));
        QCOMPARE(st.last_hit_tokens, 32u);
        QCOMPARE(st.prefix_query_tokens, uint64_t(20 + p2.size()));
        QCOMPARE(st.prefix_hit_tokens, uint64_t(32));
        VERIFY_STATS(*e);

        const Logits want = recompute(p2, kv_f16);
        const double d = max_abs_diff(l2, want);
        qInfo("turn 2 (%zu tokens, 32 reused): max |logit - recompute| = %.3g", p2.size(), d);
        QVERIFY2(d <= tolerance, qPrintable(QString("max abs diff %1 > %2").arg(d).arg(tolerance)));
        QCOMPARE(argmax(l2), argmax(want));

        // A prompt of exactly two full blocks reuses one: the last token must be computed.
        auto s3 = e->create_sequence();
        Logits l3 = e->prefill(s3, head(turn1, 32));
        QCOMPARE(e->last_reused_tokens(), 16u);
        QCOMPARE(e->last_computed_tokens(), 16u);
        const Logits want3 = recompute(head(turn1, 32), kv_f16);
        QVERIFY2(max_abs_diff(l3, want3) <= tolerance, qPrintable(QString::number(max_abs_diff(l3, want3))));
        // s3 shares block 0 with s2 and computed its second block itself (identical content to
        // s2's block 1, which stays the one in the cache).
        auto map = e->kv_block_map();
        QCOMPARE(owners_of(map, 0), (std::vector<SequenceId>{s2, s3}));
        QCOMPARE(owners_of(map, 1), (std::vector<SequenceId>{s2}));
        QCOMPARE(blocks_of(map, s3).size(), size_t(2));
        VERIFY_STATS(*e);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void multi_turn_on_a_random_gqa_model_data() {
        QTest::addColumn<bool>("kv_f16");
        QTest::addColumn<uint32_t>("block_tokens");
        QTest::addColumn<uint32_t>("reused");           // floor(50 / block) * block
        QTest::addColumn<uint64_t>("bytes_per_token");  // 2 x 2 layers x 2 KV heads x 16 x element
        QTest::newRow("f32 KV, 16-token blocks") << false << 16u << 48u << uint64_t(512);
        QTest::newRow("f16 KV, 32-token blocks") << true << 32u << 32u << uint64_t(256);
        QTest::newRow("f32 KV, 8-token blocks") << false << 8u << 48u << uint64_t(512);
    }
    void multi_turn_on_a_random_gqa_model() {
        QFETCH(bool, kv_f16);
        QFETCH(uint32_t, block_tokens);
        QFETCH(uint32_t, reused);
        QFETCH(uint64_t, bytes_per_token);
        Config c;
        c.model = gqa_model_path();
        c.kv_f16 = kv_f16;
        c.block_tokens = block_tokens;
        auto e = load(c);
        QCOMPARE(e->model().n_heads, 8u);
        QCOMPARE(e->model().n_kv_heads, 2u);
        QCOMPARE(e->model().head_dim, 16u);
        auto st = e->kv_stats();
        QCOMPARE(st.block_tokens, block_tokens);
        QCOMPARE(st.bytes_per_token, bytes_per_token);
        QCOMPARE(st.kv_heads, 2u);
        QCOMPARE(st.layers, 2u);
        QCOMPARE(st.head_dim, 16u);

        // Turn 1: 30 prompt tokens, greedy decode to 50; turn 2: those 50 plus 7 new tokens.
        Tokens p1;
        for (int i = 0; i < 30; ++i) p1.push_back(3 + (i * 37) % 500);
        auto s1 = e->create_sequence();
        Logits l = e->prefill(s1, p1);
        while (e->sequence_length(s1) < 50) l = decode_one(*e, s1, argmax(l));
        const Tokens turn1 = e->sequence_tokens(s1);
        e->free_sequence(s1);
        const Tokens p2 = cat(turn1, {11, 22, 33, 44, 55, 66, 77});
        auto s2 = e->create_sequence();
        Logits l2 = e->prefill(s2, p2);
        QCOMPARE(e->last_reused_tokens(), reused);
        QCOMPARE(e->last_computed_tokens(), 57u - reused);

        const Logits want = recompute(p2, c);
        const double d = max_abs_diff(l2, want);
        Tokens other = p2;
        other[5] = 400;  // the check can tell: an early token changed moves these logits by far more
        const double sensitivity = max_abs_diff(l2, recompute(other, c));
        qInfo(
            "random GQA model, %u-token blocks: max |logit - recompute| = %.3g (one early token changed: "
            "%.3g)",
            block_tokens, d, sensitivity);
        QVERIFY2(d <= 1e-5, qPrintable(QString::number(d)));
        QVERIFY2(sensitivity > 1e-3, qPrintable(QString::number(sensitivity)));
        QCOMPARE(argmax(l2), argmax(want));
        VERIFY_GQA_STATS(*e);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // profile_steps(n) times the next n steps of a running engine (the app's Step Profile panel):
    // those steps have per-op times (on lavapipe the fused layers' inside too), the steps after
    // them none, warm-ups in between do not use them up, and no step's logits change.
    void profile_steps_times_the_next_steps_only() {
        Config c;
        auto plain = load(c);
        auto timed = load(c);
        const Tokens prompt = plain->tokenizer().encode("Once upon a time", true);
        std::vector<std::pair<Engine*, SequenceId>> runs;
        for (Engine* e : {plain.get(), timed.get()}) runs.emplace_back(e, e->create_sequence());
        Tokens feed = prompt;
        for (int step = 0; step < 8; ++step) {
            if (step == 2) {
                timed->profile_steps(2);
                timed->warm_up(1);  // a warm-up between: it must not take the timed steps
            }
            std::vector<Logits> got;
            for (auto& [e, seq] : runs) {
                StepItem item{seq, feed, true, false};
                got.push_back(e->step(std::span<const StepItem>(&item, 1)).at(0));
            }
            QVERIFY2(got[1] == got[0],
                     qPrintable(QString("step %1: a timed step's logits differ").arg(step)));
            const StepProfile& p = timed->last_step_profile();
            const bool was_timed = step == 2 || step == 3;
            QVERIFY2(p.ops.empty() != was_timed,
                     qPrintable(QString("step %1: %2 op times").arg(step).arg(p.ops.size())));
            if (was_timed && p.fused_layers) {
                const QString problem = fused_op_times_problem(p);
                QVERIFY2(problem.isEmpty(), qPrintable(problem));
            }
            QVERIFY(plain->last_step_profile().ops.empty());
            feed = {argmax(got[0])};
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A step shaped like the previous one resubmits its recorded command buffer; steps with an
    // attention capture or per-op timing, and steps of another size, record fresh ones. Whatever
    // the mix, every step's logits must be bit for bit those of the profiled run, which records
    // every step afresh (same kernels, same data): a resubmitted buffer that went stale — a
    // descriptor, a push constant or a grid of another step shape — would show here.
    void resubmitted_steps_match_fresh_recordings() {
        Config c;
        auto plain = load(c);
        EngineOptions po = options(c);
        po.profile = true;
        auto profiled = Engine::load(model_path(), po);
        auto mixed = load(c);
        const Tokens prompt = plain->tokenizer().encode("Once upon a time", true);
        std::vector<std::pair<Engine*, SequenceId>> runs;
        for (Engine* e : {plain.get(), profiled.get(), mixed.get()})
            runs.emplace_back(e, e->create_sequence());
        // The prompt goes in one token per step, so the first recording is of a one-token step and
        // the two-token steps later cannot be served by a larger stale recording by accident.
        const int n_prompt = static_cast<int>(prompt.size());
        const int two_a = n_prompt + 3, two_b = n_prompt + 4;  // steps that feed two tokens
        Tokens feed = {prompt[0]};
        int captures = 0, fused_profiles = 0;
        for (int step = 0; step < n_prompt + 10; ++step) {
            const bool capture = step == 2 || step == n_prompt + 1 || step == two_a;
            if (capture) {  // on the mixed engine only
                mixed->capture_attention(step % 5);
                ++captures;
            }
            std::vector<Logits> got;
            for (auto& [e, seq] : runs) {
                StepItem item{seq, feed, true, false};
                got.push_back(e->step(std::span<const StepItem>(&item, 1)).at(0));
            }
            QVERIFY2(got[1] == got[0],
                     qPrintable(QString("step %1: the profiled run's logits differ").arg(step)));
            QVERIFY2(got[2] == got[0],
                     qPrintable(QString("step %1: the run with captures differs").arg(step)));
            if (capture) QVERIFY2(mixed->last_attention().n_positions > 0, "no attention was captured");
            const StepProfile& prof = profiled->last_step_profile();
            QVERIFY(prof.ops.size() > 0);
            if (prof.fused_layers) {
                ++fused_profiles;
                const QString problem = fused_op_times_problem(prof);
                QVERIFY2(problem.isEmpty(), qPrintable(QString("step %1: %2").arg(step).arg(problem)));
            }
            const int32_t next = argmax(got[0]);
            if (step + 1 < n_prompt)
                feed = {prompt[static_cast<size_t>(step) + 1]};
            else
                feed = (step + 1 == two_a || step + 1 == two_b) ? Tokens{next, next} : Tokens{next};
        }
        QCOMPARE(captures, 3);
        // On lavapipe the profiled steps ran fused (one- and two-token steps), so their per-op
        // times were checked above.
        if (profiled->device().name.find("llvmpipe") != std::string::npos) QVERIFY(fused_profiles > 0);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void batched_step_matches_each_sequence_alone() {
        // Four sequences; each step carries every sequence: prefill chunks (of different sizes)
        // until its prompt is in, then one greedy decode token. d starts two steps late.
        Config c;
        auto e = load(c);
        const auto& tok = e->tokenizer();
        struct Run {
            Tokens prompt;
            uint32_t chunk;
            int start_step;
            size_t fed = 0;
            Logits last;
            Tokens generated;
            std::vector<Logits> logits;  // the logits each generated token was chosen from
            SequenceId seq = 0;
        };
        std::vector<Run> runs = {
            {tok.encode("Once upon a time", true), 100, 0},
            {head(tok.encode(kStoryB, true), 37), 8, 0},
            {head(tok.encode(kStoryA, true), 23), 23, 1},
            {tok.encode("One day, a big dog found a bone.", true), 3, 2},
        };
        constexpr size_t kGenerate = 12;
        for (auto& r : runs) r.seq = e->create_sequence();
        int steps = 0, mixed_steps = 0;
        for (int step = 0; step < 200; ++step) {
            std::vector<StepItem> items;
            std::vector<size_t> who;
            bool any_prefill = false, any_decode = false;
            for (size_t i = 0; i < runs.size(); ++i) {
                Run& r = runs[i];
                if (step < r.start_step || r.generated.size() == kGenerate) continue;
                StepItem it;
                it.sequence = r.seq;
                if (r.fed < r.prompt.size()) {
                    size_t n = std::min<size_t>(r.chunk, r.prompt.size() - r.fed);
                    it.tokens.assign(r.prompt.begin() + static_cast<ptrdiff_t>(r.fed),
                                     r.prompt.begin() + static_cast<ptrdiff_t>(r.fed + n));
                    r.fed += n;
                    it.want_logits = r.fed == r.prompt.size();
                    any_prefill = true;
                } else {
                    int32_t next = argmax(r.last);
                    r.generated.push_back(next);
                    r.logits.push_back(r.last);
                    if (r.generated.size() == kGenerate) continue;
                    it.tokens = {next};
                    any_decode = true;
                }
                items.push_back(it);
                if (it.want_logits) who.push_back(i);
            }
            if (items.empty()) break;
            auto rows = e->step(items);
            QCOMPARE(rows.size(), who.size());
            for (size_t k = 0; k < who.size(); ++k) runs[who[k]].last = rows[k];
            ++steps;
            mixed_steps += any_prefill && any_decode;
            VERIFY_STATS(*e);
        }
        QVERIFY(mixed_steps >= 3);  // prefill chunks really rode along with decodes
        for (auto& r : runs) QCOMPARE(r.generated.size(), kGenerate);

        // Each alone, in a fresh engine: prefill the prompt, then one decode per step.
        for (size_t i = 0; i < runs.size(); ++i) {
            auto alone = load(c);
            auto seq = alone->create_sequence();
            Logits l = alone->prefill(seq, runs[i].prompt);
            double worst = 0;
            for (size_t k = 0; k < kGenerate; ++k) {
                worst = std::max(worst, max_abs_diff(l, runs[i].logits[k]));
                int32_t next = argmax(l);
                QVERIFY2(next == runs[i].generated[k],
                         qPrintable(QString("sequence %1, token %2: batched %3, alone %4")
                                        .arg(i)
                                        .arg(k)
                                        .arg(runs[i].generated[k])
                                        .arg(next)));
                if (k + 1 < kGenerate) l = decode_one(*alone, seq, next);
            }
            qInfo("sequence %zu (prompt %zu, chunks of %u): max |batched - alone| = %.3g", i,
                  runs[i].prompt.size(), runs[i].chunk, worst);
            QVERIFY2(worst <= 1e-5,
                     qPrintable(QString("sequence %1: max abs diff %2 > 1e-5").arg(i).arg(worst)));
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void fork_shares_the_prefix_and_diverges() {
        Config c;
        auto e = load(c);
        const Tokens prefix = head(e->tokenizer().encode(kStoryA, true), 40);  // 2 full blocks + 8
        auto a = e->create_sequence();
        Logits la = e->prefill(a, prefix);
        auto map = e->kv_block_map();
        QCOMPARE(blocks_of(map, a), (std::vector<uint32_t>{0, 1, 2}));  // a fresh pool: from the front

        auto b = e->fork_sequence(a);
        QCOMPARE(e->sequence_length(b), 40u);
        QCOMPARE(e->sequence_tokens(b), prefix);
        map = e->kv_block_map();
        QCOMPARE(owners_of(map, 0), (std::vector<SequenceId>{a, b}));
        QCOMPARE(owners_of(map, 1), (std::vector<SequenceId>{a, b}));
        QCOMPARE(owners_of(map, 2), (std::vector<SequenceId>{a}));
        QCOMPARE(owners_of(map, 3), (std::vector<SequenceId>{b}));  // b's recomputed partial block
        QCOMPARE(map[2].filled, 8u);
        QCOMPARE(map[3].filled, 8u);
        QCOMPARE(map[3].first_position, 32);
        QCOMPARE(map[1].first_position, 16);
        QVERIFY(map[0].full_hashed && map[1].full_hashed);
        auto st = e->kv_stats();
        QCOMPARE(st.used_blocks, 4u);  // not 6: the two full blocks are shared
        QCOMPARE(st.sequences.size(), size_t(2));
        QCOMPARE(st.sequences[1].tokens, 40u);
        QCOMPARE(st.sequences[1].blocks, 3u);
        VERIFY_STATS(*e);

        // Force different continuations: a takes the best token, b the second best.
        Tokens ta = cat(prefix, {argmax(la)}), tb = cat(prefix, {second_best(la)});
        QVERIFY(ta.back() != tb.back());
        std::vector<StepItem> items = {{a, {ta.back()}, true, false}, {b, {tb.back()}, true, false}};
        auto rows = e->step(items);
        QCOMPARE(rows.size(), size_t(2));
        Logits ra = rows[0], rb = rows[1];
        QVERIFY(max_abs_diff(ra, rb) > 0.1);  // they really diverged
        // Eight more greedy tokens each, in batched steps.
        for (int k = 0; k < 8; ++k) {
            ta.push_back(argmax(ra));
            tb.push_back(argmax(rb));
            items = {{a, {ta.back()}, true, false}, {b, {tb.back()}, true, false}};
            rows = e->step(items);
            ra = rows[0];
            rb = rows[1];
        }
        QCOMPARE(e->sequence_tokens(a), ta);
        QCOMPARE(e->sequence_tokens(b), tb);
        const double da = max_abs_diff(ra, recompute(ta, false)), db = max_abs_diff(rb, recompute(tb, false));
        qInfo("fork: max |logit - recompute| a %.3g, b %.3g", da, db);
        QVERIFY2(da <= 1e-4, qPrintable(QString::number(da)));
        QVERIFY2(db <= 1e-4, qPrintable(QString::number(db)));
        // 49 tokens each = 4 blocks each, the first two shared.
        st = e->kv_stats();
        QCOMPARE(st.used_blocks, 6u);
        map = e->kv_block_map();
        QCOMPARE(owners_of(map, 0), (std::vector<SequenceId>{a, b}));
        QCOMPARE(owners_of(map, 1), (std::vector<SequenceId>{a, b}));
        QCOMPARE(blocks_of(map, a).size(), size_t(4));
        QCOMPARE(blocks_of(map, b).size(), size_t(4));
        e->free_sequence(a);
        QCOMPARE(e->kv_stats().used_blocks, 4u);
        QCOMPARE(owners_of(e->kv_block_map(), 0), (std::vector<SequenceId>{b}));
        VERIFY_STATS(*e);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void the_pool_stays_within_its_budget_data() {
        QTest::addColumn<bool>("kv_f16");
        QTest::newRow("f16 KV") << true;
        QTest::newRow("f32 KV") << false;
    }
    void the_pool_stays_within_its_budget() {
        QFETCH(bool, kv_f16);
        const uint64_t per_token = kv_f16 ? 640 : 1280;
        Config c;
        c.kv_f16 = kv_f16;
        c.budget_blocks = 8;
        auto o = options(c);
        o.kv_budget_bytes += per_token * 16 - 1;  // not a whole block more: still 8 blocks
        auto e = Engine::load(model_path(), o);
        auto st = e->kv_stats();
        QCOMPARE(st.total_blocks, 8u);
        QCOMPARE(st.block_tokens, 16u);
        QCOMPARE(st.layers, 5u);
        QCOMPARE(st.kv_heads, 4u);
        QCOMPARE(st.head_dim, 8u);
        QCOMPARE(st.element_bytes, kv_f16 ? 2u : 4u);
        QCOMPARE(st.bytes_per_token, per_token);
        QCOMPARE(st.capacity_tokens, uint64_t(128));
        QCOMPARE(st.capacity_bytes, 128 * per_token);
        QVERIFY(st.capacity_bytes <= o.kv_budget_bytes);
        QCOMPARE(st.empty_blocks, 8u);
        VERIFY_STATS(*e);

        // Less than one block: refused at load.
        auto tiny = options(c);
        tiny.kv_budget_bytes = per_token * 16 - 1;
        QVERIFY_THROWS_EXCEPTION(Error, Engine::load(model_path(), tiny));

        // Fill the pool and then some, one sequence after another: never more than 8 blocks.
        const Tokens story = e->tokenizer().encode(kStoryA, true);
        QVERIFY(story.size() >= 110);
        for (int round = 0; round < 3; ++round) {
            auto s = e->create_sequence();
            Logits l = e->prefill(s, head(story, 100 + 2 * static_cast<size_t>(round)));  // 7 blocks
            while (e->sequence_length(s) < 128) l = decode_one(*e, s, argmax(l));
            st = e->kv_stats();
            QCOMPARE(st.used_blocks, 8u);
            QVERIFY(st.peak_used_blocks <= 8u);
            VERIFY_STATS(*e);
            std::string msg = context_full_message([&] { decode_one(*e, s, argmax(l)); });
            QVERIFY2(msg.find("KV cache is full") != std::string::npos, msg.c_str());
            QCOMPARE(e->sequence_length(s), 128u);
            e->free_sequence(s);
        }
        QCOMPARE(e->kv_stats().peak_used_blocks, 8u);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void context_full_from_the_pool_changes_nothing() {
        Config c;
        c.budget_blocks = 8;
        c.step_tokens = 32;
        auto e = load(c);
        const Tokens story = e->tokenizer().encode(std::string(kStoryA) + " " + kStoryB, true);
        QVERIFY(story.size() >= 150);

        // 150 tokens need 10 blocks: refused before anything is computed or kept.
        auto a = e->create_sequence();
        std::string msg = context_full_message([&] { e->prefill(a, head(story, 150)); });
        QVERIFY2(msg.find("KV cache is full") != std::string::npos, msg.c_str());
        QCOMPARE(e->sequence_length(a), 0u);
        auto st = e->kv_stats();
        QCOMPARE(st.used_blocks, 0u);
        QCOMPARE(st.cached_blocks, 0u);
        VERIFY_STATS(*e);

        // The engine still works: 100 tokens (7 blocks) fit.
        Logits la = e->prefill(a, head(story, 100));
        QCOMPARE(e->last_reused_tokens(), 0u);
        QCOMPARE(e->last_computed_tokens(), 100u);
        QVERIFY(max_abs_diff(la, recompute(head(story, 100), false)) <= 1e-4);
        QCOMPARE(e->kv_stats().used_blocks, 7u);

        // A batched step whose second item needs 3 blocks (1 free) fails as a whole.
        auto b = e->create_sequence();
        const Tokens other = e->tokenizer().encode(kStoryB, true);
        const KvStats before = e->kv_stats();
        std::vector<StepItem> items = {{a, {argmax(la)}, true, false}, {b, head(other, 40), true, false}};
        msg = context_full_message([&] { e->step(items); });
        QVERIFY2(msg.find("KV cache is full") != std::string::npos, msg.c_str());
        QCOMPARE(e->sequence_length(a), 100u);
        QCOMPARE(e->sequence_length(b), 0u);
        QVERIFY(same_counts(e->kv_stats(), before));
        VERIFY_STATS(*e);

        // ...and a's K/V is intact: its next token gives the logits of a full recompute.
        Logits next = decode_one(*e, a, argmax(la));
        QVERIFY(max_abs_diff(next, recompute(cat(head(story, 100), {argmax(la)}), false)) <= 1e-4);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void a_failed_step_evicts_nothing() {
        // The pool holds two cached blocks and nothing empty. A step whose first item needs one
        // block (an eviction) and whose second needs three fails: the first item must not have
        // evicted a cached block on the way.
        Config c;
        c.budget_blocks = 8;
        auto e = load(c);
        const Tokens sa = e->tokenizer().encode(kStoryA, true), sb = e->tokenizer().encode(kStoryB, true);
        auto z = e->create_sequence();
        e->prefill(z, head(sb, 32));  // blocks 0, 1, both full
        e->free_sequence(z);          // free queue: 2..7 empty, then cached 1, 0
        auto a = e->create_sequence();
        Logits la = e->prefill(a, head(sa, 96));  // exactly 6 blocks: 2..7
        QCOMPARE(blocks_of(e->kv_block_map(), a), (std::vector<uint32_t>{2, 3, 4, 5, 6, 7}));
        auto b = e->create_sequence();
        const KvStats before = e->kv_stats();
        QCOMPARE(before.cached_blocks, 2u);
        QCOMPARE(before.empty_blocks, 0u);
        std::vector<StepItem> items = {{a, {argmax(la)}, true, false}, {b, head(sa, 40), true, false}};
        std::string msg = context_full_message([&] { e->step(items); });
        QVERIFY2(msg.find("KV cache is full") != std::string::npos, msg.c_str());
        QCOMPARE(e->sequence_length(a), 96u);
        QCOMPARE(e->sequence_length(b), 0u);
        const KvStats after = e->kv_stats();
        QCOMPARE(after.evictions, uint64_t(0));
        QCOMPARE(after.cached_blocks, 2u);
        QVERIFY(same_counts(after, before));
        VERIFY_STATS(*e);

        // Both of z's blocks are still there for z's prompt.
        e->free_sequence(a);
        auto z2 = e->create_sequence();
        Logits lz = e->prefill(z2, head(sb, 33));
        QCOMPARE(e->last_reused_tokens(), 32u);
        QCOMPARE(e->last_computed_tokens(), 1u);
        QVERIFY(max_abs_diff(lz, recompute(head(sb, 33), false)) <= 1e-4);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void warm_up_leaves_no_trace() {
        // Engine::warm_up runs a step of every shape on a scratch sequence (warm_up_batched_decode
        // one step over several). Afterwards the pool must
        // look as it did — the same used, cached and empty blocks, no eviction, no new peak — the
        // live sequence must continue exactly as without it, the cached prefix must still be
        // reused, and the capture setting and last step profile must be the caller's.
        Config c;
        c.budget_blocks = 8;
        auto e = load(c);
        const Tokens sa = e->tokenizer().encode(kStoryA, true), sb = e->tokenizer().encode(kStoryB, true);
        auto z = e->create_sequence();
        e->prefill(z, head(sb, 32));  // blocks 0, 1
        e->free_sequence(z);          // cached
        auto a = e->create_sequence();
        const Logits la = e->prefill(a, head(sa, 40));  // blocks 2, 3, 4; 5..7 empty
        const StepProfile profile = e->last_step_profile();
        e->capture_attention(3);
        const KvStats before = e->kv_stats();
        const auto map_before = e->kv_block_map();
        QCOMPARE(before.cached_blocks, 2u);
        QCOMPARE(before.empty_blocks, 3u);  // room for the longest shape (40 tokens): it runs

        double ms = 0;
        for (uint32_t i = 0; i < Engine::kWarmUpShapes; ++i) ms += e->warm_up(i);
        QVERIFY(ms > 0);
        QVERIFY_THROWS_EXCEPTION(Error, e->warm_up(Engine::kWarmUpShapes));
        // And the batched decode steps (2..max_sequences sequences of one token) likewise.
        for (uint32_t n = 2; n <= 4; ++n) QVERIFY(e->warm_up_batched_decode(n) > 0);
        QVERIFY_THROWS_EXCEPTION(Error, e->warm_up_batched_decode(1));
        QVERIFY_THROWS_EXCEPTION(Error, e->warm_up_batched_decode(5));

        const KvStats after = e->kv_stats();
        QVERIFY(same_counts(after, before));
        QCOMPARE(after.evictions, uint64_t(0));
        QCOMPARE(after.peak_used_blocks, before.peak_used_blocks);
        QCOMPARE(after.prefix_query_tokens, before.prefix_query_tokens);
        QCOMPARE(after.prefix_hit_tokens, before.prefix_hit_tokens);
        const auto map_after = e->kv_block_map();
        QCOMPARE(map_after.size(), map_before.size());
        for (size_t i = 0; i < map_after.size(); ++i) {
            QCOMPARE(map_after[i].owners, map_before[i].owners);
            QCOMPARE(map_after[i].filled, map_before[i].filled);
            QCOMPARE(map_after[i].cached, map_before[i].cached);
        }
        QCOMPARE(e->last_step_profile().dispatches, profile.dispatches);
        QCOMPARE(e->last_step_profile().total_ms, profile.total_ms);
        VERIFY_STATS(*e);

        // a continues as if nothing had run in between (its K/V untouched), capturing layer 3.
        const Logits next = decode_one(*e, a, argmax(la));
        QCOMPARE(e->last_attention().layer, 3u);
        QCOMPARE(e->last_attention().n_positions, 41u);
        QVERIFY(max_abs_diff(next, recompute(cat(head(sa, 40), {argmax(la)}), false)) <= 1e-4);
        // z's prompt still comes from the cache.
        auto z2 = e->create_sequence();
        e->prefill(z2, head(sb, 33));
        QCOMPARE(e->last_reused_tokens(), 32u);

        // With no empty block left, warming up must not evict the cached ones: it does nothing.
        // Freed, a and z2 leave their full blocks cached (0-3) and their partial ones (4, 5) empty;
        // b and c take the four empty blocks (reversed texts: no cached prefix).
        e->free_sequence(a);
        e->free_sequence(z2);
        auto b = e->create_sequence(), d = e->create_sequence();
        e->prefill(b, Tokens(sb.rbegin(), sb.rbegin() + 32));
        e->prefill(d, Tokens(sa.rbegin(), sa.rbegin() + 32));
        const KvStats full = e->kv_stats();
        QCOMPARE(full.empty_blocks, 0u);
        QCOMPARE(full.cached_blocks, 4u);
        e->warm_up();
        e->warm_up_batched_decode(4);
        QVERIFY(same_counts(e->kv_stats(), full));
        QCOMPARE(e->kv_stats().evictions, full.evictions);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void context_full_from_the_context_length() {
        Config c;
        c.context = 64;
        auto e = load(c);
        QCOMPARE(e->context_length(), 64u);
        const Tokens story = e->tokenizer().encode(kStoryA, true);
        auto a = e->create_sequence();
        std::string msg = context_full_message([&] { e->prefill(a, head(story, 65)); });
        QVERIFY2(msg.find("context") != std::string::npos, msg.c_str());
        QCOMPARE(e->sequence_length(a), 0u);
        QCOMPARE(e->kv_stats().used_blocks, 0u);

        Logits l = e->prefill(a, head(story, 63));
        l = decode_one(*e, a, argmax(l));
        QCOMPARE(e->sequence_length(a), 64u);
        msg = context_full_message([&] { decode_one(*e, a, argmax(l)); });
        QVERIFY2(msg.find("context") != std::string::npos, msg.c_str());
        QCOMPARE(e->sequence_length(a), 64u);
        QCOMPARE(e->kv_stats().used_blocks, 4u);
        VERIFY_STATS(*e);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void a_failed_step_leaves_no_stale_prefix_block() {
        // b's item exceeds the context after a's token was accepted: the step fails as a whole. The
        // token a did not get must not survive in the prefix cache as if its K/V were computed.
        Config c;
        c.context = 64;
        auto e = load(c);
        const Tokens story = e->tokenizer().encode(kStoryA, true);
        const Tokens p = head(story, 15);
        auto a = e->create_sequence();
        Logits la = e->prefill(a, p);
        const int32_t t = argmax(la), u = second_best(la);
        auto b = e->create_sequence();
        std::vector<StepItem> items = {{a, {t}, true, false}, {b, head(story, 65), true, false}};
        QVERIFY(!context_full_message([&] { e->step(items); }).empty());
        QCOMPARE(e->sequence_length(a), 15u);
        QCOMPARE(e->sequence_length(b), 0u);
        // a continues with another token, filling its first block with (p, u).
        decode_one(*e, a, u);
        e->free_sequence(a);
        QCOMPARE(e->kv_stats().cached_blocks, 1u);

        // A prompt (p, t, ...) must not reuse that block; (p, u, ...) must.
        auto c1 = e->create_sequence();
        const Tokens with_t = cat(cat(p, {t}), {story[16]});
        Logits l1 = e->prefill(c1, with_t);
        QCOMPARE(e->last_reused_tokens(), 0u);
        QVERIFY(max_abs_diff(l1, recompute(with_t, false)) <= 1e-4);
        auto c2 = e->create_sequence();
        const Tokens with_u = cat(cat(p, {u}), {story[16]});
        Logits l2 = e->prefill(c2, with_u);
        QCOMPARE(e->last_reused_tokens(), 16u);
        QVERIFY(max_abs_diff(l2, recompute(with_u, false)) <= 1e-4);
        VERIFY_STATS(*e);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void eviction_under_pressure_follows_lru() {
        Config c;
        c.budget_blocks = 8;
        auto e = load(c);
        const Tokens pa = head(e->tokenizer().encode(kStoryA, true), 70);  // 4 full blocks + 6
        const Tokens pb = head(e->tokenizer().encode(kStoryB, true), 90);  // 5 full blocks + 10
        QCOMPARE(pa.size(), size_t(70));
        QCOMPARE(pb.size(), size_t(90));
        QVERIFY(head(pa, 16) != head(pb, 16));

        auto a = e->create_sequence();
        e->prefill(a, pa);
        QCOMPARE(blocks_of(e->kv_block_map(), a), (std::vector<uint32_t>{0, 1, 2, 3, 4}));
        e->free_sequence(a);  // free queue: 4 (empty), 5, 6, 7, then cached 3, 2, 1, 0 (tail first)
        auto st = e->kv_stats();
        QCOMPARE(st.used_blocks, 0u);
        QCOMPARE(st.cached_blocks, 4u);
        QCOMPARE(st.empty_blocks, 4u);
        QCOMPARE(st.evictions, uint64_t(0));

        // b needs 6 blocks: the 4 empty ones, then a's two deepest cached blocks are evicted.
        auto b = e->create_sequence();
        Logits lb = e->prefill(b, pb);
        QCOMPARE(e->last_reused_tokens(), 0u);
        st = e->kv_stats();
        QCOMPARE(st.evictions, uint64_t(2));
        QCOMPARE(st.used_blocks, 6u);
        QCOMPARE(st.cached_blocks, 2u);
        auto map = e->kv_block_map();
        QCOMPARE(blocks_of(map, b), (std::vector<uint32_t>{2, 3, 4, 5, 6, 7}));
        QVERIFY(map[0].cached && map[1].cached);
        QVERIFY(max_abs_diff(lb, recompute(pb, false)) <= 1e-4);
        VERIFY_STATS(*e);
        e->free_sequence(b);  // queue: 2 (empty), cached a0, a1, then b's 3 (5th block), 7, 6, 5, 4

        // a's prompt again: only its first two blocks survived. The three new blocks are the empty
        // 2, then b's least recently released cached blocks 3 and 7.
        auto a2 = e->create_sequence();
        Logits la2 = e->prefill(a2, pa);
        QCOMPARE(e->last_reused_tokens(), 32u);
        QCOMPARE(e->last_computed_tokens(), 38u);
        st = e->kv_stats();
        QCOMPARE(st.evictions, uint64_t(4));
        QCOMPARE(blocks_of(e->kv_block_map(), a2), (std::vector<uint32_t>{0, 1, 2, 3, 7}));
        QVERIFY(max_abs_diff(la2, recompute(pa, false)) <= 1e-4);
        e->free_sequence(a2);  // queue: 7 (empty), b's 6, 5, 4, then a's 3, 2, 1, 0

        // b's prompt again: its first three blocks (4, 5, 6) are still cached.
        auto b2 = e->create_sequence();
        Logits lb2 = e->prefill(b2, pb);
        QCOMPARE(e->last_reused_tokens(), 48u);
        QCOMPARE(e->last_computed_tokens(), 42u);
        st = e->kv_stats();
        QCOMPARE(st.evictions, uint64_t(6));
        QCOMPARE(blocks_of(e->kv_block_map(), b2), (std::vector<uint32_t>{2, 3, 4, 5, 6, 7}));
        QCOMPARE(st.prefix_hit_tokens, uint64_t(32 + 48));
        QCOMPARE(st.prefix_query_tokens, uint64_t(2 * 70 + 2 * 90));
        QVERIFY(max_abs_diff(lb2, recompute(pb, false)) <= 1e-4);
        VERIFY_STATS(*e);
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(KvEngineTest)
#include "test_kv_engine.moc"
