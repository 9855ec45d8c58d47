// StepProfilePanel, given step profiles by hand (no engine): the op families in the user's words
// and in the step's order, the fused layers' insides in place of their one entry, the rates and
// waits beside the bars, and the button's request.
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include "panels/StepProfilePanel.h"

namespace {
lantern::OpTime op(const char* name, double ms, uint64_t bytes = 0, double idle = -1) {
    lantern::OpTime o;
    o.op = name;
    o.ms = ms;
    o.dispatches = 1;
    o.bytes = bytes;
    o.idle_fraction = idle;
    return o;
}
}  // namespace

class TestStepProfilePanel : public QObject {
    Q_OBJECT
private slots:
    // A fused step (lavapipe): embed, the layers as one entry with their five op families and the
    // start-up inside, the LM head. The panel shows the insides in place of the one entry.
    void aFusedStepShowsItsLayersOpByOp() {
        StepProfilePanel panel;
        panel.setModelLoaded(true);
        lantern::StepProfile p;
        p.gpu_ms = 10.0;
        p.total_ms = 10.5;
        p.dispatches = 14;
        p.fused_layers = true;
        // Bytes per step: 2 MB in 2 ms is 1 GB/s.
        p.ops = {op("embed", 0.1), op("fused_layer", 8.0, 8'000'000), op("lm_head", 1.9, 3'800'000)};
        p.fused_ops = {op("qkv+rope+kv", 2.0, 2'000'000, 0.05), op("attention", 0.5, 100'000, 0.10),
                       op("attn_output", 1.0, 1'000'000, 0.02), op("ffn_gate_up", 3.0, 3'000'000, 0.01),
                       op("ffn_down", 1.0, 2'000'000, 0.03),    op("fused_start", 0.5)};
        panel.showProfile(p, 41);
        const QStringList rows = panel.rowTexts();
        QCOMPARE(rows.size(), 8);
        QVERIFY2(rows.first().startsWith(QStringLiteral("Embedding lookup: ")), qPrintable(rows.first()));
        QVERIFY2(rows.at(1).startsWith(QStringLiteral("Q/K/V, RoPE, KV store: ")), qPrintable(rows.at(1)));
        QVERIFY2(rows.at(4).startsWith(QStringLiteral("FFN gate/up, SwiGLU: ")), qPrintable(rows.at(4)));
        QVERIFY2(rows.at(6).startsWith(QStringLiteral("Layer dispatches starting: ")),
                 qPrintable(rows.at(6)));
        QVERIFY2(rows.last().startsWith(QStringLiteral("Output layer (logits): ")), qPrintable(rows.last()));
        const auto& bars = panel.findChild<OpBars*>(QStringLiteral("opBars"))->rows();
        QCOMPARE(bars.at(1).share, 0.2);  // 2 of the step's 10 ms
        QCOMPARE(bars.at(1).detail, QStringLiteral("1.0 GB/s · 5 % waiting"));
        QCOMPARE(bars.at(6).detail, QString());  // the start-up reads nothing and waits for nothing
        QCOMPARE(bars.back().detail, QStringLiteral("2.0 GB/s"));
        QCOMPARE(panel.status(), QStringLiteral("Token 42, timed on the device:"));
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("profileSummary"))
                    ->text()
                    .contains(QStringLiteral("14 dispatch")));
    }

    // The separate kernels (a GPU, or lavapipe with an attention capture): the ops as they come.
    void separateKernelsAreShownAsTheyRan() {
        StepProfilePanel panel;
        lantern::StepProfile p;
        p.gpu_ms = 4.0;
        p.ops = {op("embed", 0.5),       op("qkv+rope+kv", 1.0),  op("attention", 0.5),
                 op("attn_output", 0.5), op("ffn_gate_up", 0.75), op("ffn_down", 0.25),
                 op("lm_head", 0.5)};
        panel.showProfile(p, 0);
        QCOMPARE(panel.rowTexts().size(), 7);
        QVERIFY(panel.rowTexts().at(2).startsWith(QStringLiteral("Attention: ")));
        // A device without timestamps sends a profile with no ops: said so, the bars left as they were.
        panel.showProfile(lantern::StepProfile{}, 3);
        QVERIFY(panel.status().contains(QStringLiteral("cannot time")));
        QCOMPARE(panel.rowTexts().size(), 7);
    }

    // The button asks for a profile (the window passes it to the worker) only with a model loaded.
    void theButtonAsksForTheNextStep() {
        StepProfilePanel panel;
        QSignalSpy asked(&panel, &StepProfilePanel::timeNextStepRequested);
        auto* button = panel.findChild<QPushButton*>(QStringLiteral("timeNextStep"));
        QVERIFY(!button->isEnabled());
        panel.setModelLoaded(true);
        QVERIFY(button->isEnabled());
        QTest::mouseClick(button, Qt::LeftButton);
        QCOMPARE(asked.count(), 1);
        QVERIFY(panel.status().startsWith(QStringLiteral("Timing the next two steps")));
    }
};

QTEST_MAIN(TestStepProfilePanel)
#include "test_step_profile_panel.moc"
