// The whole window with the real stories260K model: a message typed and sent is answered by
// streamed text, stored in the conversation database, and the panels fill in; closing the window
// in the middle of a reply keeps the partial reply (marked interrupted). Missing data fails.
#include <atomic>
#include <memory>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QHelpEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QMimeData>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextCursor>
#include <QTimer>
#include <QToolTip>

#include "ContextLengthDialog.h"
#include "ElidedLabel.h"
#include "MainWindow.h"
#include "Preferences.h"
#include "UiPriority.h"
#include "chat/ChatModel.h"
#include "chat/ChatView.h"
#include "chat/ConversationStore.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/synthetic.h"
#include "models/ModelDownloads.h"
#include "models/ModelsDialog.h"
#include "panels/AttentionPanel.h"
#include "panels/AttentionWords.h"
#include "panels/KvCachePanel.h"
#include "panels/ModelInfoPanel.h"
#include "panels/PanelDocks.h"
#include "panels/PerformancePanel.h"
#include "panels/SamplingPanel.h"
#include "test_support.h"
#include "worker/InferenceWorker.h"

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

// The nice value of each of this process's threads whose name starts with `prefix`, or of the
// main thread alone (prefix null) (Linux).
QList<int> niceOfThreads(const QString& prefix) {
    QList<int> out;
    for (const QString& tid :
         QDir(QStringLiteral("/proc/self/task")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        if (prefix.isNull() && tid.toLongLong() != static_cast<qint64>(getpid())) continue;
        QFile stat(QStringLiteral("/proc/self/task/%1/stat").arg(tid));
        if (!stat.open(QIODevice::ReadOnly)) continue;
        const QString line = QString::fromLatin1(stat.readAll());
        const qsizetype open = line.indexOf(QLatin1Char('(')), close = line.lastIndexOf(QLatin1Char(')'));
        if (!prefix.isNull() && !line.mid(open + 1, close - open - 1).startsWith(prefix)) continue;
        // After "(name)": state, then fields 4..; the nice value is field 19 of the file.
        const QStringList fields = line.mid(close + 2).split(QLatin1Char(' '));
        if (fields.size() > 16) out << fields[16].toInt();
    }
    return out;
}

bool loadModel(MainWindow& window) {
    const QString path = modelPath();
    if (path.isEmpty()) return false;
    window.openModel(path);
    return QTest::qWaitFor(
               [&] {
                   return window.state() == MainWindow::State::Ready ||
                          window.state() == MainWindow::State::NoModel;
               },
               kLoadTimeoutMs) &&
           window.state() == MainWindow::State::Ready;
}

// Types `text` into the message input, sends it, and waits until the reply has ended.
// A main window (its store in `dir`) that lists the models in `cache` as another app's downloads
// (LLAMA_CACHE, set while the window lists them), once it has listed them.
std::unique_ptr<MainWindow> windowListingDownloads(const QTemporaryDir& cache, const QTemporaryDir& dir) {
    const QByteArray before = qgetenv("LLAMA_CACHE");
    qputenv("LLAMA_CACHE", QFile::encodeName(cache.path()));
    auto window = std::make_unique<MainWindow>(dir.filePath(QStringLiteral("chat.sqlite")));
    window->show();
    QSignalSpy listed(window.get(), &MainWindow::modelListChanged);
    const bool ok = listed.wait(30000);
    if (before.isEmpty())
        qunsetenv("LLAMA_CACHE");
    else
        qputenv("LLAMA_CACHE", before);
    return ok ? std::move(window) : nullptr;
}

// The picker's entry for the model named `name` (its text starts "name  ("), -1 if none.
int pickerEntry(MainWindow& window, const QString& name) {
    auto* picker = window.findChild<QComboBox*>(QStringLiteral("modelPicker"));
    for (int k = 0; k < picker->count(); ++k)
        if (picker->itemText(k).startsWith(name + QStringLiteral("  ("))) return k;
    return -1;
}

bool sendAndWait(MainWindow& window, const QString& text) {
    auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
    QTest::keyClicks(input, text);
    QTest::keyClick(input, Qt::Key_Return);
    return QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs);
}

// Runs `act` on the next modal dialog of type T to open: exec() blocks the test until it closes.
template <typename T>
void onNextDialog(const std::function<void(T*)>& act) {
    auto* timer = new QTimer;
    timer->setInterval(20);
    QObject::connect(timer, &QTimer::timeout, [timer, act] {
        if (auto* dialog = qobject_cast<T*>(QApplication::activeModalWidget())) {
            timer->stop();
            timer->deleteLater();
            act(dialog);
        }
    });
    timer->start();
}

// A stories-sized random model that claims 4M tokens of trained context, so lengths past what
// lavapipe holds are the device's to refuse (64 bytes of K per token and layer).
QString writeLongContextModel(const QTemporaryDir& dir) {
    lantern::SyntheticShape shape;
    shape.name = "long-context";
    shape.vocab = 512;
    shape.context_length = 1u << 22;
    const QString path = dir.filePath(QStringLiteral("long-context.gguf"));
    lantern::write_synthetic_model(shape, static_cast<uint32_t>(lantern::GgmlType::F32), path.toStdString(),
                                   3);
    return path;
}

// The KV pool's blocks, as the worker last reported them (its capacity follows the context).
struct KvBlocks {
    std::shared_ptr<std::atomic<uint32_t>> total = std::make_shared<std::atomic<uint32_t>>(0);
    explicit KvBlocks(MainWindow& window) {
        auto counter = total;
        QObject::connect(
            window.worker(), &InferenceWorker::kvStatsChanged, &window,
            [counter](const KvSnapshot& snapshot) { counter->store(snapshot.stats.total_blocks); });
    }
};

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void aSentMessageIsAnsweredStoredAndMeasured();
    void closingDuringAReplyKeepsThePartialReply();
    void splitModelsAreListedOnceWithTheirWholeSize();
    void modelsOtherAppsDownloadedAreListedWithTheirApp();
    void anOllamaModelIsListedByItsOllamaNameAndOpens();
    void aQwen3ModelIsChosenInThePickerChatsAndTakesTheThinkingSwitch();
    void newFamiliesAreChosenInThePickerAndChatInTheirFormat_data();
    void newFamiliesAreChosenInThePickerAndChatInTheirFormat();
    void aModelDownloadedFromTheHubIsInThePickerAndLoads();
    void aModelDownloadedIntoAnotherAppsFolderAppearsWhileTheWindowIsOpen();
    void theLocalApiServerIsSwitchedFromTheMenuAndRemembered();
    void theContextLengthIsChosenPerModelAndRemembered();
    void aContextLengthThatCannotLoadGoesBackToTheOneThatDid();
    void aDeviceThatCannotLoadTheModelGoesBackToTheOneThatDid();
    void anApiServerWithoutRoomOnTheDeviceLeavesTheChatLoaded();
    void aFullContextOffersOnlyWhatCanWork();
    void continueIsOfferedWhenTheContextHasRoomAgain();
    void stoppingWhileThePromptIsReadGivesTheMessageBack();
    void aReplacementThatCannotBeginLosesNothing();
    void theInputSaysHowLongAMessageIsAndWhetherItFits();
    void afterAReplyTheStatusBarCountsWhatTheCacheHolds();
    void aTurnKilledBeforeItBeganIsUndoneWhenReopened();
    void regeneratedRepliesAreVersionsChosenInTheChat();
    void attentionIsShownOnTheWordsOfTheConversation();
};

void TestMainWindow::initTestCase() {
    // Keep the user's settings and models directory out of it, and each run's out of any other's.
    const QString failed = lantern::test::isolate_app_settings(QStringLiteral("LanternTest"));
    QVERIFY2(failed.isEmpty(), qPrintable(failed));
}

