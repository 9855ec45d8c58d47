// InferenceWorker — the only code in the app that touches lantern::Engine and lantern::ChatSession.
//
// It lives on its own QThread (GPT4All's pattern). Requests arrive as queued slot calls and results
// leave as queued signals that carry values only (strings, engine stats structs), never pointers
// into engine state; the UI thread owns every model and widget.
//
// A turn (send/regenerate) blocks this thread until it ends, so two requests are deliberately NOT
// slots: they must reach a generation that is already running.
//  - requestStop() sets an atomic flag that ChatSession polls between steps.
//  - setSamplingSettings() stores a snapshot into a lantern::SettingsSlot, which the generating
//    loop reads before every token; the change applies from the next token on.
//  - setAttentionLayer() sets an atomic read after every token.
//  - requestStepProfile() sets an atomic read after every token: the next two steps are timed
//    per op and the second one's profile is sent (stepProfiled).
// All four are thread-safe and are called directly from the UI thread.
//
// Two backends answer the same requests and send the same results: the local engine (above), or
// a remote OpenAI-compatible server (connectRemote: RemoteChat, asynchronous on this thread, so
// the thread stays free while a remote reply streams; its /metrics polled by RemoteMetricsPoller).
// Connecting drops the local model and loading a model drops the remote; the chat's requests
// (send, regenerate, continue, restore, system prompt, stop, sampling) go to whichever is in use.
#pragma once
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "lantern/server.h"
#include "remote/RemoteChat.h"
#include "remote/RemoteMetrics.h"
#include "worker/EngineTypes.h"

class QTimer;
class RemoteMetricsPoller;

class InferenceWorker : public QObject {
    Q_OBJECT
public:
    explicit InferenceWorker(QObject* parent = nullptr);
    ~InferenceWorker() override;

