#include "chat/ChatView.h"

#include <QMouseEvent>

#include <QAbstractTextDocumentLayout>
#include <QAccessible>
#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QMenu>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QTextDocument>
#include <QTextOption>
#include <algorithm>
#include <cmath>
#include <memory>

#include "Theme.h"
#include "chat/ChatModel.h"
#include "chat/Markdown.h"
#include "chat/Reasoning.h"

namespace {

constexpr int kSideMargin = 18;
constexpr int kVerticalMargin = 7;
constexpr int kPadX = 13;
constexpr int kPadY = 9;
constexpr int kRadius = 11;
constexpr int kMaxBubbleWidth = 760;
const QChar kCursor(0x258D);  // ▍ shown at the end of a reply being generated

QFont smallFont(const QFont& base) {
    QFont f = base;
    f.setPointSizeF(base.pointSizeF() * 0.85);
    return f;
}

}  // namespace

MessageDelegate::MessageDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

MessageDelegate::Layout MessageDelegate::layout(const QStyleOptionViewItem& option,
                                                const QModelIndex& index) const {
    int width = option.rect.width();
    if (const auto* view = qobject_cast<const QAbstractItemView*>(option.widget))
        width = view->viewport()->width();
    width = std::max(width, 200);
    // Everything the layout depends on, the text last (it is the long part).
    const QString key =
        QStringLiteral("%1|%2|%3|%4|%5|%6|%7|%8|%9")
            .arg(width)
            .arg(index.data(ChatModel::MessageRole).toInt() * 2 +
                 int(index.data(ChatModel::OutOfContextRole).toBool()))
            .arg(int(index.data(ChatModel::StreamingRole).toBool()) * 2 +
                 int(index.data(ChatModel::CompleteRole).toBool()))
            .arg(int(renderMarkdown_) * 2 + int(repliesOpenInReasoning_))
            .arg(option.font.key(),
                 ChatView::author(index) + QLatin1Char('|') + index.data(ChatModel::VersionRole).toString() +
                     QLatin1Char('/') + index.data(ChatModel::VersionsRole).toString(),
                 index.data(ChatModel::DetailsRole).toString(),
                 QString::number(index.data(ChatModel::TextRole).toString().size())) +
        index.data(ChatModel::TextRole).toString();
    if (const Layout* cached = layouts_.object(key)) return *cached;
    auto* computed = new Layout(computeLayout(option, index, width));
    const Layout result = *computed;
    layouts_.insert(key, computed, 1 + static_cast<qsizetype>(key.size() / 2048));
    return result;
}

