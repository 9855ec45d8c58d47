#include "worker/InferenceWorker.h"

#include <QTimer>
#include <algorithm>
#include <new>

#include "lantern/chat_template.h"
#include "lantern/error.h"
#include "lantern/tokenizer.h"
#include "remote/RemoteMetricsPoller.h"

namespace {

QString messageOf(const std::exception& e) {
    if (dynamic_cast<const lantern::Error*>(&e) != nullptr) return QString::fromStdString(e.what());
    if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr)
        return InferenceWorker::tr("The computer ran out of memory.");
    return InferenceWorker::tr("Unexpected internal error: %1").arg(QString::fromStdString(e.what()));
}

}  // namespace

InferenceWorker::InferenceWorker(QObject* parent) : QObject(parent) {
    registerEngineMetaTypes();
    qRegisterMetaType<RemoteEndpoint>();
    qRegisterMetaType<RemoteReport>();
    qRegisterMetaType<RemoteTurnFigures>();
    qRegisterMetaType<RemoteMetrics>();
    lantern::SamplingSettings initial;
    initial.n_probs = kCandidateCount;
    settings_.store(initial);
    kvThrottle_.start();
    attentionThrottle_.start();
    // A child, so it moves to the worker's thread with it and fires there.
    apiTimer_ = new QTimer(this);
    connect(apiTimer_, &QTimer::timeout, this, &InferenceWorker::serveApi);
}

InferenceWorker::~InferenceWorker() {
    // Runs on the worker thread (deleteLater when the thread finishes): the engine is destroyed on
    // the thread that used it. The API server and the session refer to the engine, so they go first.
    apiServer_.reset();
    session_.reset();
    engine_.reset();
}

void InferenceWorker::requestStop() {
    stop_.store(true);
}

void InferenceWorker::requestStepProfile() {
    stepProfileRequested_.store(true);
}

bool InferenceWorker::setSamplingSettings(const lantern::SamplingSettings& settings) {
    lantern::SamplingSettings copy = settings;
    copy.n_probs = std::max(copy.n_probs, kCandidateCount);
    try {
        settings_.store(std::move(copy));
        return true;
    } catch (const std::exception& e) {
        emit settingsRejected(messageOf(e));
        return false;
    }
}

lantern::SamplingSettings InferenceWorker::samplingSettings() const {
    return *settings_.load();
}

void InferenceWorker::setAttentionLayer(int layer) {
    attentionLayer_.store(std::max(layer, -1));
}
void InferenceWorker::setDropOldestTurns(bool drop) {
    dropOldestTurns_.store(drop);
}

void InferenceWorker::dropEngine() {
    ++generation_;
    const bool had = engine_ != nullptr;
    closeApiServer();  // apiWanted_ stays: it opens again on the next model
    session_.reset();
    engine_.reset();
    loadedForApi_ = false;
    capturedLayer_ = -1;
    profileCountdown_ = 0;  // a new model's steps are timed only when asked again
    if (had) emit modelUnloaded();
}

void InferenceWorker::loadModel(const QString& path, const QString& deviceSelector, quint32 contextLength) {
    dropRemote();
    dropEngine();
    loadedPath_ = path;
    loadedSelector_ = deviceSelector;
    loadedContext_ = contextLength;
    try {
        try {
            loadEngine(apiWanted_);
        } catch (const lantern::Error& e) {
            if (!apiWanted_ || e.code() != lantern::ErrorCode::ModelTooLarge) throw;
            // The chat alone may fit where the chat and the API's replies do not: that, without
            // the server, rather than no model at all (said after the load, which says its own).
            apiWanted_ = false;
            loadEngine(false);
            emit apiServerFailed(
                tr("there is no room on the device for its replies beside the chat (%1)").arg(messageOf(e)));
        }
    } catch (const std::exception& e) {
        session_.reset();
        engine_.reset();
        loadedForApi_ = false;
        emit loadFailed(messageOf(e));
    }
}