void TestMainWindow::aSentMessageIsAnsweredStoredAndMeasured() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    {
        MainWindow window(db);
        window.show();
        QVERIFY2(loadModel(window), "stories260K loads through the window's worker");
        QVERIFY(!window.findChild<QLabel*>(QStringLiteral("deviceLabel"))->text().isEmpty());
#if defined(Q_OS_LINUX)
        if (window.findChild<QLabel*>(QStringLiteral("deviceLabel"))
                ->text()
                .contains(QStringLiteral("CPU"))) {
            // On a CPU driver the UI thread gives way to the model's threads (UiPriority.h).
            QCOMPARE(niceOfThreads(QString()).value(0, -1), kUiNice);  // the main thread
            const QList<int> drivers =
                niceOfThreads(QStringLiteral("llvmpipe")) + niceOfThreads(QStringLiteral("InferenceWorker"));
            QVERIFY(!drivers.isEmpty());
            for (const int nice : drivers)
                QVERIFY2(nice < kUiNice, "the worker and the driver's threads keep their priority");
        }
#endif
        window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(16);

        auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
        QTest::keyClicks(input, QStringLiteral("Once upon a time"));
        QTest::keyClick(input, Qt::Key_Return);
        QCOMPARE(window.state(), MainWindow::State::Generating);
        QVERIFY(input->toPlainText().isEmpty());
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));

        const QAbstractItemModel* chat = window.findChild<ChatView*>(QStringLiteral("chatView"))->model();
        QVERIFY(chat->rowCount() >= 2);
        QCOMPARE(chat->index(0, 0).data(ChatModel::MessageRole).toInt(),
                 static_cast<int>(ChatMessage::Role::User));
        QCOMPARE(chat->index(1, 0).data(ChatModel::MessageRole).toInt(),
                 static_cast<int>(ChatMessage::Role::Assistant));
        QVERIFY2(!chat->index(1, 0).data(ChatModel::TextRole).toString().isEmpty(),
                 "the reply was streamed into the chat");
        QVERIFY(!chat->index(1, 0).data(ChatModel::StreamingRole).toBool());
        // The reply is labelled with the model that wrote it (general.name of the file).
        QCOMPARE(chat->index(1, 0).data(ChatModel::ModelRole).toString(), QStringLiteral("stories260K"));
        QCOMPARE(ChatView::author(chat->index(1, 0)), QStringLiteral("stories260K"));
        QCOMPARE(ChatView::author(chat->index(0, 0)), QStringLiteral("You"));
        QVERIFY(window.findChild<QLabel*>(QStringLiteral("usedBlocks"))->text() != QStringLiteral("—"));
        QVERIFY(window.findChild<QLabel*>(QStringLiteral("decodeRate"))->text() != QStringLiteral("—"));
        QVERIFY(window.findChild<QLabel*>(QStringLiteral("seedUsed"))->text() != QStringLiteral("—"));
        QVERIFY(window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());

        ConversationStore store(db);
        const QVector<ConversationSummary> conversations = store.conversations();
        QCOMPARE(conversations.size(), 1);
        QCOMPARE(conversations[0].title, QStringLiteral("Once upon a time"));
        QVector<StoredMessage> messages = store.messages(conversations[0].id);
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[1].content, chat->index(1, 0).data(ChatModel::TextRole).toString());
        QVERIFY(messages[1].complete);
        QCOMPARE(messages[1].model, QStringLiteral("stories260K"));

        // Continue: the reply, cut at 16 tokens, grows in place (no new message), its first part
        // kept, and the store follows.
        auto* continueButton = window.findChild<QPushButton*>(QStringLiteral("continueButton"));
        QVERIFY(continueButton->isEnabled());
        const QString before = chat->index(1, 0).data(ChatModel::TextRole).toString();
        QTest::mouseClick(continueButton, Qt::LeftButton);
        QCOMPARE(window.state(), MainWindow::State::Generating);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
        QCOMPARE(chat->rowCount(), 2);
        const QString after = chat->index(1, 0).data(ChatModel::TextRole).toString();
        QVERIFY2(after.startsWith(before) && after.size() > before.size(),
                 qPrintable(before + " -> " + after));
        QVERIFY2(
            chat->index(1, 0).data(ChatModel::DetailsRole).toString().contains(QStringLiteral("continued")),
            qPrintable(chat->index(1, 0).data(ChatModel::DetailsRole).toString()));
        messages = store.messages(conversations[0].id);
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[1].content, after);
        QVERIFY(messages[1].complete);

        // A second turn, then Edit and Resend on the first message: it comes back into the input,
        // and sending replaces it and everything after it.
        QVERIFY(sendAndWait(window, QStringLiteral("The end")));
        QCOMPARE(chat->rowCount(), 4);
        emit window.findChild<ChatView*>(QStringLiteral("chatView"))->editRequested(0);
        QCOMPARE(input->toPlainText(), QStringLiteral("Once upon a time"));
        input->setPlainText(QStringLiteral("Once upon a time there was a frog"));
        QTest::keyClick(input, Qt::Key_Return);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
        QCOMPARE(chat->rowCount(), 2);
        QCOMPARE(chat->index(0, 0).data(ChatModel::TextRole).toString(),
                 QStringLiteral("Once upon a time there was a frog"));
        QVERIFY(!chat->index(1, 0).data(ChatModel::TextRole).toString().isEmpty());
        messages = store.messages(conversations[0].id);
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[0].content, QStringLiteral("Once upon a time there was a frog"));
        QCOMPARE(messages[1].content, chat->index(1, 0).data(ChatModel::TextRole).toString());

        // Export: the conversation as Markdown, in a file.
        const QString exported = dir.filePath(QStringLiteral("chat.md"));
        QString error;
        QVERIFY2(window.writeConversationMarkdown(exported, &error), qPrintable(error));
        QFile md(exported);
        QVERIFY(md.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(md.readAll());
        QVERIFY2(text.startsWith(QStringLiteral("# Once upon a time\n")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("## You\n\nOnce upon a time there was a frog")));
        QVERIFY(text.contains(QStringLiteral("## stories260K\n\n") + messages[1].content));
        QVERIFY(
            !window.writeConversationMarkdown(dir.filePath(QStringLiteral("missing/dir/chat.md")), &error));
        QVERIFY(error.contains(QStringLiteral("missing")));

        // The sidebar's search: by message text (the reply mentions no "xyzzy"), then cleared.
        auto* filter = window.findChild<QLineEdit*>(QStringLiteral("conversationFilter"));
        auto* list = window.findChild<QListWidget*>(QStringLiteral("conversationList"));
        QCOMPARE(list->count(), 1);
        filter->setText(QStringLiteral("there was a FROG"));
        QCOMPARE(list->count(), 1);
        filter->setText(QStringLiteral("xyzzy"));
        QCOMPARE(list->count(), 0);
        filter->clear();
        QCOMPARE(list->count(), 1);

        // Reopened (after a new chat), the conversation's last reply can be regenerated and continued.
        QTest::mouseClick(window.findChild<QPushButton*>(QStringLiteral("newChatButton")), Qt::LeftButton);
        QCOMPARE(chat->rowCount(), 0);
        QVERIFY(!window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());
        emit list->itemClicked(list->item(0));
        QCOMPARE(chat->rowCount(), 2);
        QVERIFY(window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());
        QVERIFY(window.findChild<QPushButton*>(QStringLiteral("continueButton"))->isEnabled());
        QTest::mouseClick(window.findChild<QPushButton*>(QStringLiteral("regenerateButton")), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
        QCOMPARE(chat->rowCount(), 2);
        QVERIFY(!chat->index(1, 0).data(ChatModel::TextRole).toString().isEmpty());

        // A .gguf dropped on the window loads it.
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(modelPath())});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &drop);
        QCOMPARE(window.state(), MainWindow::State::Loading);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
        QMimeData plain;
        plain.setText(QStringLiteral("not a model"));
        QDragEnterEvent refused(QPoint(10, 10), Qt::CopyAction, &plain, Qt::LeftButton, Qt::NoModifier);
        refused.ignore();
        QApplication::sendEvent(&window, &refused);
        QVERIFY(!refused.isAccepted());
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
        QVERIFY(QTest::qWaitFor(
            [&] {
                return chat->rowCount() >= 2 &&
                       !chat->index(1, 0).data(ChatModel::TextRole).toString().isEmpty();
            },
            kTurnTimeoutMs));
        QVERIFY2(window.state() == MainWindow::State::Generating,
                 "the reply is still being generated when the window closes");
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

void TestMainWindow::theLocalApiServerIsSwitchedFromTheMenuAndRemembered() {
    // A port nothing listens on: bound by the OS, then released.
    const int probe = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QVERIFY(bind(probe, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    socklen_t len = sizeof sa;
    getsockname(probe, reinterpret_cast<sockaddr*>(&sa), &len);
    const quint16 port = ntohs(sa.sin_port);
    ::close(probe);
    preferences::setApiServerPort(port);
    preferences::setApiServerEnabled(false);

    QTemporaryDir dir;
    {
        MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
        window.show();
        KvBlocks blocks(window);
        QVERIFY(loadModel(window));
        // With the server off, the KV cache holds the chat alone (512 tokens, 32 blocks); switched
        // on, the model is loaded again with room for one more conversation, which the server's 3
        // parallel replies share.
        QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), 32u, 10'000);
        auto* info = window.findChild<ModelInfoPanel*>();
        QVERIFY2(
            info->valueText(QStringLiteral("context")).endsWith(QStringLiteral(" · KV room for the chat")),
            qPrintable(info->valueText(QStringLiteral("context"))));
        auto* action = window.findChild<QAction*>(QStringLiteral("apiServerAction"));
        auto* label = window.findChild<QLabel*>(QStringLiteral("apiLabel"));
        QVERIFY(action && label);
        QVERIFY(!action->isChecked());
        QVERIFY(label->isHidden());
        action->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(label->isVisible(), 60'000);
        QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), 2u * 32, 10'000);
        QCOMPARE(window.state(), MainWindow::State::Ready);
        QVERIFY2(info->valueText(QStringLiteral("context"))
                     .contains(QStringLiteral("KV room for the chat and 1 more conversation")),
                 qPrintable(info->valueText(QStringLiteral("context"))));
        QVERIFY2(label->text().contains(QString::number(port)), qPrintable(label->text()));
        const auto models = lantern::test::http_call(port, lantern::test::http_request("GET", "/v1/models"));
        QCOMPARE(models.status, 200);
        QVERIFY(models.body.find("stories260K") != std::string::npos);
        QVERIFY(preferences::apiServerEnabled());
        // API replies can be made to wait for the chat's (remembered; the label's tooltip says which).
        auto* chatFirst = window.findChild<QAction*>(QStringLiteral("apiChatFirstAction"));
        QVERIFY(chatFirst && !chatFirst->isChecked());
        QVERIFY2(label->toolTip().contains(QStringLiteral("in the same steps as the chat's reply")),
                 qPrintable(label->toolTip()));
        chatFirst->trigger();
        QVERIFY(preferences::apiChatFirst());
        QVERIFY2(label->toolTip().contains(QStringLiteral("pause while the chat writes a reply")),
                 qPrintable(label->toolTip()));
    }
    // Remembered: the next window serves again as soon as its model is loaded.
    {
        MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
        window.show();
        KvBlocks blocks(window);
        QVERIFY(window.findChild<QAction*>(QStringLiteral("apiServerAction"))->isChecked());
        QVERIFY(loadModel(window));
        QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), 2u * 32, 10'000);  // loaded with the room at once
        auto* label = window.findChild<QLabel*>(QStringLiteral("apiLabel"));
        QTRY_VERIFY_WITH_TIMEOUT(label->isVisible(), 10'000);
        QCOMPARE(lantern::test::http_call(port, lantern::test::http_request("GET", "/health")).status, 200);
        auto* chatFirst = window.findChild<QAction*>(QStringLiteral("apiChatFirstAction"));
        QVERIFY(chatFirst->isChecked());
        chatFirst->trigger();
        QVERIFY(!preferences::apiChatFirst());
        window.findChild<QAction*>(QStringLiteral("apiServerAction"))->trigger();  // off
        QTRY_VERIFY_WITH_TIMEOUT(label->isHidden(), 10'000);
        QVERIFY(!preferences::apiServerEnabled());
    }
}

// File > Context Length…: the dialog's length reloads the model with it, the conversation goes on
// in the new context, and the length is remembered for that model file. stories260K was trained
// on 512 tokens; with the API server off the KV cache holds the chat alone: 512 tokens in
// 16-token blocks make 32 blocks, 256 make 16.
void TestMainWindow::theContextLengthIsChosenPerModelAndRemembered() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    {
        MainWindow window(db);
        window.show();
        KvBlocks blocks(window);
        QVERIFY(loadModel(window));
        QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), 512u / 16, 10'000);  // automatic: the model's 512
        auto* context = window.findChild<QLabel*>(QStringLiteral("contextLabel"));
        window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(8);
        QVERIFY(sendAndWait(window, QStringLiteral("Once upon a time")));
        QVERIFY2(context->text().endsWith(QStringLiteral(" / 512")), qPrintable(context->text()));
        const int rows = window.findChild<ChatView*>()->model()->rowCount();

        auto* action = window.findChild<QAction*>(QStringLiteral("contextLengthAction"));
        QVERIFY(action && action->isEnabled());
        QString shown;
        onNextDialog<ContextLengthDialog>([&](ContextLengthDialog* dialog) {
            auto* automatic = dialog->findChild<QCheckBox*>(QStringLiteral("automaticContext"));
            auto* length = dialog->findChild<QSpinBox*>(QStringLiteral("contextLength"));
            QCOMPARE(length->maximum(), 512);
            automatic->setChecked(false);
            length->setValue(256);
            shown = dialog->findChild<QLabel*>(QStringLiteral("contextMemory"))->text();
            dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
        });
        action->trigger();
        // (640 bytes a token: 256 tokens x 640 = 160 KiB.)
        QVERIFY2(shown.startsWith(QStringLiteral("KV cache: 160.0 KiB for the chat's 256 tokens")),
                 qPrintable(shown));
        QVERIFY(QTest::qWaitFor(
            [&] { return window.state() == MainWindow::State::Ready && blocks.total->load() == 16; },
            kLoadTimeoutMs));
        QCOMPARE(preferences::contextLength(modelPath()), 256u);
        // The conversation is all there and goes on, now counted against 256 tokens.
        QCOMPARE(window.findChild<ChatView*>()->model()->rowCount(), rows);
        QVERIFY(sendAndWait(window, QStringLiteral("The dog")));
        QVERIFY2(context->text().endsWith(QStringLiteral(" / 256")), qPrintable(context->text()));
        QCOMPARE(window.findChild<ChatView*>()->model()->rowCount(), rows + 2);
    }
    {
        // The next start loads the model with it again.
        MainWindow window(db);
        window.show();
        KvBlocks blocks(window);
        QVERIFY(loadModel(window));
        QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), 16u, 10'000);
        window.setContextLength(0);  // back to automatic, for the other tests
        QVERIFY(QTest::qWaitFor(
            [&] { return window.state() == MainWindow::State::Ready && blocks.total->load() == 32; },
            kLoadTimeoutMs));
        QCOMPARE(preferences::contextLength(modelPath()), 0u);
    }
}

