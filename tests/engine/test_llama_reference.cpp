// The whole forward pass against the outside world: stories260K (a real trained Llama model) must
// reproduce the float64 reference logits and greedy text in ../shared/reference.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <cmath>
#include <cstring>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/perplexity.h"
#include "test_support.h"

using namespace lantern;

namespace {

std::vector<float> reference_logits() {
    QFile f(QString::fromStdString(test::shared_path("reference/stories260K_logits_64x512.f32")));
    if (!f.open(QIODevice::ReadOnly)) throw Error(ErrorCode::Io, "cannot read the reference logits");
    QByteArray b = f.readAll();
    std::vector<float> v(b.size() / 4);
    std::memcpy(v.data(), b.data(), v.size() * 4);
    return v;
}

EngineOptions options(bool kv_f16, uint32_t logit_rows = 1) {
    EngineOptions o = test::validated_engine_options();
    o.kv_f16 = kv_f16;
    o.max_logit_rows = logit_rows;
    o.max_step_tokens = 64;
    o.context_length = 512;
    return o;
}

size_t argmax(const float* p, size_t n) {
    return static_cast<size_t>(std::max_element(p, p + n) - p);
}

struct Diff {
    double max_abs = 0;
    int argmax_mismatch = 0;
};

Diff compare_row(const float* got, const float* want, size_t n) {
    Diff d;
    for (size_t i = 0; i < n; ++i) d.max_abs = std::max(d.max_abs, std::fabs(double(got[i]) - want[i]));
    d.argmax_mismatch = argmax(got, n) != argmax(want, n);
    return d;
}

}  // namespace