void InferenceWorker::loadEngine(bool forApi) {
    lantern::EngineOptions options;
    options.device_selector = loadedSelector_.toStdString();
    options.context_length = loadedContext_;
    options.max_sequences = forApi ? 1 + kApiReplies : 1;
    options.kv_sequences = kvConversationsFor(forApi);
    engine_ = lantern::Engine::load(loadedPath_.toStdString(), options);
    session_ = std::make_unique<lantern::ChatSession>(*engine_);
    session_->set_system_prompt(systemPrompt_);
    session_->set_prompt_progress([this](uint32_t done, uint32_t total) {
        emit promptProgress(done, total);
        serveApiBetweenChunks();
    });
    session_->set_decode_step([this](const lantern::StepItem& item) { return chatDecodeStep(item); });
    loadedForApi_ = forApi;

    LoadReport report;
    report.load_ms = engine_->load_ms();
    report.pipelines_ms = engine_->pipelines_ms();
    report.pipeline_cache_warm = engine_->pipeline_cache_was_warm();
    report.context_length = engine_->context_length();
    report.sequences = kvConversationsFor(forApi);
    report.chat_template = session_->has_chat_template();
    report.template_name = QString::fromStdString(session_->template_name());
    const lantern::ChatTemplate& chat = session_->chat_template();
    report.template_is_models = chat.uses_model_template();
    report.template_renderer = QString::fromStdString(chat.description());
    report.template_fallback_reason = QString::fromStdString(chat.fallback_reason());
    report.template_source = QString::fromStdString(chat.source());
    try {
        const std::vector<lantern::ChatMessage> probe = {{lantern::ChatRole::User, "Hi", {}}};
        report.replies_open_in_reasoning =
            chat.renders_chat() &&
            lantern::ChatTemplate::opens_reasoning(chat.render(engine_->tokenizer(), probe, true).text);
    } catch (const lantern::Error&) {
        report.replies_open_in_reasoning = false;  // a template that refuses this probe opens nothing
    }
    report.thinking_switch = session_->has_thinking_switch();
    report.tokenizer_kind = QString::fromStdString(engine_->tokenizer().kind());
    emit modelLoaded(engine_->model(), engine_->device(), report);
    publishKvStats();
    if (apiWanted_) openApiServer();
    warmUpShape_ = 0;
    warmUpMs_ = 0;
    scheduleWarmUp();
}

void InferenceWorker::scheduleWarmUp() {
    QMetaObject::invokeMethod(
        this, [this, g = generation_] { warmUpNext(g); }, Qt::QueuedConnection);
}

void InferenceWorker::warmUpNext(quint64 generation) {
    if (generation != generation_ || !engine_) return;  // the model it was for is gone
    try {
        warmUpMs_ += engine_->warm_up(warmUpShape_++);
    } catch (const std::exception& e) {
        reportFailure(tr("Preparing the model's kernels"), e);
        return;
    }
    if (warmUpShape_ < lantern::Engine::kWarmUpShapes)
        scheduleWarmUp();
    else
        emit modelWarmedUp(warmUpMs_);
}

void InferenceWorker::unloadModel() {
    dropEngine();
}

void InferenceWorker::setSystemPrompt(const QString& text) {
    systemPrompt_ = text.toStdString();
    if (remote_ != nullptr) remote_->setSystemPrompt(text);
    if (session_) session_->set_system_prompt(systemPrompt_);
}

void InferenceWorker::resetConversation() {
    if (remote_ != nullptr) remote_->reset();
    if (!session_) return;
    try {
        session_->reset();
        publishKvStats();
    } catch (const std::exception& e) {
        reportFailure(tr("Could not start a new conversation"), e);
    }
}

