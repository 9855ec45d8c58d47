// The app on a remote engine: its OpenAI client (SSE reading, URLs, server kinds, request fields)
// and the whole remote backend against a real lantern-server started by the test with stories260K
// — streaming, regenerate, continue, stop that closes the stream, a wrong key, an unreachable or
// foreign server, the server killed mid-reply (the partial reply kept and marked), the KV panel
// fed by /metrics, and a conversation begun on the local model and continued remotely.
#include <QApplication>
#include <QComboBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include "MainWindow.h"
#include "chat/ChatModel.h"
#include "chat/ConversationStore.h"
#include "chat/ReplyDetails.h"
#include "panels/PanelDocks.h"
#include "panels/RemoteKvPanel.h"
#include "remote/OpenAiChat.h"
#include "remote/RemoteEndpoint.h"
#include "remote/RemoteEndpointStore.h"
#include "remote/RemoteEnginesDialog.h"
#include "remote/SseStream.h"
#include "test_support.h"
#include "worker/InferenceWorker.h"

namespace {

constexpr int kTurnTimeoutMs = 300'000;
const QString kKey = QStringLiteral("remote-test-key");

// lantern-server on stories260K, on a free port, with an API key.
class ServerProcess {
public:
    bool start() {
        process_.setProcessChannelMode(QProcess::SeparateChannels);
        process_.start(
            QStringLiteral(LANTERN_SERVER_PATH),
            {QStringLiteral("--model"),
             QString::fromStdString(lantern::test::shared_path("models/stories260K.gguf")),
             QStringLiteral("--port"), QStringLiteral("0"), QStringLiteral("--ctx"), QStringLiteral("512"),
             QStringLiteral("--parallel"), QStringLiteral("2"), QStringLiteral("--api-key"), kKey});
        if (!process_.waitForStarted()) return false;
        const QRegularExpression listening(QStringLiteral("listening on (http://127\\.0\\.0\\.1:\\d+/v1)"));
        QRegularExpressionMatch m;
        (void)QTest::qWaitFor(
            [&] {
                process_.waitForReadyRead(100);
                log_ += QString::fromUtf8(process_.readAllStandardError());
                m = listening.match(log_);
                return m.hasMatch() || process_.state() == QProcess::NotRunning;
            },
            120000);
        url_ = m.captured(1);
        return m.hasMatch();
    }
    ~ServerProcess() {
        if (process_.state() != QProcess::NotRunning) {
            process_.kill();
            process_.waitForFinished(10000);
        }
    }
    QString url() const { return url_; }
    void kill() {
        process_.kill();
        process_.waitForFinished(10000);
    }
    QString log() {
        log_ += QString::fromUtf8(process_.readAllStandardError());
        return log_;
    }

private:
    QProcess process_;
    QString url_, log_;
};

RemoteEndpoint endpointOf(const ServerProcess& server, const QString& key = kKey) {
    return {.name = QStringLiteral("test server"), .baseUrl = server.url(), .model = {}, .apiKey = key};
}

// GET `url` (with the test key); the body, or "" after `timeoutMs`.
QByteArray fetch(const QString& url) {
    QNetworkAccessManager network;
    QNetworkRequest r{QUrl(url)};
    r.setRawHeader("Authorization", "Bearer " + kKey.toUtf8());
    QNetworkReply* reply = network.get(r);
    QSignalSpy done(reply, &QNetworkReply::finished);
    done.wait(10000);
    const QByteArray body = reply->readAll();
    reply->deleteLater();
    return body;
}

// A server that answers every request with `response` (a whole HTTP response) and closes.
class FixedServer : public QTcpServer {
public:
    explicit FixedServer(QByteArray response) : response_(std::move(response)) {
        connect(this, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* s = nextPendingConnection()) {
                connect(s, &QTcpSocket::readyRead, s, [this, s] {
                    s->readAll();
                    s->write(response_);
                    s->disconnectFromHost();
                });
            }
        });
        listen(QHostAddress::LocalHost);
    }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1/v1").arg(serverPort()); }

private:
    QByteArray response_;
};

