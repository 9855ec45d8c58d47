#include "panels/LatencyChartData.h"

#include <algorithm>

LatencyChartData::LatencyChartData(int maxPoints) : maxPoints_(std::max(4, maxPoints - maxPoints % 2)) {
    spans_.reserve(maxPoints_);
}

void LatencyChartData::clear() {
    spans_.clear();
    stepsPerPoint_ = 1;
    filling_ = {};
    fillingSteps_ = 0;
}

void LatencyChartData::add(int token, double stepMs, double averageMs) {
    filling_.slowestMs = fillingSteps_ == 0 ? stepMs : std::max(filling_.slowestMs, stepMs);
    filling_.lastToken = token;
    filling_.averageMs = averageMs;
    if (++fillingSteps_ < stepsPerPoint_) return;
    spans_.append(filling_);
    filling_ = {};
    fillingSteps_ = 0;
    // maxPoints_ - 1 whole spans leave room for the filling one's point.
    if (spans_.size() >= maxPoints_) mergePairs();
}

void LatencyChartData::mergePairs() {
    // maxPoints_ is even and no span is filling (add merges right after a span completes), so
    // the spans pair up exactly and every merged span holds 2 * stepsPerPoint_ steps.
    QList<Span> merged;
    merged.reserve(maxPoints_);
    for (qsizetype i = 0; i + 1 < spans_.size(); i += 2) {
        const Span& a = spans_[i];
        const Span& b = spans_[i + 1];
        merged.append({b.lastToken, std::max(a.slowestMs, b.slowestMs), b.averageMs});
    }
    spans_ = std::move(merged);
    stepsPerPoint_ *= 2;
}

QList<QPointF> LatencyChartData::line(double Span::*value) const {
    QList<QPointF> points;
    points.reserve(spans_.size() + 1);
    for (const Span& s : spans_) points.append(QPointF(s.lastToken, s.*value));
    if (fillingSteps_ > 0) points.append(QPointF(filling_.lastToken, filling_.*value));
    return points;
}

QList<QPointF> LatencyChartData::latency() const {
    return line(&Span::slowestMs);
}

QList<QPointF> LatencyChartData::average() const {
    return line(&Span::averageMs);
}