void InferenceWorker::restoreConversation(const QStringList& roles, const QStringList& contents) {
    if (remote_ != nullptr) {
        remote_->restore(roles, contents);
        emit continueRoomMeasured(remote_->canContinue(), remote_->canContinue());
        return;
    }
    if (!session_) return;
    try {
        std::vector<lantern::ChatTurn> turns;
        for (qsizetype i = 0; i < roles.size() && i < contents.size(); ++i)
            turns.push_back({roles[i].toStdString(), contents[i].toStdString()});
        session_->restore(turns);
        publishKvStats();
        // Whether its last reply can be continued in this model's context (a dry run).
        const lantern::ChatSession::ContinueRoom room = session_->continue_room();
        emit continueRoomMeasured(room.fits, room.fits_dropping);
    } catch (const std::exception& e) {
        reportFailure(tr("Could not start a new conversation"), e);
    }
}

void InferenceWorker::send(const QString& text) {
    if (remote_ != nullptr) {
        stop_.store(false);
        remote_->send(text, remoteSettings());
        return;
    }
    const std::string utf8 = text.toStdString();
    runTurn([this, utf8](const std::function<bool(const lantern::TokenEvent&)>& onToken) {
        return session_->respond(utf8, settings_, onToken, &stop_);
    });
}

void InferenceWorker::measureMessage(quint64 request, const QString& text, int keepMessages) {
    if (!session_) return;
    try {
        session_->set_context_policy(dropOldestTurns_.load() ? lantern::ContextPolicy::DropOldestTurns
                                                             : lantern::ContextPolicy::Stop);
        emit messageMeasured(
            request, session_->measure(text.toStdString(),
                                       keepMessages < 0 ? SIZE_MAX : static_cast<size_t>(keepMessages)));
    } catch (const std::exception&) {
        // Only an estimate for the input: a failure here shows up when the message is sent.
    }
}

void InferenceWorker::regenerate() {
    if (remote_ != nullptr) {
        stop_.store(false);
        remote_->regenerate(remoteSettings());
        return;
    }
    runTurn([this](const std::function<bool(const lantern::TokenEvent&)>& onToken) {
        return session_->regenerate(settings_, onToken, &stop_);
    });
}

void InferenceWorker::continueReply() {
    if (remote_ != nullptr) {
        stop_.store(false);
        remote_->continueReply(remoteSettings());
        return;
    }
    runTurn([this](const std::function<bool(const lantern::TokenEvent&)>& onToken) {
        return session_->continue_reply(settings_, onToken, &stop_);
    });
}

void InferenceWorker::connectRemote(const RemoteEndpoint& endpoint) {
    dropRemote();
    dropEngine();
    auto* chat = new RemoteChat(endpoint, &stop_, this);
    remote_ = chat;
    chat->setSystemPrompt(QString::fromStdString(systemPrompt_));
    connect(chat, &RemoteChat::opened, this, [this, chat, endpoint](const RemoteReport& report) {
        if (remote_ != chat) return;
        metricsPoller_ = new RemoteMetricsPoller(endpoint, report.model, this);
        connect(metricsPoller_, &RemoteMetricsPoller::metricsRead, this, &InferenceWorker::remoteMetrics);
        connect(metricsPoller_, &RemoteMetricsPoller::unavailable, this,
                &InferenceWorker::remoteMetricsUnavailable);
        metricsPoller_->start();
        emit remoteConnected(report);
    });
    connect(chat, &RemoteChat::openFailed, this, [this, chat](const QString& message) {
        if (remote_ != chat) return;
        remote_ = nullptr;
        chat->deleteLater();
        emit remoteFailed(message);
    });
    connect(chat, &RemoteChat::turnStarted, this, &InferenceWorker::turnStarted);
    connect(chat, &RemoteChat::tokensGenerated, this, &InferenceWorker::tokensGenerated);
    connect(chat, &RemoteChat::turnFinished, this,
            [this](const lantern::TurnStats& stats, const RemoteTurnFigures& figures) {
                emit remoteTurnFigures(figures);
                emit replyShared(0);
                emit turnFinished(stats);
            });
    connect(chat, &RemoteChat::turnFailed, this, [this](const QString& message, bool cutOff) {
        if (cutOff)
            emit replyCutOff(message);
        else
            emit errorOccurred(message);
    });
    chat->open();
}

