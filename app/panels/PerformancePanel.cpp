#include "panels/PerformancePanel.h"

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QGridLayout>
#include <QLabel>
#include <QLineSeries>
#include <QPainter>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "Format.h"
#include "Theme.h"
#include "lantern/steady_state.h"
#include "panels/ScrollablePanel.h"

namespace {
// 0 .. at least `max`, with round ticks (0, 150, 300 ... rather than 0, 151, 302 ...):
// applyNiceNumbers widens the range to a round bound for the tick count it is given, and changes
// that count, so each fit starts again from 5.
void fitAxis(QValueAxis* axis, double max) {
    axis->setTickCount(5);
    axis->setRange(0, max);
    axis->applyNiceNumbers();
}
}  // namespace

// Reused vs computed prompt tokens as one stacked bar.
class SplitBar : public QWidget {
public:
    explicit SplitBar(QWidget* parent) : QWidget(parent) { setFixedHeight(10); }
    void setSplit(uint64_t reused, uint64_t computed) {
        reused_ = reused;
        computed_ = computed;
        update();
    }
    uint64_t reused() const { return reused_; }
    uint64_t computed() const { return computed_; }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.setRenderHint(QPainter::Antialiasing);
        p.setPen(Qt::NoPen);
        const QRectF r = QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5);
        p.setBrush(theme::emptyBlock());
        p.drawRoundedRect(r, 4, 4);
        const double total = static_cast<double>(reused_ + computed_);
        if (total <= 0) return;
        QRectF reused = r;
        reused.setWidth(r.width() * static_cast<double>(reused_) / total);
        QRectF computed = r;
        computed.setLeft(reused.right());
        p.setBrush(theme::cachedBlock());
        p.drawRoundedRect(reused, 4, 4);
        p.setBrush(theme::accent());
        p.drawRoundedRect(computed, 4, 4);
    }

private:
    uint64_t reused_ = 0, computed_ = 0;
};

