// ChatView — the conversation as message bubbles (a QListView over ChatModel with a painting
// delegate). It follows the streaming reply while the user is at the bottom and stays put when
// they have scrolled up to read.
#pragma once
#include <QCache>
#include <QListView>
#include <QPixmap>
#include <QRect>
#include <functional>
#include <memory>
#include <vector>

#include <QStyledItemDelegate>
#include "chat/ChatModel.h"

class QTextDocument;
struct ReplyParts;

class MessageDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    explicit MessageDelegate(QObject* parent = nullptr);
    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    // Where the message's bubble is painted, relative to its row.
    QRect bubbleRect(const QStyleOptionViewItem& option, const QModelIndex& index) const {
        return layout(option, index).bubble;
    }
    // Where a streaming reply can change from frame to frame, relative to its row: its last piece
    // down to the bubble's bottom (the pieces above are finished). Empty for other messages.
    QRect liveRect(const QStyleOptionViewItem& option, const QModelIndex& index) const;
    // The message's "‹ 2 / 3 ›" (relative to its row; empty when it has one version): its left
    // half shows the previous version, its right half the next.
    QRect versionsRect(const QStyleOptionViewItem& option, const QModelIndex& index) const {
        return layout(option, index).versions;
    }
    // The part of the view being painted (viewport coordinates; null: all of it). Only the lines
    // inside it are drawn.
    void setPaintArea(const QRect& area) { paintArea_ = area; }

    // Replies start inside a reasoning section (the prompt ends with "<think>": DeepSeek-R1).
    void setRepliesOpenInReasoning(bool open) { repliesOpenInReasoning_ = open; }
    void setRenderMarkdown(bool on) { renderMarkdown_ = on; }
    void clearLayouts() { layouts_.clear(); }  // their words changed (View > Language)

private:
    // A document of the message's text and where it starts below the bubble's top padding.
    struct Piece {
        std::shared_ptr<QTextDocument> doc;
        double y = 0;
    };
    struct Layout {
        ChatMessage::Role role = ChatMessage::Role::User;
        std::shared_ptr<QTextDocument> doc;  // the message's document (a streaming reply's last piece)
        std::vector<Piece> pieces;           // what is painted: doc alone, or a streaming reply's pieces
        double textWidth = 0;                // the width the pieces are laid out at
        int liveTop = -1;                    // a streaming reply's last piece's top in the row, else -1
        QRect label, bubble, details, versions;
        QString labelText, detailsText, versionsText;
        bool outOfContext = false;  // dropped from the model's context: painted faded
        int height = 0;
    };
    // A streaming reply, cut where its finished blocks end (pieceStarts in Markdown.h): every
    // frame renders only the last piece; the others come from live_, laid out already.
    struct LivePieces {
        QString fontKey;
        bool markdown = true;
        QStringList keys;  // what the finished pieces of the last streaming layout show
        std::vector<std::shared_ptr<QTextDocument>> docs;
    };
    using NewDocument = std::function<std::shared_ptr<QTextDocument>()>;
    // l.pieces for a streaming reply: one per key (what the piece shows), the last still being
    // written; `write(doc, i)` renders piece i into an empty document. Finished pieces whose key
    // is unchanged keep their documents from live_.
    void assemblePieces(Layout& l, const QStringList& keys,
                        const std::function<void(QTextDocument&, qsizetype)>& write, const QFont& font,
                        const NewDocument& newDocument) const;
    void streamingPieces(Layout& l, const QString& text, const QFont& font,
                         const NewDocument& newDocument) const;
    void streamingReasonedPieces(Layout& l, const ReplyParts& parts, const QFont& font,
                                 const QString& heading, const NewDocument& newDocument) const;
    static double layOutPieces(Layout& l);  // lays the pieces out at l.textWidth; their height
    // The laid-out message, from the cache when nothing it depends on changed: while a reply
    // streams the list re-lays itself out (Qt coalesces the changes, one layout per event-loop
    // pass) and asks every row's size (rows are not of uniform size), and laying out a long reply
    // (a Markdown document) is costly (docs/decisions/0032-chat-view-caches-laid-out-messages.md).
    Layout layout(const QStyleOptionViewItem& option, const QModelIndex& index) const;
    Layout computeLayout(const QStyleOptionViewItem& option, const QModelIndex& index, int width) const;
    // Bounded by text size: cost 1 per 2 KiB of text, so roughly 1 MiB of text stays laid out.
    mutable QCache<QString, Layout> layouts_{512};
    mutable LivePieces live_;
    QRect paintArea_;
    bool repliesOpenInReasoning_ = false;
    bool renderMarkdown_ = true;
};

class ChatView : public QListView {
    Q_OBJECT
public:
    explicit ChatView(QWidget* parent = nullptr);
    void setModel(QAbstractItemModel* model) override;
    void setEmptyText(const QString& title, const QString& hint);
    // The empty chat's text for the app's state: no model (how to get one, `modelsDir` listed),
    // a model loading, a model (`modelName`) ready.
    enum class Welcome { NoModel, Loading, Ready };
    void showWelcome(Welcome welcome, const QString& modelName, const QString& modelsDir);
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
    // The message's previous (step -1) or next (1) version, from its "‹ 2 / 3 ›".
    void versionRequested(int row, int step);

protected:
    void paintEvent(QPaintEvent* event) override;
    void changeEvent(QEvent* event) override;  // LanguageChange: laid out again in its words
    void contextMenuEvent(QContextMenuEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    // A streaming reply changes at every frame (at most every 50 ms). A re-layout of the list
    // repaints the whole view (every visible message's text), so a change that keeps the row's
    // height only repaints the row — of a streaming reply whose bubble stays put, only its last
    // piece — and only a new height re-lays the list out (decision 0035).
    void dataChanged(const QModelIndex& topLeft, const QModelIndex& bottomRight,
                     const QList<int>& roles = QList<int>()) override;

private:
    MessageDelegate* delegate_;
    QPersistentModelIndex liveRow_;  // the row last repainted in part, and its bubble then
    QRect liveBubble_;
    // The "‹ n / m ›" under `pos` (viewport coordinates): its row and the step a click takes, or
    // {-1, 0}.
    std::pair<int, int> versionStepAt(const QPoint& pos) const;
    QString emptyTitle_, emptyHint_;
    QPixmap emptyIcon_;
    bool followTail_ = true;
};