void InferenceWorker::disconnectRemote() {
    dropRemote();
}

void InferenceWorker::dropRemote() {
    if (metricsPoller_ != nullptr) {
        delete metricsPoller_;
        metricsPoller_ = nullptr;
    }
    if (remote_ == nullptr) return;
    delete remote_;  // aborts a reply under way (its turn ends with the disconnection)
    remote_ = nullptr;
    emit remoteDisconnected();
}

void InferenceWorker::listDevices() {
    try {
        emit devicesListed(lantern::list_devices());
    } catch (const std::exception& e) {
        emit errorOccurred(tr("Could not list the Vulkan devices: %1").arg(messageOf(e)));
    }
}

void InferenceWorker::startApiServer(quint16 port, const QString& apiKey) {
    apiWanted_ = true;
    apiPort_ = port;
    apiKey_ = apiKey;
    closeApiServer();
    if (engine_ && !loadedForApi_) {
        // Loaded for the chat alone: again, with KV room for the API's replies (it opens then).
        emit reloadingModel();
        loadModel(loadedPath_, loadedSelector_, loadedContext_);
        return;
    }
    if (engine_) openApiServer();
}

void InferenceWorker::stopApiServer() {
    apiWanted_ = false;
    closeApiServer();
}

void InferenceWorker::openApiServer() {
    try {
        lantern::ServerOptions o;
        o.port = apiPort_;
        o.api_key = apiKey_.toStdString();
        // The chat keeps a sequence of its own and one conversation's KV room: the API's replies
        // get the engine's other sequences and share the rest of the cache.
        o.parallel = kApiReplies;
        const lantern::KvStats kv = engine_->kv_stats();
        const uint32_t chat = (engine_->context_length() + kv.block_tokens - 1) / kv.block_tokens;
        o.kv_blocks = kv.total_blocks > chat ? kv.total_blocks - chat : 1;
        o.step_tokens = lantern::EngineOptions{}.max_step_tokens;
        apiServer_ = std::make_unique<lantern::ApiServer>(*engine_, o);
    } catch (const std::exception& e) {
        apiWanted_ = false;
        emit apiServerFailed(messageOf(e));
        return;
    }
    apiActivity_ = {};
    emit apiServerStarted(apiServer_->port());
    apiTimer_->start(kApiIdleMs);
    // Clients served together run batched decode steps, whose kernels the chat's warm-up does not
    // compile: do it now, one queued step shape at a time (a request that comes meanwhile goes
    // first), rather than inside the first concurrent replies.
    for (uint32_t n = 2; n <= kApiReplies; ++n)
        QMetaObject::invokeMethod(
            this,
            [this, n, g = generation_] {
                if (g != generation_ || !engine_ || !apiServer_) return;
                try {
                    engine_->warm_up_batched_decode(n);
                } catch (const std::exception& e) {
                    reportFailure(tr("Preparing the model's kernels"), e);
                }
            },
            Qt::QueuedConnection);
}

void InferenceWorker::closeApiServer() {
    if (!apiServer_) return;
    apiTimer_->stop();
    apiServer_.reset();  // open connections close; replies in progress end
    emit apiServerStopped();
}

void InferenceWorker::serveApi() {
    if (!apiServer_) return;
    bool busy = false;
    try {
        busy = apiServer_->serve_once(0);
    } catch (const std::exception& e) {
        apiWanted_ = false;
        closeApiServer();
        emit apiServerFailed(messageOf(e));
        return;
    }
    if (!reportApiActivity() && busy && kvThrottle_.elapsed() >= 50) {
        publishKvStats();
        kvThrottle_.restart();
    }
    // Right away while replies are being written; otherwise a short nap between looks at the
    // network (the poll itself does not wait, so the chat's requests are never held up).
    apiTimer_->setInterval(busy ? 0 : kApiIdleMs);
}