MessageDelegate::Layout MessageDelegate::computeLayout(const QStyleOptionViewItem& option,
                                                       const QModelIndex& index, int width) const {
    Layout l;
    l.role = static_cast<ChatMessage::Role>(index.data(ChatModel::MessageRole).toInt());
    const bool streaming = index.data(ChatModel::StreamingRole).toBool();
    const bool complete = index.data(ChatModel::CompleteRole).toBool();
    QString text = index.data(ChatModel::TextRole).toString();
    if (streaming) text += kCursor;

    const QFont font = option.font;
    const QFontMetrics small(smallFont(font));

    QTextOption textOption;
    textOption.setWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
    auto newDocument = [&] {
        auto doc = std::make_shared<QTextDocument>();
        doc->setDefaultFont(font);
        doc->setDocumentMargin(0);
        doc->setDefaultTextOption(textOption);
        return doc;
    };
    const ReplyParts parts =
        l.role == ChatMessage::Role::Assistant
            ? splitReasoning(index.data(ChatModel::TextRole).toString(), repliesOpenInReasoning_)
            : ReplyParts{};
    if (parts.has_reasoning) {
        // The reasoning muted and smaller under its own heading, then the answer.
        const QString heading = parts.reasoning_done ? tr("Reasoning") : tr("Reasoning…");
        if (streaming) {
            streamingReasonedPieces(l, parts, font, heading, newDocument);
        } else {
            l.doc = newDocument();
            writeReasonedReply(*l.doc, parts, font, smallFont(font), heading, QString(), renderMarkdown_);
        }
    } else if (l.role == ChatMessage::Role::Assistant && streaming) {
        streamingPieces(l, index.data(ChatModel::TextRole).toString(), font, newDocument);
    } else if (l.role == ChatMessage::Role::Assistant && renderMarkdown_) {
        l.doc = newDocument();
        writeMarkdown(*l.doc, text, font);
    } else {
        l.doc = newDocument();
        l.doc->setPlainText(text);
    }
    if (l.pieces.empty()) l.pieces.push_back({l.doc, 0.0});

    if (l.role == ChatMessage::Role::Notice) {
        const int textWidth = std::min(width - 2 * kSideMargin, kMaxBubbleWidth);
        QFont italic = smallFont(font);
        italic.setItalic(true);
        l.doc->setDefaultFont(italic);
        l.doc->setTextWidth(textWidth);
        textOption.setAlignment(Qt::AlignHCenter);
        l.doc->setDefaultTextOption(textOption);
        const int h = static_cast<int>(std::ceil(l.doc->size().height()));
        l.bubble = QRect((width - textWidth) / 2, kVerticalMargin, textWidth, h);
        l.height = h + 2 * kVerticalMargin;
        return l;
    }

    const int maxBubble = std::min(static_cast<int>(width * 0.82), kMaxBubbleWidth);
    const int maxText = maxBubble - 2 * kPadX;
    l.textWidth = maxText;
    double textH = layOutPieces(l);
    // The bubble fits its text: laid out again at the width its longest line needs. Not while a
    // reply streams once its lines fill most of the width or it has finished pieces: each frame
    // lays the growing reply out anew, the second layout was half that cost, and it would lay
    // the finished pieces out again at every frame; the bubble tightens when the reply ends.
    double ideal = 0;
    for (const Piece& piece : l.pieces) ideal = std::max(ideal, piece.doc->idealWidth());
    const int fitted = std::min(static_cast<int>(std::ceil(ideal)), maxText);
    if (!streaming || (fitted < maxText * 3 / 4 && l.pieces.size() == 1)) {
        l.textWidth = std::max(fitted, 8);
        textH = layOutPieces(l);
    }
    const int textHeight = static_cast<int>(std::ceil(textH));
    const int bubbleWidth = static_cast<int>(std::max(l.textWidth, 8.0)) + 2 * kPadX;

    l.labelText = ChatView::author(index);
    l.outOfContext = index.data(ChatModel::OutOfContextRole).toBool();
    if (l.outOfContext) l.labelText += QStringLiteral(" · ") + tr("no longer in the model's context");
    l.detailsText = index.data(ChatModel::DetailsRole).toString();
    if (!complete && !streaming) {
        const QString interrupted = tr("interrupted");
        l.detailsText =
            l.detailsText.isEmpty() ? interrupted : l.detailsText + QStringLiteral(" · ") + interrupted;
    }

    const bool right = l.role == ChatMessage::Role::User;
    int y = kVerticalMargin;
    const int labelH = small.height();
    const int x = right ? width - kSideMargin - bubbleWidth : kSideMargin;
    QFont labelFont = smallFont(font);
    labelFont.setBold(true);  // as painted
    const int labelWidth = std::max(bubbleWidth, QFontMetrics(labelFont).horizontalAdvance(l.labelText) + 2);
    l.label = QRect(right ? width - kSideMargin - labelWidth : kSideMargin, y, labelWidth, labelH);
    if (const int versions = index.data(ChatModel::VersionsRole).toInt(); versions > 1) {
        // Beside the author: "‹ 2 / 3 ›", to move between the versions of this message.
        l.versionsText =
            QStringLiteral("‹ %1 / %2 ›").arg(index.data(ChatModel::VersionRole).toInt()).arg(versions);
        const int authorWidth = QFontMetrics(labelFont).horizontalAdvance(l.labelText);
        const int versionsWidth = QFontMetrics(labelFont).horizontalAdvance(l.versionsText) + 12;
        l.versions = QRect(
            right ? width - kSideMargin - authorWidth - 10 - versionsWidth : kSideMargin + authorWidth + 10,
            y - 2, versionsWidth, labelH + 4);
    }
    y += labelH + 3;
    l.bubble = QRect(x, y, bubbleWidth, textHeight + 2 * kPadY);
    if (streaming && l.role == ChatMessage::Role::Assistant)  // (in pieces)
        l.liveTop = y + kPadY + static_cast<int>(std::floor(l.pieces.back().y)) - 2;
    y += l.bubble.height();
    if (!l.detailsText.isEmpty()) {
        y += 3;
        const int detailsWidth = std::max(bubbleWidth, small.horizontalAdvance(l.detailsText));
        l.details = QRect(right ? width - kSideMargin - detailsWidth : kSideMargin, y, detailsWidth, labelH);
        y += labelH;
    }
    l.height = y + kVerticalMargin;
    return l;
}

