#include "MainWindow.h"

#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QEvent>
#include <QFileInfo>
#include <QMessageBox>
#include <QMimeData>
#include <QUrl>
#include <QVBoxLayout>

#include "ApiServerControl.h"
#include "AppMenus.h"
#include "AppStatusBar.h"
#include "DeviceMenu.h"
#include "Format.h"
#include "ModelDialogs.h"
#include "ModelPicker.h"
#include "Preferences.h"
#include "Theme.h"
#include "chat/ChatModel.h"
#include "chat/ChatView.h"
#include "chat/ConversationList.h"
#include "chat/ConversationStore.h"
#include "chat/MessageComposer.h"
#include "chat/MessageFitLabel.h"
#include "chat/SystemPromptBar.h"
#include "models/ModelDownloads.h"
#include "models/ModelsDialog.h"
#include "panels/KvCachePanel.h"
#include "panels/PanelDocks.h"
#include "panels/SamplingPanel.h"
#include "remote/RemoteEndpoint.h"
#include "remote/RemoteEnginesDialog.h"
#include "turn/TurnController.h"
#include "worker/InferenceWorker.h"

MainWindow::MainWindow(const QString& storePath, QWidget* parent) : QMainWindow(parent) {
    registerEngineMetaTypes();
    setWindowTitle(tr("Lantern"));
    setWindowIcon(theme::appIcon());
    setDockNestingEnabled(true);

    store_ = std::make_unique<ConversationStore>(storePath.isEmpty() ? ConversationStore::defaultPath()
                                                                     : storePath);
    worker_ = new InferenceWorker();
    worker_->moveToThread(&workerThread_);
    connect(&workerThread_, &QThread::finished, worker_, &QObject::deleteLater);
    workerThread_.setObjectName(QStringLiteral("InferenceWorker"));
    workerThread_.start();

    session_ = new ModelSession(this);
    api_ = new ApiServerControl(worker_, this);
    buildCentralArea();
    turns_ = new TurnController(chatModel_, store_.get(), this);
    buildDocks();
    menus_ = new AppMenus({this, worker_, session_, turns_, api_, store_.get(), chatView_});
    menus_->setSystemPromptSource([this] { return systemPrompt_->text(); });
    status_ = new AppStatusBar(api_->label(), this);
    setStatusBar(status_);
    setAcceptDrops(true);  // a .gguf dropped on the window opens it (dropEvent)
    connectWorker();
    connectTurns();
    connectModelSession();
    connectRemote();
    api_->startIfEnabled();
    // Downloads from the Hub; one a quit or a crash interrupted is listed as paused.
    downloads_ = new ModelDownloads(preferences::modelsDirectory(), this);
    downloads_->restorePaused();
    connect(downloads_, &ModelDownloads::finished, this, [this](int, const QString& path) {
        menus_->modelPicker()->rescan();
        status_->showMessage(tr("Downloaded %1: it is in the model picker").arg(QFileInfo(path).fileName()),
                             8000);
    });

    // Restore what the user had.
    const lantern::SamplingSettings sampling = preferences::samplingSettings();
    panels_->sampling()->setSettings(sampling);
    worker_->setSamplingSettings(sampling);
    systemPrompt_->setText(preferences::systemPrompt());
    emit systemPromptChanged(systemPrompt_->text());
    menus_->deviceMenu()->setSelector(session_->deviceSelector());
    resize(1400, 880);
    if (const QByteArray g = preferences::windowGeometry(); !g.isEmpty()) restoreGeometry(g);
    if (const QByteArray s = preferences::windowState(); !s.isEmpty()) restoreState(s);

    if (!store_->isOpen()) {
        QMessageBox::warning(
            this, tr("Conversations unavailable"),
            tr("The conversation database could not be opened, so chats will not be saved.\n\n%1")
                .arg(store_->lastError()));
    }
    conversations_->refresh();
    refreshState();
    if (const qint64 last = preferences::lastConversation(); last >= 0 && store_->conversation(last).id >= 0)
        turns_->openConversation(last);
    emit listDevicesRequested();
}