// The worker's results of one remote turn.
struct Turn {
    QString text;
    int tokens = 0;
    lantern::TurnStats stats;
    bool finished = false;
    QString failure, cutOff;
    void watch(InferenceWorker& worker, QObject* context) {
        QObject::connect(&worker, &InferenceWorker::tokensGenerated, context, [this](const TokenBatch& b) {
            text += b.text;
            tokens += static_cast<int>(b.tokens.size());
        });
        QObject::connect(&worker, &InferenceWorker::turnFinished, context,
                         [this](const lantern::TurnStats& s) {
                             stats = s;
                             finished = true;
                         });
        QObject::connect(&worker, &InferenceWorker::errorOccurred, context,
                         [this](const QString& m) { failure = m; });
        QObject::connect(&worker, &InferenceWorker::replyCutOff, context,
                         [this](const QString& m) { cutOff = m; });
    }
    bool wait() {
        return QTest::qWaitFor([this] { return finished || !failure.isEmpty() || !cutOff.isEmpty(); },
                               kTurnTimeoutMs);
    }
    void reset() { *this = Turn(); }
};

bool connectWorker(InferenceWorker& worker, const RemoteEndpoint& endpoint, RemoteReport* report,
                   QString* failure) {
    QSignalSpy connected(&worker, &InferenceWorker::remoteConnected);
    QSignalSpy failed(&worker, &InferenceWorker::remoteFailed);
    worker.connectRemote(endpoint);
    (void)QTest::qWaitFor([&] { return !connected.isEmpty() || !failed.isEmpty(); }, 30000);
    if (!failed.isEmpty() && failure != nullptr) *failure = failed.first().first().toString();
    if (!connected.isEmpty() && report != nullptr) *report = connected.first().first().value<RemoteReport>();
    return !connected.isEmpty();
}

lantern::SamplingSettings greedy(int maxTokens) {
    lantern::SamplingSettings s;
    s.temperature = 0;
    s.max_new_tokens = maxTokens;
    s.seed = 7;
    return s;
}

}  // namespace