PerformancePanel::PerformancePanel(QWidget* parent) : QWidget(parent) {
    // Its values change at every frame of a reply: see ScrollablePanel.h for why a scroll area.
    QWidget* content = makeScrollableContent(this);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(10, 6, 10, 8);
    auto* grid = new QGridLayout();
    grid->setHorizontalSpacing(10);
    grid->setVerticalSpacing(3);
    layout->addLayout(grid);
    addValue(grid, 0, 0, QT_TR_NOOP("Time to first token"), "ttft");
    addValue(grid, 0, 2, QT_TR_NOOP("Generated"), "generated");
    addValue(grid, 1, 0, QT_TR_NOOP("Prefill"), "prefillRate");
    addValue(grid, 1, 2, QT_TR_NOOP("Decode"), "decodeRate");
    addValue(grid, 2, 0, QT_TR_NOOP("Prompt tokens"), "promptTokens");
    addValue(grid, 2, 2, QT_TR_NOOP("Ended by"), "stopReason");
    addValue(grid, 3, 0, QT_TR_NOOP("Reused / computed"), "reuse");
    addValue(grid, 3, 2, QT_TR_NOOP("Last step"), "lastStep");
    texts_([this, value = addValue(grid, 4, 0, QT_TR_NOOP("Steady state"), "steadyRate")] {
        value->setToolTip(steadyToolTip());
    });
    texts_([value = addValue(grid, 4, 2, QT_TR_NOOP("Slowdown"), "slowdown")] {
        value->setToolTip(
            tr("How much slower the last quarter of the settled steps ran than the first quarter. Every new "
               "token attends to all earlier ones, so long replies slow down as they grow."));
    });
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(3, 1);

    reuseBar_ = new SplitBar(this);
    texts_([this] {
        reuseBar_->setToolTip(tr(
            "Blue: prompt tokens whose K/V came from the prefix cache. Amber: prompt tokens computed now."));
    });
    layout->addWidget(reuseBar_);

    auto* load = new QGridLayout();
    load->setHorizontalSpacing(10);
    layout->addLayout(load);
    addValue(load, 0, 0, QT_TR_NOOP("Model load"), "loadTime");
    texts_([value = addValue(load, 2, 0, QT_TR_NOOP("Server's own figures"), "server")] {
        value->setToolTip(
            tr("On a remote server: the timings and token counts it sent with the reply. The figures "
               "above are measured here, at the client, and include the network."));
    });
    texts_([value = addValue(load, 1, 0, QT_TR_NOOP("Kernel warm-up"), "warmUp")] {
        value->setToolTip(
            tr("After loading, Lantern runs each kind of step once, so that no reply waits while the driver "
               "compiles a kernel for its first use (several seconds on a CPU driver the first time a model "
               "runs on this machine; later starts reuse the compiled code)."));
    });
    load->setColumnStretch(1, 1);

    latency_ = new QLineSeries();
    latency_->setPen(QPen(theme::accent(), 1.6));
    average_ = new QLineSeries();
    texts_([this] { average_->setName(tr("moving average")); });
    average_->setPen(QPen(theme::cachedBlock(), 2.0));
    chart_ = new QChart();
    chart_->addSeries(latency_);
    chart_->addSeries(average_);
    // No chart title: the axis says what is plotted, and the panel's rows above leave the plot little
    // height in a docked panel (a title cost the axis labels their room).
    chart_->legend()->setAlignment(Qt::AlignBottom);
    chart_->legend()->setFont(font());
    chart_->setMargins(QMargins(2, 2, 2, 2));
    chart_->setBackgroundRoundness(6);
    axisX_ = new QValueAxis();
    texts_([this] { axisX_->setTitleText(tr("token")); });
    axisX_->setLabelFormat(QStringLiteral("%d"));
    axisX_->setRange(0, 32);
    axisY_ = new QValueAxis();
    texts_([this] { axisY_->setTitleText(tr("ms / step")); });
    axisY_->setLabelFormat(QStringLiteral("%.1f"));
    axisY_->setRange(0, 1);
    for (QValueAxis* axis : {axisX_, axisY_}) {
        axis->setLabelsFont(font());
        axis->setTitleFont(font());
        axis->setGridLineColor(theme::border());
    }
    chart_->addAxis(axisX_, Qt::AlignBottom);
    chart_->addAxis(axisY_, Qt::AlignLeft);
    for (QLineSeries* s : {latency_, average_}) {
        s->attachAxis(axisX_);
        s->attachAxis(axisY_);
    }
    chartView_ = new QChartView(chart_, this);
    chartView_->setObjectName(QStringLiteral("latencyChart"));
    chartView_->setRenderHint(QPainter::Antialiasing);
    chartView_->setMinimumHeight(170);
    layout->addWidget(chartView_, 1);
    clear();
}

QLabel* PerformancePanel::addValue(QGridLayout* grid, int row, int column, const char* caption,
                                   const char* name) {
    auto* captionLabel = new QLabel(this);
    texts_([captionLabel, caption] { captionLabel->setText(tr(caption)); });
    captionLabel->setProperty("role", QStringLiteral("caption"));
    auto* value = new QLabel(QStringLiteral("—"), this);
    value->setObjectName(QString::fromLatin1(name));
    value->setProperty("role", QStringLiteral("value"));
    value->setWordWrap(true);
    grid->addWidget(captionLabel, row, column);
    grid->addWidget(value, row, column + 1);
    values_.insert(QString::fromLatin1(name), value);
    return value;
}

void PerformancePanel::setValue(const char* name, const QString& text) {
    QLabel* l = values_.value(QString::fromLatin1(name));
    if (l != nullptr && l->text() != text) l->setText(text);  // (same text: no re-layout at all)
}

QString PerformancePanel::valueText(const QString& name) const {
    const QLabel* l = values_.value(name);
    return l != nullptr ? l->text() : QString();
}

int PerformancePanel::chartedPoints() const {
    return static_cast<int>(latency_->count());
}

int PerformancePanel::stepsPerChartPoint() const {
    return chartData_.stepsPerPoint();
}

void PerformancePanel::nameLatencyLine() {
    const QString name = chartData_.stepsPerPoint() == 1
                             ? tr("step latency")
                             : tr("slowest step of every %1").arg(chartData_.stepsPerPoint());
    if (latency_->name() != name) latency_->setName(name);
}

