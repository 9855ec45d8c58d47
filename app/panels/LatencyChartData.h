// LatencyChartData — the points of the performance panel's step-latency chart, kept to a fixed
// number however long the reply.
//
// Every decode step is a point until a line has maxPoints of them; then neighbouring points merge
// in pairs, so that a point stands for 2, 4, 8 ... steps. The latency line keeps the slowest step
// of each span (a stall stays visible in a reply of any length, where a mean would smooth it
// away) and the moving-average line the average at the span's last step. A span still filling is
// shown as a last point, so the lines reach the newest step at every frame.
//
// Why: a chart line re-strokes all its points whenever it changes (Qt Charts), so a point per
// step would make each frame's cost grow with the reply; with a bounded line, one frame costs the
// same at the first token and the ten-thousandth
// (docs/decisions/0035-frame-cost-does-not-grow-with-the-reply.md).
#pragma once
#include <QList>
#include <QPointF>

class LatencyChartData {
public:
    explicit LatencyChartData(int maxPoints = 512);

    // Step number `token` (1, 2, ... in order) took stepMs; averageMs is the moving average after it.
    void add(int token, double stepMs, double averageMs);
    void clear();

    // The lines as they are now (spans merged, the span still filling last).
    QList<QPointF> latency() const;
    QList<QPointF> average() const;
    int stepsPerPoint() const { return stepsPerPoint_; }
    int maxPoints() const { return maxPoints_; }

private:
    struct Span {
        int lastToken = 0;     // x: the span's last step
        double slowestMs = 0;  // latency line
        double averageMs = 0;  // moving-average line at lastToken
    };
    void mergePairs();
    QList<QPointF> line(double Span::*value) const;  // a line's points: that value of each span

    int maxPoints_;
    int stepsPerPoint_ = 1;
    QList<Span> spans_;  // whole spans of stepsPerPoint_ steps
    Span filling_;       // the span being filled (fillingSteps_ of stepsPerPoint_ steps so far)
    int fillingSteps_ = 0;
};