// A reply that filled a 256-token context: no Continue, also once reopened from disk (room is
// worked out again for the conversation the model is given, not assumed); in a 512-token context
// the same reply can go on.
void TestMainWindow::continueIsOfferedWhenTheContextHasRoomAgain() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    preferences::setContextLength(modelPath(), 256);
    const bool dropWas = preferences::dropOldestTurns();
    preferences::setDropOldestTurns(false);  // room as the conversation stands, nothing dropped
    {
        MainWindow window(db);
        window.show();
        QVERIFY(loadModel(window));
        window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(0);  // no limit but the context
        QVERIFY(sendAndWait(window, QStringLiteral("Once upon a time")));
        QVERIFY(!window.findChild<QPushButton*>(QStringLiteral("continueButton"))->isEnabled());
    }
    {
        MainWindow window(db);  // reopens the conversation
        window.show();
        QVERIFY(loadModel(window));
        auto* continueButton = window.findChild<QPushButton*>(QStringLiteral("continueButton"));
        QVERIFY(window.findChild<ChatView*>()->model()->rowCount() >= 2);
        QTRY_VERIFY2_WITH_TIMEOUT(!continueButton->isEnabled() &&
                                      continueButton->toolTip().contains(QStringLiteral("no room left")),
                                  "the reopened reply filled the context", 10'000);
        window.setContextLength(512);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
        QTRY_VERIFY_WITH_TIMEOUT(continueButton->isEnabled(), 10'000);
        window.setContextLength(0);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    }
    preferences::setDropOldestTurns(dropWas);
}

// A length the model allows but the device cannot hold (4M tokens: 256 MiB for one layer's K,
// where lavapipe's buffers reach 128 MiB) is refused on loading with the reason, and the model is
// loaded again with the length it had: nothing is lost, and the setting is what works.
void TestMainWindow::aContextLengthThatCannotLoadGoesBackToTheOneThatDid() {
    QTemporaryDir dir;
    const QString path = writeLongContextModel(dir);
    preferences::setDeviceSelector(QString());

    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    window.show();
    KvBlocks blocks(window);
    window.openModel(path, QStringLiteral("llvmpipe"));
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), 4096u / 16, 10'000);  // automatic: 4096, the chat alone

    QString title, why;
    onNextDialog<QMessageBox>([&](QMessageBox* box) {
        title = box->text();
        why = box->informativeText();
        box->accept();
    });
    window.setContextLength(1u << 22);
    QVERIFY(QTest::qWaitFor([&] { return !title.isEmpty(); }, kLoadTimeoutMs));
    QVERIFY2(title.contains(QStringLiteral("with a context of 4,194,304 tokens")), qPrintable(title));
    QVERIFY2(why.contains(QStringLiteral("lower the context")), qPrintable(why));
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    QCOMPARE(preferences::contextLength(path), 0u);
    QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), 4096u / 16, 10'000);
}

// A device the model does not load on (here one that is not there: device index 99, as when an
// eGPU was unplugged after the menu listed it; a device too small for the model's context is
// refused the same way) is said so with the reason, and the model is loaded again on the device
// it ran on, which stays the remembered choice; the conversation is still there and goes on.
void TestMainWindow::aDeviceThatCannotLoadTheModelGoesBackToTheOneThatDid() {
    QTemporaryDir dir;
    preferences::setDeviceSelector(QString());
    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    window.show();
    window.openModel(modelPath(), QStringLiteral("llvmpipe"));
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(4);
    QVERIFY(sendAndWait(window, QStringLiteral("Once upon a time")));
    const int rows = window.findChild<ChatView*>()->model()->rowCount();
    const QString deviceShown = window.findChild<QLabel*>(QStringLiteral("deviceLabel"))->text();

    QString title, why;
    onNextDialog<QMessageBox>([&](QMessageBox* box) {
        title = box->text();
        why = box->informativeText();
        box->accept();
    });
    window.chooseDevice(QStringLiteral("99"));
    QVERIFY(QTest::qWaitFor([&] { return !title.isEmpty(); }, kLoadTimeoutMs));
    QVERIFY2(title.contains(QStringLiteral("could not load")) && title.contains(QStringLiteral("on 99")),
             qPrintable(title));
    QVERIFY2(title.contains(QStringLiteral("loaded again on the device it ran on")), qPrintable(title));
    QVERIFY2(why.contains(QStringLiteral("device index 99 does not exist")), qPrintable(why));
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    QCOMPARE(preferences::deviceSelector(), QStringLiteral("llvmpipe"));
    QCOMPARE(window.findChild<QLabel*>(QStringLiteral("deviceLabel"))->text(), deviceShown);
    QCOMPARE(window.findChild<ChatView*>()->model()->rowCount(), rows);
    QVERIFY(sendAndWait(window, QStringLiteral("The dog")));
    QCOMPARE(window.findChild<ChatView*>()->model()->rowCount(), rows + 2);
    preferences::setDeviceSelector(QString());
}

