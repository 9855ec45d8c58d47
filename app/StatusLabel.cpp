#include "StatusLabel.h"

#include <QEvent>
#include <algorithm>

void StatusLabel::setLiveText(const QString& text) {
    if (text == this->text()) return;
    // With the minimum and maximum size equal, QLabel's geometry update stops at the label.
    QLabel::setText(text);
    const QSize hint = sizeHint();
    if (hint.width() > maximumWidth() || hint.height() != maximumHeight())
        setFixedSize(std::max(hint.width(), minimumWidth()), hint.height());
}

void StatusLabel::setFittedText(const QString& text) {
    QLabel::setText(text);
    fit();
}

void StatusLabel::fit() {
    // QLabel's size hint is never below the widget's minimum size: let go of the old one first.
    setMinimumSize(0, 0);
    setFixedSize(sizeHint());
}

void StatusLabel::changeEvent(QEvent* event) {
    QLabel::changeEvent(event);
    // A new font or style changes what the text needs.
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) fit();
}
