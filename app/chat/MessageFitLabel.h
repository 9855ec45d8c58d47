// MessageFitLabel — the small print under the message input: how many tokens the message being
// written is and whether it fits the context (ChatSession::measure, asked of the worker), a
// moment after typing stops (UI thread).
#pragma once
#include <QTimer>
#include <optional>

#include "ElidedLabel.h"
#include "lantern/chat.h"

class MessageFitLabel : public ElidedLabel {
    Q_OBJECT
public:
    explicit MessageFitLabel(QWidget* parent = nullptr);

    // The text or its context changed: measured again after a pause (cleared for empty text).
    void schedule(const QString& text);
    // The worker's answer to request `request`; older answers are ignored.
    void showFit(quint64 request, const lantern::MessageFit& fit);
    // A new request id for a measurement asked now (after due()).
    quint64 nextRequest() { return ++request_; }

signals:
    void due();  // time to ask the worker (the window knows whether it can)

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: the fit shown, worded again

private:
    void show(const lantern::MessageFit& fit);
    QTimer timer_;
    std::optional<lantern::MessageFit> fit_;  // the last shown
    quint64 request_ = 0;
};