MainWindow::~MainWindow() {
    worker_->requestStop();
    workerThread_.quit();
    workerThread_.wait();
}

// ---------------------------------------------------------------------------------------------
// Construction

void MainWindow::buildCentralArea() {
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    QPalette barPalette = palette();
    barPalette.setColor(QPalette::Window, theme::window());

    systemPrompt_ = new SystemPromptBar(central);
    systemPrompt_->setAutoFillBackground(true);
    systemPrompt_->setPalette(barPalette);
    layout->addWidget(systemPrompt_);

    chatModel_ = new ChatModel(this);
    chatView_ = new ChatView(central);
    chatView_->setObjectName(QStringLiteral("chatView"));
    chatView_->setModel(chatModel_);
    layout->addWidget(chatView_, 1);

    composer_ = new MessageComposer(central);
    composer_->setAutoFillBackground(true);
    composer_->setPalette(barPalette);
    layout->addWidget(composer_);
    setCentralWidget(central);
}

void MainWindow::buildDocks() {
    conversations_ = new ConversationList(store_.get(), this);
    auto* conversationsDock = new QDockWidget(tr("Conversations"), this);
    conversationsDock->setObjectName(QStringLiteral("conversationsDock"));
    conversationsDock->setWidget(conversations_);
    conversationsDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                                   QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::LeftDockWidgetArea, conversationsDock);
    panels_ = new PanelDocks(this, conversationsDock, worker_);
}

// ---------------------------------------------------------------------------------------------
// Wiring

void MainWindow::connectWorker() {
    // Requests: queued, because the worker lives on workerThread_.
    connect(this, &MainWindow::systemPromptChanged, worker_, &InferenceWorker::setSystemPrompt);
    connect(this, &MainWindow::listDevicesRequested, worker_, &InferenceWorker::listDevices);
    connect(this, &MainWindow::measureMessageRequested, worker_, &InferenceWorker::measureMessage);
    connect(worker_, &InferenceWorker::messageMeasured, composer_->measure(), &MessageFitLabel::showFit);
    connect(worker_, &InferenceWorker::promptProgress, this, [this](quint32 done, quint32 total) {
        // A long prompt on a CPU driver takes a while before the first token: say how far it is
        // (Stop works meanwhile, from the next chunk).
        if (!turns_->generating() || turns_->streamedTokens() > 0) return;
        status_->showLiveState(
            tr("Reading the prompt… %1 of %2 tokens").arg(display::count(done), display::count(total)));
        panels_->promptProgress(done, total);
    });
    connect(worker_, &InferenceWorker::kvStatsChanged, this, &MainWindow::onKvStats);
    connect(worker_, &InferenceWorker::errorOccurred, this, [this](const QString& message) {
        if (!turns_->onError(message)) status_->showMessage(message, 10000);
    });
    connect(worker_, &InferenceWorker::devicesListed, menus_->deviceMenu(), &DeviceMenu::setDevices);
    connect(worker_, &InferenceWorker::settingsRejected, this, [this](const QString& message) {
        status_->showMessage(tr("Sampling settings not applied: %1").arg(message), 6000);
    });
    connect(api_, &ApiServerControl::statusMessage, status_, &QStatusBar::showMessage);
}