void PerformancePanel::clear() {
    for (auto it = values_.begin(); it != values_.end(); ++it)
        if (it.key() != QLatin1String("loadTime") && it.key() != QLatin1String("warmUp"))
            it.value()->setText(QStringLiteral("—"));
    reuseBar_->setSplit(0, 0);
    latency_->clear();
    average_->clear();
    chartData_.clear();
    nameLatencyLine();
    tokensThisTurn_ = 0;
    maxLatency_ = 1.0;
    emaMs_ = 0.0;
    decodeMs_.clear();
    axisX_->setRange(0, 32);
    axisY_->setRange(0, 1);
}

void PerformancePanel::setLoadReport(const LoadReport& report) {
    setValue("warmUp", tr("running…"));
    setValue("loadTime",
             tr("%1 (pipelines %2, cache %3)")
                 .arg(display::milliseconds(report.load_ms), display::milliseconds(report.pipelines_ms),
                      report.pipeline_cache_warm ? tr("warm") : tr("cold")));
}

void PerformancePanel::setWarmUp(double ms) {
    setValue("warmUp", display::milliseconds(ms));
}

void PerformancePanel::beginTurn() {
    previous_ = std::make_unique<Snapshot>();
    Snapshot& p = *previous_;
    for (auto it = values_.cbegin(); it != values_.cend(); ++it) p.texts.insert(it.key(), it.value()->text());
    p.steadyTip = values_.value(QStringLiteral("steadyRate"))->toolTip();
    p.reused = reuseBar_->reused();
    p.computed = reuseBar_->computed();
    p.chart = chartData_;
    p.decodeMs = decodeMs_;
    p.tokens = tokensThisTurn_;
    p.maxLatency = maxLatency_;
    p.ema = emaMs_;
    p.xMax = axisX_->max();
    p.yMax = axisY_->max();
    clear();
    setValue("stopReason", tr("generating…"));
}

void PerformancePanel::cancelTurn() {
    if (!previous_) return;
    const Snapshot p = std::move(*previous_);
    previous_.reset();
    for (auto it = p.texts.cbegin(); it != p.texts.cend(); ++it)
        if (QLabel* l = values_.value(it.key())) l->setText(it.value());
    values_.value(QStringLiteral("steadyRate"))->setToolTip(p.steadyTip);
    reuseBar_->setSplit(p.reused, p.computed);
    chartData_ = p.chart;
    decodeMs_ = p.decodeMs;
    tokensThisTurn_ = p.tokens;
    maxLatency_ = p.maxLatency;
    emaMs_ = p.ema;
    latency_->replace(chartData_.latency());
    average_->replace(chartData_.average());
    nameLatencyLine();
    axisX_->setRange(0, p.xMax);
    axisY_->setRange(0, p.yMax);
}

void PerformancePanel::showPromptProgress(uint32_t done, uint32_t total) {
    if (tokensThisTurn_ > 0) return;  // the reply has begun: its figures are shown
    setValue("prefillRate", tr("%1 of %2 tokens…").arg(display::count(done), display::count(total)));
}

void PerformancePanel::addToken(double stepMs) {
    addTokens({stepMs});
}

void PerformancePanel::addTokens(const std::vector<double>& steps) {
    if (steps.empty()) return;
    const size_t settledBefore = decodeMs_.size() / 8;
    double lastX = -1;
    for (const double stepMs : steps) {
        ++tokensThisTurn_;
        if (tokensThisTurn_ == 1) {
            setValue("ttft", tr("%1 (prefill step)").arg(display::milliseconds(stepMs)));
            continue;
        }
        const int x = tokensThisTurn_ - 1;
        emaMs_ = x == 1 ? stepMs : emaMs_ * 0.85 + stepMs * 0.15;
        chartData_.add(x, stepMs, emaMs_);
        lastX = x;
        decodeMs_.push_back(stepMs);
        maxLatency_ = std::max(maxLatency_, stepMs);
    }
    setValue("generated", display::count(static_cast<uint64_t>(tokensThisTurn_)));
    setValue("lastStep", display::milliseconds(steps.back()));
    if (lastX < 0) return;
    // One replace per line and frame: Qt Charts re-strokes a line at every change, and its
    // append(QList) adds the points one by one (a re-stroke each).
    latency_->replace(chartData_.latency());
    average_->replace(chartData_.average());
    nameLatencyLine();
    if (decodeMs_.size() / 8 != settledBefore) showSteadyState();  // live, every 8 steps, not every token
    if (emaMs_ > 0) setValue("decodeRate", tr("%1 (live)").arg(display::tokensPerSecond(1000.0 / emaMs_)));
    fitAxis(axisY_, maxLatency_ * 1.15);
    if (lastX > axisX_->max()) fitAxis(axisX_, std::max(32.0, std::ceil(lastX * 1.25)));
}

