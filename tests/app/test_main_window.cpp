// The whole window with the real stories260K model: a message typed and sent is answered by
// streamed text, stored in the conversation database, and the panels fill in; closing the window
// in the middle of a reply keeps the partial reply (marked interrupted). Missing data fails.
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "MainWindow.h"
#include "chat/ChatModel.h"
#include "chat/ChatView.h"
#include "chat/ConversationStore.h"
#include "panels/SamplingPanel.h"
#include "test_support.h"

namespace {

constexpr int kLoadTimeoutMs = 600'000;
constexpr int kTurnTimeoutMs = 300'000;

QString modelPath() {
    try {
        return QString::fromStdString(lantern::test::shared_path("models/stories260K.gguf"));
    } catch (const std::exception& e) {
        qWarning("%s", e.what());
        return {};
    }
}

bool loadModel(MainWindow& window) {
    const QString path = modelPath();
    if (path.isEmpty()) return false;
    window.openModel(path);
    return QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready || window.state() == MainWindow::State::NoModel; },
                           kLoadTimeoutMs) &&
           window.state() == MainWindow::State::Ready;
}

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void aSentMessageIsAnsweredStoredAndMeasured();
    void closingDuringAReplyKeepsThePartialReply();
};

void TestMainWindow::initTestCase() {
    // Keep the user's settings and models directory out of it.
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("LanternTest"));
    QCoreApplication::setApplicationName(QStringLiteral("LanternTest"));
    QSettings().clear();
}

void TestMainWindow::aSentMessageIsAnsweredStoredAndMeasured() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    {
        MainWindow window(db);
        window.show();
        QVERIFY2(loadModel(window), "stories260K loads through the window's worker");
        QVERIFY(!window.findChild<QLabel*>(QStringLiteral("deviceLabel"))->text().isEmpty());
        window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(16);

        auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
        QTest::keyClicks(input, QStringLiteral("Once upon a time"));
        QTest::keyClick(input, Qt::Key_Return);
        QCOMPARE(window.state(), MainWindow::State::Generating);
        QVERIFY(input->toPlainText().isEmpty());
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));

        const QAbstractItemModel* chat = window.findChild<ChatView*>(QStringLiteral("chatView"))->model();
        QVERIFY(chat->rowCount() >= 2);
        QCOMPARE(chat->index(0, 0).data(ChatModel::MessageRole).toInt(), static_cast<int>(ChatMessage::Role::User));
        QCOMPARE(chat->index(1, 0).data(ChatModel::MessageRole).toInt(), static_cast<int>(ChatMessage::Role::Assistant));
        QVERIFY2(!chat->index(1, 0).data(ChatModel::TextRole).toString().isEmpty(), "the reply was streamed into the chat");
        QVERIFY(!chat->index(1, 0).data(ChatModel::StreamingRole).toBool());
        QVERIFY(window.findChild<QLabel*>(QStringLiteral("usedBlocks"))->text() != QStringLiteral("—"));
        QVERIFY(window.findChild<QLabel*>(QStringLiteral("decodeRate"))->text() != QStringLiteral("—"));
        QVERIFY(window.findChild<QLabel*>(QStringLiteral("seedUsed"))->text() != QStringLiteral("—"));
        QVERIFY(window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());

        ConversationStore store(db);
        const QVector<ConversationSummary> conversations = store.conversations();
        QCOMPARE(conversations.size(), 1);
        QCOMPARE(conversations[0].title, QStringLiteral("Once upon a time"));
        const QVector<StoredMessage> messages = store.messages(conversations[0].id);
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[1].content, chat->index(1, 0).data(ChatModel::TextRole).toString());
        QVERIFY(messages[1].complete);
    }
}

void TestMainWindow::closingDuringAReplyKeepsThePartialReply() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    QString shown;
    {
        MainWindow window(db);
        window.show();
        QVERIFY(loadModel(window));
        window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(0);  // no limit but the context
        auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
        QTest::keyClicks(input, QStringLiteral("The little dog"));
        QTest::keyClick(input, Qt::Key_Return);
        const QAbstractItemModel* chat = window.findChild<ChatView*>(QStringLiteral("chatView"))->model();
        QVERIFY(QTest::qWaitFor([&] { return chat->rowCount() >= 2 && !chat->index(1, 0).data(ChatModel::TextRole).toString().isEmpty(); },
                                kTurnTimeoutMs));
        QVERIFY2(window.state() == MainWindow::State::Generating, "the reply is still being generated when the window closes");
        window.close();
        shown = chat->index(1, 0).data(ChatModel::TextRole).toString();
    }
    ConversationStore store(db);
    const QVector<ConversationSummary> conversations = store.conversations();
    QCOMPARE(conversations.size(), 1);
    const QVector<StoredMessage> messages = store.messages(conversations[0].id);
    QCOMPARE(messages.size(), 2);
    QVERIFY2(!messages[1].complete, "the reply cut short by closing is stored as interrupted");
    QVERIFY(!messages[1].content.isEmpty());
    QCOMPARE(messages[1].content, shown);
}

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