void MainWindow::connectTurns() {
    TurnController* t = turns_;
    connect(t, &TurnController::sendRequested, worker_, &InferenceWorker::send);
    connect(t, &TurnController::regenerateRequested, worker_, &InferenceWorker::regenerate);
    connect(t, &TurnController::continueRequested, worker_, &InferenceWorker::continueReply);
    connect(t, &TurnController::resetConversationRequested, worker_, &InferenceWorker::resetConversation);
    connect(t, &TurnController::restoreConversationRequested, worker_, &InferenceWorker::restoreConversation);
    connect(t, &TurnController::systemPromptChanged, this, &MainWindow::systemPromptChanged);
    connect(worker_, &InferenceWorker::tokensGenerated, t, &TurnController::onTokens);
    connect(worker_, &InferenceWorker::replyShared, t, &TurnController::onReplyShared);
    connect(worker_, &InferenceWorker::turnFinished, t, &TurnController::onTurnFinished);
    connect(worker_, &InferenceWorker::continueRoomMeasured, t, &TurnController::onContinueRoom);

    connect(composer_, &MessageComposer::sendRequested, this, [this](const QString& text) {
        if (turns_->send(text, systemPrompt_->text())) composer_->clear();
    });
    connect(composer_, &MessageComposer::stopRequested, this, [this] {
        if (!turns_->generating()) return;
        worker_->requestStop();  // thread-safe: the worker polls it between steps
        status_->showState(tr("Stopping…"));
    });
    connect(composer_, &MessageComposer::regenerateRequested, t, &TurnController::regenerate);
    connect(composer_, &MessageComposer::continueRequested, t, &TurnController::continueReply);
    connect(composer_, &MessageComposer::cancelEditRequested, t, &TurnController::cancelEdit);
    connect(chatView_, &ChatView::editRequested, t, &TurnController::editMessage);
    connect(chatView_, &ChatView::versionRequested, t, &TurnController::showVersion);
    connect(conversations_, &ConversationList::openRequested, t, &TurnController::openConversation);
    connect(conversations_, &ConversationList::newRequested, t, &TurnController::newConversation);
    connect(conversations_, &ConversationList::deleted, this, [this](qint64 id) {
        if (id == turns_->conversationId()) turns_->newConversation();
    });
    connect(systemPrompt_, &SystemPromptBar::edited, this, [this](const QString& text) {
        preferences::setSystemPrompt(text);
        turns_->setSystemPrompt(text);
    });
    connect(composer_, &MessageComposer::textChanged, this, [this] {
        refreshState();
        scheduleMeasure();
    });
    connect(composer_->measure(), &MessageFitLabel::due, this, &MainWindow::requestMeasure);

    connect(t, &TurnController::generatingChanged, this, &MainWindow::refreshState);
    connect(t, &TurnController::actionsChanged, this, &MainWindow::refreshState);
    connect(t, &TurnController::turnStarted, this, [this] {
        panels_->turnStarted();
        chatView_->scrollToEnd();
    });
    connect(t, &TurnController::frame, this, &MainWindow::showFrame);
    // The token sampled last is not in the cache (a stopped reply's goes in with the next turn's
    // prompt): the bar now counts what the cache holds, as the KV panel does.
    connect(t, &TurnController::replyEnded, status_, &AppStatusBar::showCachedTokens);
    connect(t, &TurnController::turnFinished, this,
            [this](const lantern::TurnStats& stats) { panels_->turnFinished(stats); });
    connect(t, &TurnController::turnUndone, panels_, &PanelDocks::turnUndone);
    connect(t, &TurnController::turnFailed, this,
            [this](const QString& message) { QMessageBox::warning(this, tr("Generation failed"), message); });
    connect(t, &TurnController::inputReturned, this, [this](const QString& text) {
        if (composer_->isEmpty()) composer_->setText(text);
    });
    connect(t, &TurnController::editStarted, this, [this](const QString& text) {
        if (text.isNull()) return;
        composer_->setText(text);
        composer_->focusInput();
    });
    connect(t, &TurnController::editCancelled, this, [this] {
        composer_->clear();
        status_->clearMessage();
    });
    connect(t, &TurnController::statusMessage, this, [this](const QString& text, int ms) {
        if (text.isEmpty())
            status_->clearMessage();
        else
            status_->showMessage(text, ms);
    });
    connect(t, &TurnController::conversationsChanged, conversations_, &ConversationList::refresh);
    connect(t, &TurnController::versionShown, panels_, &PanelDocks::conversationChanged);
    connect(t, &TurnController::conversationIdChanged, this, [this](qint64 id) {
        panels_->conversationChanged();
        preferences::setLastConversation(id);
        conversations_->setCurrent(id);
        chatView_->scrollToEnd();
        if (id < 0) composer_->focusInput();
    });
    connect(t, &TurnController::conversationOpened, systemPrompt_, &SystemPromptBar::setText);
    connect(t, &TurnController::measureInvalidated, this, &MainWindow::scheduleMeasure);
}

