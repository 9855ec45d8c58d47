// One line of small print that never changes the height or the minimum width of what holds it:
// a text too long for the width is drawn cut short with "…", and its tooltip is the whole text.
// (The input's measure line: a word-wrapped label there grew the input bar by a line for its long
// warnings and moved the chat above it as the user typed.) text() is always the whole text.
#pragma once

#include <QLabel>

class ElidedLabel : public QLabel {
    Q_OBJECT
public:
    using QLabel::QLabel;
    bool isElided() const;  // at its present width
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;  // the tooltip: the whole text, when it is cut
};
