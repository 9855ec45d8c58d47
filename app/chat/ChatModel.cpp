#include "chat/ChatModel.h"

#include "chat/ReplyDetails.h"

ChatModel::ChatModel(QObject* parent) : QAbstractListModel(parent) {}

int ChatModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(messages_.size());
}

QVariant ChatModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() < 0 || index.row() >= messages_.size()) return {};
    const ChatMessage& m = messages_.at(index.row());
    switch (role) {
        case Qt::DisplayRole:
        case TextRole:
            return m.text;
        case Qt::ToolTipRole:
        case DetailsRole:
            return reply_details::display(m.details);
        case MessageRole:
            return static_cast<int>(m.role);
        case CompleteRole:
            return m.complete;
        case StreamingRole:
            return m.streaming;
        case ModelRole:
            return m.model;
        case OutOfContextRole:
            return m.outOfContext;
        case VersionRole:
            return m.version;
        case VersionsRole:
            return m.versions;
        default:
            return {};
    }
}

QHash<int, QByteArray> ChatModel::roleNames() const {
    return {{MessageRole, "messageRole"},       {TextRole, "text"},           {DetailsRole, "details"},
            {CompleteRole, "complete"},         {StreamingRole, "streaming"}, {ModelRole, "model"},
            {OutOfContextRole, "outOfContext"}, {VersionRole, "version"},     {VersionsRole, "versions"}};
}

void ChatModel::clear() {
    beginResetModel();
    messages_.clear();
    endResetModel();
}

void ChatModel::setMessages(const QVector<ChatMessage>& messages) {
    beginResetModel();
    messages_ = messages;
    endResetModel();
}

int ChatModel::append(const ChatMessage& message) {
    const int row = static_cast<int>(messages_.size());
    beginInsertRows({}, row, row);
    messages_.push_back(message);
    endInsertRows();
    return row;
}

void ChatModel::changed(int row) {
    const QModelIndex i = index(row);
    emit dataChanged(i, i);
}

void ChatModel::appendToMessage(int row, const QString& delta) {
    if (row < 0 || row >= messages_.size() || delta.isEmpty()) return;
    messages_[row].text += delta;
    changed(row);
}

void ChatModel::setText(int row, const QString& text) {
    if (row < 0 || row >= messages_.size()) return;
    messages_[row].text = text;
    changed(row);
}

void ChatModel::setDetails(int row, const QString& details) {
    if (row < 0 || row >= messages_.size()) return;
    messages_[row].details = details;
    changed(row);
}

void ChatModel::finish(int row, bool complete) {
    if (row < 0 || row >= messages_.size()) return;
    messages_[row].streaming = false;
    messages_[row].complete = complete;
    changed(row);
}

void ChatModel::resume(int row) {
    if (row < 0 || row >= messages_.size()) return;
    messages_[row].streaming = true;
    messages_[row].complete = false;
    changed(row);
}

void ChatModel::setRoomToContinue(int row, bool asItStands, bool byDropping) {
    if (row < 0 || row >= messages_.size()) return;
    messages_[row].roomToContinue = asItStands;
    messages_[row].roomToContinueDropping = byDropping;
}

void ChatModel::setOutOfContext(int row, bool out) {
    if (row < 0 || row >= messages_.size() || messages_[row].outOfContext == out) return;
    messages_[row].outOfContext = out;
    changed(row);
}

void ChatModel::setVersion(int row, int version, int versions) {
    if (row < 0 || row >= messages_.size()) return;
    if (messages_[row].version == version && messages_[row].versions == versions) return;
    messages_[row].version = version;
    messages_[row].versions = versions;
    changed(row);
}

void ChatModel::setStoreId(int row, qint64 id) {
    if (row < 0 || row >= messages_.size()) return;
    messages_[row].store_id = id;
}

void ChatModel::removeMessage(int row) {
    if (row < 0 || row >= messages_.size()) return;
    beginRemoveRows({}, row, row);
    messages_.removeAt(row);
    endRemoveRows();
}

int ChatModel::lastRow(ChatMessage::Role role) const {
    for (int row = static_cast<int>(messages_.size()) - 1; row >= 0; --row)
        if (messages_.at(row).role == role) return row;
    return -1;
}

QString ChatModel::roleName(ChatMessage::Role role) {
    switch (role) {
        case ChatMessage::Role::User:
            return QStringLiteral("user");
        case ChatMessage::Role::Assistant:
            return QStringLiteral("assistant");
        case ChatMessage::Role::System:
            return QStringLiteral("system");
        case ChatMessage::Role::Notice:
            break;
    }
    return QStringLiteral("notice");
}

ChatMessage::Role ChatModel::roleFromName(const QString& name) {
    if (name == QLatin1String("user")) return ChatMessage::Role::User;
    if (name == QLatin1String("assistant")) return ChatMessage::Role::Assistant;
    if (name == QLatin1String("system")) return ChatMessage::Role::System;
    return ChatMessage::Role::Notice;
}