void MainWindow::connectModelSession() {
    connect(session_, &ModelSession::loadRequested, worker_, &InferenceWorker::loadModel);
    connect(worker_, &InferenceWorker::modelLoaded, session_, &ModelSession::onLoaded);
    connect(worker_, &InferenceWorker::loadFailed, session_, &ModelSession::onLoadFailed);
    connect(worker_, &InferenceWorker::reloadingModel, session_, &ModelSession::onReloading);
    connect(worker_, &InferenceWorker::modelUnloaded, this, [this] {
        if (session_->state() == ModelSession::State::Loading) return;  // dropped before a new one loads
        turns_->onModelUnloaded();
        session_->onUnloaded();
    });
    connect(session_, &ModelSession::stateChanged, this, &MainWindow::refreshState);
    connect(session_, &ModelSession::deviceSelectorChanged, menus_->deviceMenu(), &DeviceMenu::setSelector);
    connect(menus_->deviceMenu(), &DeviceMenu::chosen, this, &MainWindow::chooseDevice);
    connect(menus_->modelPicker(), &ModelPicker::modelChosen, this,
            [this](const QString& path) { openModel(path); });
    connect(menus_->modelPicker(), &ModelPicker::modelListChanged, this, &MainWindow::modelListChanged);
    connect(menus_, &AppMenus::openModelRequested, this, [this](const QString& path) { openModel(path); });
    connect(menus_, &AppMenus::contextLengthRequested, this, [this] {
        if (state() != State::Ready) return;
        if (session_->remote()) {
            status_->showMessage(tr("The remote server sets its own context length."), 6000);
            return;
        }
        const auto cached = static_cast<uint32_t>(std::max(status_->cachedTokens(), 0));
        if (const auto length = model_dialogs::chooseContextLength(this, *session_, api_->enabled(), cached))
            setContextLength(*length);
    });
    connect(menus_, &AppMenus::measureInvalidated, this, &MainWindow::scheduleMeasure);
    connect(menus_, &AppMenus::getModelsRequested, this, &MainWindow::showModelsDialog);
    connect(menus_, &AppMenus::remoteEnginesRequested, this, &MainWindow::showRemoteEnginesDialog);
    connect(session_, &ModelSession::loadStarted, this, [this](const QString& path, bool reload) {
        turns_->modelLeaving();
        status_->showMessage(
            reload ? tr("Loading the model again with room in its KV cache for the API server's replies…")
                   : tr("Loading %1…").arg(QDir::toNativeSeparators(path)));
        panels_->clearForLoad();
        status_->clearCachedTokens();  // the next model's cache has not been reported yet
    });
    connect(session_, &ModelSession::loaded, this, &MainWindow::onModelLoaded);
    connect(session_, &ModelSession::rolledBack, this,
            [this](ModelSession::Change change, const QString& path, const QString& asked,
                   const QString& message) {
                const bool length = change == ModelSession::Change::ContextLength;
                model_dialogs::explainRollback(
                    this, change, path,
                    length ? display::count(asked.toULongLong()) : menus_->deviceMenu()->nameOf(asked),
                    message);
            });
    connect(session_, &ModelSession::failed, this, [this](const QString& path, const QString& message) {
        modelName_.clear();
        setWindowTitle(tr("Lantern"));
        status_->clearDevice();
        menus_->modelPicker()->setCurrentModel(QString());
        status_->showMessage(tr("Could not load the model."), 8000);
        model_dialogs::explainLoadFailure(this, path, message);
    });
    connect(session_, &ModelSession::unloaded, this, [this] {
        modelName_.clear();
        status_->clearDevice();
        panels_->modelUnloaded();
    });
}