// Room on the device for the chat but not for the API server's replies beside it (at 1.5M tokens,
// one layer's K takes 96 MiB for the chat, 192 MiB for it and the room the replies share, past
// lavapipe's 128 MiB buffers): switching the server on leaves the
// chat's model loaded and says why the server did not start; so does a start with it on.
void TestMainWindow::anApiServerWithoutRoomOnTheDeviceLeavesTheChatLoaded() {
    QTemporaryDir dir;
    const QString path = writeLongContextModel(dir);
    preferences::setContextLength(path, 3u << 19);
    preferences::setApiServerPort(0);
    preferences::setApiServerEnabled(false);
    for (bool onAtStart : {false, true}) {
        preferences::setApiServerEnabled(onAtStart);
        MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
        window.show();
        KvBlocks blocks(window);
        auto* action = window.findChild<QAction*>(QStringLiteral("apiServerAction"));
        QCOMPARE(action->isChecked(), onAtStart);
        window.openModel(path, QStringLiteral("llvmpipe"));
        if (!onAtStart) {
            QVERIFY(
                QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
            QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), (3u << 19) / 16, 10'000);
            action->trigger();
        }
        QVERIFY(QTest::qWaitFor([&] { return !action->isChecked(); }, kLoadTimeoutMs));
        const QString said = window.statusBar()->currentMessage();
        QVERIFY2(said.contains(QStringLiteral("no room on the device for its replies beside the chat")),
                 qPrintable(said));
        QVERIFY2(said.contains(QStringLiteral("lower the context")), qPrintable(said));
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
        QTRY_COMPARE_WITH_TIMEOUT(blocks.total->load(), (3u << 19) / 16, 10'000);  // the chat's room
        QVERIFY(!preferences::apiServerEnabled());
        QVERIFY(window.findChild<QLabel*>(QStringLiteral("apiLabel"))->isHidden());
    }
    preferences::setContextLength(path, 0);
}

// Regenerate keeps the first reply as version 1: the reply shows "‹ 2 / 2 ›", a click on its left
// half shows version 1 and the conversation as it went on from there, the model is given that
// path (its KV blocks are still cached: the next turn reuses them), export writes the path shown,
// and a reopened window shows the version chosen.
void TestMainWindow::regeneratedRepliesAreVersionsChosenInTheChat() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    MainWindow window(db);
    window.show();
    window.resize(1200, 800);
    QVERIFY(loadModel(window));
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(12);
    QSignalSpy finished(window.worker(), &InferenceWorker::turnFinished);
    // A message of more than one KV block (16 tokens) with its template: the blocks the next turn
    // reuses do not depend on how long the sampled reply is (an early end of text left the first
    // reply's path without a full block).
    QVERIFY(
        sendAndWait(window, QStringLiteral("Once upon a time, there was a big red ball that rolled down the "
                                           "hill to the little house by the river")));
    auto* view = window.findChild<ChatView*>(QStringLiteral("chatView"));
    const QAbstractItemModel* chat = view->model();
    const QString first = chat->index(1, 0).data(ChatModel::TextRole).toString();
    QTest::mouseClick(window.findChild<QPushButton*>(QStringLiteral("regenerateButton")), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor(
        [&] { return window.state() == MainWindow::State::Ready && finished.size() == 2; }, kTurnTimeoutMs));
    const QString second = chat->index(1, 0).data(ChatModel::TextRole).toString();
    QCOMPARE(chat->rowCount(), 2);
    QCOMPARE(chat->index(1, 0).data(ChatModel::VersionRole).toInt(), 2);
    QCOMPARE(chat->index(1, 0).data(ChatModel::VersionsRole).toInt(), 2);

    // The reply's "‹ 2 / 2 ›": its left half.
    QStyleOptionViewItem option;
    option.rect = view->visualRect(chat->index(1, 0));
    option.font = view->font();
    option.widget = view;
    auto* delegate = qobject_cast<MessageDelegate*>(view->itemDelegate());
    const QRect versions =
        delegate->versionsRect(option, chat->index(1, 0)).translated(option.rect.topLeft());
    QVERIFY(!versions.isEmpty());
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {},
                      QPoint(versions.left() + 3, versions.center().y()));
    QVERIFY(
        QTest::qWaitFor([&] { return chat->index(1, 0).data(ChatModel::VersionRole).toInt() == 1; }, 5000));
    QCOMPARE(chat->index(1, 0).data(ChatModel::TextRole).toString(), first);
    QString exported;
    const QString path = dir.filePath(QStringLiteral("chat.md"));
    QVERIFY(window.writeConversationMarkdown(path));
    QFile md(path);
    QVERIFY(md.open(QIODevice::ReadOnly));
    exported = QString::fromUtf8(md.readAll());
    QVERIFY2(exported.contains(first.trimmed()), qPrintable(exported));
    if (first.trimmed() != second.trimmed()) QVERIFY(!exported.contains(second.trimmed()));

    // The next turn on version 1 reuses what the cache kept of its path.
    QVERIFY(sendAndWait(window, QStringLiteral("The end")));
    QVERIFY(finished.size() == 3);
    const auto stats = finished.last().first().value<lantern::TurnStats>();
    QVERIFY2(stats.reused_tokens > 0, qPrintable(QString::number(stats.reused_tokens)));
    QCOMPARE(chat->rowCount(), 4);
    const qint64 conversation = ConversationStore(db).conversations().first().id;
    QCOMPARE(ConversationStore(db).allMessages(conversation).size(), 5);
    QCOMPARE(ConversationStore(db).messages(conversation).size(), 4);
}

// With capture on, the attention panel's words view holds the conversation as its tokens make it
// (the message typed is in it), a row for each token the reply fed back, and pointing at a reply's
// token highlights what it attended to; the panel says what the rows cost.
void TestMainWindow::attentionIsShownOnTheWordsOfTheConversation() {
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    window.show();
    QVERIFY(loadModel(window));
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(10);
    AttentionPanel* panel = window.panels()->attention();
    panel->findChild<QCheckBox*>(QStringLiteral("captureAttention"))->setChecked(true);
    QVERIFY(sendAndWait(window, QStringLiteral("The little dog")));
    AttentionWords* words = panel->words();
    QVERIFY(QTest::qWaitFor([&] { return !words->toPlainText().isEmpty(); }, 10000));
    QVERIFY2(words->toPlainText().contains(QStringLiteral("The little dog")),
             qPrintable(words->toPlainText()));
    const int tokens = static_cast<int>(words->text().spans.size());
    QVERIFY(tokens > 5);
    // The reply's last fed token (the last one sampled is never fed back) attended to something.
    QVERIFY(words->showToken(tokens - 1));
    QVERIFY(!words->highlighted().isEmpty());
    for (const auto& [token, strength] : words->highlighted()) QVERIFY(token < tokens && strength <= 1.0);
    QVERIFY2(panel->findChild<QLabel*>(QStringLiteral("attentionCost"))
                 ->text()
                 .contains(QStringLiteral("a token")),
             qPrintable(panel->findChild<QLabel*>(QStringLiteral("attentionCost"))->text()));
    // Pointing at it with the mouse does the same (the Attention dock shown first).
    for (QWidget* w = panel; w != nullptr; w = w->parentWidget())
        if (auto* dock = qobject_cast<QDockWidget*>(w)) dock->raise();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    words->showToken(-1);
    const TokenSpan span = words->text().spans[tokens - 1];
    QTextCursor c(words->document());
    c.setPosition(span.begin);
    words->setTextCursor(c);
    words->ensureCursorVisible();
    const QPoint at = words->cursorRect(c).center() + QPoint(2, 0);
    QMouseEvent move(QEvent::MouseMove, at, words->viewport()->mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QApplication::sendEvent(words->viewport(), &move);
    QVERIFY(QTest::qWaitFor([&] { return words->shownToken() >= 0; }, 2000));
    // The heatmap's axis names tokens.
    QVERIFY(panel->heatmap()->axisLabel(1) != QStringLiteral("1"));
}

QTEST_MAIN(TestMainWindow)

// The models folder lists a split model (gguf-split's NAME-00001-of-00002.gguf, ...) once, by its
// first file, with the size of all its parts.
void TestMainWindow::splitModelsAreListedOnceWithTheirWholeSize() {
    QDir models(preferences::modelsDirectory());
    QVERIFY(models.mkpath(QStringLiteral(".")));
    for (const QString& name : models.entryList({QStringLiteral("*.gguf")}, QDir::Files))
        QVERIFY(models.remove(name));
    auto put = [&](const QString& name, int bytes) {
        QFile f(models.filePath(name));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(bytes, 'x'));
    };
    put(QStringLiteral("plain.gguf"), 1000);
    put(QStringLiteral("big-00001-of-00002.gguf"), 3 << 20);
    put(QStringLiteral("big-00002-of-00002.gguf"), 2 << 20);
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    auto* picker = window.findChild<QComboBox*>(QStringLiteral("modelPicker"));
    QVERIFY(picker);
    QSignalSpy listed(&window, &MainWindow::modelListChanged);  // the folders are scanned on a thread
    QVERIFY(listed.wait(30000));
    QStringList items;  // (the models opened by earlier tests are listed too)
    for (int i = 1; i < picker->count(); ++i) items << picker->itemText(i);
    const QString all = items.join(QStringLiteral(" | "));
    QCOMPARE(items.filter(QStringLiteral("big-")).size(), 1);
    QVERIFY2(items.filter(QStringLiteral("big-00001-of-00002  (5.00 MiB)")).size() == 1, qPrintable(all));
    QVERIFY2(items.filter(QStringLiteral("plain  (1000 B)")).size() == 1, qPrintable(all));
    for (const QString& name : models.entryList({QStringLiteral("*.gguf")}, QDir::Files))
        QVERIFY(models.remove(name));
}

