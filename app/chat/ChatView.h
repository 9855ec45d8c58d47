// ChatView — the conversation as message bubbles (a QListView over ChatModel with a painting
// delegate). It follows the streaming reply while the user is at the bottom and stays put when
// they have scrolled up to read.
#pragma once
#include <QListView>
#include <QPixmap>
#include <QStyledItemDelegate>

class MessageDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    explicit MessageDelegate(QObject* parent = nullptr);
    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

    // Replies start inside a reasoning section (the prompt ends with "<think>": DeepSeek-R1).
    void setRepliesOpenInReasoning(bool open) { repliesOpenInReasoning_ = open; }
    void setRenderMarkdown(bool on) { renderMarkdown_ = on; }

private:
    struct Layout;
    Layout layout(const QStyleOptionViewItem& option, const QModelIndex& index) const;
    bool repliesOpenInReasoning_ = false;
    bool renderMarkdown_ = true;
};

class ChatView : public QListView {
    Q_OBJECT
public:
    explicit ChatView(QWidget* parent = nullptr);
    void setModel(QAbstractItemModel* model) override;
    void setEmptyText(const QString& title, const QString& hint);
    void setRepliesOpenInReasoning(bool open);
    // Replies rendered as Markdown (the default) or shown as the raw text the model wrote.
    void setRenderMarkdown(bool on);
    void scrollToEnd();
    // Who a message is from, as its label and "Copy conversation" show it: "You", "System prompt",
    // or the model that wrote the reply ("Assistant" when that was not recorded).
    static QString author(const QModelIndex& index);

signals:
    // "Edit and Resend" on one of the user's messages (its row).
    void editRequested(int row);

protected:
    void paintEvent(QPaintEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;

private:
    MessageDelegate* delegate_;
    QString emptyTitle_, emptyHint_;
    QPixmap emptyIcon_;
    bool followTail_ = true;
};
