// ConversationStore: what is written comes back, the database runs in WAL mode, a reply that
// was being generated when the app died is still there (marked incomplete) on the next start, and
// a database written by an earlier version opens with everything in it.
#include <sys/wait.h>
#include <unistd.h>
#include <QFile>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

#include "chat/ConversationStore.h"

class TestConversationStore : public QObject {
    Q_OBJECT
private slots:
    void conversationsAndMessagesRoundTrip();
    void databaseUsesWriteAheadLog();
    void partialReplySurvivesClosingTheStore();
    void partialReplySurvivesTheProcessDyingMidGeneration();
    void deletingAConversationDeletesItsMessages();
    void aVersion1DatabaseIsUpgradedWithoutLoss();
    void searchFindsTitlesAndMessages();
    void aReplacementNamesWhatItReplacesUntilItHasBegun();
    void aStoreFromThePreviousReleaseOpensAsVersions();
    void versionsAreATreeWithAChosenPath();
};

void TestConversationStore::conversationsAndMessagesRoundTrip() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("sub/conversations.sqlite"));
    qint64 first = -1, second = -1;
    {
        ConversationStore store(path);
        QVERIFY2(store.isOpen(), qPrintable(store.lastError()));
        first = store.createConversation(QStringLiteral("Stories"), QStringLiteral("You tell stories."),
                                         QStringLiteral("stories260K.gguf"));
        QVERIFY(first > 0);
        QVERIFY2(store.appendMessage(first, QStringLiteral("user"), QStringLiteral("Once upon a time")) > 0,
                 qPrintable(store.lastError()));
        QVERIFY(store.appendMessage(first, QStringLiteral("assistant"),
                                    QStringLiteral("there was a cat. 🐈 猫"), true,
                                    QStringLiteral("12 tokens"), QStringLiteral("stories260K")) > 0);
        QVERIFY(store.appendMessage(first, QStringLiteral("user"), QStringLiteral("And then?")) > 0);
        QVERIFY(store.appendMessage(first, QStringLiteral("assistant"), QStringLiteral("It slept."), true, {},
                                    QStringLiteral("Llama 3.2 1B Instruct")) > 0);
        QTest::qWait(5);  // distinct update times: the newest conversation is listed first
        second = store.createConversation(QStringLiteral("Second"));
        QVERIFY(store.appendMessage(second, QStringLiteral("user"), QStringLiteral("Hello")) > 0);
        QVERIFY(store.renameConversation(first, QStringLiteral("Cat stories")));
    }
    ConversationStore reopened(path);
    const QVector<ConversationSummary> list = reopened.conversations();
    QCOMPARE(list.size(), 2);
    QCOMPARE(list[0].id, second);
    QCOMPARE(list[1].id, first);
    QCOMPARE(list[1].title, QStringLiteral("Cat stories"));
    QCOMPARE(list[1].system_prompt, QStringLiteral("You tell stories."));
    QCOMPARE(list[1].model, QStringLiteral("stories260K.gguf"));
    QCOMPARE(list[1].message_count, 4);

    const QVector<StoredMessage> messages = reopened.messages(first);
    QCOMPARE(messages.size(), 4);
    QCOMPARE(messages[0].role, QStringLiteral("user"));
    QCOMPARE(messages[0].content, QStringLiteral("Once upon a time"));
    QCOMPARE(messages[1].role, QStringLiteral("assistant"));
    QCOMPARE(messages[1].content, QStringLiteral("there was a cat. 🐈 猫"));
    QCOMPARE(messages[1].details, QStringLiteral("12 tokens"));
    QVERIFY(messages[1].complete);
    // Each reply keeps the model that wrote it, though the conversation went on with another.
    QCOMPARE(messages[0].model, QString());
    QCOMPARE(messages[1].model, QStringLiteral("stories260K"));
    QCOMPARE(messages[3].model, QStringLiteral("Llama 3.2 1B Instruct"));
}

void TestConversationStore::databaseUsesWriteAheadLog() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("wal.sqlite"));
    ConversationStore store(path);
    QVERIFY2(store.isOpen(), qPrintable(store.lastError()));
    QCOMPARE(store.journalMode(), QStringLiteral("wal"));
    QVERIFY(store.createConversation(QStringLiteral("x")) > 0);
    QVERIFY2(QFile::exists(path + QStringLiteral("-wal")),
             "a write in WAL mode leaves a -wal file next to the database");
}

