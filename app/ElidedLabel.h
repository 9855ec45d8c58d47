// One line of small print that never changes the height or the minimum width of what holds it:
// a text too long for the width is drawn cut short with "…", and its tooltip is the whole text.
// text() is always the whole text. Used for the input's measure line (why: decision 0038,
// docs/decisions/0038-turn-fit-is-a-dry-run.md).
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
