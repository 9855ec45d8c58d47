#include "chat/MessageFitLabel.h"

#include <QEvent>

#include "Format.h"
#include "Theme.h"

MessageFitLabel::MessageFitLabel(QWidget* parent) : ElidedLabel(parent) {
    setObjectName(QStringLiteral("messageMeasure"));
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.9);
    setFont(small);
    timer_.setSingleShot(true);
    connect(&timer_, &QTimer::timeout, this, &MessageFitLabel::due);
}

void MessageFitLabel::schedule(const QString& text) {
    if (text.trimmed().isEmpty()) {
        ++request_;  // an answer still on its way is for text that is gone
        timer_.stop();
        clear();
        return;
    }
    timer_.start(250);
}

void MessageFitLabel::showFit(quint64 request, const lantern::MessageFit& fit) {
    if (request != request_) return;
    fit_ = fit;
    show(fit);
}

void MessageFitLabel::changeEvent(QEvent* event) {
    ElidedLabel::changeEvent(event);
    // The measurement shown is worded again (an empty label waits for the next one).
    if (event->type() == QEvent::LanguageChange && !text().isEmpty() && fit_) show(*fit_);
}

void MessageFitLabel::show(const lantern::MessageFit& fit) {
    const QString tokens = tr("%Ln token(s)", nullptr, static_cast<int>(fit.message_tokens));
    QString text;
    bool warn = false;
    if (fit.fits && fit.dropped_turns == 0) {
        text = tokens;
    } else if (fit.fits) {
        text = tr("%1 · sending it leaves the oldest %n message(s) out of the model's context", nullptr,
                  static_cast<int>(fit.dropped_turns))
                   .arg(tokens);
    } else if (fit.fits_dropping) {
        warn = true;
        text =
            tr("%1 · no room: the conversation would be %2 tokens, the context holds %3. Turn on File > When "
               "the Context Is Full, Drop the Oldest Turns, or start a new chat.")
                .arg(tokens, display::count(fit.prompt_tokens), display::count(fit.context));
    } else {
        warn = true;
        text = tr("%1 · too long: the conversation would be %2 tokens, the context holds %3 and a reply "
                  "needs room too.")
                   .arg(tokens, display::count(fit.prompt_tokens), display::count(fit.context));
    }
    QPalette p = palette();
    p.setColor(QPalette::WindowText, warn ? theme::warningText() : theme::mutedText());
    setPalette(p);
    setText(text);
}
