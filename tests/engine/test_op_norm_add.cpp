// The post-norm residual add (ops/norm_add: Gemma's post_attention_norm and post_ffw_norm) against
// its CPU reference: widths below, at and far above the 64-lane workgroup (odd ones too), every
// token count, rows of very different scale, guard words around x.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op_check.h"
#include "ops/norm_add.h"
#include "test_support.h"

using namespace lantern;
using namespace lantern::test;

class OpNormAddTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { log_op_device(); }

    void norm_add_matches_reference() {
        auto& ctx = test::context();
        Rng rng(77);
        double worst = 0;
        for (uint32_t dim : {1u, 45u, 64u, 1152u, 2305u})
            for (uint32_t T : kTokenCounts) {
                auto x = rng.floats(static_cast<size_t>(T) * dim, -3.0f, 3.0f);
                auto y = rng.floats(static_cast<size_t>(T) * dim, -1.0f, 1.0f);
                for (uint32_t t = 0; t < T; ++t)  // each token's row at a scale of its own
                    for (uint32_t i = 0; i < dim; ++i)
                        y[static_cast<size_t>(t) * dim + i] *= std::ldexp(1.0f, int(t % 9) - 4);
                auto w = rng.floats(dim, 0.5f, 1.5f);
                Guarded xb(ctx, x.size());
                xb.write(x.data(), x.size() * 4);
                DeviceBuffer yb(ctx, y.data(), y.size() * 4), wb(ctx, w.data(), w.size() * 4);
                ops::NormAddOp op(ctx, dim, 1e-6f, xb.range(), yb.range(), wb.range());
                VkCommandBuffer cmd = ctx.begin();
                op.record(cmd, T);
                ctx.barrier(cmd);
                ctx.submit_and_wait(cmd);
                std::vector<float> want = x;
                ops::reference_norm_add(want, y, w, dim, T, 1e-6f);
                auto got = xb.read_floats();
                QVERIFY2(xb.guards_ok(), qPrintable(QString("dim %1 T %2: write outside x").arg(dim).arg(T)));
                Stats s = compare(got, want);
                worst = std::max(worst, s.nmse);
                auto err = check("x + norm(y) * w", s, kElementwiseNmse);
                QVERIFY2(err.empty(),
                         qPrintable(QString("dim %1 T %2: %3").arg(dim).arg(T).arg(err.c_str())));
            }
        qInfo("norm_add: worst NMSE %.3g (bound %.0e)", worst, kElementwiseNmse);
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(OpNormAddTest)
#include "test_op_norm_add.moc"