void TestConversationStore::partialReplySurvivesClosingTheStore() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("partial.sqlite"));
    qint64 conversation = -1, reply = -1;
    {
        ConversationStore store(path);
        conversation = store.createConversation(QStringLiteral("Interrupted"));
        store.appendMessage(conversation, QStringLiteral("user"), QStringLiteral("Tell me a story"));
        reply = store.appendMessage(conversation, QStringLiteral("assistant"), QString(), false);
        QVERIFY(store.updateMessage(reply, QStringLiteral("Once"), false));
        QVERIFY(store.updateMessage(reply, QStringLiteral("Once upon a"), false, QStringLiteral("closed")));
    }
    ConversationStore reopened(path);
    const QVector<StoredMessage> messages = reopened.messages(conversation);
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages[1].id, reply);
    QCOMPARE(messages[1].content, QStringLiteral("Once upon a"));
    QVERIFY2(!messages[1].complete, "an interrupted reply must be stored as incomplete");
    QCOMPARE(messages[1].details, QStringLiteral("closed"));
}

void TestConversationStore::partialReplySurvivesTheProcessDyingMidGeneration() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("killed.sqlite"));
    const pid_t child = fork();
    QVERIFY(child >= 0);
    if (child == 0) {
        // The "app": writes the growing reply and dies without closing anything.
        auto* store = new ConversationStore(path);
        const qint64 c = store->createConversation(QStringLiteral("Killed"));
        store->appendMessage(c, QStringLiteral("user"), QStringLiteral("Go"));
        const qint64 r = store->appendMessage(c, QStringLiteral("assistant"), QString(), false);
        store->updateMessage(r, QStringLiteral("The little dog ran"), false);
        _exit(store->isOpen() ? 0 : 3);
    }
    int status = 0;
    QCOMPARE(waitpid(child, &status, 0), child);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 0);

    ConversationStore reopened(path);
    QVERIFY2(reopened.isOpen(), qPrintable(reopened.lastError()));
    const QVector<ConversationSummary> list = reopened.conversations();
    QCOMPARE(list.size(), 1);
    const QVector<StoredMessage> messages = reopened.messages(list[0].id);
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages[1].content, QStringLiteral("The little dog ran"));
    QVERIFY(!messages[1].complete);
}

void TestConversationStore::deletingAConversationDeletesItsMessages() {
    QTemporaryDir dir;
    ConversationStore store(dir.filePath(QStringLiteral("delete.sqlite")));
    const qint64 keep = store.createConversation(QStringLiteral("keep"));
    const qint64 drop = store.createConversation(QStringLiteral("drop"));
    store.appendMessage(keep, QStringLiteral("user"), QStringLiteral("a"));
    const qint64 m = store.appendMessage(drop, QStringLiteral("user"), QStringLiteral("b"));
    QVERIFY(store.deleteConversation(drop));
    QCOMPARE(store.conversations().size(), 1);
    QCOMPARE(store.messages(drop).size(), 0);
    QCOMPARE(store.messages(keep).size(), 1);
    QVERIFY2(!store.updateMessage(m, QStringLiteral("x"), true), "a deleted message cannot be updated");
    QVERIFY(!store.deleteConversation(drop));
}

