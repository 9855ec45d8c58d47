// The embedding lookup (ops/embed) against its CPU reference for every weight type: row lengths
// around the workgroup width, every token count, tables in one part and in three, guard words
// around the output.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lantern/gguf.h"
#include "op_check.h"
#include "ops/embed.h"
#include "ops/weight_format.h"
#include "test_support.h"

using namespace lantern;
using namespace lantern::test;

class OpEmbedTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { log_op_device(); }

    void embed_matches_reference_data() {
        QTest::addColumn<uint32_t>("type");
        for (uint32_t t : kTypes) QTest::newRow(ggml_type_name(t)) << t;
    }
    void embed_matches_reference() {
        QFETCH(uint32_t, type);
        auto& ctx = test::context();
        const bool quantized = ops::find_weight_format(type)->block_elements > 1;
        // Row lengths around the 64-wide workgroup, odd ones for float types.
        const std::vector<uint32_t> dims =
            quantized
                ? std::vector<uint32_t>{whole_blocks(type, 1), whole_blocks(type, 3), whole_blocks(type, 5)}
                : std::vector<uint32_t>{1, 45, 65, 129};
        Rng rng(100 + type);
        double worst = 0, worst_abs = 0;
        for (uint32_t dim : dims)
            for (uint32_t T : kTokenCounts) {
                const uint32_t vocab = 37;
                // Every other case in three row parts (a table larger than one texel view).
                const std::vector<uint64_t> parts =
                    T % 2 ? std::vector<uint64_t>{} : std::vector<uint64_t>{12, 16, 9};
                auto w = make_weight(ctx, type, vocab, dim, rng, parts);
                std::vector<int32_t> tokens(T);
                for (auto& tk : tokens) tk = static_cast<int32_t>(rng.below(vocab));
                tokens[0] = vocab - 1;  // the last row too
                DeviceBuffer tb(ctx, tokens.data(), tokens.size() * 4);
                Guarded out(ctx, static_cast<size_t>(T) * dim);
                // Every other case scaled as Gemma scales its embeddings (sqrt of the width).
                const float scale = (dim + T) % 2 ? std::sqrt(static_cast<float>(dim)) : 1.0f;
                ops::EmbedOp op(ctx, w->device, tb.range(), out.range(), scale);
                VkCommandBuffer cmd = ctx.begin();
                op.record(cmd, T);
                ctx.barrier(cmd);
                ctx.submit_and_wait(cmd);
                std::vector<float> want(static_cast<size_t>(T) * dim);
                ops::reference_embed(w->dequantized, dim, tokens, want.data(), scale);
                auto got = out.read_floats();
                QVERIFY2(out.guards_ok(),
                         qPrintable(QString("dim %1 T %2: write outside the output").arg(dim).arg(T)));
                Stats s = compare(got, want);
                worst = std::max(worst, s.nmse);
                worst_abs = std::max(worst_abs, s.max_abs);
                auto err = check("embedding", s, kElementwiseNmse);
                QVERIFY2(err.empty(),
                         qPrintable(QString("dim %1 T %2: %3").arg(dim).arg(T).arg(err.c_str())));
            }
        qInfo("embed %s: worst NMSE %.3g, max |diff| %.3g (bound %.0e)", ggml_type_name(type), worst,
              worst_abs, kElementwiseNmse);
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(OpEmbedTest)
#include "test_op_embed.moc"