// A model llama.cpp downloaded (its cache, moved by LLAMA_CACHE as llama.cpp itself honours) is in
// the picker, saying whose it is; choosing it opens that file (tests/app/test_model_library has
// every app's layout).
void TestMainWindow::modelsOtherAppsDownloadedAreListedWithTheirApp() {
    QTemporaryDir cache;
    QFile f(cache.filePath(QStringLiteral("someone_repo_model-Q8_0.gguf")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(1000, 'x'));
    f.close();
    lantern::GgufWriter mamba;  // a model of an architecture Lantern does not run
    mamba.set_string("general.architecture", "mamba");
    mamba.write(cache.filePath(QStringLiteral("mamba.gguf")).toStdString());
    QTemporaryDir dir;
    const auto owned = windowListingDownloads(cache, dir);
    QVERIFY(owned);
    auto* picker = owned->findChild<QComboBox*>(QStringLiteral("modelPicker"));
    QVERIFY(picker);
    const int i = picker->findText(QStringLiteral("someone_repo_model-Q8_0  (1000 B · llama.cpp)"));
    QStringList items;
    for (int k = 0; k < picker->count(); ++k) items << picker->itemText(k);
    QVERIFY2(i > 0, qPrintable(items.join(QStringLiteral(" | "))));
    QCOMPARE(picker->itemData(i, Qt::ToolTipRole).toString(), QDir::toNativeSeparators(f.fileName()));
    auto* entries = qobject_cast<QStandardItemModel*>(picker->model());
    QVERIFY(entries && entries->item(i)->isEnabled());
    // The mamba model is listed, says why it cannot be chosen, and cannot be.
    const int q = picker->findText(QStringLiteral(" — mamba, not supported"), Qt::MatchEndsWith);
    QVERIFY2(q > 0 && picker->itemText(q).startsWith(QStringLiteral("mamba  (")),
             qPrintable(items.join(QStringLiteral(" | "))));
    QVERIFY(!entries->item(q)->isEnabled());
    QVERIFY(picker->itemData(q, Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral(
                    "llama, qwen2, qwen3, phi3, gemma2 and gemma3 models; this one is mamba")));
}

// A model another app downloads while Lantern runs, into a folder below the top of its store (a
// Hugging Face snapshot), joins the picker: the window watches every folder its scan walked.
void TestMainWindow::aModelDownloadedIntoAnotherAppsFolderAppearsWhileTheWindowIsOpen() {
    QTemporaryDir hub;
    const QString snapshot = hub.filePath(QStringLiteral("models--someone--tiny-GGUF/snapshots/0123"));
    QVERIFY(QDir().mkpath(snapshot));
    QFile first(snapshot + QStringLiteral("/tiny-Q8_0.gguf"));
    QVERIFY(first.open(QIODevice::WriteOnly));
    first.write(QByteArray(100, 'x'));
    first.close();
    const QByteArray before = qgetenv("HF_HUB_CACHE");
    qputenv("HF_HUB_CACHE", QFile::encodeName(hub.path()));
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    QSignalSpy listed(&window, &MainWindow::modelListChanged);
    QVERIFY(listed.wait(30000));
    auto* picker = window.findChild<QComboBox*>(QStringLiteral("modelPicker"));
    QVERIFY(picker->findText(QStringLiteral("tiny-Q8_0  (100 B · Hugging Face)")) > 0);
    QCOMPARE(picker->findText(QStringLiteral("tiny-Q4_K_M  (200 B · Hugging Face)")), -1);

    QFile second(snapshot + QStringLiteral("/tiny-Q4_K_M.gguf"));  // the next download, same snapshot
    QVERIFY(second.open(QIODevice::WriteOnly));
    second.write(QByteArray(200, 'x'));
    second.close();
    const bool appeared = QTest::qWaitFor(
        [&] { return picker->findText(QStringLiteral("tiny-Q4_K_M  (200 B · Hugging Face)")) > 0; }, 30000);
    if (before.isEmpty())
        qunsetenv("HF_HUB_CACHE");
    else
        qputenv("HF_HUB_CACHE", before);
    QVERIFY2(appeared, "the new file in a snapshot folder was listed");
}

// Ollama's store names its blobs by digest; the picker lists the model by Ollama's name, and it
// opens from there (the blob is the real stories260K, linked in).
void TestMainWindow::anOllamaModelIsListedByItsOllamaNameAndOpens() {
    QTemporaryDir store;
    const QString hex(64, QLatin1Char('7'));
    QVERIFY(QDir().mkpath(store.filePath(QStringLiteral("blobs"))));
    const QString blob = store.filePath(QStringLiteral("blobs/sha256-") + hex);
    QVERIFY(QFile::link(modelPath(), blob));
    const QString manifest =
        store.filePath(QStringLiteral("manifests/registry.ollama.ai/library/stories/260k"));
    QVERIFY(QDir().mkpath(QFileInfo(manifest).path()));
    QFile m(manifest);
    QVERIFY(m.open(QIODevice::WriteOnly));
    m.write(
        QByteArray(
            R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)") +
        hex.toLatin1() + R"(","size":1}]})");
    m.close();
    const QByteArray before = qgetenv("OLLAMA_MODELS");
    qputenv("OLLAMA_MODELS", QFile::encodeName(store.path()));
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    window.show();
    QSignalSpy listed(&window, &MainWindow::modelListChanged);
    QVERIFY(listed.wait(30000));
    if (before.isEmpty())
        qunsetenv("OLLAMA_MODELS");
    else
        qputenv("OLLAMA_MODELS", before);
    auto* picker = window.findChild<QComboBox*>(QStringLiteral("modelPicker"));
    const int i = picker->findText(QStringLiteral("stories:260k  (1.01 MiB · Ollama)"));
    QStringList items;
    for (int k = 0; k < picker->count(); ++k) items << picker->itemText(k);
    QVERIFY2(i > 0, qPrintable(items.join(QStringLiteral(" | "))));
    QCOMPARE(picker->itemData(i, Qt::ToolTipRole).toString(), QDir::toNativeSeparators(blob));
    picker->setCurrentIndex(i);
    emit picker->activated(i);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    QCOMPARE(window.windowTitle(), QStringLiteral("stories260K — Lantern"));  // the GGUF's own name
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(4);
    QVERIFY(sendAndWait(window, QStringLiteral("Once upon a time")));
    // The conversation names the model as Ollama does, not by its digest.
    ConversationStore reopened(dir.filePath(QStringLiteral("chat.sqlite")));
    QCOMPARE(reopened.conversations().size(), 1);
    QCOMPARE(reopened.conversations().first().model, QStringLiteral("stories:260k"));
}

// A Qwen3 model (Qwen3's layers and chat template, a small random one) downloaded by another app:
// the picker lists it as one that runs, choosing it loads it, the model panel shows its heads as
// they are (16 dims wider than the width split among them), the thinking switch turns on for it
// and is remembered, and it answers.
void TestMainWindow::aQwen3ModelIsChosenInThePickerChatsAndTakesTheThinkingSwitch() {
    QTemporaryDir cache;
    lantern::SyntheticShape shape;
    shape.name = "qwen3-tiny";
    shape.architecture = "qwen3";
    shape.dim = 64, shape.n_heads = 4, shape.n_kv_heads = 2, shape.head_dim = 32, shape.ffn_dim = 128;
    shape.n_layers = 2, shape.vocab = 512, shape.qk_norm = true, shape.rope_base = 1e6f;
    shape.chat_template =
        "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
        "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
        "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>"
        "\\n\\n' }}{%- endif %}{%- endif %}";
    lantern::write_synthetic_model(shape, static_cast<uint32_t>(lantern::GgmlType::F32),
                                   cache.filePath(QStringLiteral("qwen3-tiny.gguf")).toStdString());
    QTemporaryDir dir;
    const auto owned = windowListingDownloads(cache, dir);
    QVERIFY(owned);
    MainWindow& window = *owned;
    auto* picker = window.findChild<QComboBox*>(QStringLiteral("modelPicker"));
    const int i = pickerEntry(window, QStringLiteral("qwen3-tiny"));
    QVERIFY(i > 0);
    QVERIFY(qobject_cast<QStandardItemModel*>(picker->model())->item(i)->isEnabled());
    auto* thinking = window.findChild<QAction*>(QStringLiteral("thinkingAction"));
    QVERIFY(thinking && !thinking->isEnabled());  // no model with the switch yet
    picker->setCurrentIndex(i);
    emit picker->activated(i);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    auto* info = window.findChild<ModelInfoPanel*>();
    QVERIFY(info);
    QCOMPARE(info->valueText(QStringLiteral("architecture")), QStringLiteral("qwen3"));
    QCOMPARE(info->valueText(QStringLiteral("heads")), QStringLiteral("4 / 2"));
    QVERIFY2(info->valueText(QStringLiteral("rope")).startsWith(QStringLiteral("32 / 32 dims")),
             qPrintable(info->valueText(QStringLiteral("rope"))));
    QCOMPARE(info->valueText(QStringLiteral("template")),
             QStringLiteral("the model's own (Jinja; qwen3 family) · show the template"));
    // The link opens the template's text and says which renderer writes the prompts.
    auto* templateLabel = info->findChild<QLabel*>(QStringLiteral("template"));
    QVERIFY(templateLabel);
    emit templateLabel->linkActivated(QStringLiteral("template"));
    auto* dialog = info->findChild<QDialog*>(QStringLiteral("chatTemplateDialog"));
    QVERIFY(dialog);
    QCOMPARE(dialog->findChild<QPlainTextEdit*>(QStringLiteral("source"))->toPlainText(),
             QString::fromStdString(shape.chat_template));
    QVERIFY(dialog->findChild<QLabel*>(QStringLiteral("renderer"))
                ->text()
                .contains(QStringLiteral("own template")));
    dialog->close();
    QVERIFY(thinking->isEnabled());
    thinking->setChecked(false);
    QVERIFY(!preferences::thinking());
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(4);
    QVERIFY(sendAndWait(window, QStringLiteral("Hi")));
    const QAbstractItemModel* chat = window.findChild<ChatView*>(QStringLiteral("chatView"))->model();
    QCOMPARE(chat->rowCount(), 2);
    QCOMPARE(chat->index(1, 0).data(ChatModel::ModelRole).toString(), QStringLiteral("synthetic-qwen3-tiny"));
    thinking->setChecked(true);
    QVERIFY(preferences::thinking());
}

// File > Get Models…: a model found on the Hub (the local fixture server) and downloaded from the
// dialog appears in the model picker at once, and loads.
void TestMainWindow::aModelDownloadedFromTheHubIsInThePickerAndLoads() {
    std::unique_ptr<lantern::test::HubFixture> hub;
    try {
        hub = std::make_unique<lantern::test::HubFixture>();
    } catch (const lantern::Error& e) {
        QFAIL(e.what());
    }
    QTemporaryDir cache;
    QTemporaryDir dir;
    const auto owned = windowListingDownloads(cache, dir);
    QVERIFY(owned);
    MainWindow& window = *owned;
    window.findChild<QAction*>(QStringLiteral("getModelsAction"))->trigger();
    auto* dialog = window.findChild<ModelsDialog*>(QStringLiteral("modelsDialog"));
    QVERIFY(dialog && dialog->isVisible());
    dialog->findChild<QLineEdit*>(QStringLiteral("hubEndpoint"))
        ->setText(QString::fromStdString(hub->endpoint()));
    QSignalSpy probed(dialog, &ModelsDialog::filesProbed);
    dialog->openRepository(QStringLiteral("lantern-test/tiny-GGUF"));
    QVERIFY(probed.wait(30000));
    auto* files = dialog->findChild<QTableWidget*>(QStringLiteral("hubFiles"));
    int q8 = -1;
    for (int r = 0; r < files->rowCount(); ++r)
        if (files->item(r, 0)->text() == QStringLiteral("tiny-Q8_0.gguf")) q8 = r;
    QVERIFY(q8 >= 0);
    files->selectRow(q8);
    QSignalSpy listed(&window, &MainWindow::modelListChanged);
    dialog->findChild<QPushButton*>(QStringLiteral("hubDownload"))->click();
    QVERIFY(QTest::qWaitFor([&] { return pickerEntry(window, QStringLiteral("tiny-Q8_0")) > 0; }, 60000));
    const QString path = window.downloads()->items().at(0).path;
    QVERIFY2(path.endsWith(QStringLiteral("/lantern-test/tiny-GGUF/tiny-Q8_0.gguf")), qPrintable(path));
    dialog->close();
    auto* picker = window.findChild<QComboBox*>(QStringLiteral("modelPicker"));
    const int i = pickerEntry(window, QStringLiteral("tiny-Q8_0"));
    picker->setCurrentIndex(i);
    emit picker->activated(i);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    QFile::remove(path);  // the models folder is the test profile's; leave it as found
}

