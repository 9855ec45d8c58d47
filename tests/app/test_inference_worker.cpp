// End to end through the app's worker: the real stories260K model loaded by InferenceWorker on its
// own QThread, tokens streamed back by queued signals, sampling settings changed in the middle of a
// reply, and Stop. Missing test data fails (shared_path throws), it never skips.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "test_support.h"
#include "worker/InferenceWorker.h"

namespace {

constexpr int kLoadTimeoutMs = 600'000;
constexpr int kTurnTimeoutMs = 300'000;

struct Reply {
    std::vector<int32_t> tokens;
    QString text;
    lantern::TurnStats stats;
    int batches = 0;
    QString problem;  // what was wrong with the batches, if anything
};

// Collects one turn's queued signals until turnFinished.
Reply collectTurn(QSignalSpy& tokens, QSignalSpy& finished, QSignalSpy& errors) {
    Reply r;
    if (!QTest::qWaitFor([&] { return finished.count() > 0 || errors.count() > 0; }, kTurnTimeoutMs)) {
        qWarning("the turn did not finish in time");
        return r;
    }
    if (errors.count() > 0) qWarning("worker error: %s", qPrintable(errors.first().at(0).toString()));
    for (const QList<QVariant>& args : std::as_const(tokens)) {
        const auto batch = args.at(0).value<TokenBatch>();
        r.text += batch.text;
        r.tokens.insert(r.tokens.end(), batch.tokens.begin(), batch.tokens.end());
        if (batch.stepMs.size() != batch.tokens.size())
            r.problem = QStringLiteral("a batch's steps and tokens differ in number");
        if (batch.empty()) r.problem = QStringLiteral("an empty batch was sent");
        ++r.batches;
    }
    if (finished.count() > 0) r.stats = finished.first().at(0).value<lantern::TurnStats>();
    return r;
}

lantern::SamplingSettings greedy(int maxTokens) {
    lantern::SamplingSettings s;
    s.temperature = 0.0f;
    s.max_new_tokens = maxTokens;
    s.ignore_eos = true;  // a fixed length, so runs can be compared token by token
    s.seed = 1234;
    return s;
}

}  // namespace

class TestInferenceWorker : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void aBrokenFileIsReportedNotFatal();
    void loadsStoriesModelOnTheWorkerThread();
    void streamsTokensByQueuedSignals();
    void regenerateRepeatsAGreedyReply();
    void temperatureChangedMidGenerationAppliesFromTheNextToken();
    void stopEndsTheReplyAtTheNextStep();
    void tokensAreSentInBatchesThatHoldOnlyWhatIsDueSoon();
    void aStepProfileAskedMidReplyTimesASecondStep();
    void nextTurnReusesTheConversationsKvCache();
    void warmUpFollowsTheLoadAndLetsATurnGoFirst();
    void apiServerServesTheModelBesideTheChat();
    void apiServerOnATakenPortFailsClearly();
    void theAppsApiServerTakesAKey();

private:
    Reply run(const QString& prompt, bool regenerate = false);

    QThread thread_;
    InferenceWorker* worker_ = nullptr;
    Reply greedyReply_;
};

void TestInferenceWorker::initTestCase() {
    registerEngineMetaTypes();
    worker_ = new InferenceWorker();
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    thread_.start();
}