void MessageDelegate::assemblePieces(Layout& l, const QStringList& keys,
                                     const std::function<void(QTextDocument&, qsizetype)>& write,
                                     const QFont& font, const NewDocument& newDocument) const {
    const bool markdown = renderMarkdown_;
    if (live_.fontKey != font.key() || live_.markdown != markdown) live_ = {font.key(), markdown, {}, {}};
    LivePieces next{live_.fontKey, markdown, {}, {}};
    for (qsizetype i = 0; i < keys.size(); ++i) {
        const bool finished = i + 1 < keys.size();  // the last piece is still being written
        std::shared_ptr<QTextDocument> doc;
        if (finished && i < live_.keys.size() && live_.keys[i] == keys[i]) {
            doc = live_.docs[static_cast<size_t>(i)];
        } else {
            doc = newDocument();
            write(*doc, i);
        }
        if (finished) {
            next.keys << keys[i];
            next.docs.push_back(doc);
        }
        l.pieces.push_back({doc, 0.0});
    }
    live_ = std::move(next);
    l.doc = l.pieces.back().doc;
}

void MessageDelegate::streamingPieces(Layout& l, const QString& text, const QFont& font,
                                      const NewDocument& newDocument) const {
    const bool markdown = renderMarkdown_;
    QStringList texts = pieceTexts(text, markdown);
    texts.back() += kCursor;
    assemblePieces(
        l, texts,
        [&](QTextDocument& doc, qsizetype i) {
            if (markdown)
                writeMarkdown(doc, texts[i], font);
            else
                doc.setPlainText(texts[i]);
        },
        font, newDocument);
}

void MessageDelegate::streamingReasonedPieces(Layout& l, const ReplyParts& parts, const QFont& font,
                                              const QString& heading, const NewDocument& newDocument) const {
    const bool markdown = renderMarkdown_;
    const QList<ReasonedPiece> pieces = reasonedPieces(parts, markdown);
    QStringList keys;
    for (const ReasonedPiece& p : pieces)  // the heading is part of the first piece
        keys << QString::number(int(p.kind)) +
                    (p.kind == ReasonedPiece::Kind::Heading ? heading : QString()) + QChar(0x1F) + p.text;
    keys.back() += kCursor;
    assemblePieces(
        l, keys,
        [&](QTextDocument& doc, qsizetype i) {
            writeReasonedPiece(doc, pieces[i], font, smallFont(font), heading,
                               i + 1 == pieces.size() ? QString(kCursor) : QString(), markdown);
        },
        font, newDocument);
}

double MessageDelegate::layOutPieces(Layout& l) {
    double y = 0;
    for (size_t i = 0; i < l.pieces.size(); ++i) {
        QTextDocument& doc = *l.pieces[i].doc;
        // setTextWidth lays the document out again even at its present width.
        if (doc.textWidth() != l.textWidth) doc.setTextWidth(l.textWidth);
        l.pieces[i].y = y;
        y += doc.size().height();
        if (i + 1 < l.pieces.size()) y += stackedGap(doc, *l.pieces[i + 1].doc);
    }
    return y;
}

QRect MessageDelegate::liveRect(const QStyleOptionViewItem& option, const QModelIndex& index) const {
    const Layout l = layout(option, index);
    if (l.liveTop < 0) return {};
    return QRect(QPoint(l.bubble.left(), l.liveTop), l.bubble.bottomRight());
}

QSize MessageDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const {
    const Layout l = layout(option, index);
    int width = option.rect.width();
    if (const auto* view = qobject_cast<const QAbstractItemView*>(option.widget))
        width = view->viewport()->width();
    return {width, l.height};
}

void MessageDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                            const QModelIndex& index) const {
    const Layout l = layout(option, index);
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    painter->translate(option.rect.topLeft());

    if (l.role == ChatMessage::Role::Notice) {
        painter->translate(l.bubble.topLeft());
        QAbstractTextDocumentLayout::PaintContext ctx;
        ctx.palette.setColor(QPalette::Text, theme::mutedText());
        l.doc->documentLayout()->draw(painter, ctx);
        painter->restore();
        return;
    }

    // A message dropped to make room in the context is shown faded: still readable, clearly
    // not what the model answers from.
    if (l.outOfContext) painter->setOpacity(0.5);
    const QFont small = smallFont(option.font);
    QFont labelFont = small;
    labelFont.setBold(true);
    painter->setFont(labelFont);
    painter->setPen(l.role == ChatMessage::Role::User ? theme::accentDark() : theme::mutedText());
    painter->drawText(l.label,
                      (l.role == ChatMessage::Role::User ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter,
                      l.labelText);

    QPainterPath path;
    path.addRoundedRect(QRectF(l.bubble).adjusted(0.5, 0.5, -0.5, -0.5), kRadius, kRadius);
    QColor fill = theme::surface();
    QColor stroke = theme::border();
    if (l.role == ChatMessage::Role::User) {
        fill = theme::userBubble();
        stroke = fill.darker(108);
    } else if (l.role == ChatMessage::Role::System) {
        fill = QColor(0xEE, 0xF2, 0xF8);
    }
    painter->fillPath(path, fill);
    painter->setPen(QPen(stroke, 1));
    painter->drawPath(path);

    const QPoint textOrigin = l.bubble.topLeft() + QPoint(kPadX, kPadY);
    // Only the lines inside the view: a long reply is mostly scrolled away, and it is repainted
    // at every frame while it streams.
    QRectF visible;
    if (const auto* view = qobject_cast<const QAbstractItemView*>(option.widget)) {
        const QRect area =
            paintArea_.isNull() ? view->viewport()->rect() : paintArea_ & view->viewport()->rect();
        visible = QRectF(area.translated(-option.rect.topLeft() - textOrigin));
    }
    for (const Piece& piece : l.pieces) {
        const QRectF area(0, piece.y, l.textWidth, piece.doc->size().height());
        if (!visible.isNull() && !visible.intersects(area.adjusted(0, -kPadY, 0, kPadY))) continue;
        // (A piece shared with a later frame's layout may have been laid out at another width since.)
        if (piece.doc->textWidth() != l.textWidth) piece.doc->setTextWidth(l.textWidth);
        painter->save();
        painter->translate(QPointF(textOrigin) + QPointF(0, piece.y));
        QAbstractTextDocumentLayout::PaintContext ctx;
        ctx.palette.setColor(QPalette::Text, theme::text());
        if (!visible.isNull()) ctx.clip = visible.translated(0, -piece.y);
        piece.doc->documentLayout()->draw(painter, ctx);
        painter->restore();
    }

    if (!l.versionsText.isEmpty()) {
        QFont versionsFont = small;
        versionsFont.setBold(true);
        painter->setFont(versionsFont);
        painter->setPen(QPen(theme::border(), 1));
        painter->setBrush(theme::surface());
        painter->drawRoundedRect(QRectF(l.versions).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6);
        painter->setPen(theme::accentDark());
        painter->drawText(l.versions, Qt::AlignCenter, l.versionsText);
    }
    if (!l.detailsText.isEmpty()) {
        painter->setFont(small);
        painter->setPen(theme::mutedText());
        painter->drawText(
            l.details,
            (l.role == ChatMessage::Role::User ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter,
            l.detailsText);
    }
    painter->restore();
}

ChatView::ChatView(QWidget* parent) : QListView(parent), delegate_(new MessageDelegate(this)) {
    setItemDelegate(delegate_);
    setMouseTracking(true);  // the "‹ n / m ›" of a message shows a hand under the pointer
    setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setSelectionMode(QAbstractItemView::NoSelection);
    setResizeMode(QListView::Adjust);
    setUniformItemSizes(false);
    setFrameShape(QFrame::NoFrame);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setFocusPolicy(Qt::NoFocus);
    QPalette p = palette();
    p.setColor(QPalette::Base, theme::window());
    setPalette(p);
    setAutoFillBackground(true);

    QScrollBar* bar = verticalScrollBar();
    connect(bar, &QScrollBar::valueChanged, this,
            [this, bar](int value) { followTail_ = value >= bar->maximum() - 8; });
    connect(bar, &QScrollBar::rangeChanged, this, [this, bar](int, int max) {
        if (followTail_) bar->setValue(max);
    });
}

void ChatView::setModel(QAbstractItemModel* model) {
    QListView::setModel(model);
    if (model == nullptr) return;

    connect(model, &QAbstractItemModel::modelReset, this, [this] { followTail_ = true; });
}

void ChatView::showWelcome(Welcome welcome, const QString& modelName, const QString& modelsDir) {
    switch (welcome) {
        case Welcome::NoModel:
            setEmptyText(
                tr("Welcome to Lantern"),
                tr("Open a GGUF model (File > Open Model…) or pick one from the toolbar. Models in %1, and "
                   "those LM Studio, GPT4All, Jan, llama.cpp, the Hugging Face cache or Ollama downloaded, "
                   "are listed automatically.")
                    .arg(modelsDir));
            break;
        case Welcome::Loading:
            setEmptyText(tr("Loading the model…"),
                         tr("Weights are uploaded to the device and the compute pipelines are built."));
            break;
        case Welcome::Ready:
            setEmptyText(tr("Ready when you are"),
                         tr("%1 is loaded. Write a message below to start.").arg(modelName));
            break;
    }
}

void ChatView::setEmptyText(const QString& title, const QString& hint) {
    emptyTitle_ = title;
    emptyHint_ = hint;
    viewport()->update();
}

QString ChatView::author(const QModelIndex& index) {
    switch (static_cast<ChatMessage::Role>(index.data(ChatModel::MessageRole).toInt())) {
        case ChatMessage::Role::User:
            return tr("You");
        case ChatMessage::Role::System:
            return tr("System prompt");
        default: {
            // The model that wrote this reply, which need not be the one loaded now.
            const QString model = index.data(ChatModel::ModelRole).toString();
            return model.isEmpty() ? tr("Assistant") : model;
        }
    }
}

void ChatView::changeEvent(QEvent* event) {
    QListView::changeEvent(event);
    if (event->type() != QEvent::LanguageChange) return;
    // Reply details and headings are worded when laid out (the welcome text: by the window).
    delegate_->clearLayouts();
    scheduleDelayedItemsLayout();
    viewport()->update();
}

void ChatView::setRenderMarkdown(bool on) {
    delegate_->setRenderMarkdown(on);
    scheduleDelayedItemsLayout();
    viewport()->update();
}

void ChatView::setRepliesOpenInReasoning(bool open) {
    delegate_->setRepliesOpenInReasoning(open);
    scheduleDelayedItemsLayout();
    viewport()->update();
}

void ChatView::scrollToEnd() {
    followTail_ = true;
    scrollToBottom();
}

void ChatView::dataChanged(const QModelIndex& topLeft, const QModelIndex& bottomRight,
                           const QList<int>& roles) {
    const QRect row = topLeft == bottomRight && topLeft.isValid() ? visualRect(topLeft) : QRect();
    if (!row.isEmpty() && isVisible()) {
        QStyleOptionViewItem option;
        initViewItemOption(&option);
        option.rect = row;
        const QRect bubble = delegate_->bubbleRect(option, topLeft);
        const QRect live = delegate_->liveRect(option, topLeft);
        const bool sameBubble = liveRow_ == topLeft && liveBubble_ == bubble;
        liveRow_ = topLeft;
        liveBubble_ = bubble;
        if (delegate_->sizeHint(option, topLeft).height() == row.height()) {
            // The same height: no re-layout, and of the row only what can have changed.
            viewport()->update(sameBubble && !live.isEmpty() ? live.translated(row.topLeft()) : row);
#if QT_CONFIG(accessibility)
            if (QAccessible::isActive()) {  // what QAbstractItemView::dataChanged would tell
                QAccessibleTableModelChangeEvent event(this, QAccessibleTableModelChangeEvent::DataChanged);
                event.setFirstRow(topLeft.row());
                event.setLastRow(topLeft.row());
                QAccessible::updateAccessibility(&event);
            }
#endif
            return;
        }
    }
    QListView::dataChanged(topLeft, bottomRight, roles);
    scheduleDelayedItemsLayout();  // the row's height may have changed: re-measure it
}

void ChatView::paintEvent(QPaintEvent* event) {
    delegate_->setPaintArea(event->rect());
    QListView::paintEvent(event);
    delegate_->setPaintArea({});
    if (model() != nullptr && model()->rowCount() > 0) return;
    QPainter painter(viewport());
    painter.setRenderHint(QPainter::Antialiasing);
    const QRect r = viewport()->rect();
    if (emptyIcon_.isNull()) emptyIcon_ = theme::paintAppIcon(72);
    const QPixmap& icon = emptyIcon_;
    const int top = r.center().y() - 90;
    painter.setOpacity(0.9);
    painter.drawPixmap(r.center().x() - 36, top, icon);
    painter.setOpacity(1.0);
    QFont titleFont = font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.35);
    titleFont.setBold(true);
    painter.setFont(titleFont);
    painter.setPen(theme::text());
    const QRect titleRect(r.left() + 20, top + 84, r.width() - 40, QFontMetrics(titleFont).height() + 4);
    painter.drawText(titleRect, Qt::AlignHCenter | Qt::AlignTop, emptyTitle_);
    painter.setFont(font());
    painter.setPen(theme::mutedText());
    const QRect hintRect(r.left() + 40, titleRect.bottom() + 8, r.width() - 80, 80);
    painter.drawText(hintRect, Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, emptyHint_);
}

std::pair<int, int> ChatView::versionStepAt(const QPoint& pos) const {
    const QModelIndex index = indexAt(pos);
    if (!index.isValid()) return {-1, 0};
    QStyleOptionViewItem option;
    initViewItemOption(&option);
    option.rect = visualRect(index);
    const QRect versions = delegate_->versionsRect(option, index).translated(option.rect.topLeft());
    if (!versions.contains(pos)) return {-1, 0};
    return {index.row(), pos.x() < versions.center().x() ? -1 : 1};
}

void ChatView::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) {
        const auto [row, step] = versionStepAt(event->position().toPoint());
        if (row >= 0) {
            emit versionRequested(row, step);
            return;
        }
    }
    QListView::mouseReleaseEvent(event);
}