// Gemma 3, Gemma 2 and Phi-3 models (their layers, Gemma's window of 8 on layer 0, their vocabulary
// and chat template; small random ones) downloaded by another app: the picker lists each as one
// that runs, choosing it loads it, the model panel shows its attention (local and global layers)
// and its template, it answers a conversation longer than its window, and where layers slide a
// window the KV panel shows their own pool in use.
void TestMainWindow::newFamiliesAreChosenInThePickerAndChatInTheirFormat_data() {
    QTest::addColumn<QString>("shape");
    QTest::addColumn<QString>("chatTemplate");
    QTest::addColumn<QString>("architecture");
    QTest::addColumn<QString>("templateName");
    QTest::addColumn<QString>("attention");
    QTest::addColumn<QString>("localLayers");  // the KV panel's row (its start)
    const QString gemma = QStringLiteral(
        "{{ bos_token }}{%- for message in messages -%}{%- if message['role'] == 'assistant' -%}{%- set role "
        "= "
        "'model' -%}{%- else -%}{%- set role = message['role'] -%}{%- endif -%}{{ '<start_of_turn>' + role + "
        "'\n' + message['content'] | trim + '<end_of_turn>\n' }}{%- endfor -%}{%- if add_generation_prompt "
        "-%}{{'<start_of_turn>model\n'}}{%- endif -%}");
    const QString phi3 = QStringLiteral(
        "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + "
        "message['content'] "
        "+ '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + "
        "'<|end|>\n'}}"
        "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}"
        "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}");
    const QString window =
        QStringLiteral("a window of 8 tokens on 1 of 2 layers (local), the whole context on the other 1");
    QTest::newRow("gemma3") << QStringLiteral("gemma3-1b,layers=2,vocab=512,window=8,swa_pattern=2") << gemma
                            << QStringLiteral("gemma3") << QStringLiteral("gemma") << window
                            << QStringLiteral("1 of 2 layers keep only their last 8 tokens: ");
    QTest::newRow("gemma2") << QStringLiteral("gemma2-2b,layers=2,vocab=512,window=8") << gemma
                            << QStringLiteral("gemma2") << QStringLiteral("gemma")
                            << window + QStringLiteral(", scores soft-capped at 50")
                            << QStringLiteral("1 of 2 layers keep only their last 8 tokens: ");
    QTest::newRow("phi3") << QStringLiteral("phi3-mini,layers=2,vocab=512") << phi3 << QStringLiteral("phi3")
                          << QStringLiteral("phi3") << QStringLiteral("the whole context on every layer")
                          << QStringLiteral("none: every layer keeps every position");
}

void TestMainWindow::newFamiliesAreChosenInThePickerAndChatInTheirFormat() {
    QFETCH(QString, shape);
    QFETCH(QString, chatTemplate);
    QFETCH(QString, architecture);
    QFETCH(QString, templateName);
    QFETCH(QString, attention);
    QFETCH(QString, localLayers);
    QTemporaryDir cache;
    lantern::SyntheticShape s = lantern::synthetic_shape(shape.toStdString());
    const QString name = architecture + QStringLiteral("-tiny");
    s.name = name.toStdString();
    s.dim = 64, s.n_heads = 4, s.n_kv_heads = architecture == QStringLiteral("phi3") ? 4 : 2, s.ffn_dim = 128;
    s.head_dim = architecture == QStringLiteral("phi3") ? 0 : 32;
    s.context_length = 4096;
    s.chat_template = chatTemplate.toStdString();
    lantern::write_synthetic_model(s, static_cast<uint32_t>(lantern::GgmlType::F32),
                                   cache.filePath(name + QStringLiteral(".gguf")).toStdString());
    QTemporaryDir dir;
    const auto owned = windowListingDownloads(cache, dir);
    QVERIFY(owned);
    MainWindow& window = *owned;
    auto* picker = window.findChild<QComboBox*>(QStringLiteral("modelPicker"));
    const int i = pickerEntry(window, name);
    QVERIFY(i > 0);
    QVERIFY(qobject_cast<QStandardItemModel*>(picker->model())->item(i)->isEnabled());
    picker->setCurrentIndex(i);
    emit picker->activated(i);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kLoadTimeoutMs));
    auto* info = window.findChild<ModelInfoPanel*>();
    QVERIFY(info);
    QCOMPARE(info->valueText(QStringLiteral("architecture")), architecture);
    QCOMPARE(info->valueText(QStringLiteral("template")),
             QStringLiteral("the model's own (Jinja; %1 family) · show the template").arg(templateName));
    QCOMPARE(info->valueText(QStringLiteral("attention")), attention);
    if (architecture == QStringLiteral("gemma3"))
        QVERIFY2(info->valueText(QStringLiteral("rope")).contains(QStringLiteral("local layers base 10000")),
                 qPrintable(info->valueText(QStringLiteral("rope"))));
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(6);
    QVERIFY(sendAndWait(window, QStringLiteral("Hello there, how are you today?")));
    QVERIFY(sendAndWait(window, QStringLiteral("And what about tomorrow?")));
    const QAbstractItemModel* chat = window.findChild<ChatView*>(QStringLiteral("chatView"))->model();
    QCOMPARE(chat->rowCount(), 4);
    QCOMPARE(chat->index(3, 0).data(ChatModel::ModelRole).toString(), QStringLiteral("synthetic-") + name);
    // The KV panel: the window's own pool in use where layers slide one.
    auto* kv = window.findChild<KvCachePanel*>();
    QVERIFY(kv);
    const auto* local = kv->findChild<QLabel*>(QStringLiteral("localLayers"));
    QVERIFY(local);
    QVERIFY2(QTest::qWaitFor([&] { return local->text().startsWith(localLayers); }, 5000),
             qPrintable(local->text()));
    QVERIFY2(!local->text().contains(QStringLiteral(": 0 of")), qPrintable(local->text()));
}

#include "test_main_window.moc"

// A reply that fills the context: the status bar counts no more tokens than the context holds,
// Continue is off (nothing can be dropped to make room for it), and a message too long for the
// context changes nothing: it goes back into the input, the chat and the store keep what they had.
void TestMainWindow::aFullContextOffersOnlyWhatCanWork() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    MainWindow window(db);
    window.show();
    QVERIFY(loadModel(window));
    auto* drop = window.findChild<QAction*>(QStringLiteral("dropOldestAction"));
    QVERIFY(drop);
    if (!drop->isChecked()) drop->trigger();
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(0);  // no limit but the context
    auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
    auto* continueButton = window.findChild<QPushButton*>(QStringLiteral("continueButton"));
    QVERIFY(sendAndWait(window, QStringLiteral("Once upon a time")));

    const QAbstractItemModel* chat = window.findChild<ChatView*>(QStringLiteral("chatView"))->model();
    QVERIFY(chat->rowCount() >= 3);
    QVERIFY2(
        chat->index(1, 0).data(ChatModel::DetailsRole).toString().contains(QStringLiteral("full context")),
        qPrintable(chat->index(1, 0).data(ChatModel::DetailsRole).toString()));
    const QString notice = chat->index(chat->rowCount() - 1, 0).data(ChatModel::TextRole).toString();
    QVERIFY2(notice.contains(QStringLiteral("dropping the oldest turns")), qPrintable(notice));
    const QString context = window.findChild<QLabel*>(QStringLiteral("contextLabel"))->text();
    QVERIFY2(context == QStringLiteral("Context 512 / 512"), qPrintable(context));
    QVERIFY2(!continueButton->isEnabled(), "a reply that filled the context alone cannot be continued");
    QVERIFY(window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());

    // A message longer than the whole context: nothing changes but a notice, and the text is back.
    const int rows = chat->rowCount();
    auto* performance = window.findChild<PerformancePanel*>();
    QVERIFY(performance);
    const QString generated = performance->valueText(QStringLiteral("generated"));
    QVERIFY2(generated.startsWith(QStringLiteral("50")), qPrintable(generated));  // 508 tokens
    QString longText;
    for (int i = 0; i < 120; ++i) longText += QStringLiteral("The dog ran to the big park. ");
    longText = longText.trimmed();
    input->setPlainText(longText);
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QCOMPARE(input->toPlainText(), longText);
    QCOMPARE(chat->rowCount(), rows + 1);
    QCOMPARE(performance->valueText(QStringLiteral("generated")),
             generated);  // the last reply's figures stay
    const QString refused = chat->index(rows, 0).data(ChatModel::TextRole).toString();
    QCOMPARE(chat->index(rows, 0).data(ChatModel::MessageRole).toInt(),
             static_cast<int>(ChatMessage::Role::Notice));
    QVERIFY2(
        refused.contains(QStringLiteral("does not fit")) && refused.contains(QStringLiteral("Shorten it")),
        qPrintable(refused));
    ConversationStore store(db);
    const QVector<ConversationSummary> conversations = store.conversations();
    QCOMPARE(conversations.size(), 1);
    QCOMPARE(store.messages(conversations[0].id).size(), 2);  // the first message and its reply
    // The store keeps the reply's figures as data, worded when shown (in the language of the day).
    const QString storedDetails = store.messages(conversations[0].id)[1].details;
    QVERIFY2(storedDetails.startsWith(QLatin1Char('[')) &&
                 storedDetails.contains(QLatin1String("\"stop\":\"context_full\"")) &&
                 !storedDetails.contains(QLatin1String("full context")),
             qPrintable(storedDetails));
    QVERIFY(window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());

    // With Stop instead, a new message into the full conversation would fit once the oldest turns
    // go: the notice says that is the choice that helps.
    drop->trigger();
    QVERIFY(!drop->isChecked());
    input->setPlainText(QStringLiteral("The cat"));
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QCOMPARE(input->toPlainText(), QStringLiteral("The cat"));
    const QString stopped = chat->index(chat->rowCount() - 1, 0).data(ChatModel::TextRole).toString();
    QVERIFY2(stopped.contains(QStringLiteral("Drop the Oldest Turns to make room")), qPrintable(stopped));
    QCOMPARE(store.messages(conversations[0].id).size(), 2);

    // Dropping again: the message is answered, and the turn that made room for it is shown as no
    // longer in the model's context (the messages stay on screen and in the store).
    drop->trigger();
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(8);
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QVERIFY(input->toPlainText().isEmpty());
    QCOMPARE(store.messages(conversations[0].id).size(), 4);
    QVERIFY(chat->index(0, 0).data(ChatModel::OutOfContextRole).toBool());
    QVERIFY(chat->index(1, 0).data(ChatModel::OutOfContextRole).toBool());
    int answered = -1;
    for (int row = 2; row < chat->rowCount(); ++row) {
        QVERIFY(!chat->index(row, 0).data(ChatModel::OutOfContextRole).toBool());
        if (chat->index(row, 0).data(ChatModel::MessageRole).toInt() ==
            static_cast<int>(ChatMessage::Role::Assistant))
            answered = row;
    }
    QVERIFY(answered > 2);
    QVERIFY(chat->index(answered - 1, 0).data(ChatModel::TextRole).toString() == QStringLiteral("The cat") ||
            chat->index(answered - 2, 0).data(ChatModel::TextRole).toString() == QStringLiteral("The cat"));
}

