#include "chat/ConversationList.h"

#include <QDate>
#include <QEvent>
#include <QInputDialog>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "chat/ConversationDelegate.h"
#include "chat/ConversationStore.h"

namespace {
constexpr int kConversationIdRole = Qt::UserRole + 1;
}

ConversationList::ConversationList(ConversationStore* store, QWidget* parent)
    : QWidget(parent), store_(store) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    newChat_ = new QPushButton(this);
    QPushButton* newChat = newChat_;
    newChat->setObjectName(QStringLiteral("newChatButton"));
    layout->addWidget(newChat);
    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("conversationFilter"));
    filter_->setClearButtonEnabled(true);
    layout->addWidget(filter_);
    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("conversationList"));
    list_->setContextMenuPolicy(Qt::CustomContextMenu);
    list_->setItemDelegate(new ConversationDelegate(list_));
    list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    list_->setMouseTracking(true);
    layout->addWidget(list_, 1);
    retranslateUi();

    connect(newChat, &QPushButton::clicked, this, &ConversationList::newRequested);
    connect(filter_, &QLineEdit::textChanged, this, &ConversationList::refresh);
    connect(list_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
        const qint64 id = item->data(kConversationIdRole).toLongLong();
        if (id != current_) emit openRequested(id);
    });
    connect(list_, &QListWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QListWidgetItem* item = list_->itemAt(pos);
        if (item == nullptr) return;
        const qint64 id = item->data(kConversationIdRole).toLongLong();
        QMenu menu(this);
        QAction* renameAction = menu.addAction(tr("Rename…"));
        QAction* removeAction = menu.addAction(tr("Delete"));
        removeAction->setEnabled(!generating_ || id != current_);
        QAction* chosen = menu.exec(list_->viewport()->mapToGlobal(pos));
        if (chosen == renameAction) rename(id);
        if (chosen == removeAction) remove(id);
    });
}

void ConversationList::retranslateUi() {
    newChat_->setText(tr("New Chat"));
    filter_->setPlaceholderText(tr("Search conversations"));
}

void ConversationList::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() != QEvent::LanguageChange) return;
    retranslateUi();
    refresh();  // the subtitles ("3 messages")
}

void ConversationList::setCurrent(qint64 id) {
    current_ = id;
    if (id < 0) list_->clearSelection();
    for (int row = 0; row < list_->count(); ++row)
        if (list_->item(row)->data(kConversationIdRole).toLongLong() == id) list_->setCurrentRow(row);
}

void ConversationList::refresh() {
    const QSignalBlocker block(list_);
    list_->clear();
    const QLocale locale;
    // With search text, only the conversations whose title or messages contain it.
    const QString filter = filter_->text().trimmed();
    const QVector<qint64> matching = filter.isEmpty() ? QVector<qint64>{} : store_->search(filter);
    for (const ConversationSummary& c : store_->conversations()) {
        if (!filter.isEmpty() && !matching.contains(c.id)) continue;
        auto* item = new QListWidgetItem(list_);
        item->setText(c.title);
        const QString when = c.updated.date() == QDate::currentDate()
                                 ? locale.toString(c.updated.time(), QStringLiteral("HH:mm"))
                                 : locale.toString(c.updated.date(), QLocale::ShortFormat);
        item->setData(ConversationDelegate::SubtitleRole,
                      tr("%1 · %n message(s)", nullptr, c.message_count).arg(when));
        item->setData(kConversationIdRole, c.id);
        item->setToolTip(c.model.isEmpty() ? c.title : tr("%1\nModel: %2").arg(c.title, c.model));
        if (c.id == current_) list_->setCurrentItem(item);
    }
}

void ConversationList::remove(qint64 id) {
    const ConversationSummary c = store_->conversation(id);
    if (QMessageBox::question(this, tr("Delete conversation"),
                              tr("Delete “%1” and all its messages?").arg(c.title)) != QMessageBox::Yes)
        return;
    store_->deleteConversation(id);
    emit deleted(id);
    refresh();
}

void ConversationList::rename(qint64 id) {
    const ConversationSummary c = store_->conversation(id);
    bool ok = false;
    const QString title =
        QInputDialog::getText(this, tr("Rename conversation"), tr("Title:"), QLineEdit::Normal, c.title, &ok);
    if (!ok || title.trimmed().isEmpty()) return;
    store_->renameConversation(id, title.trimmed());
    refresh();
}

void ConversationList::setGenerating(bool generating) {
    generating_ = generating;
    list_->setEnabled(!generating);
}