void TestInferenceWorker::cleanupTestCase() {
    worker_->requestStop();
    thread_.quit();
    QVERIFY(thread_.wait(60'000));
}

Reply TestInferenceWorker::run(const QString& prompt, bool regenerate) {
    QSignalSpy tokens(worker_, &InferenceWorker::tokensGenerated);
    QSignalSpy finished(worker_, &InferenceWorker::turnFinished);
    QSignalSpy errors(worker_, &InferenceWorker::errorOccurred);
    if (regenerate)
        QMetaObject::invokeMethod(worker_, "regenerate", Qt::QueuedConnection);
    else
        QMetaObject::invokeMethod(worker_, "send", Qt::QueuedConnection, Q_ARG(QString, prompt));
    Reply r = collectTurn(tokens, finished, errors);
    if (errors.count() > 0) r.problem = QStringLiteral("error: ") + errors.first().at(0).toString();
    return r;
}

void TestInferenceWorker::aBrokenFileIsReportedNotFatal() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("broken.gguf"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("GGUF\x03\x00\x00\x00this is not a model", 26);
    f.close();
    QSignalSpy failed(worker_, &InferenceWorker::loadFailed);
    QSignalSpy loaded(worker_, &InferenceWorker::modelLoaded);
    QMetaObject::invokeMethod(worker_, "loadModel", Qt::QueuedConnection, Q_ARG(QString, path),
                              Q_ARG(QString, QString()));
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kLoadTimeoutMs);
    QCOMPARE(loaded.count(), 0);
    QVERIFY2(!failed.first().at(0).toString().isEmpty(), "the user gets a message saying what is wrong");

    // With no model, a request is answered with an error, not a crash.
    QSignalSpy errors(worker_, &InferenceWorker::errorOccurred);
    QMetaObject::invokeMethod(worker_, "send", Qt::QueuedConnection, Q_ARG(QString, QStringLiteral("hello")));
    QTRY_COMPARE_WITH_TIMEOUT(errors.count(), 1, 10'000);
}

void TestInferenceWorker::loadsStoriesModelOnTheWorkerThread() {
    std::string path;
    try {
        path = lantern::test::shared_path("models/stories260K.gguf");
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
    QSignalSpy loaded(worker_, &InferenceWorker::modelLoaded);
    QSignalSpy failed(worker_, &InferenceWorker::loadFailed);
    QSignalSpy kv(worker_, &InferenceWorker::kvStatsChanged);
    QMetaObject::invokeMethod(worker_, "loadModel", Qt::QueuedConnection,
                              Q_ARG(QString, QString::fromStdString(path)), Q_ARG(QString, QString()));
    QVERIFY(QTest::qWaitFor([&] { return loaded.count() + failed.count() > 0; }, kLoadTimeoutMs));
    if (failed.count() > 0)
        QFAIL(qPrintable(QStringLiteral("load failed: ") + failed.first().at(0).toString()));
    const auto model = loaded.first().at(0).value<lantern::ModelInfo>();
    const auto device = loaded.first().at(1).value<lantern::DeviceInfo>();
    const auto report = loaded.first().at(2).value<LoadReport>();
    QCOMPARE(model.n_layers, 5u);
    QCOMPARE(model.dim, 64u);
    QCOMPARE(model.vocab, 512u);
    QVERIFY(!device.name.empty());
    QVERIFY(report.context_length > 0);
    QVERIFY2(!report.chat_template, "stories260K has no chat template: completion mode");
    QTRY_VERIFY_WITH_TIMEOUT(kv.count() > 0, 10'000);
    const auto snapshot = kv.last().at(0).value<KvSnapshot>();
    QVERIFY(snapshot.stats.total_blocks > 0);
    QCOMPARE(static_cast<uint32_t>(snapshot.blocks.size()), snapshot.stats.total_blocks);
}

void TestInferenceWorker::streamsTokensByQueuedSignals() {
    QVERIFY(worker_->setSamplingSettings(greedy(24)));
    worker_->setAttentionLayer(4);
    QSignalSpy attention(worker_, &InferenceWorker::attentionCaptured);
    QSignalSpy kv(worker_, &InferenceWorker::kvStatsChanged);
    QThread* tokenThread = nullptr;
    bool afterFinish = false, finishedYet = false;
    auto probe = connect(
        worker_, &InferenceWorker::tokensGenerated, worker_,
        [&tokenThread, &afterFinish, &finishedYet] {
            tokenThread = QThread::currentThread();
            afterFinish = afterFinish || finishedYet;
        },
        Qt::DirectConnection);
    auto finishProbe = connect(
        worker_, &InferenceWorker::turnFinished, worker_, [&finishedYet] { finishedYet = true; },
        Qt::DirectConnection);
    greedyReply_ = run(QStringLiteral("Once upon a time"));
    disconnect(probe);
    disconnect(finishProbe);
    worker_->setAttentionLayer(-1);
    QVERIFY2(greedyReply_.problem.isEmpty(), qPrintable(greedyReply_.problem));
    QVERIFY2(!afterFinish, "every token is sent before turnFinished");
    QVERIFY(greedyReply_.batches >= 1 && greedyReply_.batches <= 24);

    QCOMPARE(greedyReply_.stats.stop_reason, lantern::StopReason::MaxTokens);
    QCOMPARE(greedyReply_.stats.generated_tokens, 24u);
    QCOMPARE(static_cast<int>(greedyReply_.tokens.size()), 24);
    QVERIFY2(!greedyReply_.text.trimmed().isEmpty(), "the streamed deltas add up to text");
    QVERIFY2(tokenThread == &thread_, "tokens are produced on the worker's thread, not the UI thread");
    QVERIFY(greedyReply_.stats.ttft_ms > 0);
    QCOMPARE(greedyReply_.stats.seed, uint64_t{1234});

    QVERIFY2(attention.count() > 0, "attention of layer 4 was captured and sent");
    const auto snap = attention.last().at(0).value<lantern::AttentionSnapshot>();
    QCOMPARE(snap.layer, 4u);
    QCOMPARE(snap.n_heads, 8u);
    QVERIFY(snap.n_positions > 0);
    QCOMPARE(snap.probs.size(), static_cast<size_t>(snap.n_heads) * snap.n_positions);
    double sum = 0;
    for (uint32_t j = 0; j < snap.n_positions; ++j) sum += snap.probs[j];
    QVERIFY2(std::abs(sum - 1.0) < 1e-3, "each head's attention weights add up to 1");

    QVERIFY(kv.count() > 0);
    const auto kvs = kv.last().at(0).value<KvSnapshot>();
    QVERIFY(kvs.stats.used_blocks > 0);
    QVERIFY(!kvs.stats.sequences.empty());
}

void TestInferenceWorker::regenerateRepeatsAGreedyReply() {
    QVERIFY(!greedyReply_.tokens.empty());
    const Reply again = run({}, true);
    QCOMPARE(again.stats.stop_reason, lantern::StopReason::MaxTokens);
    QCOMPARE(again.tokens, greedyReply_.tokens);
    QCOMPARE(again.text, greedyReply_.text);
}

void TestInferenceWorker::temperatureChangedMidGenerationAppliesFromTheNextToken() {
    QVERIFY(!greedyReply_.tokens.empty());
    QMetaObject::invokeMethod(worker_, "resetConversation", Qt::QueuedConnection);
    QVERIFY(worker_->setSamplingSettings(greedy(24)));

    // After the 5th token (inside the worker's token callback, i.e. mid-generation) the sampler
    // becomes hot and untruncated. The UI does the same from its own thread at any moment.
    lantern::SamplingSettings hot = greedy(24);
    hot.temperature = 1.8f;
    hot.top_k = 0;
    hot.top_p = 1.0f;
    hot.min_p = 0.0f;
    std::atomic<int> seen{0};
    worker_->setTokenBatchMs(0);  // a batch per token, so that the hook runs right after the 5th
    auto changer = connect(
        worker_, &InferenceWorker::tokensGenerated, worker_,
        [this, &seen, hot](const TokenBatch& batch) {
            for (size_t i = 0; i < batch.tokens.size(); ++i)
                if (++seen == 5) worker_->setSamplingSettings(hot);
        },
        Qt::DirectConnection);
    const Reply mixed = run(QStringLiteral("Once upon a time"));
    disconnect(changer);
    worker_->setTokenBatchMs(InferenceWorker::kTokenBatchMs);
    QCOMPARE(mixed.batches, 24);

    QCOMPARE(mixed.stats.stop_reason, lantern::StopReason::MaxTokens);
    QCOMPARE(static_cast<int>(mixed.tokens.size()), 24);
    const std::vector<int32_t> head(mixed.tokens.begin(), mixed.tokens.begin() + 5);
    const std::vector<int32_t> greedyHead(greedyReply_.tokens.begin(), greedyReply_.tokens.begin() + 5);
    QCOMPARE(head, greedyHead);  // before the change: greedy
    QVERIFY2(mixed.tokens != greedyReply_.tokens,
             "after the change the reply is sampled at temperature 1.8, not greedily");
    QCOMPARE(worker_->samplingSettings().temperature, 1.8f);
}

void TestInferenceWorker::stopEndsTheReplyAtTheNextStep() {
    QMetaObject::invokeMethod(worker_, "resetConversation", Qt::QueuedConnection);
    QVERIFY(worker_->setSamplingSettings(greedy(400)));
    // Stop asked for while the tokens still come in batches: the reply ends at the step after
    // the request, with every token generated until then sent.
    std::atomic<int> seen{0}, seenAtStop{0};
    auto stopper = connect(
        worker_, &InferenceWorker::tokensGenerated, worker_,
        [this, &seen, &seenAtStop](const TokenBatch& batch) {
            seen += static_cast<int>(batch.tokens.size());
            if (seenAtStop == 0 && seen >= 8) {
                seenAtStop = seen.load();
                worker_->requestStop();
            }
        },
        Qt::DirectConnection);
    const Reply stopped = run(QStringLiteral("The dog"));
    disconnect(stopper);
    QCOMPARE(stopped.stats.stop_reason, lantern::StopReason::User);
    QVERIFY2(seenAtStop >= 8 && seenAtStop < 400, "the stop came mid-reply");
    QCOMPARE(static_cast<int>(stopped.stats.generated_tokens), seenAtStop.load());
    QCOMPARE(static_cast<int>(stopped.tokens.size()), seenAtStop.load());
}

// The Step Profile panel's request, made from another thread in the middle of a reply (as the UI
// does): two steps are timed and the second's profile arrives with its token's position — per-op
// times of the step that added that token, and the reply itself unchanged by the timing.
void TestInferenceWorker::aStepProfileAskedMidReplyTimesASecondStep() {
    QVERIFY(!greedyReply_.tokens.empty());
    QMetaObject::invokeMethod(worker_, "resetConversation", Qt::QueuedConnection);
    QVERIFY(worker_->setSamplingSettings(greedy(24)));
    QSignalSpy profiled(worker_, &InferenceWorker::stepProfiled);
    std::atomic<int> seen{0};
    std::atomic<quint32> askedAt{0};
    worker_->setTokenBatchMs(0);
    auto asker = connect(
        worker_, &InferenceWorker::tokensGenerated, worker_,
        [this, &seen, &askedAt](const TokenBatch& batch) {
            if (batch.tokens.empty()) return;
            seen += static_cast<int>(batch.tokens.size());
            if (askedAt == 0 && seen >= 5) {
                askedAt = batch.position;
                worker_->requestStepProfile();
            }
        },
        Qt::DirectConnection);
    const Reply reply = run(QStringLiteral("Once upon a time"));
    disconnect(asker);
    worker_->setTokenBatchMs(InferenceWorker::kTokenBatchMs);
    QCOMPARE(reply.tokens,
             std::vector<int32_t>(greedyReply_.tokens.begin(), greedyReply_.tokens.begin() + 24));
    QVERIFY(QTest::qWaitFor([&] { return profiled.count() > 0; }, 10'000));
    QCOMPARE(profiled.count(), 1);
    const auto profile = profiled.first().at(0).value<lantern::StepProfile>();
    const quint32 position = profiled.first().at(1).value<quint32>();
    QCOMPARE(position, askedAt.load() + 2);  // the second step after the request
    QVERIFY2(!profile.ops.empty(), "the timed step has per-op times (lavapipe has timestamps)");
    QVERIFY(profile.gpu_ms > 0);
    if (profile.fused_layers) QCOMPARE(static_cast<int>(profile.fused_ops.size()), 6);
}

// The UI thread is woken once per batch, not once per token: a batch is held only while the next
// token is due within the batch time, and the last one goes out before turnFinished.
void TestInferenceWorker::tokensAreSentInBatchesThatHoldOnlyWhatIsDueSoon() {
    const double b = InferenceWorker::kTokenBatchMs;
    QVERIFY2(InferenceWorker::sendBatchNow(0.0, 2 * b, b), "a slow step's token goes out at once");
    QVERIFY2(!InferenceWorker::sendBatchNow(1.0, 1.0, b), "a fast step's token waits for the next");
    QVERIFY2(InferenceWorker::sendBatchNow(b - 0.5, 1.0, b), "no token waits past the batch time");

    QVERIFY(!greedyReply_.tokens.empty());
    QMetaObject::invokeMethod(worker_, "resetConversation", Qt::QueuedConnection);
    QVERIFY(worker_->setSamplingSettings(greedy(24)));
    worker_->setTokenBatchMs(1e12);  // nothing is due in time: the whole reply is one batch
    const Reply one = run(QStringLiteral("Once upon a time"));
    worker_->setTokenBatchMs(InferenceWorker::kTokenBatchMs);
    QVERIFY2(one.problem.isEmpty(), qPrintable(one.problem));
    QCOMPARE(one.batches, 1);
    QCOMPARE(one.tokens, std::vector<int32_t>(greedyReply_.tokens.begin(), greedyReply_.tokens.begin() + 24));
    QCOMPARE(one.text, greedyReply_.text);
}

void TestInferenceWorker::nextTurnReusesTheConversationsKvCache() {
    QVERIFY(worker_->setSamplingSettings(greedy(8)));
    const Reply second = run(QStringLiteral(" Then the dog"));
    QCOMPARE(second.stats.stop_reason, lantern::StopReason::MaxTokens);
    QVERIFY2(second.stats.reused_tokens > 0, "the previous turn's KV is reused, not recomputed");
    QVERIFY(second.stats.computed_tokens > 0);
}

void TestInferenceWorker::warmUpFollowsTheLoadAndLetsATurnGoFirst() {
    // After a load the worker warms the engine's kernels up (Engine::warm_up), one step shape per
    // queued call. A request queued right behind the load runs after the first shape at most —
    // here it was queued before any, so the whole turn comes before modelWarmedUp.
    const QString path = QString::fromStdString(lantern::test::shared_path("models/stories260K.gguf"));
    QVERIFY(worker_->setSamplingSettings(greedy(8)));
    QStringList order;
    std::mutex orderMutex;
    auto note = [&](const QString& what) {
        std::lock_guard lock(orderMutex);
        order << what;
    };
    const QList<QMetaObject::Connection> probes = {
        connect(
            worker_, &InferenceWorker::modelLoaded, worker_, [&] { note(QStringLiteral("loaded")); },
            Qt::DirectConnection),
        connect(
            worker_, &InferenceWorker::turnFinished, worker_, [&] { note(QStringLiteral("turn")); },
            Qt::DirectConnection),
        connect(
            worker_, &InferenceWorker::modelWarmedUp, worker_, [&] { note(QStringLiteral("warm")); },
            Qt::DirectConnection)};
    QSignalSpy warmed(worker_, &InferenceWorker::modelWarmedUp);
    QSignalSpy errors(worker_, &InferenceWorker::errorOccurred);
    QMetaObject::invokeMethod(worker_, "loadModel", Qt::QueuedConnection, Q_ARG(QString, path),
                              Q_ARG(QString, QString()));
    QMetaObject::invokeMethod(worker_, "send", Qt::QueuedConnection,
                              Q_ARG(QString, QStringLiteral("Once upon a time")));
    const bool done =
        QTest::qWaitFor([&] { return warmed.count() > 0 || errors.count() > 0; }, kLoadTimeoutMs);
    for (const auto& c : probes) disconnect(c);
    QVERIFY2(done, "no modelWarmedUp after the load");
    QVERIFY2(errors.isEmpty(), errors.isEmpty() ? "" : qPrintable(errors.first().at(0).toString()));
    {
        std::lock_guard lock(orderMutex);
        QCOMPARE(order,
                 (QStringList{QStringLiteral("loaded"), QStringLiteral("turn"), QStringLiteral("warm")}));
    }
    QVERIFY(warmed.first().at(0).toDouble() > 0);
}

void TestInferenceWorker::apiServerServesTheModelBesideTheChat() {
    // The chat's model, served over the OpenAI-compatible API from the worker's own thread: the
    // API reply is the reference story (greedy from BOS), the chat keeps working beside it, and the
    // server says what it did.
    QSignalSpy started(worker_, &InferenceWorker::apiServerStarted);
    QSignalSpy activity(worker_, &InferenceWorker::apiServerActivity);
    QSignalSpy stopped(worker_, &InferenceWorker::apiServerStopped);
    QMetaObject::invokeMethod(worker_, "startApiServer", Qt::QueuedConnection, Q_ARG(quint16, 0));
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, 10'000);
    const auto port = started.first().at(0).value<quint16>();
    QVERIFY(port > 0);

    using lantern::test::http_call;
    using lantern::test::http_request;
    const auto reply = http_call(
        port,
        http_request("POST", "/v1/completions", R"({"prompt": [1], "max_tokens": 30, "temperature": 0})"));
    QCOMPARE(reply.status, 200);
    const QJsonObject body = QJsonDocument::fromJson(QByteArray::fromStdString(reply.body)).object();
    const QString text = body["choices"].toArray()[0].toObject()["text"].toString();
    const QString story = lantern::test::stories_reference()["greedy_from_bos_text"].toString();
    QVERIFY2(text.size() > 40 && story.startsWith(text), qPrintable(text));
    QCOMPARE(body["usage"].toObject()["completion_tokens"].toInt(), 30);
    QTRY_VERIFY_WITH_TIMEOUT(!activity.isEmpty() && activity.last().at(2).value<quint64>() == 1, 10'000);

    // Three replies at once in the room of one conversation (stories260K: 512 tokens, 32 blocks;
    // the cache has 64, the chat keeps the other 32): 200 tokens each need 39 blocks together,
    // so one is preempted and resumes, and each is still the reply it is alone.
    const auto completion = [](int token) {
        return http_request(
            "POST", "/v1/completions",
            R"({"prompt": [1, )" + std::to_string(token) + R"(], "max_tokens": 200, "temperature": 0})");
    };
    const auto textOf = [](const lantern::test::HttpReply& r) {
        return QJsonDocument::fromJson(QByteArray::fromStdString(r.body))
            .object()["choices"]
            .toArray()[0]
            .toObject()["text"]
            .toString();
    };
    const std::vector<int> starts{400, 401, 402};
    std::vector<QString> alone;
    for (int t : starts) alone.push_back(textOf(http_call(port, completion(t))));
    std::vector<int> fds;
    for (int t : starts) {
        fds.push_back(lantern::test::http_connect(port));
        lantern::test::http_send(fds.back(), completion(t));
    }
    for (size_t i = 0; i < starts.size(); ++i) {
        const auto r = lantern::test::http_parse(lantern::test::http_read_to_end(fds[i]));
        ::close(fds[i]);
        QCOMPARE(r.status, 200);
        QCOMPARE(textOf(r), alone[i]);
    }
    const std::string metrics = http_call(port, http_request("GET", "/metrics")).body;
    const auto metric = [&](const std::string& name) {
        const size_t at = metrics.find("\nlantern_" + name + " ");
        return at == std::string::npos ? -1.0 : std::stod(metrics.substr(at + name.size() + 10));
    };
    QCOMPARE(metric("kv_blocks_total"), 64.0);
    QVERIFY2(metric("replies_preempted_total") > 0, metrics.c_str());
    // And the app heard of the reply that waited for room (the status bar says "1 waiting").
    bool waited = false;
    for (const QList<QVariant>& args : std::as_const(activity)) waited |= args.at(1).value<quint32>() > 0;
    QVERIFY2(waited, "no activity report had a reply waiting");

    // While the chat writes a long reply, an API reply is written beside it (each of the chat's
    // decode steps carries the API's tokens too) and ends first, rather than waiting for the
    // chat's to end; with the chat first (setChatFirst) it waits and ends after it. Either way
    // both are the replies they are alone.
    QMetaObject::invokeMethod(worker_, "resetConversation", Qt::QueuedConnection);
    QVERIFY(worker_->setSamplingSettings(greedy(400)));
    const Reply chatAlone = run(QStringLiteral("Lily saw a cat"));
    QCOMPARE(chatAlone.stats.stop_reason, lantern::StopReason::MaxTokens);
    for (const bool chatFirst : {false, true}) {
        worker_->setChatFirst(chatFirst);
        QMetaObject::invokeMethod(worker_, "resetConversation", Qt::QueuedConnection);
        QSignalSpy tokens(worker_, &InferenceWorker::tokensGenerated);
        QSignalSpy finished(worker_, &InferenceWorker::turnFinished);
        QSignalSpy errors(worker_, &InferenceWorker::errorOccurred);
        QSignalSpy shared(worker_, &InferenceWorker::replyShared);
        std::atomic<bool> chatFinished{false};  // set on the worker's thread, the moment the turn ends
        auto probe = connect(
            worker_, &InferenceWorker::turnFinished, worker_, [&chatFinished] { chatFinished = true; },
            Qt::DirectConnection);
        QMetaObject::invokeMethod(worker_, "send", Qt::QueuedConnection,
                                  Q_ARG(QString, QStringLiteral("Lily saw a cat")));
        QVERIFY(
            QTest::qWaitFor([&] { return tokens.count() > 0 || finished.count() > 0 || errors.count() > 0; },
                            kTurnTimeoutMs));
        QVERIFY2(!chatFinished, "the chat's reply ended before the API request was sent");
        std::atomic<bool> apiDone{false};
        bool chatFinishedFirst = true;
        lantern::test::HttpReply beside;
        std::string problem;
        std::thread client([&] {
            try {
                beside =
                    http_call(port, http_request("POST", "/v1/completions",
                                                 R"({"prompt": [1], "max_tokens": 30, "temperature": 0})"));
            } catch (const std::exception& e) {
                problem = e.what();
            }
            chatFinishedFirst = chatFinished.load();
            apiDone = true;
        });
        const bool answered = QTest::qWaitFor([&] { return apiDone.load(); }, kTurnTimeoutMs);
        client.join();
        QVERIFY(answered);
        const Reply chat = collectTurn(tokens, finished, errors);
        disconnect(probe);
        QVERIFY2(problem.empty(), problem.c_str());
        QCOMPARE(beside.status, 200);
        QCOMPARE(textOf(beside), text);
        if (chatFirst)
            QVERIFY2(chatFinishedFirst, "the API reply was written while the chat went first");
        else
            QVERIFY2(!chatFinishedFirst, "the API reply waited for the chat's to end");
        // The turn says how many of its tokens were written beside the API's: some of them when
        // sharing (the API's 30 tokens took at least that many shared steps), none with the chat first.
        QCOMPARE(shared.count(), 1);
        const auto besideApi = shared.at(0).at(0).value<quint32>();
        if (chatFirst)
            QCOMPARE(besideApi, 0u);
        else
            QVERIFY2(besideApi >= 29 && besideApi < chat.stats.generated_tokens,
                     qPrintable(QString::number(besideApi)));
        QCOMPARE(chat.stats.stop_reason, lantern::StopReason::MaxTokens);
        QCOMPARE(chat.tokens, chatAlone.tokens);
        QCOMPARE(chat.text, chatAlone.text);
    }
    worker_->setChatFirst(false);

    // The chat still answers, and the API answers after it.
    QVERIFY(worker_->setSamplingSettings(greedy(8)));
    const Reply chat = run(QStringLiteral("Lily saw a cat"));
    QCOMPARE(chat.stats.stop_reason, lantern::StopReason::MaxTokens);
    QCOMPARE(http_call(port, http_request("GET", "/health")).status, 200);

    // Unloading the model closes the server; loading one opens it again (on a new port: 0 asked
    // for any free one).
    QMetaObject::invokeMethod(worker_, "unloadModel", Qt::QueuedConnection);
    QTRY_COMPARE_WITH_TIMEOUT(stopped.count(), 1, 10'000);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, http_call(port, http_request("GET", "/health")));
    QMetaObject::invokeMethod(
        worker_, "loadModel", Qt::QueuedConnection,
        Q_ARG(QString, QString::fromStdString(lantern::test::shared_path("models/stories260K.gguf"))),
        Q_ARG(QString, QString()));
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 2, kLoadTimeoutMs);
    const auto again = started.last().at(0).value<quint16>();
    QCOMPARE(http_call(again, http_request("GET", "/v1/models")).status, 200);
    QMetaObject::invokeMethod(worker_, "stopApiServer", Qt::QueuedConnection);
    QTRY_COMPARE_WITH_TIMEOUT(stopped.count(), 2, 10'000);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, http_call(again, http_request("GET", "/health")));
}

void TestInferenceWorker::apiServerOnATakenPortFailsClearly() {
    // Something else listens on the port: the worker says so and keeps the chat working.
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QVERIFY(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 && listen(fd, 1) == 0);
    socklen_t len = sizeof sa;
    getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    const quint16 taken = ntohs(sa.sin_port);
    QSignalSpy failed(worker_, &InferenceWorker::apiServerFailed);
    QMetaObject::invokeMethod(worker_, "startApiServer", Qt::QueuedConnection, Q_ARG(quint16, taken));
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10'000);
    ::close(fd);
    const QString message = failed.first().at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("cannot listen on 127.0.0.1:%1").arg(taken)),
             qPrintable(message));
    QVERIFY(worker_->setSamplingSettings(greedy(4)));
    QCOMPARE(run(QStringLiteral("Tom")).stats.stop_reason, lantern::StopReason::MaxTokens);
}

void TestInferenceWorker::theAppsApiServerTakesAKey() {
    // The key the user chose (File > API Server Key…): without it, or with another, nothing is
    // served; with it, the model is.
    QSignalSpy started(worker_, &InferenceWorker::apiServerStarted);
    QSignalSpy stopped(worker_, &InferenceWorker::apiServerStopped);
    QMetaObject::invokeMethod(worker_, "startApiServer", Qt::QueuedConnection, Q_ARG(quint16, 0),
                              Q_ARG(QString, QStringLiteral("sesame")));
    QTRY_COMPARE_WITH_TIMEOUT(started.count(), 1, 10'000);
    const auto port = started.first().at(0).value<quint16>();
    using lantern::test::http_call;
    using lantern::test::http_request;
    QCOMPARE(http_call(port, http_request("GET", "/v1/models")).status, 401);
    QCOMPARE(http_call(port, http_request("GET", "/v1/models", {}, "Authorization: Bearer other\r\n")).status,
             401);
    QCOMPARE(
        http_call(port, http_request("GET", "/v1/models", {}, "Authorization: Bearer sesame\r\n")).status,
        200);
    QMetaObject::invokeMethod(worker_, "stopApiServer", Qt::QueuedConnection);
    QTRY_COMPARE_WITH_TIMEOUT(stopped.count(), 1, 10'000);
}

QTEST_MAIN(TestInferenceWorker)

#include "test_inference_worker.moc"