class TestRemoteChat : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        const QString failed = lantern::test::isolate_app_settings(QStringLiteral("LanternRemoteTest"));
        QVERIFY2(failed.isEmpty(), qPrintable(failed));
    }

    void serverSentEventsAreReadWhereverTheBytesAreCut() {
        const QByteArray stream =
            ": keep-alive comment\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\ndata:two\ndata: lines\n\n"
            "id: 3\rdata: cr\r\rdata: [DONE]\n\n";
        const QList<QByteArray> want{"{\"a\":1}", "two\nlines", "cr", "[DONE]"};
        SseStream whole;
        QCOMPARE(whole.feed(stream), want);
        QVERIFY(!whole.pending());
        // Byte by byte: the same events, each once it is complete.
        SseStream bytes;
        QList<QByteArray> got;
        for (const char c : stream) got += bytes.feed(QByteArray(1, c));
        QCOMPARE(got, want);
        // A stream cut inside an event holds it back; an event past the bound fails the stream.
        SseStream cut;
        QVERIFY(cut.feed("data: half").isEmpty());
        QVERIFY(cut.pending());
        SseStream huge;
        huge.feed("data: " + QByteArray(SseStream::kMaxEventBytes, 'x'));
        QVERIFY(huge.failed());
    }

    void addressesAndServerKindsDecideTheRequest() {
        QCOMPARE(remote::apiRoot(QStringLiteral("http://gpu-box:8000")).toString(),
                 QStringLiteral("http://gpu-box:8000/v1/"));
        QCOMPARE(remote::apiRoot(QStringLiteral("gpu-box:8000/v1/")).toString(),
                 QStringLiteral("http://gpu-box:8000/v1/"));
        QCOMPARE(
            remote::apiUrl(QStringLiteral("https://h.example/llm/v1"), QStringLiteral("chat/completions"))
                .toString(),
            QStringLiteral("https://h.example/llm/v1/chat/completions"));
        QCOMPARE(remote::metricsUrl(QStringLiteral("http://gpu-box:8000/v1")).toString(),
                 QStringLiteral("http://gpu-box:8000/metrics"));
        QString error;
        QVERIFY(!remote::apiRoot(QStringLiteral("ftp://h/v1"), &error).isValid());
        QVERIFY(error.contains(QStringLiteral("http://")));
        QCOMPARE(remote::serverKindFromOwner(QStringLiteral("vllm")), remote::ServerKind::Vllm);
        QCOMPARE(remote::serverKindFromOwner(QStringLiteral("llamacpp")), remote::ServerKind::LlamaCpp);
        QCOMPARE(remote::serverKindFromOwner(QStringLiteral("lantern")), remote::ServerKind::Lantern);
        QCOMPARE(remote::serverKindFromOwner(QStringLiteral("library")), remote::ServerKind::Ollama);
        QCOMPARE(remote::serverKindFromOwner(QStringLiteral("openai")), remote::ServerKind::Other);

        lantern::SamplingSettings s;
        s.top_k = 20;
        s.min_p = 0.1f;
        s.repeat_penalty = 1.2f;
        s.seed = 5;
        s.stop = {"END"};
        const QVector<remote::Message> messages{{QStringLiteral("user"), QStringLiteral("Hi")},
                                                {QStringLiteral("assistant"), QStringLiteral("Hel")}};
        const auto body = [&](remote::ServerKind kind, bool continuing) {
            return QJsonDocument::fromJson(
                       remote::chatRequestBody(kind, QStringLiteral("m"), messages, s, continuing))
                .object();
        };
        const QJsonObject vllm = body(remote::ServerKind::Vllm, true);
        QCOMPARE(vllm.value(QStringLiteral("top_k")).toInt(), 20);
        QVERIFY(vllm.contains(QStringLiteral("repetition_penalty")));
        QVERIFY(!vllm.contains(QStringLiteral("repeat_penalty")));
        QCOMPARE(vllm.value(QStringLiteral("continue_final_message")).toBool(), true);
        QCOMPARE(vllm.value(QStringLiteral("add_generation_prompt")).toBool(true), false);
        QCOMPARE(vllm.value(QStringLiteral("stream")).toBool(), true);
        QCOMPARE(vllm.value(QStringLiteral("stop")).toArray().first().toString(), QStringLiteral("END"));
        const QJsonObject lantern = body(remote::ServerKind::Lantern, false);
        QVERIFY(lantern.contains(QStringLiteral("repeat_penalty")));
        QVERIFY(lantern.contains(QStringLiteral("repeat_last_n")));
        QVERIFY(!lantern.contains(QStringLiteral("continue_final_message")));
        const QJsonObject ollama = body(remote::ServerKind::Ollama, true);
        for (const char* field :
             {"top_k", "min_p", "repeat_penalty", "repetition_penalty", "continue_final_message"})
            QVERIFY2(!ollama.contains(QLatin1String(field)), field);
        QCOMPARE(ollama.value(QStringLiteral("messages"))
                     .toArray()
                     .last()
                     .toObject()
                     .value(QStringLiteral("role")),
                 QJsonValue(QStringLiteral("assistant")));  // continued as a trailing assistant message
        QCOMPARE(remote::continueStyleFor(remote::ServerKind::Other), remote::ContinueStyle::None);
        // Errors in the shapes servers send them.
        QCOMPARE(remote::errorMessageFrom(R"({"error": {"message": "bad key", "type": "x"}})"),
                 QStringLiteral("bad key"));
        QCOMPARE(remote::errorMessageFrom(R"({"detail": "Not Found"})"), QStringLiteral("Not Found"));
        QCOMPARE(remote::errorMessageFrom(R"({"error": "model not found"})"),
                 QStringLiteral("model not found"));
    }

    void aRemoteReplyStreamsRegeneratesAndContinues() {
        ServerProcess server;
        QVERIFY2(server.start(), qPrintable(server.log()));
        InferenceWorker worker;
        RemoteReport report;
        QString failure;
        QVERIFY2(connectWorker(worker, endpointOf(server), &report, &failure), qPrintable(failure));
        QCOMPARE(report.kind, remote::ServerKind::Lantern);
        QCOMPARE(report.model, QStringLiteral("stories260K"));
        QCOMPARE(report.contextLength, 512u);

        Turn turn;
        turn.watch(worker, this);
        QSignalSpy figures(&worker, &InferenceWorker::remoteTurnFigures);
        worker.setSamplingSettings(greedy(24));
        // Long enough to fill whole KV blocks (16 tokens), which the server's prefix cache keeps.
        worker.send(
            QStringLiteral("Once upon a time, there was a little girl named Lily. She loved to play outside "
                           "in the sun with her dog. One day, she saw a big red ball in the park."));
        QVERIFY(turn.wait());
        QVERIFY2(turn.finished, qPrintable(turn.failure + turn.cutOff));
        QVERIFY(!turn.text.isEmpty());
        QCOMPARE(turn.stats.stop_reason, lantern::StopReason::MaxTokens);
        QCOMPARE(turn.stats.generated_tokens, 24u);  // the server's usage
        QCOMPARE(turn.tokens, 24);                   // one streamed chunk per token
        QVERIFY(turn.stats.prompt_tokens > 0);
        QVERIFY(turn.stats.ttft_ms > 0);
        QVERIFY(turn.stats.can_continue);
        QCOMPARE(figures.size(), 1);
        QVERIFY(figures.first().first().value<RemoteTurnFigures>().timings.any);  // lantern-server's timings
        const QString first = turn.text;

        // Greedy again: the same reply, and the prompt now comes from the server's prefix cache.
        turn.reset();
        worker.regenerate();
        QVERIFY(turn.wait());
        QVERIFY(turn.finished);
        QCOMPARE(turn.text, first);
        QVERIFY2(turn.stats.reused_tokens > 0, "the resent prompt is found in the server's prefix cache");

        // Continue: the server goes on from the reply (continue_final_message), with more text.
        turn.reset();
        worker.continueReply();
        QVERIFY(turn.wait());
        QVERIFY2(turn.finished, qPrintable(turn.failure));
        QVERIFY(!turn.text.isEmpty());
        QCOMPARE(turn.stats.prompt_tokens > 24u, true);
        QVERIFY2(server.log().contains(QStringLiteral("POST /v1/chat/completions")),
                 qPrintable(server.log()));
    }

    void stopClosesTheStreamAndKeepsWhatCame() {
        ServerProcess server;
        QVERIFY2(server.start(), qPrintable(server.log()));
        InferenceWorker worker;
        QVERIFY(connectWorker(worker, endpointOf(server), nullptr, nullptr));
        Turn turn;
        turn.watch(worker, this);
        lantern::SamplingSettings s = greedy(0);  // no limit but the context
        s.ignore_eos = false;
        s.temperature = 1.0f;
        worker.setSamplingSettings(s);
        worker.send(QStringLiteral("Once upon a time"));
        QVERIFY(QTest::qWaitFor([&] { return turn.tokens >= 3 || turn.finished; }, kTurnTimeoutMs));
        worker.requestStop();
        QVERIFY(turn.wait());
        QVERIFY(turn.finished);
        QCOMPARE(turn.stats.stop_reason, lantern::StopReason::User);
        QVERIFY(turn.stats.generated_tokens >= 3);
        // The server saw the client leave and stopped writing the reply.
        QVERIFY2(QTest::qWaitFor(
                     [&] {
                         return fetch(server.url().chopped(3) + QStringLiteral("/metrics"))
                             .contains("lantern_replies_abandoned_total 1");
                     },
                     20000),
                 fetch(server.url().chopped(3) + QStringLiteral("/metrics")).constData());
    }

    void connectionFailuresSayWhatIsWrong() {
        ServerProcess server;
        QVERIFY2(server.start(), qPrintable(server.log()));
        InferenceWorker worker;
        QString failure;
        QVERIFY(!connectWorker(worker, endpointOf(server, QStringLiteral("wrong")), nullptr, &failure));
        QVERIFY2(failure.contains(QStringLiteral("refused the API key (401)")), qPrintable(failure));
        QVERIFY(!connectWorker(worker, endpointOf(server, QString()), nullptr, &failure));
        QVERIFY2(failure.contains(QStringLiteral("needs an API key (401)")), qPrintable(failure));
        RemoteEndpoint wrongModel = endpointOf(server);
        wrongModel.model = QStringLiteral("llama-70b");
        QVERIFY(!connectWorker(worker, wrongModel, nullptr, &failure));
        QVERIFY2(failure.contains(QStringLiteral("does not serve “llama-70b”; it serves: stories260K")),
                 qPrintable(failure));

        // Nothing listening; a web server that is not an OpenAI API; one that answers HTML.
        QTcpServer closed;
        QVERIFY(closed.listen(QHostAddress::LocalHost));
        const quint16 port = closed.serverPort();
        closed.close();
        QVERIFY(!connectWorker(worker,
                               {.name = {}, .baseUrl = QStringLiteral("http://127.0.0.1:%1").arg(port)},
                               nullptr, &failure));
        QVERIFY2(failure.contains(QStringLiteral("connection refused")), qPrintable(failure));
        FixedServer notFound(
            "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nNot Found");
        QVERIFY(!connectWorker(worker, {.name = {}, .baseUrl = notFound.url()}, nullptr, &failure));
        QVERIFY2(failure.contains(QStringLiteral("not an OpenAI-compatible API")), qPrintable(failure));
        FixedServer html(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: "
            "close\r\n\r\n<html></html>");
        QVERIFY(!connectWorker(worker, {.name = {}, .baseUrl = html.url()}, nullptr, &failure));
        QVERIFY2(failure.contains(QStringLiteral("not a model list")), qPrintable(failure));
        QVERIFY(
            !connectWorker(worker, {.name = {}, .baseUrl = QStringLiteral("ftp://x")}, nullptr, &failure));
        QVERIFY2(failure.contains(QStringLiteral("http://")), qPrintable(failure));
    }

    void theKvPanelIsFedByTheServersMetrics() {
        ServerProcess server;
        QVERIFY2(server.start(), qPrintable(server.log()));
        QTemporaryDir dir;
        MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
        window.show();
        window.openRemote(endpointOf(server));
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, 30000));
        RemoteKvPanel* kv = window.panels()->remoteKv();
        QVERIFY(QTest::qWaitFor(
            [&] { return kv->headline().contains(QStringLiteral("lantern-server's metrics")); }, 10000));
        QVERIFY2(kv->valueText(QStringLiteral("blocks")).contains(QStringLiteral(" / ")),
                 qPrintable(kv->valueText(QStringLiteral("blocks"))));
        QCOMPARE(kv->valueText(QStringLiteral("tokens")), QStringLiteral("not exposed by this server"));
        QVERIFY(window.windowTitle().contains(QStringLiteral("stories260K on 127.0.0.1")));
    }

    void theRemoteEnginesDialogTestsSavesAndConnects() {
        ServerProcess server;
        QVERIFY2(server.start(), qPrintable(server.log()));
        QTemporaryDir dir;
        MainWindow window(dir.filePath(QStringLiteral("chat.sqlite")));
        window.show();
        window.showRemoteEnginesDialog();
        auto* dialog = window.findChild<RemoteEnginesDialog*>(QStringLiteral("remoteEnginesDialog"));
        QVERIFY(dialog != nullptr);
        dialog->findChild<QLineEdit*>(QStringLiteral("remoteName"))->setText(QStringLiteral("Test box"));
        dialog->findChild<QLineEdit*>(QStringLiteral("remoteUrl"))->setText(server.url());
        auto* key = dialog->findChild<QLineEdit*>(QStringLiteral("remoteKey"));
        QCOMPARE(key->echoMode(), QLineEdit::Password);
        key->setText(QStringLiteral("wrong"));
        QSignalSpy tested(dialog, &RemoteEnginesDialog::tested);
        QTest::mouseClick(dialog->findChild<QPushButton*>(QStringLiteral("remoteTest")), Qt::LeftButton);
        QVERIFY(tested.wait(30000));
        QCOMPARE(tested.last().first().toBool(), false);
        QVERIFY2(dialog->resultText().contains(QStringLiteral("refused the API key (401)")),
                 qPrintable(dialog->resultText()));
        key->setText(kKey);
        QTest::mouseClick(dialog->findChild<QPushButton*>(QStringLiteral("remoteFetch")), Qt::LeftButton);
        QVERIFY(tested.wait(30000));
        QCOMPARE(tested.last().first().toBool(), true);
        QVERIFY2(dialog->resultText().contains(QStringLiteral("lantern-server serves 1 model")),
                 qPrintable(dialog->resultText()));
        QCOMPARE(dialog->findChild<QComboBox*>(QStringLiteral("remoteModel"))->currentText(),
                 QStringLiteral("stories260K"));
        // Connect: saved (the key in no setting) and the chat runs there.
        QTest::mouseClick(dialog->findChild<QPushButton*>(QStringLiteral("remoteConnect")), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, 30000));
        const QList<RemoteEndpoint> saved = remote_endpoints::load();
        QCOMPARE(saved.size(), 1);
        QCOMPARE(saved.first().name, QStringLiteral("Test box"));
        QCOMPARE(saved.first().model, QStringLiteral("stories260K"));
        QSettings settings;
        for (const QString& k : settings.allKeys())
            QVERIFY2(!settings.value(k).toString().contains(kKey), qPrintable(k));
        QCOMPARE(remote_endpoints::indexOfUrl(saved, server.url() + QStringLiteral("/")), 0);
        remote_endpoints::save({});
    }

    void aServerKilledMidReplyLeavesThePartialReplyMarked() {
        ServerProcess server;
        QVERIFY2(server.start(), qPrintable(server.log()));
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
        MainWindow window(db);
        window.show();
        window.openRemote(endpointOf(server));
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, 30000));
        lantern::SamplingSettings s = greedy(0);
        s.temperature = 1.0f;
        window.worker()->setSamplingSettings(s);
        int tokens = 0;
        connect(window.worker(), &InferenceWorker::tokensGenerated, this,
                [&](const TokenBatch& b) { tokens += static_cast<int>(b.tokens.size()); });
        QSignalSpy cutOff(window.worker(), &InferenceWorker::replyCutOff);
        // The failure is said in a message box too: close it when it comes.
        QTimer closer;
        connect(&closer, &QTimer::timeout, this, [] {
            if (QWidget* modal = QApplication::activeModalWidget()) modal->close();
        });
        closer.start(50);
        auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
        QTest::keyClicks(input, QStringLiteral("Tell me a story"));
        QTest::keyClick(input, Qt::Key_Return);
        QVERIFY(QTest::qWaitFor([&] { return tokens >= 3; }, kTurnTimeoutMs));
        server.kill();
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, 30000));
        QCOMPARE(cutOff.size(), 1);
        QVERIFY2(cutOff.first().first().toString().contains(QStringLiteral("kept")),
                 qPrintable(cutOff.first().first().toString()));
        // On screen and in the store: the message and the reply as far as it came, marked cut off.
        const ConversationStore store(db);
        const QVector<ConversationSummary> conversations = store.conversations();
        QCOMPARE(conversations.size(), 1);
        const QVector<StoredMessage> messages = store.messages(conversations.first().id);
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[0].content, QStringLiteral("Tell me a story"));
        QVERIFY(!messages[1].content.isEmpty());
        QVERIFY(!messages[1].complete);
        QVERIFY2(reply_details::display(messages[1].details)
                     .contains(QStringLiteral("connection to the server was lost")),
                 qPrintable(reply_details::display(messages[1].details)));
    }

    void aConversationBegunLocallyGoesOnRemotely() {
        ServerProcess server;
        QVERIFY2(server.start(), qPrintable(server.log()));
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("chat.sqlite"));
        MainWindow window(db);
        window.show();
        window.openModel(QString::fromStdString(lantern::test::shared_path("models/stories260K.gguf")));
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, 600000));
        window.worker()->setSamplingSettings(greedy(16));
        // (Counted, not waited for: a remote reply can end before a wait() would begin — the UI
        // thread is niced on a CPU device — and QSignalSpy::wait counts only what comes during it.)
        QSignalSpy finished(window.worker(), &InferenceWorker::turnFinished);
        auto* input = window.findChild<QPlainTextEdit*>(QStringLiteral("messageInput"));
        QTest::keyClicks(input, QStringLiteral("Once upon a time"));
        QTest::keyClick(input, Qt::Key_Return);
        QVERIFY(QTest::qWaitFor([&] { return finished.size() == 1; }, kTurnTimeoutMs));
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, 10000));
        const auto localStats = finished.first().first().value<lantern::TurnStats>();

        window.openRemote(endpointOf(server));
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, 30000));
        QVERIFY(window.windowTitle().contains(QStringLiteral("on 127.0.0.1")));
        QTest::keyClicks(input, QStringLiteral("Then"));
        QTest::keyClick(input, Qt::Key_Return);
        QVERIFY(QTest::qWaitFor([&] { return finished.size() == 2; }, kTurnTimeoutMs));
        QVERIFY(QTest::qWaitFor([&] { return window.state() == MainWindow::State::Ready; }, 10000));
        const auto remoteStats = finished.last().first().value<lantern::TurnStats>();
        // The server was sent the whole conversation: more prompt than the first turn's prompt and reply.
        QVERIFY2(remoteStats.prompt_tokens > localStats.prompt_tokens + localStats.generated_tokens,
                 qPrintable(QStringLiteral("%1 vs %2 + %3")
                                .arg(remoteStats.prompt_tokens)
                                .arg(localStats.prompt_tokens)
                                .arg(localStats.generated_tokens)));
        const ConversationStore store(db);
        const QVector<StoredMessage> messages = store.messages(store.conversations().first().id);
        QCOMPARE(messages.size(), 4);
        QCOMPARE(messages[2].content, QStringLiteral("Then"));
        QVERIFY(!messages[3].content.isEmpty());
        QVERIFY(messages[3].complete);
    }
};

QTEST_MAIN(TestRemoteChat)
#include "test_remote_chat.moc"
