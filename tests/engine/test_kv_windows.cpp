// Sliding-window layers keep only their window (EngineOptions::kv_release_windows): on a random
// Gemma 3 model whose layer 0 attends to its last 8 positions and layer 1 to everything, an engine
// with the local layers' own pool gives the same logits, bit for bit, as one whose layers all keep
// every position — through a chunked prefill, a long decode, a prefix taken from the cache and a
// fork — while each sequence holds at most its window plus one step in the local pool, blocks
// that left the window go back, and the memory plan counts the smaller pool.
#include <QTest>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/memory_plan.h"
#include "lantern/synthetic.h"
#include "test_support.h"

using namespace lantern;

namespace {

constexpr uint32_t kWindow = 8, kStep = 16, kBlock = 16, kSequences = 2;
// Blocks a sequence holds at most in the local pool: its window before the step, and the step.
constexpr uint32_t kLocalPerSequence = (kWindow - 1 + kStep + kBlock - 1) / kBlock + 1;

std::string model_path() {
    static const std::string path = [] {
        SyntheticShape shape = synthetic_shape("gemma3-1b,layers=2,vocab=512,window=8,swa_pattern=2");
        shape.name = "kv-windows";
        shape.dim = 64, shape.n_heads = 4, shape.n_kv_heads = 2, shape.head_dim = 32, shape.ffn_dim = 128;
        shape.context_length = 512;
        shape.embed_std = 0.01f;
        const std::string p = test::temp_dir() + "/kv-windows.gguf";
        write_synthetic_model(shape, static_cast<uint32_t>(GgmlType::F32), p, 5);
        return p;
    }();
    return path;
}

EngineOptions options(bool release_windows) {
    EngineOptions o = test::validated_engine_options();
    o.context_length = 512;
    o.max_sequences = kSequences;
    o.max_step_tokens = kStep;
    o.kv_block_tokens = kBlock;
    o.kv_release_windows = release_windows;
    return o;
}

int32_t argmax(const std::vector<float>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

std::vector<int32_t> prompt(uint32_t n, uint32_t seed) {
    std::vector<int32_t> t(n);
    for (uint32_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(10 + (i * 37 + seed * 101) % 480);
    return t;
}

}  // namespace

class KvWindowsTest : public QObject {
    Q_OBJECT
    std::unique_ptr<Engine> windowed_, flat_;

    // Feeds both engines the same greedy continuation of `seq_w` / `seq_f` for n steps; every
    // step's logits must be the same bits, and the windowed sequence never holds more than its
    // window plus one step in the local pool.
    void decode_alike(SequenceId seq_w, SequenceId seq_f, std::vector<float> logits, uint32_t n) {
        for (uint32_t k = 0; k < n; ++k) {
            const int32_t next = argmax(logits);
            StepItem a{seq_w, {next}, true, false}, b{seq_f, {next}, true, false};
            logits = windowed_->step(std::span<const StepItem>(&a, 1))[0];
            const auto other = flat_->step(std::span<const StepItem>(&b, 1))[0];
            QVERIFY2(logits == other, qPrintable(QString("decode step %1: the logits differ").arg(k)));
            const KvStats s = windowed_->kv_stats();
            QVERIFY2(s.local_used_blocks <= kLocalPerSequence * kSequences,
                     qPrintable(QString("%1 local blocks in use").arg(s.local_used_blocks)));
        }
    }

private slots:
    void initTestCase() {
        windowed_ = Engine::load(model_path(), options(true));
        flat_ = Engine::load(model_path(), options(false));
    }

    void the_local_pool_is_the_windows_size() {
        const KvStats w = windowed_->kv_stats(), f = flat_->kv_stats();
        QCOMPARE(w.window, kWindow);
        QCOMPARE(w.local_layers, 1u);
        QCOMPARE(w.local_total_blocks, kLocalPerSequence * kSequences);
        QCOMPARE(w.local_used_blocks, 0u);
        QCOMPARE(f.local_layers, 0u);
        QCOMPARE(w.total_blocks, f.total_blocks);  // the global layer keeps every position alike
        // Per token: the global layer only (the local one's bytes are its pool's).
        QCOMPARE(w.bytes_per_token * 2, f.bytes_per_token);
        const MemoryPlan pw = plan_memory(windowed_->model(), windowed_->device(), options(true));
        const MemoryPlan pf = plan_memory(flat_->model(), flat_->device(), options(false));
        QCOMPARE(pw.kv_local_blocks, kLocalPerSequence * kSequences);
        QCOMPARE(pf.kv_local_blocks, 0u);
        QCOMPARE(pw.kv_flat_bytes, pf.kv_bytes);
        QCOMPARE(pw.kv_bytes, pw.kv_layer_bytes * 2 + pw.kv_local_layer_bytes * 2);
        QVERIFY(pw.kv_bytes < pf.kv_bytes);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A prompt of 3 chunks, then 120 greedy steps: positions up to 160, 20 windows long.
    void a_long_conversation_gives_the_same_logits() {
        const auto p = prompt(40, 1);
        const SequenceId w = windowed_->create_sequence(), f = flat_->create_sequence();
        const auto lw = windowed_->prefill(w, p), lf = flat_->prefill(f, p);
        QVERIFY(lw == lf);
        decode_alike(w, f, lw, 120);
        QCOMPARE(windowed_->sequence_length(w), 160u);
        const KvStats s = windowed_->kv_stats();
        QVERIFY2(s.local_used_blocks <= kLocalPerSequence, qPrintable(QString::number(s.local_used_blocks)));
        QCOMPARE(s.used_blocks, 10u);  // the global layer: 160 positions
        // The next prompt continues the conversation from the prefix cache: the blocks of the
        // conversation's last window are cached in the local pool, so as much is reused as the
        // flat engine reuses, and the logits are the same.
        std::vector<int32_t> again = windowed_->sequence_tokens(w);
        windowed_->free_sequence(w);
        flat_->free_sequence(f);
        QCOMPARE(windowed_->kv_stats().local_used_blocks, 0u);
        again.insert(again.end(), {11, 12, 13});
        const SequenceId w2 = windowed_->create_sequence(), f2 = flat_->create_sequence();
        const auto rw = windowed_->prefill(w2, again), rf = flat_->prefill(f2, again);
        QCOMPARE(windowed_->last_reused_tokens(), flat_->last_reused_tokens());
        QCOMPARE(windowed_->last_reused_tokens(), 160u);
        QVERIFY(rw == rf);
        decode_alike(w2, f2, rw, 20);
        // A fork brings its window along too.
        const SequenceId wf = windowed_->fork_sequence(w2), ff = flat_->fork_sequence(f2);
        StepItem a{wf, {42}, true, false}, b{ff, {42}, true, false};
        const auto fw = windowed_->step(std::span<const StepItem>(&a, 1))[0];
        QVERIFY(fw == flat_->step(std::span<const StepItem>(&b, 1))[0]);
        decode_alike(wf, ff, fw, 20);
        for (SequenceId id : {w2, wf}) windowed_->free_sequence(id);
        for (SequenceId id : {f2, ff}) flat_->free_sequence(id);
        QCOMPARE(windowed_->kv_stats().local_used_blocks, 0u);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A prompt whose window is not cached any more (other prompts took the local pool's blocks)
    // reuses no more than what its window allows, and still gives the flat engine's logits.
    void a_prefix_without_its_window_is_computed() {
        const auto p = prompt(100, 2);
        const SequenceId w = windowed_->create_sequence(), f = flat_->create_sequence();
        windowed_->prefill(w, p);
        flat_->prefill(f, p);
        windowed_->free_sequence(w);
        flat_->free_sequence(f);
        // Other prompts take every local block (the global pool keeps p's blocks cached).
        for (uint32_t i = 0; i < 3; ++i) {
            const SequenceId o = windowed_->create_sequence();
            windowed_->prefill(o, prompt(100, 10 + i));
            windowed_->free_sequence(o);
        }
        auto longer = p;
        longer.insert(longer.end(), {7, 8});
        const SequenceId w2 = windowed_->create_sequence(), f2 = flat_->create_sequence();
        const auto lw = windowed_->prefill(w2, longer), lf = flat_->prefill(f2, longer);
        qInfo("reused %u of %zu tokens (the flat engine %u)", windowed_->last_reused_tokens(), longer.size(),
              flat_->last_reused_tokens());
        QVERIFY(windowed_->last_reused_tokens() < flat_->last_reused_tokens());
        QCOMPARE(windowed_->last_reused_tokens() + windowed_->last_computed_tokens(),
                 uint32_t(longer.size()));
        QCOMPARE(argmax(lw), argmax(lf));
        windowed_->free_sequence(w2);
        flat_->free_sequence(f2);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Warm-up takes only empty blocks of either pool and leaves no trace: the conversations' windows
    // stay theirs.
    void warm_up_leaves_the_windows_alone() {
        const SequenceId a = windowed_->create_sequence(), b = windowed_->create_sequence();
        windowed_->prefill(a, prompt(47, 3));
        windowed_->prefill(b, prompt(47, 4));
        const KvStats before = windowed_->kv_stats();
        for (uint32_t shape = 0; shape < Engine::kWarmUpShapes; ++shape) windowed_->warm_up(shape);
        windowed_->warm_up_batched_decode(2);
        const KvStats after = windowed_->kv_stats();
        QCOMPARE(after.local_used_blocks, before.local_used_blocks);
        QCOMPARE(after.used_blocks, before.used_blocks);
        QCOMPARE(windowed_->sequence_length(a), 47u);
        for (SequenceId id : {a, b}) windowed_->free_sequence(id);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void cleanupTestCase() {
        windowed_.reset();
        flat_.reset();
    }
};

QTEST_APPLESS_MAIN(KvWindowsTest)
#include "test_kv_windows.moc"