// A database as version 1 wrote it (no messages.model) is upgraded in place: its conversations
// and messages are all there, its replies have no recorded model, and new replies store theirs.
void TestConversationStore::aVersion1DatabaseIsUpgradedWithoutLoss() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("v1.sqlite"));
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("v1-writer"));
        db.setDatabaseName(path);
        QVERIFY(db.open());
        QSqlQuery q(db);
        QVERIFY(q.exec(QStringLiteral(
            "CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, "
            "system_prompt TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '', "
            "created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)")));
        QVERIFY(q.exec(QStringLiteral(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER NOT "
            "NULL REFERENCES conversations(id) ON DELETE CASCADE, role TEXT NOT NULL, content TEXT "
            "NOT NULL, complete INTEGER NOT NULL DEFAULT 1, details TEXT NOT NULL DEFAULT '', "
            "created_at INTEGER NOT NULL)")));
        QVERIFY(q.exec(QStringLiteral(
            "INSERT INTO conversations VALUES (1, 'Old', 'Be brief.', 'stories260K.gguf', 1, 2)")));
        QVERIFY(q.exec(QStringLiteral("INSERT INTO messages VALUES (1, 1, 'user', 'Hi', 1, '', 1)")));
        QVERIFY(q.exec(
            QStringLiteral("INSERT INTO messages VALUES (2, 1, 'assistant', 'Hello!', 0, '3 tokens', 2)")));
        QVERIFY(q.exec(QStringLiteral("PRAGMA user_version=1")));
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("v1-writer"));

    ConversationStore store(path);
    QVERIFY2(store.isOpen(), qPrintable(store.lastError()));
    const QVector<ConversationSummary> list = store.conversations();
    QCOMPARE(list.size(), 1);
    QCOMPARE(list[0].title, QStringLiteral("Old"));
    QCOMPARE(list[0].system_prompt, QStringLiteral("Be brief."));
    QVector<StoredMessage> messages = store.messages(1);
    QCOMPARE(messages.size(), 2);
    QCOMPARE(messages[1].content, QStringLiteral("Hello!"));
    QCOMPARE(messages[1].details, QStringLiteral("3 tokens"));
    QVERIFY(!messages[1].complete);
    QCOMPARE(messages[1].model, QString());
    QVERIFY2(store.appendMessage(1, QStringLiteral("assistant"), QStringLiteral("More."), true, {},
                                 QStringLiteral("stories260K")) > 0,
             qPrintable(store.lastError()));
    messages = store.messages(1);
    QCOMPARE(messages.size(), 3);
    QCOMPARE(messages[2].model, QStringLiteral("stories260K"));
    QCOMPARE(messages[1].replaces, qint64{-1});  // (the column added for version 3: nothing replaces)
    // One list became a path: each message's parent is the one before it.
    QCOMPARE(messages[0].parent_id, qint64{-1});
    QCOMPARE(messages[1].parent_id, messages[0].id);
    QCOMPARE(messages[2].parent_id, messages[1].id);
    QVERIFY(store.appendMessage(1, QStringLiteral("user"), QStringLiteral("Hi again"), true, {}, {},
                                messages[0].id) > 0);
    QCOMPARE(store.messages(1).last().replaces, messages[0].id);
    QVERIFY(store.completeReplacement(store.messages(1).last().id));
    // Upgraded once: opening it again finds version 4 and changes nothing; "Hi again" is the
    // second version of the first message, and the first one's path is all there.
    ConversationStore again(path);
    QVERIFY2(again.isOpen(), qPrintable(again.lastError()));
    QCOMPARE(again.messages(1).size(), 1);
    QCOMPARE(again.messages(1).last().replaces, qint64{-1});
    QCOMPARE(again.messages(1).first().version, 2);
    QCOMPARE(again.messages(1).first().versions, 2);
    QCOMPARE(again.allMessages(1).size(), 4);
    QVERIFY(again.chooseVersion(1, messages[0].id));
    QCOMPARE(again.messages(1).size(), 3);
}