// ---------------------------------------------------------------------------------------------
// Models

void MainWindow::openModel(const QString& path, const QString& deviceSelector) {
    if (turns_->generating()) return;
    session_->open(path, deviceSelector);
}

void MainWindow::setContextLength(uint32_t length) {
    session_->setContextLength(length);
}

void MainWindow::chooseDevice(const QString& selector) {
    session_->chooseDevice(selector);
}

void MainWindow::showModelsDialog() {
    if (!modelsDialog_) {
        lantern::DeviceInfo device;
        if (device_) {
            device = *device_;
        } else {
            try {  // no model loaded: the device one would load on
                const auto devices = lantern::list_devices();
                const uint32_t chosen =
                    lantern::choose_device(devices, session_->deviceSelector().toStdString());
                for (const auto& d : devices) {
                    if (d.index == chosen) device = d;
                }
            } catch (const std::exception&) {
                // No Vulkan device: the fit column says "too big" for a heap of 0, which is true.
            }
        }
        modelsDialog_ = new ModelsDialog(downloads_, device, loadedContext_, this);
        modelsDialog_->setObjectName(QStringLiteral("modelsDialog"));
        modelsDialog_->setAttribute(Qt::WA_DeleteOnClose);
        connect(modelsDialog_, &ModelsDialog::modelsFolderChanged, this, [this](const QString& folder) {
            preferences::setModelsDirectory(folder);
            downloads_->restorePaused();
            menus_->modelPicker()->rescan();
        });
    }
    modelsDialog_->show();
    modelsDialog_->raise();
    modelsDialog_->activateWindow();
}

void MainWindow::openRemote(const RemoteEndpoint& endpoint) {
    if (turns_->generating()) return;
    session_->openRemote(endpoint);
}

void MainWindow::showRemoteEnginesDialog() {
    if (!remoteDialog_) {
        remoteDialog_ = new RemoteEnginesDialog(this);
        remoteDialog_->setObjectName(QStringLiteral("remoteEnginesDialog"));
        remoteDialog_->setAttribute(Qt::WA_DeleteOnClose);
        connect(remoteDialog_, &RemoteEnginesDialog::connectRequested, this, &MainWindow::openRemote);
    }
    remoteDialog_->show();
    remoteDialog_->raise();
    remoteDialog_->activateWindow();
}

void MainWindow::connectRemote() {
    connect(session_, &ModelSession::remoteRequested, worker_, &InferenceWorker::connectRemote);
    connect(worker_, &InferenceWorker::remoteConnected, session_, &ModelSession::onRemoteConnected);
    connect(worker_, &InferenceWorker::remoteFailed, session_, &ModelSession::onRemoteFailed);
    connect(session_, &ModelSession::remoteConnected, this, &MainWindow::onRemoteConnected);
    connect(
        session_, &ModelSession::remoteFailed, this,
        [this](const RemoteEndpoint& endpoint, const QString& message) {
            status_->showMessage(tr("Could not connect to %1.").arg(endpoint.name), 8000);
            QMessageBox::warning(
                this, tr("Could not connect"),
                tr("Lantern could not chat on %1 (%2).\n\n%3").arg(endpoint.name, endpoint.baseUrl, message));
        });
    connect(worker_, &InferenceWorker::replyCutOff, this, [this](const QString& message) {
        turns_->onError(message, reply_details::Ending::ConnectionLost);
    });
    connect(worker_, &InferenceWorker::remoteMetrics, panels_, &PanelDocks::remoteMetrics);
    connect(worker_, &InferenceWorker::remoteMetricsUnavailable, panels_,
            &PanelDocks::remoteMetricsUnavailable);
    connect(worker_, &InferenceWorker::remoteTurnFigures, panels_, &PanelDocks::remoteTurnFigures);
}