void PerformancePanel::finishTurn(const lantern::TurnStats& stats) {
    previous_.reset();
    // The chart grew ahead of the reply while it streamed; the finished reply fills its width.
    if (tokensThisTurn_ > 1) fitAxis(axisX_, std::max(32.0, static_cast<double>(tokensThisTurn_ - 1)));
    setValue("ttft", display::milliseconds(stats.ttft_ms));
    setValue("generated", tr("%1 tokens").arg(display::count(stats.generated_tokens)));
    setValue("prefillRate", tr("%1 · %2").arg(display::tokensPerSecond(stats.prefill_tokens_per_s),
                                              display::milliseconds(stats.prefill_ms)));
    setValue("decodeRate", tr("%1 · %2").arg(display::tokensPerSecond(stats.decode_tokens_per_s),
                                             display::milliseconds(stats.decode_ms)));
    setValue("promptTokens", display::count(stats.prompt_tokens));
    setValue("reuse",
             tr("%1 / %2").arg(display::count(stats.reused_tokens), display::count(stats.computed_tokens)));
    reuseBar_->setSplit(stats.reused_tokens, stats.computed_tokens);
    setValue("stopReason", display::stopReason(stats.stop_reason));
    showSteadyState();
}

QString PerformancePanel::steadyToolTip() const {
    return tr(
        "The decode rate once it has settled: the median step from the first 32 steps in a row that vary by "
        "less than 5 % (or by under 0.05 ms, the host's own timing noise) on. The first steps of a reply are "
        "often slower or uneven.");
}

void PerformancePanel::showSteadyState() {
    const lantern::SteadyState s = lantern::steady_state(decodeMs_);
    QLabel* rate = values_.value(QStringLiteral("steadyRate"));
    rate->setToolTip(steadyToolTip());
    if (s.reached) {
        // Where it settled goes in the tooltip: the value stays one line beside the others.
        setValue("steadyRate", display::tokensPerSecond(s.steady_tok_s));
        rate->setToolTip(steadyToolTip() + QLatin1Char('\n') +
                         tr("This reply settled at token %1 of the chart.").arg(s.transient_tokens + 1));
        // The slowdown needs a steady part to compare its quarters (8 steps at least).
        const size_t settled = s.tokens - s.transient_tokens;
        setValue("slowdown", settled >= 8 ? QStringLiteral("%1%2 %")
                                                .arg(s.slowdown >= 0 ? QStringLiteral("+") : QString())
                                                .arg(100.0 * s.slowdown, 0, 'f', 1)
                                          : QStringLiteral("—"));
    } else {
        setValue("steadyRate", decodeMs_.size() < 32 ? tr("after 32 steps") : tr("not settled"));
        setValue("slowdown", QStringLiteral("—"));
    }
}

void PerformancePanel::setServerFigures(const QString& text) {
    setValue("server", text);
}

void PerformancePanel::setRemote(bool remote) {
    setValue("server", remote ? tr("after the first reply") : tr("— (local engine)"));
    if (remote) {
        setValue("loadTime", tr("— (remote server)"));
        setValue("warmUp", tr("— (remote server)"));
    }
}

void PerformancePanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void PerformancePanel::retranslateUi() {
    texts_.apply();
    nameLatencyLine();  // (the figures are worded again at their next update)
}
