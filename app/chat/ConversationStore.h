// ConversationStore — every conversation and message on disk, in one SQLite database (QtSql).
//
// The database runs in WAL mode with synchronous=NORMAL: a message written here survives the app
// being closed or killed, and writing the growing partial reply every few hundred milliseconds
// stays cheap. Messages carry a `complete` flag; a reply interrupted by closing the app or by Stop
// is stored with complete = false and shown as such when the conversation is reopened.
//
// Versions: messages form a tree (messages.parent_id: the message before it). Regenerate and Edit
// and Resend add a sibling of what they replace, which stays as another version; the conversation
// shows the path that ends at conversations.leaf_id, which chooseVersion() moves. messages()
// returns that path, each message with its place among its versions.
//
// Used from the UI thread only (a QSqlDatabase connection belongs to the thread that opened it).
#pragma once
#include <QDateTime>
#include <QString>
#include <QVector>

struct ConversationSummary {
    qint64 id = -1;
    QString title;
    QString system_prompt;
    QString model;  // file name of the model last used in it
    QDateTime created, updated;
    int message_count = 0;
};

struct StoredMessage {
    qint64 id = -1;
    qint64 conversation_id = -1;
    QString role;  // "user", "assistant" or "system"
    QString content;
    bool complete = true;
    QString details;  // how it was made (speed, stop reason), as chat/ReplyDetails.h stores it
    QString model;    // the model that wrote a reply ("" for other roles, and for replies stored before v2)
    QDateTime created;
    // The first message of a turn that is to replace others (Edit and Resend, Regenerate) names
    // the first of them until the turn has begun (completeReplacement); -1 otherwise. A message
    // that still names one when the conversation is opened belongs to a turn that never began:
    // the app was killed while its prompt was read.
    qint64 replaces = -1;
    qint64 parent_id = -1;  // the message before it (-1: the conversation's first)
    // Its place among the versions of this point of the conversation (messages with the same
    // parent), 1-based, oldest first, and how many there are.
    int version = 1, versions = 1;
};

class ConversationStore {
public:
    // The default database lives in QStandardPaths::AppDataLocation. Tests pass their own path.
    static QString defaultPath();

    explicit ConversationStore(const QString& path = defaultPath());
    ~ConversationStore();
    ConversationStore(const ConversationStore&) = delete;
    ConversationStore& operator=(const ConversationStore&) = delete;

    bool isOpen() const;
    QString lastError() const;
    QString path() const { return path_; }
    QString journalMode() const;  // "wal" once opened

    qint64 createConversation(const QString& title, const QString& systemPrompt = {},
                              const QString& model = {});
    bool renameConversation(qint64 id, const QString& title);
    bool setConversationSystemPrompt(qint64 id, const QString& systemPrompt);
    bool setConversationModel(qint64 id, const QString& model);
    bool deleteConversation(qint64 id);                  // with its messages
    QVector<ConversationSummary> conversations() const;  // most recently updated first
    // Ids of the conversations whose title or any message contains `text` (case-insensitive for
    // ASCII letters, as SQLite's LIKE), most recently updated first.
    QVector<qint64> search(const QString& text) const;
    ConversationSummary conversation(qint64 id) const;

    // After the shown path's last message — or, when it `replaces` one, as a new version of that
    // message (its sibling); either way the shown path now ends with it.
    qint64 appendMessage(qint64 conversationId, const QString& role, const QString& content,
                         bool complete = true, const QString& details = {}, const QString& model = {},
                         qint64 replaces = -1);
    // The turn that `replacement` begins has begun: it no longer names what it replaces, which
    // stays as its earlier version.
    bool completeReplacement(qint64 replacement);
    // Rewrites a message's text (the streaming reply), its completion flag and details.
    bool updateMessage(qint64 messageId, const QString& content, bool complete, const QString& details = {});
    // Deletes the message and everything after it on every version; a shown path that went
    // through it ends at its parent again — or, for a replacement, at the version it replaced.
    bool deleteMessage(qint64 messageId);
    // The shown path, first message first (all messages of a conversation when it has no tree yet).
    QVector<StoredMessage> messages(qint64 conversationId) const;
    // Every message of the conversation, every version, in the order they were written.
    QVector<StoredMessage> allMessages(qint64 conversationId) const;
    // The version `step` places after (1) or before (-1) the message among its siblings, or -1.
    qint64 versionBeside(qint64 messageId, int step) const;
    // Shows the path through `messageId`: below it, the latest version at each point.
    bool chooseVersion(qint64 conversationId, qint64 messageId);

private:
    bool exec(const QString& sql);
    bool migrate();
    bool touch(qint64 conversationId);
    bool setLeaf(qint64 conversationId, qint64 leaf);  // -1: none (an empty conversation)
    // Below `id`, the latest version at each point, down to the last message.
    static qint64 latestBelow(const QVector<StoredMessage>& all, qint64 id);

    QString path_;
    QString connection_;
    mutable QString lastError_;
};