void MainWindow::onRemoteConnected(const RemoteReport& report) {
    device_.reset();
    loadedContext_ = report.contextLength > 0 ? report.contextLength : 4096;
    const QString host = remote::hostLabel(report.endpoint.baseUrl);
    modelName_ = tr("%1 on %2").arg(report.model, host);  // (replies are signed with it too)
    menus_->modelPicker()->setCurrentModel(QString());
    setWindowTitle(tr("%1 — Lantern").arg(modelName_));
    chatView_->setRepliesOpenInReasoning(false);
    menus_->thinkingAction()->setEnabled(false);
    status_->setRemote(host, report.kind);
    status_->setContextLength(report.contextLength);
    panels_->remoteConnected(report);
    status_->showMessage(
        tr("Connected to %1 on %2 in %3")
            .arg(report.model, report.endpoint.name, display::milliseconds(report.connectMs)),
        8000);
    turns_->setModel(modelName_, modelName_, report.contextLength);
    composer_->focusInput();
}

void MainWindow::onModelLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                               const LoadReport& report) {
    device_ = device;
    loadedContext_ = report.context_length;
    const QString path = session_->path();
    modelName_ = model.name.empty() ? menus_->modelPicker()->modelName(path, false)
                                    : QString::fromStdString(model.name);
    menus_->modelPicker()->setCurrentModel(path);
    setWindowTitle(tr("%1 — Lantern").arg(modelName_));
    chatView_->setRepliesOpenInReasoning(report.replies_open_in_reasoning);
    menus_->thinkingAction()->setEnabled(report.thinking_switch);
    status_->setDevice(device);
    status_->setContextLength(report.context_length);
    menus_->deviceMenu()->setSelector(session_->deviceSelector());
    panels_->modelLoaded(model, device, report);
    status_->showMessage(
        tr("Loaded %1 on %2 in %3")
            .arg(modelName_, QString::fromStdString(device.name), display::milliseconds(report.load_ms)),
        8000);
    turns_->setModel(modelName_, menus_->modelPicker()->modelName(path), report.context_length);
    if (!report.chat_template)
        status_->showMessage(
            tr("%1 has no chat template: it continues your text (completion mode).").arg(modelName_), 10000);
    composer_->focusInput();
}

// ---------------------------------------------------------------------------------------------
// State

MainWindow::State MainWindow::state() const {
    if (turns_ != nullptr && turns_->generating()) return State::Generating;
    switch (session_->state()) {
        case ModelSession::State::NoModel:
            return State::NoModel;
        case ModelSession::State::Loading:
            return State::Loading;
        case ModelSession::State::Ready:
            return State::Ready;
    }
    return State::NoModel;
}

