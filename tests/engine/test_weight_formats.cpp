// The weight formats (engine/core/src/ops/weight_*.cpp): half and BF16 conversion, the error bound
// of every type's quantize -> dequantize round trip, the device-layout fields of the type table, and
// dequantization (CPU, embedding lookup, matmul) that reproduces llama.cpp's on its own blocks.
#include <QFile>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "lantern/gguf.h"
#include "op_check.h"
#include "ops/embed.h"
#include "ops/matmul.h"
#include "ops/weight_format.h"
#include "test_support.h"

using namespace lantern;
using namespace lantern::test;

class WeightFormatsTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { log_op_device(); }

    void half_conversion_round_trips_and_rounds_to_nearest_even() {
        // Every finite half survives half -> float -> half.
        for (uint32_t h = 0; h < 0x10000; ++h) {
            if ((h & 0x7c00) == 0x7c00) continue;  // Inf / NaN
            QCOMPARE(ops::float_to_half(ops::half_to_float(static_cast<uint16_t>(h))),
                     static_cast<uint16_t>(h));
        }
        QCOMPARE(ops::half_to_float(0x3c00), 1.0f);
        QCOMPARE(ops::half_to_float(0x0001), std::ldexp(1.0f, -24));                   // smallest subnormal
        QCOMPARE(ops::float_to_half(1.0f + std::ldexp(1.0f, -11)), uint16_t(0x3c00));  // tie -> even
        QCOMPARE(ops::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), uint16_t(0x3c02));
        QCOMPARE(ops::float_to_half(65520.0f), uint16_t(0x7c00));  // rounds up to Inf
        QCOMPARE(ops::float_to_half(-0.0f), uint16_t(0x8000));
        QVERIFY(std::isnan(ops::half_to_float(ops::float_to_half(std::nanf("")))));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // BF16 tensors go to F16's layout (half the memory of F32's) unless a value exceeds F16's
    // range; the conversion is exact from 2^-17 up and off by at most 2^-25 below.
    void bf16_takes_f16_layout_when_in_range() {
        const uint32_t bf16 = static_cast<uint32_t>(GgmlType::BF16);
        Rng rng(5);
        auto x = rng.floats(256, -0.1f, 0.1f);
        x[3] = 3e-6f;     // below 2^-17: an F16 subnormal, rounded
        x[4] = -1e-30f;   // far below: zero
        x[5] = 65000.0f;  // in range
        auto enc = ops::quantize(bf16, x, 256);
        const auto want = ops::dequantize(bf16, enc, 256);
        const auto& in_range = ops::weight_format_for_data(bf16, enc, "t");
        QCOMPARE(in_range.device_type, static_cast<uint32_t>(GgmlType::F16));
        QCOMPARE(ops::find_weight_format(bf16)->device_type, static_cast<uint32_t>(GgmlType::F32));
        auto r = ops::repack(in_range, enc, 1, 256);
        QCOMPARE(r.row_units, uint64_t(32));
        for (size_t i = 0; i < 256; ++i) {
            const float got = ops::half_to_float(static_cast<uint16_t>(r.values[i / 2] >> (16 * (i % 2))));
            const double err = std::fabs(double(got) - want[i]);
            QVERIFY2(std::fabs(want[i]) >= std::ldexp(1.0, -17) ? err == 0 : err <= std::ldexp(1.0, -25),
                     qPrintable(QString("element %1: %2 -> %3").arg(i).arg(want[i]).arg(got)));
        }
        x[9] = 70000.0f;  // beyond F16: the whole tensor stays in F32's layout
        QCOMPARE(ops::weight_format_for_data(bf16, ops::quantize(bf16, x, 256), "t").device_type,
                 static_cast<uint32_t>(GgmlType::F32));
    }

    void quantize_dequantize_error_is_bounded_data() {
        QTest::addColumn<uint32_t>("type");
        QTest::addColumn<double>("max_rel");  // max |x - dq(q(x))| / max|x| of a block
        QTest::newRow("F32") << kTypes[0] << 0.0;
        QTest::newRow("F16") << kTypes[1] << 1.0 / 2048;
        QTest::newRow("Q8_0") << kTypes[2] << 0.5 / 127 + 1e-3;
        QTest::newRow("Q4_0") << kTypes[3] << 1.0 / 8 + 1e-3;
        // K-quants: half a step of the sub-block's range (up to 2 amax over 15 or 31 steps), plus
        // the 6-bit rounding of the sub-block scales and mins; Q6_K, like Q4_0, maps the extreme
        // to -32, so the other sign's extreme clamps at 31: a whole step of amax / 32.
        QTest::newRow("Q4_K") << kTypes[4] << 1.0 / 15 + 0.02;
        QTest::newRow("Q5_K") << kTypes[5] << 1.0 / 31 + 0.02;
        QTest::newRow("Q6_K") << kTypes[6] << 1.0 / 32 + 0.005;
        // Half a step of the block's range in 15 or 31 steps (plus the f16 rounding of d and m);
        // Q5_0 maps the extreme to -16 as Q4_0 to -8: a whole step of amax / 16.
        QTest::newRow("Q4_1") << kTypes[7] << 1.0 / 15 + 0.005;
        QTest::newRow("Q5_0") << kTypes[8] << 1.0 / 16 + 1e-3;
        QTest::newRow("Q5_1") << kTypes[9] << 1.0 / 31 + 0.005;
        // IQ4: the extreme maps to level -127, so the other sign's extreme clamps at level 113 (14
        // of 127 off, more than half the widest gap, 24), plus (IQ4_XS) the 6-bit rounding of the
        // sub-block scales; BF16: half a unit in the 8th significant bit.
        QTest::newRow("IQ4_NL") << kTypes[10] << 14.0 / 127 + 1e-3;
        QTest::newRow("IQ4_XS") << kTypes[11] << 14.0 / 127 + 0.02;
        QTest::newRow("BF16") << kTypes[12] << 1.0 / 256;
        // Q3_K maps a sub-block's extreme to -4, so the other sign's extreme clamps at 3: a whole
        // step of amax / 4, plus the 6-bit rounding of the sub-block scales.
        QTest::newRow("Q3_K") << kTypes[13] << 1.0 / 4 + 0.02;
    }

    // A type stored in another type's device layout (Q4_1 -> Q4_K's, Q5_0 -> Q8_0's, Q5_1 ->
    // Q5_K's) must describe that layout exactly and run its kernels: the shaders know only the
    // device type (weights.glsl), the host sizes and walks rows by these fields.
    void device_layout_fields_match_the_device_type() {
        QVERIFY(ops::weight_formats().size() > std::size(kTypes));  // BF16 has two rows
        for (const auto& row : ops::weight_formats()) {
            const uint32_t t = row.ggml_type;
            const auto* f = &row;
            const auto* d = ops::find_weight_format(f->device_type);
            QVERIFY2(d && d->device_type == d->ggml_type, ggml_type_name(t));
            QCOMPARE(f->group_units, d->group_units);
            QCOMPARE(f->unit_elements, d->unit_elements);
            QCOMPARE(f->scales_per_group, d->scales_per_group);
            QCOMPARE(f->embed, d->embed);
            QCOMPARE(f->matmul, d->matmul);
            QCOMPARE(f->matmul_norm, d->matmul_norm);
            QCOMPARE(f->matmul_silu, d->matmul_silu);
            QCOMPARE(f->matmul_rope_kvf16, d->matmul_rope_kvf16);
            QCOMPARE(f->matmul_rope_kvf32, d->matmul_rope_kvf32);
            QCOMPARE(f->matmul_swiglu, d->matmul_swiglu);
            // A quantized type's group never straddles two blocks of the file's type.
            if (f->block_elements > 1) QCOMPARE(f->block_elements % (f->unit_elements * f->group_units), 0u);
        }
    }
    void quantize_dequantize_error_is_bounded() {
        QFETCH(uint32_t, type);
        QFETCH(double, max_rel);
        Rng rng(11);
        const uint32_t row = std::max<uint32_t>(96, ops::find_weight_format(type)->block_elements);
        auto x = rng.floats(64 * 96, -3.0f, 3.0f);  // 24 rows of 256 for the K-quants
        auto q = ops::quantize(type, x, row);
        QCOMPARE(q.size(), size_t(ggml_row_bytes(type, row) * (x.size() / row)));
        auto dq = ops::dequantize(type, q, x.size());
        double worst = 0;
        for (size_t b = 0; b < x.size() / 32; ++b) {
            double amax = 0;
            for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(double(x[b * 32 + i])));
            for (size_t i = 0; i < 32; ++i)
                worst = std::max(worst, std::fabs(double(x[b * 32 + i]) - dq[b * 32 + i]) / amax);
        }
        qInfo("%s: worst per-block relative error %.3g (bound %.3g)", ggml_type_name(type), worst, max_rel);
        QVERIFY2(worst <= max_rel, qPrintable(QString("error %1 > %2").arg(worst).arg(max_rel)));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // llama.cpp's own dequantizer (libggml's to_float, run by scripts/ggml-dequant-vectors) on
    // random blocks of every quantized type, against ours on the CPU and on the device: the
    // embedding lookup reproduces its floats, a matmul over those rows its products. Catches a
    // misread block layout (an element order, a scale's bits) that a round trip through our own
    // quantizer and dequantizer would share and so never see.
    void dequantization_matches_llama_cpp() {
        QFile f(QString::fromStdString(test::source_path("tests/data/ggml_dequant_vectors.txt")));
        QVERIFY(f.open(QIODevice::ReadOnly | QIODevice::Text));
        // Records of two lines: "TYPE ELEMENTS HEXBYTES", then ELEMENTS floats in %a notation.
        QList<QByteArray> lines;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (!line.isEmpty() && !line.startsWith('#')) lines.push_back(line);
        QCOMPARE(lines.size(), 22);
        auto& ctx = test::context();
        Rng rng(77);
        std::vector<uint32_t> seen;
        for (qsizetype r = 0; r + 1 < lines.size(); r += 2) {
            const QList<QByteArray> head = lines[r].split(' ');
            QCOMPARE(head.size(), 3);
            const uint32_t type = head[0].toUInt(), elements = head[1].toUInt();
            const QByteArray raw = QByteArray::fromHex(head[2]);
            const std::vector<uint8_t> blocks(raw.begin(), raw.end());
            QCOMPARE(blocks.size(), size_t(ggml_row_bytes(type, elements)));
            std::vector<float> ggml;
            for (const QByteArray& v : lines[r + 1].split(' '))
                ggml.push_back(std::strtof(v.constData(), nullptr));
            QCOMPARE(ggml.size(), size_t(elements));
            seen.push_back(type);
            const char* name = ggml_type_name(type);
            QVERIFY2(ops::find_weight_format(type), name);
            double amax = 0;
            for (float v : ggml) amax = std::max(amax, std::fabs(double(v)));
            QVERIFY(amax > 0);

            // CPU: the same floats (ggml computes scale * q - min in float as we do; a 1e-6
            // relative slack allows for an FMA the compiler may form on either side).
            const auto ours = ops::dequantize(type, blocks, elements);
            double worst = 0;
            for (uint32_t i = 0; i < elements; ++i)
                worst = std::max(worst, std::fabs(double(ours[i]) - ggml[i]));
            qInfo("%s: %u elements, CPU max |diff| vs llama.cpp %.3g (max |value| %.3g)", name, elements,
                  worst, amax);
            QVERIFY2(worst <= 1e-6 * amax,
                     qPrintable(QString("%1: CPU dequantization differs by %2").arg(name).arg(worst)));

            // Device: rows of one block-row each, in the device's layout and the other one.
            const uint32_t block = ops::find_weight_format(type)->block_elements;
            const uint32_t cols = std::max(block, 128u), rows = elements / cols;
            for (auto split : {ops::MatmulSplit::ForDevice, other_split_of(ctx)}) {
                auto w = make_weight_encoded(ctx, type, rows, cols, blocks, {}, 0, split);
                std::vector<int32_t> tokens(rows);
                std::iota(tokens.begin(), tokens.end(), 0);
                DeviceBuffer tb(ctx, tokens.data(), tokens.size() * 4);
                Guarded out(ctx, elements);
                if (split == ops::MatmulSplit::ForDevice) {
                    ops::EmbedOp op(ctx, w->device, tb.range(), out.range());
                    VkCommandBuffer cmd = ctx.begin();
                    op.record(cmd, rows);
                    ctx.barrier(cmd);
                    ctx.submit_and_wait(cmd);
                    auto got = out.read_floats();
                    QVERIFY(out.guards_ok());
                    double dev = 0;
                    for (uint32_t i = 0; i < elements; ++i)
                        dev = std::max(dev, std::fabs(double(got[i]) - ggml[i]));
                    qInfo("%s: embedding lookup max |diff| vs llama.cpp %.3g", name, dev);
                    QVERIFY2(dev <= 1e-6 * amax,
                             qPrintable(QString("%1: embedding differs by %2").arg(name).arg(dev)));
                }
                for (uint32_t T : {1u, 9u}) {
                    auto x = rng.floats(static_cast<size_t>(T) * cols, -2.0f, 2.0f);
                    auto got = run_plain_matmul(ctx, *w, x, T, split);
                    QVERIFY2(!got.empty(), "wrote outside the output buffer");
                    const auto want = reference_plain_matmul(ggml, rows, cols, x, T,
                                                             ops::fixed_point_input(ctx, split, type, T));
                    std::vector<float> got_f(got.size());
                    std::memcpy(got_f.data(), got.data(), got.size() * 4);
                    auto err = check("y", compare(got_f, want), kMatmulNmse);
                    QVERIFY2(err.empty(),
                             qPrintable(QString("%1 T=%2: %3").arg(name).arg(T).arg(err.c_str())));
                }
            }
        }
        for (uint32_t t : kTypes)
            if (ops::find_weight_format(t)->block_elements > 1)
                QVERIFY2(std::find(seen.begin(), seen.end(), t) != seen.end(), ggml_type_name(t));
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(WeightFormatsTest)
#include "test_weight_formats.moc"
