// PerformancePanel, fed a reply's steps by hand (no engine): the figures of the turn, and the
// steady state and slowdown read from the decode steps as lantern-bench --steady reads them.
#include <QLabel>
#include <QTest>

#include "Format.h"
#include "lantern/steady_state.h"
#include "panels/PerformancePanel.h"

class TestPerformancePanel : public QObject {
    Q_OBJECT
private slots:
    // A reply whose first steps are slow (kernels compiling, caches cold) and then settles at 10
    // ms a step, slowing by 0.01 ms a step: the panel names where it settled, the steady rate and
    // the slowdown, the same numbers lantern::steady_state gives for those steps.
    void aSettlingReplyShowsItsSteadyRateAndSlowdown() {
        PerformancePanel panel;
        panel.beginTurn();
        panel.addToken(50.0);  // the prefill step: time to first token, not charted
        std::vector<double> decode;
        for (int i = 0; i < 6; ++i) decode.push_back(i % 2 ? 30.0 : 18.0);
        for (int i = 0; i < 200; ++i) decode.push_back(10.0 + 0.01 * i);
        for (size_t i = 0; i < decode.size(); ++i) {
            panel.addToken(decode[i]);
            if (i == 20) QCOMPARE(panel.valueText(QStringLiteral("steadyRate")), QStringLiteral("after 32 steps"));
        }
        QCOMPARE(panel.chartedPoints(), static_cast<int>(decode.size()));
        lantern::TurnStats stats;
        stats.generated_tokens = 207;
        stats.stop_reason = "max_tokens";
        panel.finishTurn(stats);
        const lantern::SteadyState want = lantern::steady_state(decode);
        QVERIFY(want.reached);
        QCOMPARE(want.transient_tokens, size_t{6});
        QCOMPARE(panel.valueText(QStringLiteral("steadyRate")), display::tokensPerSecond(want.steady_tok_s));
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("steadyRate"))->toolTip().contains(QStringLiteral("token 7")));
        QCOMPARE(panel.valueText(QStringLiteral("slowdown")),
                 QStringLiteral("+%1 %").arg(100.0 * want.slowdown, 0, 'f', 1));
        QVERIFY(want.slowdown > 0.1);  // 11.495 / 10.495 ms: the reply did slow down
        // A new turn starts from nothing.
        panel.beginTurn();
        QCOMPARE(panel.valueText(QStringLiteral("steadyRate")), QStringLiteral("—"));
        QCOMPARE(panel.chartedPoints(), 0);
    }

    // The window hands streamed tokens over by frames (MainWindow::flushStream): steps given in
    // batches show exactly what they show one by one.
    void stepsInBatchesShowWhatStepsOneByOneShow() {
        std::vector<double> steps{40.0};
        for (int i = 0; i < 90; ++i) steps.push_back(10.0 + (i % 7) * 0.1);
        PerformancePanel single, batched;
        single.beginTurn();
        batched.beginTurn();
        for (double s : steps) single.addToken(s);
        for (size_t i = 0; i < steps.size(); i += 13)
            batched.addTokens(std::vector<double>(steps.begin() + i, steps.begin() + std::min(steps.size(), i + 13)));
        QCOMPARE(batched.chartedPoints(), single.chartedPoints());
        for (const char* name : {"ttft", "generated", "lastStep", "decodeRate"})
            QCOMPARE(batched.valueText(QString::fromLatin1(name)), single.valueText(QString::fromLatin1(name)));
        // (The live steady state is refreshed every 8 steps, so a batch may refresh it a few steps
        // later; the turn's final figures are the same.)
        single.finishTurn(lantern::TurnStats{});
        batched.finishTurn(lantern::TurnStats{});
        for (const char* name : {"steadyRate", "slowdown"})
            QCOMPARE(batched.valueText(QString::fromLatin1(name)), single.valueText(QString::fromLatin1(name)));
        QVERIFY(single.valueText(QStringLiteral("steadyRate")) != QStringLiteral("not settled"));
    }

    // Steps that never settle are said to be so, with no rate made up for them.
    void anUnevenReplyIsNotSettled() {
        PerformancePanel panel;
        panel.beginTurn();
        panel.addToken(20.0);
        for (int i = 0; i < 100; ++i) panel.addToken(i % 2 ? 15.0 : 5.0);
        panel.finishTurn(lantern::TurnStats{});
        QCOMPARE(panel.valueText(QStringLiteral("steadyRate")), QStringLiteral("not settled"));
        QCOMPARE(panel.valueText(QStringLiteral("slowdown")), QStringLiteral("—"));
    }
};

QTEST_MAIN(TestPerformancePanel)
#include "test_performance_panel.moc"
