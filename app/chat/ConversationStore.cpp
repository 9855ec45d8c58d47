#include "chat/ConversationStore.h"

#include <QDir>
#include <QFileInfo>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QUuid>
#include <QVariant>

namespace {

// 1: conversations and messages. 2: messages.model (which model wrote each reply: a conversation
// can go on with another model, and its earlier replies keep their author). 3: messages.replaces
// (the rows a new turn replaces until completeReplacement, so a turn killed before it began can be
// undone when the conversation is reopened).
constexpr int kSchemaVersion = 3;

QSqlDatabase databaseFor(const QString& connection) {
    return QSqlDatabase::database(connection, false);
}

qint64 nowMs() {
    return QDateTime::currentMSecsSinceEpoch();
}

// A null QString binds as SQL NULL; the text columns are NOT NULL, so bind "" instead.
QString text(const QString& s) {
    return s.isNull() ? QStringLiteral("") : s;
}

// Runs `sql`, whose one parameter is a row id; on failure sets `error`. Returns the rows it
// touched, -1 on failure.
int execWithId(const QSqlDatabase& db, const QString& sql, qint64 id, QString& error) {
    QSqlQuery q(db);
    q.prepare(sql);
    q.addBindValue(id);
    if (!q.exec()) {
        error = q.lastError().text();
        return -1;
    }
    return q.numRowsAffected();
}

}  // namespace

QString ConversationStore::defaultPath() {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) +
           QStringLiteral("/conversations.sqlite");
}

ConversationStore::ConversationStore(const QString& path)
    : path_(path),
      connection_(QStringLiteral("lantern-store-") + QUuid::createUuid().toString(QUuid::WithoutBraces)) {
    QDir().mkpath(QFileInfo(path_).absolutePath());
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection_);
    db.setDatabaseName(path_);
    if (!db.open()) {
        lastError_ = db.lastError().text();
        return;
    }
    const bool ok =
        exec(QStringLiteral("PRAGMA journal_mode=WAL")) &&
        exec(QStringLiteral("PRAGMA synchronous=NORMAL")) && exec(QStringLiteral("PRAGMA foreign_keys=ON")) &&
        exec(QStringLiteral("CREATE TABLE IF NOT EXISTS conversations ("
                            " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                            " title TEXT NOT NULL,"
                            " system_prompt TEXT NOT NULL DEFAULT '',"
                            " model TEXT NOT NULL DEFAULT '',"
                            " created_at INTEGER NOT NULL,"
                            " updated_at INTEGER NOT NULL)")) &&
        exec(
            QStringLiteral("CREATE TABLE IF NOT EXISTS messages ("
                           " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                           " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
                           " role TEXT NOT NULL,"
                           " content TEXT NOT NULL,"
                           " complete INTEGER NOT NULL DEFAULT 1,"
                           " details TEXT NOT NULL DEFAULT '',"
                           " created_at INTEGER NOT NULL,"
                           " model TEXT NOT NULL DEFAULT '',"
                           " replaces INTEGER)")) &&
        exec(QStringLiteral(
            "CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id)")) &&
        migrate();
    if (!ok) db.close();
}

// Brings a database written by an earlier version up to this schema, in place and without losing
// anything; a database from a newer version keeps its version number (its extra columns are left
// alone, and this version reads and writes only the columns it knows).
bool ConversationStore::migrate() {
    QSqlQuery q(databaseFor(connection_));
    if (!q.exec(QStringLiteral("PRAGMA user_version")) || !q.next()) {
        lastError_ = q.lastError().text();
        return false;
    }
    const int version = q.value(0).toInt();
    if (version >= kSchemaVersion) return true;
    // Version 1 had no messages.model (a table created just now has it): replies stored then have
    // no recorded author, and the chat shows them as the assistant's.
    // Versions 1 and 2 had no messages.replaces: their replacements were written at once, so no
    // stored message is part of a turn that never began.
    bool hasModel = false, hasReplaces = false;
    if (!q.exec(QStringLiteral("PRAGMA table_info(messages)"))) {
        lastError_ = q.lastError().text();
        return false;
    }
    while (q.next()) {
        hasModel = hasModel || q.value(1).toString() == QStringLiteral("model");
        hasReplaces = hasReplaces || q.value(1).toString() == QStringLiteral("replaces");
    }
    if (!hasModel && !exec(QStringLiteral("ALTER TABLE messages ADD COLUMN model TEXT NOT NULL DEFAULT ''")))
        return false;
    if (!hasReplaces && !exec(QStringLiteral("ALTER TABLE messages ADD COLUMN replaces INTEGER")))
        return false;
    return exec(QStringLiteral("PRAGMA user_version=%1").arg(kSchemaVersion));
}