void MainWindow::refreshState() {
    const State before = shownState_;
    const State now = shownState_ = state();
    turns_->setModelReady(session_->state() == ModelSession::State::Ready);
    if (now == State::Ready && before != State::Ready)
        scheduleMeasure();  // (the conversation may have changed)
    if (now == State::NoModel) composer_->measure()->clear();
    const bool ready = now == State::Ready, generating = now == State::Generating,
               loading = now == State::Loading;
    composer_->setGenerating(generating);
    composer_->setActions({.send = ready,
                           .stop = generating,
                           .regenerate = turns_->canRegenerate(),
                           .resume = turns_->canContinue(),
                           .continueBlockedByRoom = turns_->continueBlockedByRoom()});
    menus_->setBusy(generating, loading, ready, chatModel_->rowCount() > 0);
    conversations_->setGenerating(generating);
    api_->setModelLoaded(!session_->path().isEmpty());
    api_->setBusy(generating, loading);
    const QString modelsDir = QDir::toNativeSeparators(preferences::modelsDirectory());
    switch (now) {
        case State::NoModel:
            status_->showState(tr("No model"));
            chatView_->showWelcome(ChatView::Welcome::NoModel, modelName_, modelsDir);
            break;
        case State::Loading:
            status_->showState(
                session_->remote()
                    ? tr("Connecting to %1…").arg(session_->remoteName())
                    : tr("Loading %1…").arg(menus_->modelPicker()->modelName(session_->path())));
            chatView_->showWelcome(ChatView::Welcome::Loading, modelName_, modelsDir);
            break;
        case State::Ready:
            status_->showState(tr("Ready"));
            chatView_->showWelcome(ChatView::Welcome::Ready, modelName_, modelsDir);
            break;
        case State::Generating:
            if (before != State::Generating) status_->showState(tr("Generating…"));
            break;
    }
}

void MainWindow::showFrame(const StreamFrame& frame) {
    panels_->showFrame(frame);
    status_->showLiveState(tr("Generating… %Ln token(s)", nullptr, turns_->streamedTokens()));
    status_->showStreamPosition(frame.position);
}

void MainWindow::onKvStats(const KvSnapshot& snapshot) {
    panels_->kvCache()->setSnapshot(snapshot);
    for (const lantern::KvSequenceStats& seq : snapshot.stats.sequences)
        if (seq.id == snapshot.active_sequence)
            status_->setCachedTokens(static_cast<int>(seq.tokens),
                                     turns_->streaming() && turns_->streamedTokens() > 0);
}

void MainWindow::scheduleMeasure() {
    if (composer_ != nullptr) composer_->measure()->schedule(composer_->text());
}

void MainWindow::requestMeasure() {
    const QString text = composer_->text();
    if (text.isEmpty() || state() != State::Ready) return;  // asked again once the reply is written
    // An edited message replaces itself and everything after it: it is measured after the
    // messages before it (those the model's conversation holds).
    emit measureMessageRequested(composer_->measure()->nextRequest(), text, turns_->messagesKeptByEdit());
}

// ---------------------------------------------------------------------------------------------
// Window

bool MainWindow::writeConversationMarkdown(const QString& path, QString* error) const {
    return menus_->exportConversation(path, error);
}

namespace {
// The model file among dropped URLs: the first local *.gguf.
QString droppedModel(const QMimeData* mime) {
    if (mime == nullptr || !mime->hasUrls()) return {};
    for (const QUrl& url : mime->urls())
        if (url.isLocalFile() && url.toLocalFile().endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive))
            return url.toLocalFile();
    return {};
}
}  // namespace

void MainWindow::changeEvent(QEvent* event) {
    QMainWindow::changeEvent(event);
    if (event->type() != QEvent::LanguageChange) return;
    // View > Language switched: the window's own words (menus, docks and panels word theirs).
    setWindowTitle(modelName_.isEmpty() ? tr("Lantern") : tr("%1 — Lantern").arg(modelName_));
    if (auto* dock = findChild<QDockWidget*>(QStringLiteral("conversationsDock")))
        dock->setWindowTitle(tr("Conversations"));
    if (shownState_ == State::Generating) status_->showState(tr("Generating…"));  // (until the next frame)
    refreshState();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const State now = state();
    if (!droppedModel(event->mimeData()).isEmpty() && now != State::Generating && now != State::Loading)
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QString path = droppedModel(event->mimeData());
    if (path.isEmpty()) return;
    event->acceptProposedAction();
    openModel(path);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (turns_->generating()) {
        worker_->requestStop();
        turns_->closing();  // what was written so far is stored as an interrupted reply
    }
    preferences::setWindowLayout(saveGeometry(), saveState());
    preferences::setSamplingSettings(panels_->sampling()->settings());
    QMainWindow::closeEvent(event);
}
