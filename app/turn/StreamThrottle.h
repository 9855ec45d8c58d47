// StreamThrottle — coalesces a streaming reply's token batches into frames for the widgets: at
// most one frame every kFrameMs, the first of a burst at once (UI thread).
//
// Each frame re-lays out the growing reply and repaints the latency chart; the reason and the
// measurement are in docs/decisions (stream frames).
#pragma once
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>
#include <vector>

#include "worker/EngineTypes.h"

// What reached the throttle since the last frame.
struct StreamFrame {
    QString text;                // to append to the reply
    std::vector<double> stepMs;  // one per token; empty when the frame carries text only
    TokenCandidates candidates;  // at the last token's position
    qint32 token = -1;           // the last token
    quint32 position = 0;        // and its position
};

class StreamThrottle : public QObject {
    Q_OBJECT
public:
    static constexpr int kFrameMs = 50;

    explicit StreamThrottle(QObject* parent = nullptr);

    // A new stream: drops what is pending; the next batch shows at once.
    void restart();
    void add(const TokenBatch& batch);
    // Sends what is pending now (nothing when nothing is).
    void flush();
    // Drops what is pending without sending it.
    void clear();

signals:
    void frame(const StreamFrame& frame);

private:
    QTimer timer_;
    QElapsedTimer sinceFlush_;
    StreamFrame pending_;
};