ConversationStore::~ConversationStore() {
    {
        QSqlDatabase db = databaseFor(connection_);
        if (db.isOpen()) db.close();
    }
    QSqlDatabase::removeDatabase(connection_);
}

bool ConversationStore::isOpen() const {
    return databaseFor(connection_).isOpen();
}

QString ConversationStore::lastError() const {
    return lastError_;
}

bool ConversationStore::exec(const QString& sql) {
    QSqlQuery q(databaseFor(connection_));
    if (!q.exec(sql)) {
        lastError_ = q.lastError().text();
        return false;
    }
    return true;
}

QString ConversationStore::journalMode() const {
    QSqlQuery q(databaseFor(connection_));
    if (q.exec(QStringLiteral("PRAGMA journal_mode")) && q.next()) return q.value(0).toString().toLower();
    return {};
}

bool ConversationStore::touch(qint64 conversationId) {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = ?"));
    q.addBindValue(nowMs());
    q.addBindValue(conversationId);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return false;
    }
    return true;
}

qint64 ConversationStore::createConversation(const QString& title, const QString& systemPrompt,
                                             const QString& model) {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(
        QStringLiteral("INSERT INTO conversations (title, system_prompt, model, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?)"));
    const qint64 now = nowMs();
    q.addBindValue(text(title));
    q.addBindValue(text(systemPrompt));
    q.addBindValue(text(model));
    q.addBindValue(now);
    q.addBindValue(now);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return -1;
    }
    return q.lastInsertId().toLongLong();
}

bool ConversationStore::renameConversation(qint64 id, const QString& title) {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral("UPDATE conversations SET title = ? WHERE id = ?"));
    q.addBindValue(text(title));
    q.addBindValue(id);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return false;
    }
    return q.numRowsAffected() == 1;
}

bool ConversationStore::setConversationSystemPrompt(qint64 id, const QString& systemPrompt) {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral("UPDATE conversations SET system_prompt = ? WHERE id = ?"));
    q.addBindValue(text(systemPrompt));
    q.addBindValue(id);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return false;
    }
    return q.numRowsAffected() == 1;
}

bool ConversationStore::setConversationModel(qint64 id, const QString& model) {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral("UPDATE conversations SET model = ? WHERE id = ?"));
    q.addBindValue(text(model));
    q.addBindValue(id);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return false;
    }
    return q.numRowsAffected() == 1;
}

bool ConversationStore::deleteConversation(qint64 id) {
    QSqlDatabase db = databaseFor(connection_);
    if (!db.transaction()) {
        lastError_ = db.lastError().text();
        return false;
    }
    QSqlQuery q(db);
    q.prepare(QStringLiteral("DELETE FROM messages WHERE conversation_id = ?"));
    q.addBindValue(id);
    bool ok = q.exec();
    if (ok) {
        q.prepare(QStringLiteral("DELETE FROM conversations WHERE id = ?"));
        q.addBindValue(id);
        ok = q.exec() && q.numRowsAffected() == 1;
    }
    if (!ok) {
        lastError_ = q.lastError().text();
        db.rollback();
        return false;
    }
    return db.commit();
}

QVector<ConversationSummary> ConversationStore::conversations() const {
    QVector<ConversationSummary> out;
    QSqlQuery q(databaseFor(connection_));
    if (!q.exec(QStringLiteral("SELECT c.id, c.title, c.system_prompt, c.model, c.created_at, c.updated_at, "
                               "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) "
                               "FROM conversations c ORDER BY c.updated_at DESC, c.id DESC"))) {
        lastError_ = q.lastError().text();
        return out;
    }
    while (q.next()) {
        ConversationSummary c;
        c.id = q.value(0).toLongLong();
        c.title = q.value(1).toString();
        c.system_prompt = q.value(2).toString();
        c.model = q.value(3).toString();
        c.created = QDateTime::fromMSecsSinceEpoch(q.value(4).toLongLong());
        c.updated = QDateTime::fromMSecsSinceEpoch(q.value(5).toLongLong());
        c.message_count = q.value(6).toInt();
        out.push_back(c);
    }
    return out;
}

