#include "chat/ConversationDelegate.h"

#include <QPainter>
#include <QPainterPath>

#include "Theme.h"

namespace {
constexpr int kMarginX = 6;
constexpr int kMarginY = 2;
constexpr int kPadX = 10;
constexpr int kPadY = 7;
}  // namespace

ConversationDelegate::ConversationDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

QSize ConversationDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex&) const {
    QFont small = option.font;
    small.setPointSizeF(option.font.pointSizeF() * 0.85);
    const int h =
        QFontMetrics(option.font).height() + QFontMetrics(small).height() + 2 + 2 * kPadY + 2 * kMarginY;
    return {option.rect.width(), h};
}

void ConversationDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                                 const QModelIndex& index) const {
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    const QRectF card = QRectF(option.rect).adjusted(kMarginX, kMarginY, -kMarginX, -kMarginY);
    const bool selected = option.state & QStyle::State_Selected;
    const bool hovered = option.state & QStyle::State_MouseOver;
    if (selected || hovered) {
        QPainterPath path;
        path.addRoundedRect(card, 7, 7);
        painter->fillPath(path, selected ? theme::userBubble() : QColor(0xF0, 0xF2, 0xF5));
    }
    if (selected) {
        painter->setPen(Qt::NoPen);
        painter->setBrush(theme::accent());
        painter->drawRoundedRect(QRectF(card.left(), card.top() + 6, 3, card.height() - 12), 1.5, 1.5);
    }
    QFont titleFont = option.font;
    QFont small = option.font;
    small.setPointSizeF(option.font.pointSizeF() * 0.85);
    const QFontMetrics titleMetrics(titleFont), smallMetrics(small);
    const int textWidth = static_cast<int>(card.width()) - 2 * kPadX;
    const QRect titleRect(static_cast<int>(card.left()) + kPadX, static_cast<int>(card.top()) + kPadY,
                          textWidth, titleMetrics.height());
    const QRect subRect(titleRect.left(), titleRect.bottom() + 2, textWidth, smallMetrics.height());

    painter->setFont(titleFont);
    painter->setPen(theme::text());
    painter->drawText(
        titleRect, Qt::AlignLeft | Qt::AlignVCenter,
        titleMetrics.elidedText(index.data(Qt::DisplayRole).toString(), Qt::ElideRight, textWidth));
    painter->setFont(small);
    painter->setPen(theme::mutedText());
    painter->drawText(
        subRect, Qt::AlignLeft | Qt::AlignVCenter,
        smallMetrics.elidedText(index.data(SubtitleRole).toString(), Qt::ElideRight, textWidth));
    painter->restore();
}
