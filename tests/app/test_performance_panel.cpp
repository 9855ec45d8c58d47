// PerformancePanel, fed a reply's steps by hand (no engine): the figures of the turn, and the
// steady state and slowdown read from the decode steps as lantern-bench --steady reads them.
#include <QLabel>
#include <QTest>
#include <QtCharts/QChartView>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>

#include "Format.h"
#include "lantern/steady_state.h"
#include "panels/LatencyChartData.h"
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
            if (i == 20)
                QCOMPARE(panel.valueText(QStringLiteral("steadyRate")), QStringLiteral("after 32 steps"));
        }
        QCOMPARE(panel.chartedPoints(), static_cast<int>(decode.size()));
        lantern::TurnStats stats;
        stats.generated_tokens = 207;
        stats.stop_reason = lantern::StopReason::MaxTokens;
        panel.finishTurn(stats);
        const lantern::SteadyState want = lantern::steady_state(decode);
        QVERIFY(want.reached);
        QCOMPARE(want.transient_tokens, size_t{6});
        QCOMPARE(panel.valueText(QStringLiteral("steadyRate")), display::tokensPerSecond(want.steady_tok_s));
        QVERIFY(panel.findChild<QLabel*>(QStringLiteral("steadyRate"))
                    ->toolTip()
                    .contains(QStringLiteral("token 7")));
        QCOMPARE(panel.valueText(QStringLiteral("slowdown")),
                 QStringLiteral("+%1 %").arg(100.0 * want.slowdown, 0, 'f', 1));
        QVERIFY(want.slowdown > 0.1);  // 11.495 / 10.495 ms: the reply did slow down
        // A new turn starts from nothing.
        panel.beginTurn();
        QCOMPARE(panel.valueText(QStringLiteral("steadyRate")), QStringLiteral("—"));
        QCOMPARE(panel.chartedPoints(), 0);
    }

    // The chart's token axis stays ahead of the streaming reply, with round ticks, and the
    // finished reply fills its width: 507 decode steps end on an axis of 0..600, not 0..634.
    void theTokenAxisFitsTheFinishedReply() {
        PerformancePanel panel;
        auto* view = panel.findChild<QChartView*>();
        QVERIFY(view);
        const auto axes = view->chart()->axes(Qt::Horizontal);
        QCOMPARE(axes.size(), 1);
        auto* axis = qobject_cast<QValueAxis*>(axes.first());
        QVERIFY(axis);
        panel.beginTurn();
        panel.addToken(5.0);  // the prefill step
        for (int x = 1; x <= 507; ++x) {
            panel.addToken(1.0 + 0.001 * x);
            QVERIFY2(axis->max() >= x,
                     qPrintable(QStringLiteral("token %1 beyond an axis of %2").arg(x).arg(axis->max())));
        }
        lantern::TurnStats stats;
        stats.generated_tokens = 508;
        stats.stop_reason = lantern::StopReason::ContextFull;
        panel.finishTurn(stats);
        QCOMPARE(axis->min(), 0.0);
        QCOMPARE(axis->max(), 600.0);
        const double step = axis->max() / (axis->tickCount() - 1);
        QCOMPARE(step, std::round(step / 50) * 50);  // every tick a multiple of 50
    }

    // A turn that did not start (its prompt had no room in the context): the panel shows the last
    // reply's figures and chart again, not a turn of zeros.
    void aTurnThatDidNotStartLeavesTheLastRepliesFigures() {
        PerformancePanel panel;
        panel.beginTurn();
        std::vector<double> steps{30.0};
        for (int i = 0; i < 60; ++i) steps.push_back(8.0 + (i % 5) * 0.1);
        panel.addTokens(steps);
        lantern::TurnStats stats;
        stats.generated_tokens = 61;
        stats.prompt_tokens = 12;
        stats.ttft_ms = 30.0;
        stats.stop_reason = lantern::StopReason::MaxTokens;
        panel.finishTurn(stats);
        const char* names[] = {"ttft",       "generated", "promptTokens", "stopReason",
                               "steadyRate", "slowdown",  "lastStep"};
        QHash<QString, QString> before;
        for (const char* n : names)
            before.insert(QString::fromLatin1(n), panel.valueText(QString::fromLatin1(n)));
        const int points = panel.chartedPoints();
        QCOMPARE(points, 60);

        panel.beginTurn();
        QCOMPARE(panel.valueText(QStringLiteral("stopReason")), QStringLiteral("generating…"));
        QCOMPARE(panel.chartedPoints(), 0);
        panel.showPromptProgress(1024, 3000);  // a long prompt, stopped while it is read
        QCOMPARE(panel.valueText(QStringLiteral("prefillRate")), QStringLiteral("1,024 of 3,000 tokens…"));
        panel.cancelTurn();
        for (const char* n : names)
            QCOMPARE(panel.valueText(QString::fromLatin1(n)), before.value(QString::fromLatin1(n)));
        QCOMPARE(panel.chartedPoints(), points);
        // And the next turn goes on as any: cleared at its start, its own figures at its end.
        panel.beginTurn();
        panel.addTokens({20.0, 9.0});
        panel.showPromptProgress(10, 20);  // (late: the reply has begun, its figures stay)
        QVERIFY(!panel.valueText(QStringLiteral("prefillRate")).contains(QStringLiteral("of 20")));
        panel.finishTurn(lantern::TurnStats{});
        QCOMPARE(panel.chartedPoints(), 1);
        panel.cancelTurn();  // nothing to undo once a turn has finished
        QCOMPARE(panel.chartedPoints(), 1);
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
            batched.addTokens(
                std::vector<double>(steps.begin() + i, steps.begin() + std::min(steps.size(), i + 13)));
        QCOMPARE(batched.chartedPoints(), single.chartedPoints());
        for (const char* name : {"ttft", "generated", "lastStep", "decodeRate"})
            QCOMPARE(batched.valueText(QString::fromLatin1(name)),
                     single.valueText(QString::fromLatin1(name)));
        // (The live steady state is refreshed every 8 steps, so a batch may refresh it a few steps
        // later; the turn's final figures are the same.)
        single.finishTurn(lantern::TurnStats{});
        batched.finishTurn(lantern::TurnStats{});
        for (const char* name : {"steadyRate", "slowdown"})
            QCOMPARE(batched.valueText(QString::fromLatin1(name)),
                     single.valueText(QString::fromLatin1(name)));
        QVERIFY(single.valueText(QStringLiteral("steadyRate")) != QStringLiteral("not settled"));
    }

    // A long reply keeps the chart to a bounded number of points (one frame's cost stays the same
    // however long the reply): points merge in pairs, each keeping its span's slowest step and the
    // moving average at its last step, and the newest step is always the line's end.
    void aLongReplyChartsBoundedPointsKeepingEachSpansSlowestStep() {
        LatencyChartData data(16);
        std::vector<double> steps, ema;
        double e = 0;
        for (int t = 1; t <= 100; ++t) {
            const double ms = 10.0 + (t * 37 % 11) + (t == 45 ? 90.0 : 0.0);  // one stall, at step 45
            e = t == 1 ? ms : e * 0.85 + ms * 0.15;
            steps.push_back(ms);
            ema.push_back(e);
            data.add(t, ms, e);
            QVERIFY(data.latency().size() <= 16);
        }
        // 100 steps in at most 16 points: 8 steps a point (the 12 whole spans of 8, and 4 steps filling).
        QCOMPARE(data.stepsPerPoint(), 8);
        const QList<QPointF> latency = data.latency(), average = data.average();
        QCOMPARE(latency.size(), 13);
        QCOMPARE(average.size(), 13);
        for (int i = 0; i < latency.size(); ++i) {
            const int first = i * 8 + 1, last = std::min(100, first + 7);
            QCOMPARE(latency[i].x(), double(last));
            QCOMPARE(latency[i].y(), *std::max_element(steps.begin() + first - 1, steps.begin() + last));
            QCOMPARE(average[i].y(), ema[static_cast<size_t>(last - 1)]);
        }
        QCOMPARE(latency[5].y(), steps[44]);  // the stall (steps 41-48) is still on the line

        PerformancePanel panel;
        panel.beginTurn();
        panel.addToken(100.0);
        for (int batch = 0; batch < 100; ++batch) panel.addTokens(std::vector<double>(50, 12.5));
        QVERIFY2(panel.chartedPoints() <= 512, qPrintable(QString::number(panel.chartedPoints())));
        QVERIFY(panel.chartedPoints() >= 256);
        QCOMPARE(panel.stepsPerChartPoint(), 16);
        QCOMPARE(panel.valueText(QStringLiteral("generated")), display::count(5001));
        panel.beginTurn();
        QCOMPARE(panel.chartedPoints(), 0);
        QCOMPARE(panel.stepsPerChartPoint(), 1);
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