void ChatView::mouseMoveEvent(QMouseEvent* event) {
    const auto [row, step] = versionStepAt(event->position().toPoint());
    viewport()->setCursor(row >= 0 ? Qt::PointingHandCursor : Qt::ArrowCursor);
    viewport()->setToolTip(row < 0    ? QString()
                           : step < 0 ? tr("The previous version")
                                      : tr("The next version"));
    QListView::mouseMoveEvent(event);
}

void ChatView::contextMenuEvent(QContextMenuEvent* event) {
    const QModelIndex index = indexAt(viewport()->mapFrom(this, event->pos()));
    QMenu menu(this);
    QAction* copyMessage = menu.addAction(tr("Copy Message"));
    copyMessage->setEnabled(index.isValid());
    QAction* copyAll = menu.addAction(tr("Copy Conversation"));
    copyAll->setEnabled(model() != nullptr && model()->rowCount() > 0);
    QAction* edit = nullptr;
    if (index.isValid() && static_cast<ChatMessage::Role>(index.data(ChatModel::MessageRole).toInt()) ==
                               ChatMessage::Role::User) {
        menu.addSeparator();
        edit = menu.addAction(tr("Edit and Resend…"));
        edit->setToolTip(
            tr("Put this message back in the input; sending it makes a new version of it, and the earlier "
               "one stays"));
    }
    QAction* chosen = menu.exec(event->globalPos());
    if (chosen != nullptr && chosen == edit) {
        emit editRequested(index.row());
    } else if (chosen == copyMessage && index.isValid()) {
        QApplication::clipboard()->setText(index.data(ChatModel::TextRole).toString());
    } else if (chosen == copyAll) {
        QStringList parts;
        for (int row = 0; row < model()->rowCount(); ++row) {
            const QModelIndex i = model()->index(row, 0);
            const auto role = static_cast<ChatMessage::Role>(i.data(ChatModel::MessageRole).toInt());
            if (role == ChatMessage::Role::Notice) continue;
            parts << author(i) + QStringLiteral(":\n") + i.data(ChatModel::TextRole).toString();
        }
        QApplication::clipboard()->setText(parts.join(QStringLiteral("\n\n")));
    }
}