// A database as the previous release wrote it (schema 3: one list per conversation, an edit's
// turn that never began still naming what it replaces) opens with every message, each list a
// path, the shown path its whole list; the turn that never began is still found by the app.
void TestConversationStore::aStoreFromThePreviousReleaseOpensAsVersions() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("v3.sqlite"));
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("v3-writer"));
        db.setDatabaseName(path);
        QVERIFY(db.open());
        QSqlQuery q(db);
        QVERIFY(q.exec(QStringLiteral(
            "CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, "
            "system_prompt TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '', "
            "created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)")));
        QVERIFY(q.exec(QStringLiteral(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id INTEGER NOT NULL "
            "REFERENCES conversations(id) ON DELETE CASCADE, role TEXT NOT NULL, content TEXT NOT NULL, "
            "complete INTEGER NOT NULL DEFAULT 1, details TEXT NOT NULL DEFAULT '', created_at INTEGER NOT "
            "NULL, model TEXT NOT NULL DEFAULT '', replaces INTEGER)")));
        QVERIFY(q.exec(QStringLiteral("INSERT INTO conversations VALUES (1, 'A', '', 'm.gguf', 1, 2)")));
        QVERIFY(q.exec(QStringLiteral("INSERT INTO conversations VALUES (2, 'B', '', 'm.gguf', 1, 2)")));
        const char* rows[] = {"(1, 1, 'user', 'One', 1, '', 1, '', NULL)",
                              "(2, 2, 'user', 'Other', 1, '', 1, '', NULL)",
                              "(3, 1, 'assistant', 'Reply one', 1, '', 2, 'm', NULL)",
                              "(4, 1, 'user', 'Two', 1, '', 3, '', NULL)",
                              "(5, 1, 'assistant', 'Reply two', 0, '', 4, 'm', NULL)",
                              "(6, 1, 'user', 'Two, edited', 1, '', 5, '', 4)"};
        for (const char* row : rows)
            QVERIFY2(q.exec(QStringLiteral("INSERT INTO messages VALUES ") + QLatin1String(row)),
                     qPrintable(q.lastError().text()));
        QVERIFY(q.exec(QStringLiteral("PRAGMA user_version=3")));
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("v3-writer"));
    ConversationStore store(path);
    QVERIFY2(store.isOpen(), qPrintable(store.lastError()));
    QVector<StoredMessage> a = store.messages(1);
    QCOMPARE(a.size(), 5);
    QStringList texts;
    for (const StoredMessage& m : a) texts << m.content;
    QCOMPARE(texts, (QStringList{"One", "Reply one", "Two", "Reply two", "Two, edited"}));
    QCOMPARE(a[4].replaces, qint64{4});  // (the app undoes this turn: it never began)
    QCOMPARE(a[1].parent_id, qint64{1});
    QCOMPARE(store.messages(2).size(), 1);
    QCOMPARE(store.messages(2).first().parent_id, qint64{-1});
    // Undone as the app does: the path ends where it was before the edit.
    QVERIFY(store.deleteMessage(6));
    QCOMPARE(store.messages(1).size(), 4);
    QCOMPARE(store.messages(1).last().content, QStringLiteral("Reply two"));
}

// Regenerate and Edit and Resend add versions; the shown path follows the version chosen, and
// deleting a version that never began goes back to the one it replaced.
void TestConversationStore::versionsAreATreeWithAChosenPath() {
    QTemporaryDir dir;
    ConversationStore store(dir.filePath(QStringLiteral("tree.sqlite")));
    const qint64 c = store.createConversation(QStringLiteral("Tree"));
    const qint64 u1 = store.appendMessage(c, QStringLiteral("user"), QStringLiteral("Q1"));
    const qint64 r1 = store.appendMessage(c, QStringLiteral("assistant"), QStringLiteral("A1"));
    const qint64 u2 = store.appendMessage(c, QStringLiteral("user"), QStringLiteral("Q2"));
    const qint64 r2 = store.appendMessage(c, QStringLiteral("assistant"), QStringLiteral("A2"));
    // Regenerate A2: a sibling of it.
    const qint64 r2b =
        store.appendMessage(c, QStringLiteral("assistant"), QStringLiteral("A2b"), true, {}, {}, r2);
    QVERIFY(store.completeReplacement(r2b));
    QVector<StoredMessage> path = store.messages(c);
    QCOMPARE(path.size(), 4);
    QCOMPARE(path[3].id, r2b);
    QCOMPARE(path[3].version, 2);
    QCOMPARE(path[3].versions, 2);
    QCOMPARE(path[2].versions, 1);
    QCOMPARE(store.versionBeside(r2b, -1), r2);
    QCOMPARE(store.versionBeside(r2b, 1), qint64{-1});
    // Edit Q1: a new first message; its path is just itself and what follows it.
    const qint64 u1b =
        store.appendMessage(c, QStringLiteral("user"), QStringLiteral("Q1b"), true, {}, {}, u1);
    QVERIFY(store.completeReplacement(u1b));
    const qint64 r1b = store.appendMessage(c, QStringLiteral("assistant"), QStringLiteral("A1b"));
    path = store.messages(c);
    QCOMPARE(path.size(), 2);
    QCOMPARE(path[0].id, u1b);
    QCOMPARE(path[1].id, r1b);
    QCOMPARE(path[0].version, 2);
    // Back to Q1: the latest path below it (A2b, the latest version of A2).
    QVERIFY(store.chooseVersion(c, store.versionBeside(u1b, -1)));
    path = store.messages(c);
    QCOMPARE(path.size(), 4);
    QCOMPARE(path[0].id, u1);
    QCOMPARE(path[3].id, r2b);
    QVERIFY(store.chooseVersion(c, r2));
    QCOMPARE(store.messages(c).last().id, r2);
    QCOMPARE(store.messages(c).last().version, 1);
    QCOMPARE(store.allMessages(c).size(), 7);
    // A regenerate that never began is deleted: the path is back on the reply it was to replace.
    const qint64 r2c = store.appendMessage(c, QStringLiteral("assistant"), QString(), false, {}, {}, r2);
    QCOMPARE(store.messages(c).last().id, r2c);
    QVERIFY(store.deleteMessage(r2c));
    QCOMPARE(store.messages(c).last().id, r2);
    // Deleting a message deletes what follows it in every version.
    QVERIFY(store.deleteMessage(u2));
    QCOMPARE(store.messages(c).size(), 2);
    QCOMPARE(store.allMessages(c).size(), 4);
    Q_UNUSED(r1);
}

