// The fused decode layer's profiling (ops/decode_layer): op_times turns the clocks its profiled
// variant writes into each op's time and the workgroups' idle time (a CPU-only check).
#include <QTest>

#include <cstdint>
#include <span>
#include <vector>

#include "ops/decode_layer.h"

using namespace lantern;

class OpDecodeLayerTest : public QObject {
    Q_OBJECT
private slots:
    // The fused layer's profiled variant writes each workgroup's clock at 10 events per layer
    // (shaders/decode_layer.comp, mark()); op_times turns them into each op's time and the
    // workgroups' idle time in it. Two workgroups with hand-picked clocks (above 2^32, so both words
    // count), and a second layer whose second workgroup wrote nothing (a step that gave up): skipped.
    void fused_layer_op_times_come_from_the_clocks() {
        const uint64_t hi = uint64_t{1} << 32;
        // Events: start; per op k < 4 its share done, its wait over; down done.
        const uint64_t w0[10] = {1000, 1500, 1600, 1700, 1800, 1900, 2000, 2500, 2600, 3000};
        const uint64_t w1[10] = {1100, 1550, 1620, 1620, 1810, 1950, 2010, 2550, 2620, 3100};
        std::vector<uint32_t> words(ops::DecodeLayerOp::clock_words(2, 2), 0u);
        auto put = [&](uint32_t layer, uint32_t wg, const uint64_t* e) {
            for (uint32_t i = 0; i < ops::DecodeLayerOp::kClockEvents; ++i) {
                const size_t at = ((layer * 2 + wg) * ops::DecodeLayerOp::kClockEvents + i) * 2;
                words[at] = static_cast<uint32_t>(hi + e[i]);
                words[at + 1] = static_cast<uint32_t>((hi + e[i]) >> 32);
            }
        };
        put(0, 0, w0);
        put(0, 1, w1);
        put(1, 0, w0);  // layer 1, workgroup 1: nothing written
        const ops::FusedOpTimes t = ops::DecodeLayerOp::op_times(words, 2, 2);
        QCOMPARE(t.layers, 1u);
        QCOMPARE(t.span_ns, 2100.0);  // first start to last end
        // Each op runs from the previous one's end (the first workgroup's start for Q/K/V) to the
        // first workgroup seeing its last item done (down: the last workgroup's end); idle = 2 x
        // that minus the workgroups' own work inside it.
        const double want_ns[5] = {600, 200, 200, 600, 500};
        const double want_idle[5] = {1200 - (500 + 450), 400 - (100 + 0), 400 - (100 + 140),
                                     1200 - (500 + 540), 1000 - (400 + 480)};
        for (int k = 0; k < 5; ++k) {
            QCOMPARE(t.ns[k], want_ns[k]);
            QCOMPARE(t.idle_ns[k], want_idle[k]);
        }
        // Too few words for the layers asked: nothing, rather than reading past them.
        QCOMPARE(ops::DecodeLayerOp::op_times(std::span<const uint32_t>(words).first(10), 2, 2).layers, 0u);
    }
};

QTEST_APPLESS_MAIN(OpDecodeLayerTest)
#include "test_op_decode_layer.moc"