    // Thread-safe (see the top of this file).
    void requestStop();
    // Returns false (and emits settingsRejected) when the settings are out of range; the previous
    // settings stay in force then.
    bool setSamplingSettings(const lantern::SamplingSettings& settings);
    lantern::SamplingSettings samplingSettings() const;
    void setAttentionLayer(int layer);  // -1 = no capture
    // Times the coming steps per op (Engine::profile_steps); stepProfiled carries the second timed
    // step's profile (the first may compile the timed kernels). Served by the reply being written,
    // or else by the next one.
    void requestStepProfile();
    // Context-full policy for the next turn: drop the oldest turns, or stop (thread-safe).
    void setDropOldestTurns(bool drop);
    // How many next-token candidates a batch carries (those of its last token).
    static constexpr int kCandidateCount = 5;
    // Tokens are sent in batches at most this often (ms), so a fast model does not wake the UI
    // thread once per token. A token is held only if the next one is due within the batch's time
    // (the last step was short), so a slow model's tokens still go out the moment they exist.
    // Why: docs/decisions/0033-streamed-tokens-by-frames-and-batches.md.
    static constexpr double kTokenBatchMs = 16.0;
    // Whether a batch goes out now, batchMs after the previous one at most: `sinceSentMs` after the
    // last batch, the last step having taken `lastStepMs`.
    static bool sendBatchNow(double sinceSentMs, double lastStepMs, double batchMs) {
        return sinceSentMs + lastStepMs >= batchMs;
    }
    // The batch time of the coming turns (thread-safe); 0 sends every token in a batch of its own.
    void setTokenBatchMs(double ms) { tokenBatchMs_.store(ms); }
    // Whether the chat's reply goes first (thread-safe; a reply under way sees it at its next
    // step): on, API replies pause while the chat writes one and go on where they were when it
    // ends, so the chat's reply comes at its full speed; off (the default), they are written in
    // the chat's own steps. On a CPU driver a step carrying several tokens costs several times a
    // one-token step, so sharing slows the chat's reply most (a user who reads along may want the
    // chat first); on a GPU sharing is near free. Figures:
    // docs/decisions/0026-chat-shares-decode-steps-with-api.md.
    void setChatFirst(bool on) { chatFirst_.store(on); }
    // Whether models with a thinking switch (LoadReport::thinking_switch, Qwen3) reason before
    // they answer, from the next turn on (thread-safe). On by default, as their templates.
    void setThinking(bool on) { thinking_.store(on); }
    // How often an idle API server looks at the network (ms).
    static constexpr int kApiIdleMs = 20;
    // Replies the API server generates at once beside the chat (lantern::ServerOptions::parallel).
    static constexpr quint32 kApiReplies = 3;
    // Most tokens of a chat decode step that the API's replies share: the chat's token, theirs,
    // and a client's prompt chunk up to the rest. A small chunk keeps the chat's tokens coming
    // while a long API prompt is read (a few tokens per chat token instead of a 256-token chunk
    // holding the chat's next token up; on a CPU driver a step this small still runs the decode
    // kernels, decision 0011); the prompt goes at full speed once the chat's reply ends
    // (decision 0026).
    static constexpr quint32 kSharedStepTokens = 16;
    // Conversations at full context the KV cache has room for: the chat's, and with the API server
    // on one more, which its replies share by blocks (the Scheduler admits them as room allows and
    // preempts the last admitted when it runs out) rather than one each: three replies at once
    // need not triple the cache, and the chat's own room is never theirs.
    static quint32 kvConversationsFor(bool apiServer) { return apiServer ? 2 : 1; }

public slots:
    // Loads a GGUF file; any previous model and conversation are dropped first. deviceSelector is a
    // device index or a name substring ("" = the engine's preference, see lantern/device.h);
    // contextLength: tokens per conversation (0 = the model's, at most 4096).
    void loadModel(const QString& path, const QString& deviceSelector, quint32 contextLength = 0);
    void unloadModel();
    void setSystemPrompt(const QString& text);
    // Forgets the conversation (the KV blocks of earlier prompts stay reusable by the prefix cache).
    void resetConversation();
    // Replaces the conversation with earlier turns (roles "user"/"assistant", same length lists),
    // e.g. a conversation reopened from disk; the next send() renders them all into the prompt.
    void restoreConversation(const QStringList& roles, const QStringList& contents);
    void send(const QString& text);
    void regenerate();
    void continueReply();  // more of the last reply, from where it stopped
    // How long `text` is and whether its turn would fit (ChatSession::measure), as it would be
    // sent now: after the first keepMessages messages of the conversation (-1: all of them; an
    // edited message replaces the rest), under the current context policy. Answers with
    // messageMeasured(request, ...); nothing while no model is loaded.
    void measureMessage(quint64 request, const QString& text, int keepMessages);
    // Enumerates the Vulkan devices (answers with devicesListed or errorOccurred).
    void listDevices();
    // Serves the loaded model — and each model loaded later — over the OpenAI-compatible API
    // (lantern/server.h) on 127.0.0.1:port (0 = any free port) until stopApiServer(). A model is
    // loaded with KV room for the chat alone while the API server is off, and for the chat and
    // the API's parallel replies while it is on (kvConversationsFor): a model loaded without that
    // room is loaded again with it first (reloadingModel, then modelLoaded); where the device has
    // room for the chat alone, the model is loaded for it and the server fails (apiServerFailed).
    // The chat and the API share the engine: between chat turns API replies advance one engine
    // step per pass of this thread's event loop (a chat turn waits at most one step); while the
    // chat writes a reply, each of its decode steps carries the API's tokens too
    // (kSharedStepTokens), and the API gets a step of its own between the chunks of a long chat
    // prompt — unless the chat goes first (setChatFirst), when the API's replies wait for the
    // chat's reply to end.
    // `apiKey` non-empty: requests need "Authorization: Bearer <apiKey>" (ServerOptions::api_key).
    void startApiServer(quint16 port, const QString& apiKey = {});
    void stopApiServer();
    // Chats with a remote OpenAI-compatible server instead of the local engine (which is dropped
    // first): remoteConnected once its /v1/models answered, else remoteFailed with what is wrong.
    // The conversation is kept by the caller and restored as for a load (restoreConversation).
    void connectRemote(const RemoteEndpoint& endpoint);
    void disconnectRemote();

signals:
    void devicesListed(const DeviceList& devices);
    void modelLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                     const LoadReport& report);
    void loadFailed(const QString& message);
    void modelUnloaded();
    // The loaded model is loaded again, with the same file, device and context (for the API
    // server's KV room); modelLoaded or loadFailed follows, and the conversation must be restored.
    void reloadingModel();
    // Every warm-up shape of the loaded model ran (Engine::warm_up), taking `ms` in all.
    void modelWarmedUp(double ms);
    void turnStarted();
    // How far the turn's prompt is (after each chunk of a prompt longer than one): `done` of the
    // `total` tokens it computes. Stop (requestStop) takes effect at the next chunk.
    void promptProgress(quint32 done, quint32 total);
    // Generated tokens, in batches (see kTokenBatchMs): their text, steps, ids, and the candidates
    // and position of the last. Every token of a turn is in exactly one batch, the last batch
    // before turnFinished.
    void tokensGenerated(const TokenBatch& batch);
    void turnFinished(const lantern::TurnStats& stats);
    // Just before turnFinished: how many of the turn's tokens were written in steps shared with
    // API replies (a step that carried a reply's token or prompt), so the reply can say why its
    // rate was lower than the model's.
    void replyShared(quint32 tokens);
    void messageMeasured(quint64 request, const lantern::MessageFit& fit);
    // After restoreConversation: whether Continue has room for more of the last reply, as the
    // conversation stands and once the oldest turns are dropped (ChatSession::continue_room).
    void continueRoomMeasured(bool fits, bool fitsDropping);
    void kvStatsChanged(const KvSnapshot& snapshot);
    void attentionCaptured(const lantern::AttentionSnapshot& snapshot);
    // After a turn, while attention capture is on: the tokens of the conversation's sequence
    // (what TokenBatch::attention rows' positions index), for the attention panel's words view.
    void conversationTokens(const ConversationTokens& tokens);
    // Where one step's time went (requestStepProfile), and the position of its token.
    void stepProfiled(const lantern::StepProfile& profile, quint32 position);
    // A request failed; when it was a turn, the turn has ended (turnFinished is not emitted).
    void errorOccurred(const QString& message);
    void settingsRejected(const QString& message);
    // The API server listens on 127.0.0.1:port (after startApiServer, and again after each load).
    void apiServerStarted(quint16 port);
    void apiServerStopped();
    // It could not start (the port is taken) or failed; it stays off until started again.
    void apiServerFailed(const QString& message);
    // inProgress: replies being written or waiting (`waiting` of them: for a sequence, or for room
    // in the KV cache the replies share); served: replies served since the server started.
    void apiServerActivity(quint32 inProgress, quint32 waiting, quint64 served);
    void remoteConnected(const RemoteReport& report);
    void remoteFailed(const QString& message);
    void remoteDisconnected();
    // Just before turnFinished of a remote reply: the server's own figures for it.
    void remoteTurnFigures(const RemoteTurnFigures& figures);
    // A remote reply was cut off (the server went away, the connection was lost): the tokens
    // that came were sent and the turn has ended (turnFinished is not emitted).
    void replyCutOff(const QString& message);
    // The remote server's /metrics, read every RemoteMetricsPoller::kIntervalMs; or why there are
    // none (no /metrics there, not Prometheus' format).
    void remoteMetrics(const RemoteMetrics& metrics);
    void remoteMetricsUnavailable(const QString& reason);

