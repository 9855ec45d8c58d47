#include "turn/StreamThrottle.h"

StreamThrottle::StreamThrottle(QObject* parent) : QObject(parent) {
    timer_.setSingleShot(true);
    connect(&timer_, &QTimer::timeout, this, &StreamThrottle::flush);
}

void StreamThrottle::restart() {
    clear();
    sinceFlush_.invalidate();
}

void StreamThrottle::add(const TokenBatch& batch) {
    pending_.text += batch.text;
    if (!batch.tokens.empty()) {
        pending_.stepMs.insert(pending_.stepMs.end(), batch.stepMs.begin(), batch.stepMs.end());
        pending_.candidates = batch.candidates;
        pending_.token = batch.tokens.back();
        pending_.position = batch.position;
    }
    if (!sinceFlush_.isValid() || sinceFlush_.elapsed() >= kFrameMs)
        flush();
    else if (!timer_.isActive())
        timer_.start(static_cast<int>(kFrameMs - sinceFlush_.elapsed()));
}

void StreamThrottle::flush() {
    timer_.stop();
    sinceFlush_.start();
    if (pending_.text.isEmpty() && pending_.stepMs.empty()) return;
    StreamFrame out = std::move(pending_);
    pending_ = StreamFrame{};
    emit frame(out);
}

void StreamThrottle::clear() {
    timer_.stop();
    pending_ = StreamFrame{};
}
