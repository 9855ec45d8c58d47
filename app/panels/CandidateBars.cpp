#include "panels/CandidateBars.h"

#include <QPainter>
#include <algorithm>

#include "Theme.h"

namespace {
constexpr int kRows = 5;
constexpr int kRowHeight = 18;
}  // namespace

CandidateBars::CandidateBars(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void CandidateBars::setEntries(const QVector<Entry>& entries) {
    entries_ = entries;
    update();
}

QSize CandidateBars::sizeHint() const {
    return {220, kRows * kRowHeight + 4};
}
QSize CandidateBars::minimumSizeHint() const {
    return {120, kRows * kRowHeight + 4};
}

QString CandidateBars::visiblePiece(const QString& piece) {
    QString out;
    for (const QChar c : piece) {
        if (c == QLatin1Char(' ') || c == QChar(0x2581))  // sentencepiece writes a space as "▁"
            out += QChar(0x2423);                         // ␣
        else if (c == QLatin1Char('\n'))
            out += QChar(0x21B5);  // ↵
        else if (c == QLatin1Char('\t'))
            out += QChar(0x21E5);  // ⇥
        else if (c.category() == QChar::Other_Control)
            out += QStringLiteral("\\x%1").arg(c.unicode(), 2, 16, QLatin1Char('0'));
        else
            out += c;
    }
    return out;
}

void CandidateBars::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QFontMetrics fm(font());
    if (entries_.isEmpty()) {
        p.setPen(theme::mutedText());
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("Candidates appear while a reply is generated."));
        return;
    }
    const int labelWidth = std::min(width() / 3, 90);
    const int percentWidth = fm.horizontalAdvance(QStringLiteral("100.0%")) + 6;
    const int barLeft = labelWidth + 6;
    const int barWidth = std::max(10, width() - barLeft - percentWidth);
    for (int i = 0; i < std::min<int>(kRows, static_cast<int>(entries_.size())); ++i) {
        const Entry& e = entries_.at(i);
        const int y = 2 + i * kRowHeight;
        p.setPen(e.chosen ? theme::accentDark() : theme::text());
        QFont f = font();
        f.setBold(e.chosen);
        p.setFont(f);
        p.drawText(QRect(0, y, labelWidth, kRowHeight), Qt::AlignRight | Qt::AlignVCenter,
                   fm.elidedText(visiblePiece(e.piece), Qt::ElideRight, labelWidth));
        const QRectF track(barLeft, y + 4, barWidth, kRowHeight - 8);
        p.setPen(Qt::NoPen);
        p.setBrush(theme::emptyBlock());
        p.drawRoundedRect(track, 3, 3);
        QRectF bar = track;
        bar.setWidth(std::max(2.0, track.width() * std::clamp(e.probability, 0.0, 1.0)));
        p.setBrush(e.chosen ? theme::accent() : theme::cachedBlock());
        p.drawRoundedRect(bar, 3, 3);
        p.setPen(theme::mutedText());
        p.setFont(font());
        p.drawText(QRect(barLeft + barWidth + 4, y, percentWidth, kRowHeight),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   QStringLiteral("%1%").arg(e.probability * 100.0, 0, 'f', 1));
    }
}