// A prompt longer than one chunk says how far it is in the status bar, and Stop pressed while it
// is read (here: at its first progress report, from the worker's thread) ends the turn before any
// token: the message goes back into the input and nothing is kept, on screen or in the store.
void TestMainWindow::stoppingWhileThePromptIsReadGivesTheMessageBack() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    MainWindow window(db);
    window.show();
    QVERIFY(loadModel(window));
    QString shown;
    connect(
        window.worker(), &InferenceWorker::promptProgress, window.worker(),
        [&](quint32, quint32) {
            window.worker()->requestStop();  // as the Stop button does (an atomic flag)
        },
        Qt::DirectConnection);
    connect(window.worker(), &InferenceWorker::promptProgress, &window, [&](quint32, quint32) {
        shown =
            window.findChild<QLabel*>(QStringLiteral("stateLabel"))->text();  // after the window's own slot
    });
    QString text;
    for (int i = 0; i < 30; ++i) text += QStringLiteral("The dog ran to the big park. ");
    text = text.trimmed();
    auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
    input->setPlainText(text);
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QVERIFY2(shown.startsWith(QStringLiteral("Reading the prompt… 256 of ")), qPrintable(shown));
    QCOMPARE(input->toPlainText(), text);
    const QAbstractItemModel* chat = window.findChild<ChatView*>(QStringLiteral("chatView"))->model();
    QCOMPARE(chat->rowCount(), 0);
    QVERIFY(!window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());
    QVERIFY(ConversationStore(db).conversations().isEmpty());
    // The same with a notice already in the chat (a message that did not fit): no conversation of
    // no messages is left in the sidebar either.
    QString tooLong;
    for (int i = 0; i < 120; ++i) tooLong += QStringLiteral("The dog ran to the big park. ");
    input->setPlainText(tooLong.trimmed());
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QCOMPARE(chat->rowCount(), 1);  // the notice
    text.clear();  // (another text: the first one's computed chunk would be reused, leaving one chunk)
    for (int i = 0; i < 30; ++i) text += QStringLiteral("The cat sat on the mat in the sun. ");
    text = text.trimmed();
    input->setPlainText(text);
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QCOMPARE(input->toPlainText(), text);
    QCOMPARE(chat->rowCount(), 1);
    QVERIFY(ConversationStore(db).conversations().isEmpty());

    // Sent again without a stop, it is answered (from the chunk already computed on).
    disconnect(window.worker(), &InferenceWorker::promptProgress, window.worker(), nullptr);
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(8);
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QVERIFY(input->toPlainText().isEmpty());
    QVERIFY(chat->rowCount() >= 3);
    QVERIFY(!chat->index(2, 0).data(ChatModel::TextRole).toString().isEmpty());
    QCOMPARE(ConversationStore(db).conversations().size(), 1);
}