QVector<qint64> ConversationStore::search(const QString& text) const {
    QVector<qint64> out;
    QString pattern = text;
    // Typed % and _ are literal characters, not LIKE wildcards.
    pattern.replace(QLatin1Char('\\'), QStringLiteral("\\\\"))
        .replace(QLatin1Char('%'), QStringLiteral("\\%"))
        .replace(QLatin1Char('_'), QStringLiteral("\\_"));
    pattern = QLatin1Char('%') + pattern + QLatin1Char('%');
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral(
        "SELECT c.id FROM conversations c WHERE c.title LIKE ? ESCAPE '\\' OR EXISTS ("
        "SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.content LIKE ? ESCAPE '\\') "
        "ORDER BY c.updated_at DESC, c.id DESC"));
    q.addBindValue(pattern);
    q.addBindValue(pattern);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return out;
    }
    while (q.next()) out.push_back(q.value(0).toLongLong());
    return out;
}

ConversationSummary ConversationStore::conversation(qint64 id) const {
    for (const ConversationSummary& c : conversations())
        if (c.id == id) return c;
    return {};
}

qint64 ConversationStore::appendMessage(qint64 conversationId, const QString& role, const QString& content,
                                        bool complete, const QString& details, const QString& model,
                                        qint64 replaces) {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(
        QStringLiteral("INSERT INTO messages (conversation_id, role, content, complete, details, created_at, "
                       "model, replaces) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    q.addBindValue(conversationId);
    q.addBindValue(text(role));
    q.addBindValue(text(content));
    q.addBindValue(complete ? 1 : 0);
    q.addBindValue(text(details));
    q.addBindValue(nowMs());
    q.addBindValue(text(model));
    q.addBindValue(replaces >= 0 ? QVariant(replaces)
                                 : QVariant(QMetaType::fromType<qint64>()));  // NULL: replaces nothing
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return -1;
    }
    const qint64 id = q.lastInsertId().toLongLong();
    touch(conversationId);
    return id;
}

bool ConversationStore::updateMessage(qint64 messageId, const QString& content, bool complete,
                                      const QString& details) {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral("UPDATE messages SET content = ?, complete = ?, details = ? WHERE id = ?"));
    q.addBindValue(text(content));
    q.addBindValue(complete ? 1 : 0);
    q.addBindValue(text(details));
    q.addBindValue(messageId);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return false;
    }
    return q.numRowsAffected() == 1;
}

bool ConversationStore::deleteMessage(qint64 messageId) {
    return execWithId(databaseFor(connection_), QStringLiteral("DELETE FROM messages WHERE id = ?"),
                      messageId, lastError_) == 1;
}

bool ConversationStore::completeReplacement(qint64 replacement, const QVector<qint64>& replaced) {
    QSqlDatabase db = databaseFor(connection_);
    if (!db.transaction()) {
        lastError_ = db.lastError().text();
        return false;
    }
    bool ok = true;
    for (const qint64 id : replaced) {
        ok = execWithId(db, QStringLiteral("DELETE FROM messages WHERE id = ?"), id, lastError_) >= 0;
        if (!ok) break;
    }
    if (ok && replacement >= 0)
        ok = execWithId(db, QStringLiteral("UPDATE messages SET replaces = NULL WHERE id = ?"), replacement,
                        lastError_) >= 0;
    if (!ok) {
        db.rollback();
        return false;
    }
    if (!db.commit()) {
        lastError_ = db.lastError().text();
        return false;
    }
    return true;
}

QVector<StoredMessage> ConversationStore::messages(qint64 conversationId) const {
    QVector<StoredMessage> out;
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral(
        "SELECT id, role, content, complete, details, created_at, model, replaces FROM messages "
        "WHERE conversation_id = ? ORDER BY id"));
    q.addBindValue(conversationId);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return out;
    }
    while (q.next()) {
        StoredMessage m;
        m.id = q.value(0).toLongLong();
        m.conversation_id = conversationId;
        m.role = q.value(1).toString();
        m.content = q.value(2).toString();
        m.complete = q.value(3).toInt() != 0;
        m.details = q.value(4).toString();
        m.created = QDateTime::fromMSecsSinceEpoch(q.value(5).toLongLong());
        m.model = q.value(6).toString();
        if (!q.value(7).isNull()) m.replaces = q.value(7).toLongLong();
        out.push_back(m);
    }
    return out;
}