private:
    using TurnFunction =
        std::function<lantern::TurnStats(const std::function<bool(const lantern::TokenEvent&)>&)>;
    void runTurn(const TurnFunction& turn);
    void publishKvStats();
    void publishAttention(bool force);
    void recordAttentionRow();         // this step's captured row into the batch (capture on)
    void publishConversationTokens();  // (capture on)
    void applyAttentionLayer();
    void dropEngine();
    // Engine::warm_up, one shape per queued call after a load, so that a request made meanwhile
    // (queued behind the current shape) runs before the remaining ones; a new load or an unload
    // (a new generation) ends the chain.
    void scheduleWarmUp();
    void warmUpNext(quint64 generation);
    void reportFailure(const QString& what, const std::exception& e);
    void openApiServer();
    void closeApiServer();
    void serveApi();  // one pass of the API server (the timer's slot)
    // Emits apiServerActivity (and the KV map) when the server's activity changed; says whether.
    bool reportApiActivity();
    // The chat's decode step (ChatSession::set_decode_step): shared with the API's replies while
    // the server is on (ApiServer::serve_once_beside), else alone.
    std::vector<float> chatDecodeStep(const lantern::StepItem& item);
    void serveApiBetweenChunks();  // one API pass between chunks of the chat's prompt
    void sendTokens();             // the batch being gathered, if it holds anything
    void dropRemote();
    // The settings of a remote request: the sampling panel's, as they are now.
    lantern::SamplingSettings remoteSettings() const { return *settings_.load(); }

    RemoteChat* remote_ = nullptr;  // the remote backend in use (a child), or none
    RemoteMetricsPoller* metricsPoller_ = nullptr;

    std::unique_ptr<lantern::Engine> engine_;
    std::unique_ptr<lantern::ChatSession> session_;
    std::unique_ptr<lantern::ApiServer> apiServer_;  // refers to engine_: reset before it
    QTimer* apiTimer_ = nullptr;                     // drives serveApi on this thread
    bool apiWanted_ = false;
    // Loads loadedPath_ for the chat alone or with the API server's replies too, and announces it
    // (modelLoaded, the API server, the warm-up); throws what Engine::load throws.
    void loadEngine(bool forApi);
    bool loadedForApi_ = false;  // the loaded engine has the API's sequences and KV room
    // What the last loadModel() was asked for (a reload asks for it again).
    QString loadedPath_, loadedSelector_;
    quint32 loadedContext_ = 0;
    quint16 apiPort_ = 0;
    QString apiKey_;
    lantern::ApiServer::Activity apiActivity_;
    quint32 sharedSteps_ = 0;  // of this turn's decode steps, those shared with API replies
    lantern::SettingsSlot settings_;
    std::atomic<bool> stop_{false};
    std::atomic<int> attentionLayer_{-1};
    std::atomic<bool> stepProfileRequested_{false};
    int profileCountdown_ = 0;  // timed steps still to come before the one that is sent
    std::atomic<double> tokenBatchMs_{kTokenBatchMs};
    std::atomic<bool> chatFirst_{false};  // see setChatFirst
    std::atomic<bool> thinking_{true};    // see setThinking
    TokenBatch batch_;                    // tokens not yet sent (worker thread only)
    QElapsedTimer sinceBatch_;            // since the last batch went out
    std::atomic<bool> dropOldestTurns_{true};
    int capturedLayer_ = -1;  // what the engine was last told (worker thread only)
    quint64 generation_ = 0;  // loads and unloads so far (worker thread only)
    uint32_t warmUpShape_ = 0;
    double warmUpMs_ = 0;
    uint32_t lastAttentionPosition_ = UINT32_MAX;
    uint32_t lastRowPosition_ = UINT32_MAX;  // the last AttentionRow recorded
    std::string systemPrompt_;
    QElapsedTimer kvThrottle_, attentionThrottle_;
};
