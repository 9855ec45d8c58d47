// ChatModel — the messages of the open conversation, owned by the UI thread.
//
// The streaming reply is the last row; InferenceWorker's text deltas are appended to it with
// appendToMessage(), so the worker never touches this model.
#pragma once
#include <QAbstractListModel>
#include <QString>
#include <QVector>

struct ChatMessage {
    enum class Role { User, Assistant, System, Notice };
    Role role = Role::User;
    QString text;
    QString details;         // small print under it, as stored (chat/ReplyDetails.h); DetailsRole words it
    QString model;           // the model that wrote a reply (its label); empty: not known
    bool complete = true;    // false: an interrupted reply
    bool streaming = false;  // being generated right now
    qint64 store_id = -1;    // ConversationStore message id, -1 when not stored (notices)
    // A reply's room for Continue (lantern::TurnStats::can_continue): as the conversation stands,
    // and once the oldest turns are dropped. Not stored: worked out again for the last reply
    // whenever the conversation is given to a model (ChatSession::continue_room).
    bool roomToContinue = true;
    bool roomToContinueDropping = true;
    // The model no longer sees it: dropped to make room in the context (DropOldestTurns). Shown
    // dimmed; not stored (a reopened conversation is the model's whole again until a turn drops).
    bool outOfContext = false;
    // Its place among the versions of this point of the conversation (Regenerate and Edit and
    // Resend add versions; ConversationStore keeps them): 1-based, and how many there are.
    int version = 1, versions = 1;
};

class ChatModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum DataRole {
        MessageRole = Qt::UserRole + 1,  // int(ChatMessage::Role)
        TextRole,
        DetailsRole,
        CompleteRole,
        StreamingRole,
        ModelRole,         // ChatMessage::model
        OutOfContextRole,  // ChatMessage::outOfContext
        VersionRole,       // ChatMessage::version
        VersionsRole,      // ChatMessage::versions
    };

    explicit ChatModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    void clear();
    void setMessages(const QVector<ChatMessage>& messages);
    int append(const ChatMessage& message);  // returns the row
    void appendToMessage(int row, const QString& delta);
    void setText(int row, const QString& text);
    void setDetails(int row, const QString& details);
    void finish(int row, bool complete);  // ends streaming
    void resume(int row);                 // streams again (a reply being continued)
    void setStoreId(int row, qint64 id);
    void setRoomToContinue(int row, bool asItStands, bool byDropping);
    void setOutOfContext(int row, bool out);
    void setVersion(int row, int version, int versions);
    void removeMessage(int row);
    const ChatMessage& message(int row) const { return messages_.at(row); }
    int lastRow(ChatMessage::Role role) const;  // -1 if none

    static QString roleName(ChatMessage::Role role);  // "user", "assistant", ... (storage names)
    static ChatMessage::Role roleFromName(const QString& name);

private:
    void changed(int row);
    QVector<ChatMessage> messages_;
};