// Edit and Resend and Regenerate replace messages, but only once the new turn has begun: an
// edited message that does not fit, or a Regenerate stopped while its prompt is read, leaves the
// messages it would have replaced on screen and in the store as they were.
void TestMainWindow::aReplacementThatCannotBeginLosesNothing() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    MainWindow window(db);
    window.show();
    QVERIFY(loadModel(window));
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(8);
    auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
    auto* view = window.findChild<ChatView*>(QStringLiteral("chatView"));
    const QAbstractItemModel* chat = view->model();
    auto send = [&](const QString& text) {
        input->setPlainText(text);
        QTest::keyClick(input, Qt::Key_Return);
        return QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs);
    };
    auto texts = [&] {
        QStringList out;
        for (int row = 0; row < chat->rowCount(); ++row)
            out << chat->index(row, 0).data(ChatModel::TextRole).toString();
        return out;
    };
    auto stored = [&] {
        ConversationStore store(db);
        QStringList out;
        for (const ConversationSummary& c : store.conversations())
            for (const StoredMessage& m : store.messages(c.id))
                out << QString::number(m.id) + QLatin1Char(' ') + m.content;
        return out;
    };
    QString longPrompt;  // two prefill chunks (one progress report) that fit with room for a reply
    for (int i = 0; i < 30; ++i) longPrompt += QStringLiteral("The dog ran to the big park. ");
    longPrompt = longPrompt.trimmed();
    QVERIFY(send(longPrompt));
    QVERIFY(send(QStringLiteral("The cat")));
    QCOMPARE(chat->rowCount(), 4);
    const QStringList before = texts(), storedBefore = stored();
    QCOMPARE(storedBefore.size(), 4);

    // The first message edited into one longer than the context: nothing is replaced.
    emit view->editRequested(0);
    QString tooLong;
    for (int i = 0; i < 120; ++i) tooLong += QStringLiteral("The dog ran to the big park. ");
    tooLong = tooLong.trimmed();
    QVERIFY(send(tooLong));
    QCOMPARE(input->toPlainText(), tooLong);
    QCOMPARE(texts().mid(0, 4), before);
    QCOMPARE(chat->rowCount(), 5);  // and the notice
    QVERIFY2(texts().last().contains(QStringLiteral("does not fit")), qPrintable(texts().last()));
    QCOMPARE(stored(), storedBefore);
    QVERIFY(window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());
    // Still editing it: shortened and sent, it replaces the message and everything after it.
    QVERIFY2(window.statusBar()->currentMessage().startsWith(QStringLiteral("Editing a message")),
             qPrintable(window.statusBar()->currentMessage()));
    QVERIFY(send(longPrompt.left(longPrompt.size() - 1)));
    QCOMPARE(chat->index(0, 0).data(ChatModel::TextRole).toString(), longPrompt.left(longPrompt.size() - 1));
    QCOMPARE(chat->index(1, 0).data(ChatModel::MessageRole).toInt(),
             static_cast<int>(ChatMessage::Role::Assistant));
    const QStringList edited = stored();
    QCOMPARE(edited.size(), 2);
    for (const QString& old : storedBefore) QVERIFY2(!edited.contains(old), qPrintable(old));
    QCOMPARE(chat->rowCount(), 2);  // the notice about the refused edit went with the rows it was about

    // A new system prompt makes the whole conversation a prompt again (two chunks): Regenerate
    // stopped at its first progress report gives back the reply it was to replace.
    const QString reply = chat->index(1, 0).data(ChatModel::TextRole).toString();
    auto* system = window.findChild<QLineEdit*>(QStringLiteral("systemPrompt"));
    system->setText(QStringLiteral("You tell short stories."));
    emit system->editingFinished();
    connect(
        window.worker(), &InferenceWorker::promptProgress, window.worker(),
        [&](quint32, quint32) { window.worker()->requestStop(); }, Qt::DirectConnection);
    bool progressed = false;
    connect(window.worker(), &InferenceWorker::promptProgress, &window,
            [&](quint32, quint32) { progressed = true; });
    QTest::mouseClick(window.findChild<QPushButton*>(QStringLiteral("regenerateButton")), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QVERIFY(progressed);
    QCOMPARE(chat->index(1, 0).data(ChatModel::TextRole).toString(), reply);
    QCOMPARE(stored(), edited);
    QVERIFY(window.findChild<QPushButton*>(QStringLiteral("regenerateButton"))->isEnabled());

    // Not stopped, it replaces the reply: the store holds the new one in its place.
    disconnect(window.worker(), &InferenceWorker::promptProgress, window.worker(), nullptr);
    QTest::mouseClick(window.findChild<QPushButton*>(QStringLiteral("regenerateButton")), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    const QStringList regenerated = stored();
    QCOMPARE(regenerated.size(), 2);
    QCOMPARE(regenerated[0], edited[0]);
    QVERIFY(regenerated[1] != edited[1]);  // a new message (id), whatever its text
    QCOMPARE(chat->index(1, 0).data(ChatModel::MessageRole).toInt(),
             static_cast<int>(ChatMessage::Role::Assistant));
}

// Under the input: the message's length in tokens, and before it is sent, whether it fits — as
// the context stands, under the chosen policy, and for an edit, in place of what it replaces.
void TestMainWindow::theInputSaysHowLongAMessageIsAndWhetherItFits() {
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    window.show();
    QVERIFY(loadModel(window));
    auto* drop = window.findChild<QAction*>(QStringLiteral("dropOldestAction"));
    auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
    auto* measure = window.findChild<ElidedLabel*>(QStringLiteral("messageMeasure"));
    QVERIFY(drop && input && measure);
    auto shows = [&](const QString& part) {
        const bool ok = QTest::qWaitFor([&] { return measure->text().contains(part); }, 10'000);
        if (!ok) qWarning("the input says: %s", qPrintable(measure->text()));
        return ok;
    };
    // (Untranslated, as tests run: "4 token(s)"; the English translation says "4 tokens".)
    const QRegularExpression plain(QStringLiteral("^[1-9][0-9]* token(s|\\(s\\))?$"));

    input->setPlainText(QStringLiteral("Once upon a time"));
    QVERIFY2(QTest::qWaitFor([&] { return plain.match(measure->text()).hasMatch(); }, 10'000),
             qPrintable(measure->text()));
    window.resize(1400, 900);
    QCoreApplication::processEvents();
    const int measureHeight = measure->height();
    const int chatHeight = window.findChild<ChatView*>(QStringLiteral("chatView"))->height();
    QVERIFY(measureHeight > 0 && measureHeight < 2 * measure->fontMetrics().height());
    QString huge;
    for (int i = 0; i < 120; ++i) huge += QStringLiteral("The dog ran to the big park. ");
    input->setPlainText(huge.trimmed());
    QVERIFY(shows(QStringLiteral("too long")));
    QVERIFY(shows(QStringLiteral("the context holds 512")));
    // The long warning takes the one line the count took: the chat above does not move. In a
    // narrow window it is cut short on screen, and its tooltip says all of it.
    auto* chatView = window.findChild<ChatView*>(QStringLiteral("chatView"));
    QCoreApplication::processEvents();
    QCOMPARE(measure->height(), measureHeight);
    QCOMPARE(chatView->height(), chatHeight);
    window.resize(760, window.height());
    QVERIFY(QTest::qWaitFor([&] { return measure->isElided(); }, 5'000));
    QCOMPARE(measure->height(), measureHeight);
    const QPoint inside = measure->rect().center();
    QHelpEvent help(QEvent::ToolTip, inside, measure->mapToGlobal(inside));
    QCoreApplication::sendEvent(measure, &help);
    QCOMPARE(QToolTip::text(), measure->text());
    input->clear();
    QVERIFY(measure->text().isEmpty());

    // A reply that fills the context, with Stop as the policy: the next message has no room, and
    // the label says that dropping the oldest turns would make it.
    if (drop->isChecked()) drop->trigger();
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(0);
    input->setPlainText(QStringLiteral("Once upon a time"));
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
    QVERIFY(measure->text().isEmpty());
    input->setPlainText(QStringLiteral("The cat"));
    QVERIFY(shows(QStringLiteral("no room")));
    QVERIFY(shows(QStringLiteral("Drop the Oldest Turns")));
    drop->trigger();  // dropping: it fits, and the label says what it will leave out
    QVERIFY(shows(QStringLiteral("leaves the oldest 2 message")));
    drop->trigger();

    // Editing the first message: it replaces the whole conversation, so it fits.
    emit window.findChild<ChatView*>(QStringLiteral("chatView"))->editRequested(0);
    QCOMPARE(input->toPlainText(), QStringLiteral("Once upon a time"));
    QVERIFY2(QTest::qWaitFor([&] { return plain.match(measure->text()).hasMatch(); }, 10'000),
             qPrintable(measure->text()));
}

// While a reply streams, the status bar counts the token just sampled, which enters the KV cache
// at the next step. Once the reply ends (stopped, or at its token limit) that token is not in the
// cache, so the bar says what the cache holds: the figure the worker sends the KV panel.
void TestMainWindow::afterAReplyTheStatusBarCountsWhatTheCacheHolds() {
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
    window.show();
    QVERIFY(loadModel(window));
    int cached = -1;
    connect(window.worker(), &InferenceWorker::kvStatsChanged, &window, [&](const KvSnapshot& snapshot) {
        for (const lantern::KvSequenceStats& seq : snapshot.stats.sequences)
            if (seq.id == snapshot.active_sequence) cached = static_cast<int>(seq.tokens);
    });
    std::atomic<int> stopAfter{5}, streamed{0};
    connect(
        window.worker(), &InferenceWorker::tokensGenerated, window.worker(),
        [&](const TokenBatch& batch) {
            streamed += static_cast<int>(batch.tokens.size());
            if (stopAfter > 0 && streamed >= stopAfter)
                window.worker()->requestStop();  // as the Stop button does
        },
        Qt::DirectConnection);
    auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
    auto* context = window.findChild<QLabel*>(QStringLiteral("contextLabel"));
    QVERIFY(input && context);
    window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(12);
    window.worker()->setTokenBatchMs(0);  // every token sent on its own, so Stop lands mid-reply
    const auto expected = [&] { return QStringLiteral("Context %1 / 512").arg(cached); };

    QVERIFY(sendAndWait(window, QStringLiteral("Once upon a time")));
    QVERIFY2(streamed >= 5 && streamed < 12, qPrintable(QString::number(streamed)));  // it was stopped
    QVERIFY(cached > 0);
    QVERIFY2(context->text() == expected(),
             qPrintable(context->text() + QStringLiteral(" / cache: ") + QString::number(cached)));

    // A reply that ends at its token limit, after the stopped one: the stopped reply's last token
    // went in with this turn's prompt, and this reply's last one is again left for the next turn.
    const int before = cached;
    stopAfter = 0;
    streamed = 0;
    QVERIFY(sendAndWait(window, QStringLiteral("The dog")));
    QVERIFY(cached > before + streamed - 1);
    QVERIFY2(context->text() == expected(),
             qPrintable(context->text() + QStringLiteral(" / cache: ") + QString::number(cached)));
}

// The app killed while a turn's prompt was read (before its first token) leaves that turn's
// messages in the store after those it was to replace. Opened again, the conversation is as it
// was before the turn: an edit is back in the input, still an edit; a regenerated reply is the
// old one; a plain message stays, and Regenerate answers it. The states are written the way the
// window writes them (a real edit is checked to write its mark while its prompt is read).
void TestMainWindow::aTurnKilledBeforeItBeganIsUndoneWhenReopened() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
    const QString question = QStringLiteral("The dog ran to the big park."),
                  answer = QStringLiteral("Lily saw a cat.");
    const QString model = QStringLiteral("stories260K");
    QString edit;  // two prefill chunks (one progress report): the edit's prompt is read in steps
    for (int i = 0; i < 30; ++i) edit += QStringLiteral("The cat sat in the sun. ");
    edit = edit.trimmed();
    qint64 edited = -1, regenerated = -1, plain = -1, question0 = -1;
    {
        ConversationStore store(db);
        edited = store.createConversation(QStringLiteral("edit"));
        question0 = store.appendMessage(edited, QStringLiteral("user"), question);
        store.appendMessage(edited, QStringLiteral("assistant"), answer, true, {}, model);
        store.appendMessage(edited, QStringLiteral("user"), edit, true, {}, {}, question0);
        store.appendMessage(edited, QStringLiteral("assistant"), {}, false, {}, model);

        regenerated = store.createConversation(QStringLiteral("regenerate"));
        store.appendMessage(regenerated, QStringLiteral("user"), question);
        const qint64 reply =
            store.appendMessage(regenerated, QStringLiteral("assistant"), answer, true, {}, model);
        store.appendMessage(regenerated, QStringLiteral("assistant"), {}, false, {}, model, reply);

        plain = store.createConversation(QStringLiteral("plain"));
        // It names a message that is not in the conversation: nothing to undo, only the mark goes.
        store.appendMessage(plain, QStringLiteral("user"), question, true, {}, {}, 999'999);
        store.appendMessage(plain, QStringLiteral("assistant"), answer, true, {}, model);
        store.appendMessage(plain, QStringLiteral("user"), QStringLiteral("The cat"));
        store.appendMessage(plain, QStringLiteral("assistant"), {}, false, {}, model);
    }
    auto stored = [&](qint64 conversation) {
        QStringList out;
        for (const StoredMessage& m : ConversationStore(db).messages(conversation))
            out << m.role + QLatin1Char(':') + m.content +
                       (m.replaces >= 0 ? QStringLiteral(" replaces %1").arg(m.replaces) : QString());
        return out;
    };
    auto texts = [](MainWindow& window) {
        const QAbstractItemModel* chat = window.findChild<ChatView*>(QStringLiteral("chatView"))->model();
        QStringList out;
        for (int row = 0; row < chat->rowCount(); ++row)
            out << chat->index(row, 0).data(ChatModel::TextRole).toString();
        return out;
    };
    const QStringList before{QStringLiteral("user:") + question, QStringLiteral("assistant:") + answer};

    {  // The edit: back in the input, and sending it replaces the message it was written over.
        preferences::setLastConversation(edited);
        MainWindow window(db);
        window.show();
        auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
        QCOMPARE(texts(window), (QStringList{question, answer}));
        QCOMPARE(input->toPlainText(), edit);
        QVERIFY2(window.statusBar()->currentMessage().startsWith(QStringLiteral("Editing a message")),
                 qPrintable(window.statusBar()->currentMessage()));
        QCOMPARE(stored(edited), before);
        QVERIFY(loadModel(window));
        window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(8);
        QStringList whileRead;
        connect(window.worker(), &InferenceWorker::promptProgress, &window, [&](quint32, quint32) {
            if (whileRead.isEmpty()) whileRead = stored(edited);
        });
        QTest::keyClick(input, Qt::Key_Return);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
        // While the prompt was read, the edit (shown, a new version) named the message it replaces
        // (a kill then is undone).
        QVERIFY2(whileRead.size() == 2 &&
                     whileRead[0] == QStringLiteral("user:%1 replaces %2").arg(edit).arg(question0),
                 qPrintable(whileRead.join(QLatin1Char('|'))));
        const QStringList after = stored(edited);
        QCOMPARE(after.size(), 2);
        QCOMPARE(after[0], QStringLiteral("user:") + edit);
        QVERIFY2(after[1].startsWith(QStringLiteral("assistant:")) &&
                     !after[1].contains(QStringLiteral(" replaces ")),
                 qPrintable(after[1]));
        QCOMPARE(texts(window).size(), 2);
        QVERIFY(input->toPlainText().isEmpty());
        // What it replaced is its earlier version.
        QCOMPARE(ConversationStore(db).allMessages(edited).size(), 4);
        QCOMPARE(ConversationStore(db).messages(edited).first().version, 2);
    }
    {  // The regenerate: the reply it was to replace is back, and nothing is being edited.
        preferences::setLastConversation(regenerated);
        MainWindow window(db);
        QCOMPARE(texts(window), (QStringList{question, answer}));
        QCOMPARE(stored(regenerated), before);
        QVERIFY(window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"))->toPlainText().isEmpty());
        QVERIFY(!window.statusBar()->currentMessage().startsWith(QStringLiteral("Editing a message")));
    }
    {  // The plain message: it stays, its empty reply goes, and Regenerate gives it one.
        preferences::setLastConversation(plain);
        MainWindow window(db);
        window.show();
        QCOMPARE(texts(window), (QStringList{question, answer, QStringLiteral("The cat")}));
        QCOMPARE(stored(plain), before + QStringList{QStringLiteral("user:The cat")});
        QVERIFY(loadModel(window));
        window.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(8);
        auto* regenerate = window.findChild<QPushButton*>(QStringLiteral("regenerateButton"));
        QVERIFY(regenerate->isEnabled());
        QTest::mouseClick(regenerate, Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, kTurnTimeoutMs));
        const QStringList after = stored(plain);
        QCOMPARE(after.size(), 4);
        QCOMPARE(after.mid(0, 3), before + QStringList{QStringLiteral("user:The cat")});
        QVERIFY2(after[3].size() > QStringLiteral("assistant:").size(), qPrintable(after[3]));
        QVERIFY(ConversationStore(db).messages(plain).last().complete);
    }
}
