// PerformancePanel — honest speed figures of the last reply: time to first token, prefill and
// decode throughput, how much of the prompt came from the KV prefix cache, the steady-state rate
// once the decode settles and how much it slows down as the reply grows (lantern/steady_state.h,
// as lantern-bench --steady measures them), and a live chart of the decode steps' latency (a
// bounded number of points however long the reply: LatencyChartData).
#pragma once
#include <QHash>
#include <QWidget>
#include <memory>
#include <vector>

#include "Retranslate.h"
#include "panels/LatencyChartData.h"
#include "worker/EngineTypes.h"

class QChart;
class QChartView;
class QLabel;
class QLineSeries;
class QValueAxis;
class SplitBar;

class PerformancePanel : public QWidget {
    Q_OBJECT
public:
    explicit PerformancePanel(QWidget* parent = nullptr);

    void setLoadReport(const LoadReport& report);
    // The kernels' warm-up after the load ran (Engine::warm_up), taking ms.
    void setWarmUp(double ms);
    void beginTurn();
    // How far the turn's prompt is (a long one, between its chunks): the prefill figure shows it
    // live until the first token.
    void showPromptProgress(uint32_t done, uint32_t total);
    // A generated token; the first of a turn is the prefill step and is not charted.
    void addToken(double stepMs);
    // Several at once (the window hands streamed tokens over by frames): one chart update.
    void addTokens(const std::vector<double>& stepMs);
    void finishTurn(const lantern::TurnStats& stats);
    // A turn that did not start (no room in the context): the previous turn's figures and chart
    // come back, as they were before beginTurn().
    void cancelTurn();
    void clear();
    // On a remote server: what the server itself said of the last reply (its timings and usage),
    // beside the figures above, which are measured at the client (network included).
    void setServerFigures(const QString& text);
    void setRemote(bool remote);

    QString valueText(const QString& name) const;  // for tests and the status bar
    int chartedPoints() const;                     // points of the latency line
    int stepsPerChartPoint() const;                // steps each point stands for (LatencyChartData)

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();  // the texts worded once, in the language now installed
    // caption: the source text (QT_TR_NOOP), worded by retranslateUi.
    QLabel* addValue(class QGridLayout* grid, int row, int column, const char* caption, const char* name);
    void setValue(const char* name, const QString& text);
    void showSteadyState();
    void nameLatencyLine();
    QString steadyToolTip() const;

    QHash<QString, QLabel*> values_;
    SplitBar* reuseBar_;
    QChart* chart_;
    QChartView* chartView_;
    QLineSeries* latency_;
    QLineSeries* average_;
    QValueAxis* axisX_;
    QValueAxis* axisY_;
    int tokensThisTurn_ = 0;
    double maxLatency_ = 1.0;
    double emaMs_ = 0.0;
    LatencyChartData chartData_;
    std::vector<double> decodeMs_;  // this turn's decode steps (the prefill step not among them)
    // What beginTurn() cleared, for cancelTurn().
    struct Snapshot {
        QHash<QString, QString> texts;
        QString steadyTip;
        uint64_t reused = 0, computed = 0;
        LatencyChartData chart;
        std::vector<double> decodeMs;
        int tokens = 0;
        double maxLatency = 1.0, ema = 0.0, xMax = 32, yMax = 1;
    };
    std::unique_ptr<Snapshot> previous_;
    Retranslate texts_;
};
