// ConversationDelegate — one row of the conversation sidebar: the title on one elided line and a
// muted second line (when it was last used, how many messages).
#pragma once
#include <QStyledItemDelegate>

class ConversationDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    static constexpr int SubtitleRole = Qt::UserRole + 10;

    explicit ConversationDelegate(QObject* parent = nullptr);
    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};
