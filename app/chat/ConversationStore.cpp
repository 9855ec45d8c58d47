#include "chat/ConversationStore.h"

#include <QDir>
#include <QFileInfo>
#include <QHash>
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
// undone when the conversation is reopened). 4: messages.parent_id and conversations.leaf_id
// (versions: a tree of messages, the shown path ending at the leaf).
constexpr int kSchemaVersion = 4;

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
                            " updated_at INTEGER NOT NULL,"
                            " leaf_id INTEGER)")) &&
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
                           " replaces INTEGER,"
                           " parent_id INTEGER)")) &&
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
    // Versions 1 to 3 kept one list per conversation: each message's parent is the one before it,
    // and the shown path ends with the last.
    bool hasModel = false, hasReplaces = false, hasParent = false, hasLeaf = false;
    if (!q.exec(QStringLiteral("PRAGMA table_info(messages)"))) {
        lastError_ = q.lastError().text();
        return false;
    }
    while (q.next()) {
        hasModel = hasModel || q.value(1).toString() == QStringLiteral("model");
        hasReplaces = hasReplaces || q.value(1).toString() == QStringLiteral("replaces");
        hasParent = hasParent || q.value(1).toString() == QStringLiteral("parent_id");
    }
    if (!q.exec(QStringLiteral("PRAGMA table_info(conversations)"))) {
        lastError_ = q.lastError().text();
        return false;
    }
    while (q.next()) hasLeaf = hasLeaf || q.value(1).toString() == QStringLiteral("leaf_id");
    QSqlDatabase db = databaseFor(connection_);
    if (!db.transaction()) {
        lastError_ = db.lastError().text();
        return false;
    }
    const bool ok =
        (hasModel ||
         exec(QStringLiteral("ALTER TABLE messages ADD COLUMN model TEXT NOT NULL DEFAULT ''"))) &&
        (hasReplaces || exec(QStringLiteral("ALTER TABLE messages ADD COLUMN replaces INTEGER"))) &&
        (hasParent || exec(QStringLiteral("ALTER TABLE messages ADD COLUMN parent_id INTEGER"))) &&
        (hasLeaf || exec(QStringLiteral("ALTER TABLE conversations ADD COLUMN leaf_id INTEGER"))) &&
        exec(QStringLiteral("UPDATE messages SET parent_id = (SELECT MAX(p.id) FROM messages p WHERE "
                            "p.conversation_id = messages.conversation_id AND p.id < messages.id) "
                            "WHERE parent_id IS NULL")) &&
        exec(QStringLiteral("UPDATE conversations SET leaf_id = (SELECT MAX(m.id) FROM messages m WHERE "
                            "m.conversation_id = conversations.id) WHERE leaf_id IS NULL")) &&
        exec(QStringLiteral("PRAGMA user_version=%1").arg(kSchemaVersion));
    if (!ok) {
        db.rollback();
        return false;
    }
    return db.commit();
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
    // Its parent: that of the message it replaces (a new version of it), else the shown path's end.
    qint64 parent = -1;
    if (replaces >= 0) {
        for (const StoredMessage& m : allMessages(conversationId))
            if (m.id == replaces) parent = m.parent_id;
    } else {
        const QVector<StoredMessage> path = messages(conversationId);
        if (!path.isEmpty()) parent = path.last().id;
    }
    QSqlQuery q(databaseFor(connection_));
    q.prepare(
        QStringLiteral("INSERT INTO messages (conversation_id, role, content, complete, details, created_at, "
                       "model, replaces, parent_id) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    q.addBindValue(conversationId);
    q.addBindValue(text(role));
    q.addBindValue(text(content));
    q.addBindValue(complete ? 1 : 0);
    q.addBindValue(text(details));
    q.addBindValue(nowMs());
    q.addBindValue(text(model));
    q.addBindValue(replaces >= 0 ? QVariant(replaces)
                                 : QVariant(QMetaType::fromType<qint64>()));  // NULL: replaces nothing
    q.addBindValue(parent >= 0 ? QVariant(parent) : QVariant(QMetaType::fromType<qint64>()));
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return -1;
    }
    const qint64 id = q.lastInsertId().toLongLong();
    setLeaf(conversationId, id);
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
    QSqlDatabase db = databaseFor(connection_);
    qint64 conversationId = -1;
    {
        QSqlQuery q(db);
        q.prepare(QStringLiteral("SELECT conversation_id FROM messages WHERE id = ?"));
        q.addBindValue(messageId);
        if (!q.exec() || !q.next()) return false;
        conversationId = q.value(0).toLongLong();
    }
    const QVector<StoredMessage> all = allMessages(conversationId);
    const QVector<StoredMessage> path = messages(conversationId);
    // The message and every message after it, in any version.
    QVector<qint64> gone{messageId};
    for (qsizetype i = 0; i < gone.size(); ++i)
        for (const StoredMessage& m : all)
            if (m.parent_id == gone[i]) gone << m.id;
    const StoredMessage* deleted = nullptr;
    for (const StoredMessage& m : all)
        if (m.id == messageId) deleted = &m;
    bool onPath = false;
    for (const StoredMessage& m : path) onPath = onPath || m.id == messageId;
    if (!db.transaction()) {
        lastError_ = db.lastError().text();
        return false;
    }
    bool ok = true;
    for (const qint64 id : gone)
        ok = ok && execWithId(db, QStringLiteral("DELETE FROM messages WHERE id = ?"), id, lastError_) >= 0;
    if (ok && onPath) {
        // The path ends where it was before this message: at the version it replaced (that path's
        // latest), or at its parent.
        qint64 leaf = deleted->parent_id;
        if (deleted->replaces >= 0) {
            for (const StoredMessage& m : all)
                if (m.id == deleted->replaces && !gone.contains(m.id)) leaf = latestBelow(all, m.id);
        }
        ok = setLeaf(conversationId, leaf);
    }
    if (!ok) {
        db.rollback();
        return false;
    }
    return db.commit();
}