class LlamaReferenceTest : public QObject {
    Q_OBJECT
private slots:
    void prefill_of_64_tokens_matches_reference_logits() {
        auto ref = test::stories_reference();
        auto toks = test::token_ids(ref["logits_tokens"].toArray());
        auto want = reference_logits();
        QCOMPARE(toks.size(), size_t(64));
        auto engine = Engine::load(test::shared_path("models/stories260K.gguf"), options(false, 64));
        auto seq = engine->create_sequence();
        StepItem item{seq, toks, true, true};
        auto rows = engine->step(std::span<const StepItem>(&item, 1));
        QCOMPARE(rows.size(), size_t(64));
        double worst = 0;
        for (size_t i = 0; i < 64; ++i) {
            auto d = compare_row(rows[i].data(), want.data() + i * 512, 512);
            worst = std::max(worst, d.max_abs);
            QVERIFY2(!d.argmax_mismatch, qPrintable(QString("argmax differs at position %1").arg(i)));
        }
        qInfo("prefill: max |logit - reference| = %.3g over 64 x 512", worst);
        QVERIFY2(worst <= 1e-3, qPrintable(QString("max abs diff %1 > 1e-3").arg(worst)));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Perplexity as llama-perplexity measures it, against the one the float64 reference logits
    // give: the 64 reference tokens as chunks of 64, the second half of each scored (positions 32..62
    // predicting tokens 33..63). Three copies of them (and a partial fourth, ignored) give three
    // equal chunks; a text shorter than a chunk, or a chunk longer than the context, is refused.
    void perplexity_matches_reference_logits() {
        auto ref = test::stories_reference();
        auto toks = test::token_ids(ref["logits_tokens"].toArray());
        auto want = reference_logits();
        double nll = 0;
        for (size_t j = 32; j + 1 < 64; ++j) {
            const float* row = want.data() + j * 512;
            const double m = *std::max_element(row, row + 512);
            double sum = 0;
            for (size_t v = 0; v < 512; ++v) sum += std::exp(row[v] - m);
            nll += std::log(sum) - (row[toks[j + 1]] - m);
        }
        const double expected = std::exp(nll / 31);

        auto engine = Engine::load(test::shared_path("models/stories260K.gguf"), options(false, 64));
        std::vector<int32_t> text;
        for (int copy = 0; copy < 3; ++copy) text.insert(text.end(), toks.begin(), toks.end());
        text.insert(text.end(), toks.begin(), toks.begin() + 10);
        PerplexityOptions o;
        o.context = 64;
        o.step_tokens = 24;  // chunks cross step boundaries, and the scored half starts inside a step
        std::vector<double> running;
        const auto r =
            measure_perplexity(*engine, text, o, [&](uint32_t, double p) { running.push_back(p); });
        qInfo("perplexity %.6f (reference %.6f) +/- %.4f over %u chunks, %u scored", r.perplexity, expected,
              r.std_error, r.chunks, r.scored_tokens);
        QCOMPARE(r.chunks, 3u);
        QCOMPARE(r.scored_tokens, 3u * 31u);
        QCOMPARE(running.size(), size_t(3));
        QVERIFY2(std::fabs(r.perplexity / expected - 1) < 1e-4,
                 qPrintable(QString("perplexity %1, reference %2").arg(r.perplexity).arg(expected)));
        for (double p : running) QVERIFY(std::fabs(p / r.perplexity - 1) < 1e-5);  // equal chunks
        QVERIFY(r.std_error > 0 && r.std_error < r.perplexity);
        o.max_chunks = 2;
        QCOMPARE(measure_perplexity(*engine, text, o).chunks, 2u);
        QCOMPARE(engine->kv_stats().used_blocks, 0u);  // every chunk's sequence was freed

        auto refused = [&](std::span<const int32_t> t, uint32_t ctx, const char* needle) {
            PerplexityOptions bad;
            bad.context = ctx;
            try {
                measure_perplexity(*engine, t, bad);
            } catch (const Error& e) {
                QCOMPARE(e.code(), ErrorCode::InvalidArgument);
                QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
                return;
            }
            QFAIL("not refused");
        };
        refused(std::span<const int32_t>(toks).first(40), 64, "fewer than one chunk of 64");
        refused(text, 1024, "do not fit the engine's context of 512");
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A model against a base model (llama-perplexity --kl-divergence): against itself exactly zero
    // divergence and full agreement; stories260K's Q8_0 file against the F32 one a small positive
    // divergence, rare top-token changes, and each side's perplexity the one it measures alone.
    void compare_models_measures_quantization_distance() {
        auto ref = test::stories_reference();
        const auto greedy = test::token_ids(ref["greedy_from_bos_tokens"].toArray());  // BOS + 199
        auto f32 = Engine::load(test::shared_path("models/stories260K.gguf"), options(true, 64));
        auto q8 = Engine::load(test::shared_path("models/stories260K-q8_0.gguf"), options(true, 64));
        PerplexityOptions o;
        o.context = 64;
        o.step_tokens = 64;
        const auto self = compare_models(*f32, *f32, greedy, o);
        QCOMPARE(self.scored_tokens, 3u * 31u);
        QCOMPARE(self.mean_kld, 0.0);
        QCOMPARE(self.max_kld, 0.0);
        QCOMPARE(self.top1_agreement, 1.0);
        QCOMPARE(self.base.perplexity, self.test.perplexity);

        std::vector<uint32_t> chunks_seen;
        const auto a =
            compare_models(*f32, *q8, greedy, o, [&](uint32_t c, double) { chunks_seen.push_back(c); });
        qInfo("Q8_0 vs F32: KLD mean %.3g p99 %.3g max %.3g, same top token %.1f %%, PPL %.4f vs %.4f",
              a.mean_kld, a.kld_p99, a.max_kld, 100 * a.top1_agreement, a.test.perplexity, a.base.perplexity);
        QCOMPARE(chunks_seen, (std::vector<uint32_t>{0, 1, 2}));
        QVERIFY(a.mean_kld > 0 && a.mean_kld < 0.01);
        QVERIFY(a.kld_p99 > 0 && a.kld_p99 <= a.max_kld);
        QVERIFY(a.top1_agreement > 0.9);
        QCOMPARE(a.base.perplexity, measure_perplexity(*f32, greedy, o).perplexity);
        QCOMPARE(a.test.perplexity, measure_perplexity(*q8, greedy, o).perplexity);
        QVERIFY(a.test.perplexity != a.base.perplexity);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void weights_spread_over_many_slabs_give_the_same_logits() {
        // Models larger than one weight slab (256 MiB by default) are placed in several; 64 KiB
        // slabs force that layout on stories260K (about 20 slabs) so it is tested on every run.
        auto ref = test::stories_reference();
        auto toks = test::token_ids(ref["logits_tokens"].toArray());
        auto want = reference_logits();
        EngineOptions o = options(false, 64);
        o.weight_slab_bytes = 64 << 10;
        auto engine = Engine::load(test::shared_path("models/stories260K.gguf"), o);
        auto seq = engine->create_sequence();
        StepItem item{seq, toks, true, true};
        auto rows = engine->step(std::span<const StepItem>(&item, 1));
        double worst = 0;
        for (size_t i = 0; i < 64; ++i)
            worst = std::max(worst, compare_row(rows[i].data(), want.data() + i * 512, 512).max_abs);
        QVERIFY2(worst <= 1e-3, qPrintable(QString("max abs diff %1 > 1e-3").arg(worst)));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void decode_one_token_at_a_time_matches_reference_logits() {
        auto ref = test::stories_reference();
        auto toks = test::token_ids(ref["logits_tokens"].toArray());
        auto want = reference_logits();
        auto engine = Engine::load(test::shared_path("models/stories260K.gguf"), options(false));
        auto seq = engine->create_sequence();
        double worst = 0;
        for (size_t i = 0; i < toks.size(); ++i) {
            StepItem item{seq, {toks[i]}, true, false};
            auto rows = engine->step(std::span<const StepItem>(&item, 1));
            auto d = compare_row(rows[0].data(), want.data() + i * 512, 512);
            worst = std::max(worst, d.max_abs);
            QVERIFY2(!d.argmax_mismatch, qPrintable(QString("argmax differs at position %1").arg(i)));
        }
        qInfo("decode: max |logit - reference| = %.3g over 64 x 512", worst);
        QVERIFY2(worst <= 1e-3, qPrintable(QString("max abs diff %1 > 1e-3").arg(worst)));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void greedy_from_bos_reproduces_reference_tokens_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("kv_f16");
        QTest::addColumn<int>("min_agree");
        QTest::newRow("f32 weights, f32 KV") << "stories260K.gguf" << false << 200;
        QTest::newRow("f32 weights, f16 KV") << "stories260K.gguf" << true << 200;
        QTest::newRow("f16 weights, f16 KV") << "stories260K-f16.gguf" << true << 200;
        // Q8_0 rounds weights to 8 bits: its greedy path may leave the reference; the measured
        // agreement is printed and must stay above this floor.
        QTest::newRow("q8_0 weights, f16 KV") << "stories260K-q8_0.gguf" << true << 40;
    }
    void greedy_from_bos_reproduces_reference_tokens() {
        QFETCH(QString, file);
        QFETCH(bool, kv_f16);
        QFETCH(int, min_agree);
        auto ref = test::stories_reference();
        auto want = test::token_ids(ref["greedy_from_bos_tokens"].toArray());
        QCOMPARE(want.size(), size_t(200));
        auto engine = Engine::load(test::shared_path("models/" + file.toStdString()), options(kv_f16));
        auto seq = engine->create_sequence();
        std::vector<int32_t> got{want[0]};
        auto logits = engine->prefill(seq, got);
        while (got.size() < want.size()) {
            int32_t next = static_cast<int32_t>(argmax(logits.data(), logits.size()));
            got.push_back(next);
            StepItem item{seq, {next}, true, false};
            logits = engine->step(std::span<const StepItem>(&item, 1))[0];
        }
        int agree = 0;
        while (agree < 200 && got[agree] == want[agree]) ++agree;
        qInfo("%s: first %d of 200 greedy tokens identical to the reference", qPrintable(file), agree);
        QVERIFY2(agree >= min_agree, qPrintable(QString("only %1 tokens agree").arg(agree)));
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(LlamaReferenceTest)
#include "test_llama_reference.moc"
