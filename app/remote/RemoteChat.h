// RemoteChat — one conversation with a remote OpenAI-compatible server: the app's backend when it
// chats with lantern-server, llama-server, vLLM or Ollama instead of its own engine.
//
// Lives on the InferenceWorker's thread and does nothing blocking: a turn is a streamed POST to
// /v1/chat/completions (Qt Network, server-sent events) whose chunks leave as TokenBatches, as
// the local engine's tokens do. The whole conversation goes in each request (the server keeps no
// state; its prefix cache reuses what it can). Stop is the worker's atomic flag, looked at every
// 30 ms: the reply is aborted, which closes the stream, and what came is kept (StopReason::User).
// A reply cut off (the server gone, the connection lost) keeps what came too: turnFailed says so
// with connectionLost set. Errors are worded for the user (unreachable, TLS, 401, not OpenAI).
#pragma once
#include <QElapsedTimer>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <QVector>
#include <atomic>

#include "remote/OpenAiChat.h"
#include "remote/RemoteEndpoint.h"
#include "remote/SseStream.h"
#include "worker/EngineTypes.h"

class QNetworkAccessManager;

// The server's own figures for the last reply, beside the client's TurnStats.
struct RemoteTurnFigures {
    remote::ServerTimings timings;
    bool usage = false;  // the server sent usage (prompt and completion tokens)
    double clientTokensPerSecond = 0;
};
Q_DECLARE_METATYPE(RemoteTurnFigures)

class RemoteChat : public QObject {
    Q_OBJECT
public:
    // `stop` (the worker's flag) outlives this object.
    RemoteChat(const RemoteEndpoint& endpoint, const std::atomic<bool>* stop, QObject* parent = nullptr);
    ~RemoteChat() override;

    // GET /v1/models: opened() with what it found, or openFailed() saying what is wrong.
    void open();
    const RemoteReport& report() const { return report_; }
    bool busy() const { return reply_ != nullptr; }
    bool canContinue() const;

    void setSystemPrompt(const QString& text) { system_ = text; }
    void reset() { turns_.clear(); }
    void restore(const QStringList& roles, const QStringList& contents);
    // Turns (ignored while one runs). The settings are read once: they go in the request.
    void send(const QString& text, const lantern::SamplingSettings& settings);
    void regenerate(const lantern::SamplingSettings& settings);
    void continueReply(const lantern::SamplingSettings& settings);

    // How long a streamed reply may go without a byte before it counts as lost (ms).
    static constexpr int kStreamIdleMs = 300000;
    // How long the connection test waits (ms).
    static constexpr int kOpenTimeoutMs = 15000;

signals:
    void opened(const RemoteReport& report);
    void openFailed(const QString& message);
    void turnStarted();
    void tokensGenerated(const TokenBatch& batch);
    void turnFinished(const lantern::TurnStats& stats, const RemoteTurnFigures& figures);
    // The turn ended without its reply: what came was sent and stays (connectionLost: cut off
    // mid-reply, rather than refused).
    void turnFailed(const QString& message, bool connectionLost);

private:
    enum class Turn { Send, Regenerate, Continue };
    void startTurn(Turn turn, const lantern::SamplingSettings& settings);
    void onReadyRead();
    void onFinished();
    void takeEvent(const QByteArray& data);
    void addText(const QString& text);
    void flushBatch();
    QString describeNetworkError(QNetworkReply* reply) const;
    QNetworkRequest request(const QUrl& url) const;

    RemoteEndpoint endpoint_;
    const std::atomic<bool>* stop_;
    QNetworkAccessManager* network_;
    RemoteReport report_;
    QString system_;
    QVector<remote::Message> turns_;  // user and assistant messages, in order

    // The turn under way.
    QPointer<QNetworkReply> reply_;
    Turn turn_ = Turn::Send;
    SseStream sse_;
    QByteArray errorBody_;
    QString replyText_;  // this turn's text as shown (reasoning wrapped in <think>)
    bool inReasoning_ = false;
    bool done_ = false;     // [DONE] or a finish_reason came
    bool stopped_ = false;  // Stop aborted it
    QString finishReason_, streamError_;
    remote::StreamChunk usage_;
    remote::ServerTimings timings_;
    QElapsedTimer clock_;
    double firstTokenMs_ = -1, lastTokenMs_ = 0;
    quint32 chunks_ = 0;
    TokenBatch batch_;
    QTimer stopPoll_;
};