bool InferenceWorker::reportApiActivity() {
    const lantern::ApiServer::Activity now = apiServer_->activity();
    const bool changed = now.replies_in_progress != apiActivity_.replies_in_progress ||
                         now.replies_waiting != apiActivity_.replies_waiting ||
                         now.replies_served != apiActivity_.replies_served;
    apiActivity_ = now;
    if (!changed) return false;
    emit apiServerActivity(now.replies_in_progress, now.replies_waiting, now.replies_served);
    publishKvStats();  // the KV cache panel shows the API's sequences too
    kvThrottle_.restart();
    return true;
}

std::vector<float> InferenceWorker::chatDecodeStep(const lantern::StepItem& item) {
    if (apiServer_ && !chatFirst_.load()) {
        try {
            const uint64_t generatedBefore = apiActivity_.generated_tokens;
            std::vector<float> logits = apiServer_->serve_once_beside(item, kSharedStepTokens);
            reportApiActivity();
            // Replies running after the step were in it; one that ended in it wrote a token.
            if (apiActivity_.generated_tokens > generatedBefore ||
                apiActivity_.replies_in_progress > apiActivity_.replies_waiting)
                ++sharedSteps_;
            return logits;
        } catch (const lantern::Error& e) {
            // A step that failed with the chat's item alone too is the chat's failure (its turn
            // ends, as it would have without the server). The network failing (poll) happens
            // before the step: the server closes and the chat goes on alone.
            if (e.code() != lantern::ErrorCode::Io) throw;
            apiWanted_ = false;
            closeApiServer();
            emit apiServerFailed(messageOf(e));
        }
    }
    return std::move(engine_->step(std::span<const lantern::StepItem>(&item, 1))[0]);
}

void InferenceWorker::serveApiBetweenChunks() {
    if (!apiServer_ || chatFirst_.load()) return;
    // A step of the replies' own (a chunk of the chat's prompt fills a step by itself), with no
    // attention capture: the heatmap is the chat's, and a capture would slow their step down.
    const bool capturing = capturedLayer_ >= 0;
    if (capturing) engine_->capture_attention(-1);
    serveApi();
    if (capturing) engine_->capture_attention(capturedLayer_);
}

void InferenceWorker::runTurn(const TurnFunction& turn) {
    if (!session_) {
        emit errorOccurred(tr("No model is loaded. Open a model first (File > Open Model…)."));
        return;
    }
    stop_.store(false);
    session_->set_context_policy(dropOldestTurns_.load() ? lantern::ContextPolicy::DropOldestTurns
                                                         : lantern::ContextPolicy::Stop);
    session_->set_thinking(thinking_.load());
    lastAttentionPosition_ = UINT32_MAX;
    lastRowPosition_ = UINT32_MAX;
    sharedSteps_ = 0;
    emit turnStarted();
    kvThrottle_.restart();
    attentionThrottle_.restart();
    batch_ = {};
    sinceBatch_.start();
    const double batchMs = tokenBatchMs_.load();
    const auto onToken = [this, batchMs](const lantern::TokenEvent& event) {
        batch_.text += QString::fromStdString(event.text);
        if (event.token >= 0) {  // (< 0: held-back text released at the end, no step of its own)
            batch_.stepMs.push_back(event.step_ms);
            batch_.tokens.push_back(event.token);
            batch_.candidates = event.candidates;
            batch_.position = event.position;
        }
        if (sendBatchNow(static_cast<double>(sinceBatch_.nsecsElapsed()) / 1e6, event.step_ms, batchMs))
            sendTokens();
        // A step profile asked for: time the next two steps and send the second (the first may
        // compile the timed kernels' variants, which would be in its times).
        if (stepProfileRequested_.exchange(false)) {
            engine_->profile_steps(2);
            profileCountdown_ = 2;
        } else if (profileCountdown_ > 0 && --profileCountdown_ == 0) {
            sendTokens();  // the profiled token first
            emit stepProfiled(engine_->last_step_profile(), event.position);
        }
        if (kvThrottle_.elapsed() >= 50) {
            publishKvStats();
            kvThrottle_.restart();
        }
        recordAttentionRow();
        publishAttention(false);
        applyAttentionLayer();
        return !stop_.load();
    };
    try {
        applyAttentionLayer();
        const lantern::TurnStats stats = turn(onToken);
        sendTokens();
        publishKvStats();
        publishAttention(true);
        publishConversationTokens();
        emit replyShared(sharedSteps_);
        emit turnFinished(stats);
    } catch (const std::exception& e) {
        sendTokens();  // what was generated before the failure is shown
        reportFailure(tr("Generation failed"), e);
    }
}