bool ConversationStore::completeReplacement(qint64 replacement) {
    if (replacement < 0) return true;
    return execWithId(databaseFor(connection_),
                      QStringLiteral("UPDATE messages SET replaces = NULL WHERE id = ?"), replacement,
                      lastError_) >= 0;
}

bool ConversationStore::setLeaf(qint64 conversationId, qint64 leaf) {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral("UPDATE conversations SET leaf_id = ? WHERE id = ?"));
    q.addBindValue(leaf >= 0 ? QVariant(leaf) : QVariant(QMetaType::fromType<qint64>()));
    q.addBindValue(conversationId);
    if (!q.exec()) {
        lastError_ = q.lastError().text();
        return false;
    }
    return true;
}

qint64 ConversationStore::latestBelow(const QVector<StoredMessage>& all, qint64 id) {
    for (bool deeper = true; deeper;) {
        deeper = false;
        qint64 latest = -1;
        for (const StoredMessage& m : all)
            if (m.parent_id == id && m.id > latest) latest = m.id;
        if (latest >= 0) {
            id = latest;
            deeper = true;
        }
    }
    return id;
}

qint64 ConversationStore::versionBeside(qint64 messageId, int step) const {
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral("SELECT conversation_id FROM messages WHERE id = ?"));
    q.addBindValue(messageId);
    if (!q.exec() || !q.next()) return -1;
    const QVector<StoredMessage> all = allMessages(q.value(0).toLongLong());
    qint64 parent = -2;
    for (const StoredMessage& m : all)
        if (m.id == messageId) parent = m.parent_id;
    if (parent == -2) return -1;
    QVector<qint64> siblings;  // (ids grow: oldest first)
    for (const StoredMessage& m : all)
        if (m.parent_id == parent) siblings << m.id;
    const qsizetype at = siblings.indexOf(messageId) + step;
    return at >= 0 && at < siblings.size() ? siblings[at] : -1;
}

bool ConversationStore::chooseVersion(qint64 conversationId, qint64 messageId) {
    const QVector<StoredMessage> all = allMessages(conversationId);
    for (const StoredMessage& m : all)
        if (m.id == messageId)
            return setLeaf(conversationId, latestBelow(all, messageId)) && touch(conversationId);
    return false;
}

QVector<StoredMessage> ConversationStore::messages(qint64 conversationId) const {
    const QVector<StoredMessage> all = allMessages(conversationId);
    if (all.isEmpty()) return all;
    qint64 leaf = -1;
    {
        QSqlQuery q(databaseFor(connection_));
        q.prepare(QStringLiteral("SELECT leaf_id FROM conversations WHERE id = ?"));
        q.addBindValue(conversationId);
        if (q.exec() && q.next() && !q.value(0).isNull()) leaf = q.value(0).toLongLong();
    }
    QHash<qint64, qsizetype> at;
    for (qsizetype i = 0; i < all.size(); ++i) at.insert(all[i].id, i);
    if (!at.contains(leaf)) leaf = latestBelow(all, all.first().id);  // (no leaf recorded: the latest path)
    QVector<StoredMessage> path;
    for (qint64 id = leaf; at.contains(id) && path.size() <= all.size(); id = all[at.value(id)].parent_id)
        path.prepend(all[at.value(id)]);
    for (StoredMessage& m : path) {
        int count = 0, index = 0;
        for (const StoredMessage& other : all) {
            if (other.parent_id != m.parent_id) continue;
            ++count;
            if (other.id <= m.id) ++index;
        }
        m.version = index;
        m.versions = count;
    }
    return path;
}

QVector<StoredMessage> ConversationStore::allMessages(qint64 conversationId) const {
    QVector<StoredMessage> out;
    QSqlQuery q(databaseFor(connection_));
    q.prepare(QStringLiteral(
        "SELECT id, role, content, complete, details, created_at, model, replaces, parent_id FROM messages "
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
        if (!q.value(8).isNull()) m.parent_id = q.value(8).toLongLong();
        out.push_back(m);
    }
    return out;
}