// Edit and Resend stores the new message naming the first message it replaces; once its turn has
// begun, completeReplacement drops the name; what it replaced stays as the earlier version.
void TestConversationStore::aReplacementNamesWhatItReplacesUntilItHasBegun() {
    QTemporaryDir dir;
    ConversationStore store(dir.filePath(QStringLiteral("chat.sqlite")));
    QVERIFY2(store.isOpen(), qPrintable(store.lastError()));
    const qint64 c = store.createConversation(QStringLiteral("Edited"));
    const qint64 keep = store.appendMessage(c, QStringLiteral("user"), QStringLiteral("First"));
    store.appendMessage(c, QStringLiteral("assistant"), QStringLiteral("Reply one"));
    const qint64 old = store.appendMessage(c, QStringLiteral("user"), QStringLiteral("Second"));
    const qint64 oldReply = store.appendMessage(c, QStringLiteral("assistant"), QStringLiteral("Reply two"));
    const qint64 edit =
        store.appendMessage(c, QStringLiteral("user"), QStringLiteral("Second, edited"), true, {}, {}, old);
    QVERIFY(keep > 0 && old > 0 && oldReply > 0 && edit > 0);
    QVector<StoredMessage> messages = store.messages(c);
    QCOMPARE(messages.size(), 3);  // the new version is shown
    QCOMPARE(messages[2].replaces, old);
    QCOMPARE(messages[1].replaces, qint64{-1});

    QVERIFY2(store.completeReplacement(edit), qPrintable(store.lastError()));
    messages = store.messages(c);
    QCOMPARE(messages.size(), 3);
    QCOMPARE(messages[2].id, edit);
    QCOMPARE(messages[2].content, QStringLiteral("Second, edited"));
    QCOMPARE(messages[2].replaces, qint64{-1});
    // What it replaced stays, as the earlier version.
    QCOMPARE(messages[2].version, 2);
    QCOMPARE(store.allMessages(c).size(), 5);
    QVERIFY(store.completeReplacement(edit));
    QCOMPARE(store.messages(c).size(), 3);
}

// Search looks in titles and in every message, ignores ASCII case, and takes % and _ literally.
void TestConversationStore::searchFindsTitlesAndMessages() {
    QTemporaryDir dir;
    ConversationStore store(dir.filePath(QStringLiteral("search.sqlite")));
    const qint64 cats = store.createConversation(QStringLiteral("Cats"));
    store.appendMessage(cats, QStringLiteral("user"), QStringLiteral("Why do cats purr?"));
    QTest::qWait(5);
    const qint64 dogs = store.createConversation(QStringLiteral("Dogs"));
    store.appendMessage(dogs, QStringLiteral("user"), QStringLiteral("Dogs bark."));
    store.appendMessage(dogs, QStringLiteral("assistant"),
                        QStringLiteral("Growth was 50% in 2025_q1. 猫也会叫。"));
    QCOMPARE(store.search(QStringLiteral("PURR")), QVector<qint64>{cats});
    QCOMPARE(store.search(QStringLiteral("dogs")), QVector<qint64>{dogs});
    QCOMPARE(store.search(QStringLiteral("50%")), QVector<qint64>{dogs});
    QCOMPARE(store.search(QStringLiteral("5%")), QVector<qint64>{});  // % is not a wildcard
    QCOMPARE(store.search(QStringLiteral("2025_q1")), QVector<qint64>{dogs});
    QCOMPARE(store.search(QStringLiteral("2025xq1")), QVector<qint64>{});  // nor is _
    QCOMPARE(store.search(QStringLiteral("猫")), QVector<qint64>{dogs});
    QCOMPARE(store.search(QString()), (QVector<qint64>{dogs, cats}));
}

QTEST_MAIN(TestConversationStore)
#include "test_conversation_store.moc"