void InferenceWorker::sendTokens() {
    if (batch_.empty()) return;
    emit tokensGenerated(batch_);
    batch_ = {};
    sinceBatch_.start();
}

void InferenceWorker::reportFailure(const QString& what, const std::exception& e) {
    emit errorOccurred(tr("%1: %2").arg(what, messageOf(e)));
    const auto* error = dynamic_cast<const lantern::Error*>(&e);
    if (error != nullptr && error->code() == lantern::ErrorCode::DeviceLost) {
        // The engine cannot be used after a device loss; the user reloads the model.
        dropEngine();
        return;
    }
    if (engine_) publishKvStats();
}

void InferenceWorker::applyAttentionLayer() {
    if (!engine_) return;
    int layer = attentionLayer_.load();
    if (layer >= 0) layer = std::min<int>(layer, static_cast<int>(engine_->model().n_layers) - 1);
    // Re-armed before every step while capturing, so a one-shot capture and a standing one both work.
    if (layer != capturedLayer_ || layer >= 0) {
        engine_->capture_attention(layer);
        capturedLayer_ = layer;
    }
}

void InferenceWorker::publishAttention(bool force) {
    if (!engine_ || capturedLayer_ < 0) return;
    if (!force && attentionThrottle_.elapsed() < 80) return;
    const lantern::AttentionSnapshot& snapshot = engine_->last_attention();
    if (snapshot.n_positions == 0 || snapshot.probs.empty()) return;
    if (snapshot.position == lastAttentionPosition_ && !force) return;
    lastAttentionPosition_ = snapshot.position;
    attentionThrottle_.restart();
    emit attentionCaptured(snapshot);
}

void InferenceWorker::recordAttentionRow() {
    if (!engine_ || capturedLayer_ < 0) return;  // (capture off: nothing read, nothing kept)
    const lantern::AttentionSnapshot& snapshot = engine_->last_attention();
    if (snapshot.n_positions == 0 || snapshot.position == lastRowPosition_) return;
    lastRowPosition_ = snapshot.position;
    batch_.attention.push_back(AttentionRow::from(snapshot));
}

void InferenceWorker::publishConversationTokens() {
    if (!engine_ || !session_ || capturedLayer_ < 0) return;
    ConversationTokens tokens;
    const lantern::Tokenizer& tok = engine_->tokenizer();
    tokens.ids = engine_->sequence_tokens(session_->sequence());
    for (const int32_t id : tokens.ids) {
        const bool special = tok.is_special(id);
        tokens.special.push_back(special);
        tokens.bytes.push_back(special ? tok.piece(id) : tok.token_text(id));
    }
    emit conversationTokens(tokens);
}

void InferenceWorker::publishKvStats() {
    if (!engine_) return;
    KvSnapshot snapshot;
    snapshot.stats = engine_->kv_stats();
    snapshot.blocks = engine_->kv_block_map();
    if (session_) snapshot.active_sequence = session_->sequence();
    if (apiServer_) snapshot.api_sequences = apiServer_->sequences();
    emit kvStatsChanged(snapshot);
}
