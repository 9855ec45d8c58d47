#include "panels/PanelDocks.h"

#include <QDockWidget>
#include <QEvent>
#include <QLabel>
#include <QMainWindow>
#include <QStackedWidget>

#include "Format.h"
#include "Preferences.h"
#include "panels/AttentionPanel.h"
#include "panels/KvCachePanel.h"
#include "panels/ModelInfoPanel.h"
#include "panels/PerformancePanel.h"
#include "panels/RemoteKvPanel.h"
#include "panels/SamplingPanel.h"
#include "panels/StepProfilePanel.h"
#include "worker/InferenceWorker.h"

PanelDocks::PanelDocks(QMainWindow* window, QDockWidget* conversationsDock, InferenceWorker* worker)
    : QObject(window),
      worker_(worker),
      sampling_(new SamplingPanel(window)),
      kv_(new KvCachePanel(window)),
      performance_(new PerformancePanel(window)),
      attention_(new AttentionPanel(window)),
      profile_(new StepProfilePanel(window)),
      modelInfo_(new ModelInfoPanel(window)),
      remoteKv_(new RemoteKvPanel(window)) {
    // A panel the remote backend cannot feed shows why in its place (a stack: the panel, the note).
    const auto stacked = [window](QWidget* panel, QWidget* remotePage) {
        auto* stack = new QStackedWidget(window);
        stack->addWidget(panel);
        stack->addWidget(remotePage);
        return stack;
    };
    const auto note = [window] {
        auto* label = new QLabel(window);
        label->setWordWrap(true);
        label->setAlignment(Qt::AlignCenter);
        label->setMargin(16);
        label->setProperty("role", QStringLiteral("caption"));
        return label;
    };
    attentionNote_ = note();
    profileNote_ = note();
    kvStack_ = stacked(kv_, remoteKv_);
    attentionStack_ = stacked(attention_, attentionNote_);
    profileStack_ = stacked(profile_, profileNote_);
    auto dock = [window](const char* name, QWidget* content) {
        auto* d = new QDockWidget(window);
        d->setObjectName(QString::fromLatin1(name));
        d->setWidget(content);
        d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                       QDockWidget::DockWidgetClosable);
        window->addDockWidget(Qt::RightDockWidgetArea, d);
        return d;
    };
    QDockWidget* kvDock = kvDock_ = dock("kvCacheDock", kvStack_);
    QDockWidget* samplingDock = samplingDock_ = dock("samplingDock", sampling_);
    QDockWidget* performanceDock = performanceDock_ = dock("performanceDock", performance_);
    QDockWidget* attentionDock = attentionDock_ = dock("attentionDock", attentionStack_);
    QDockWidget* profileDock = profileDock_ = dock("stepProfileDock", profileStack_);
    QDockWidget* modelDock = modelDock_ = dock("modelDock", modelInfo_);
    retranslateUi();
    window->installEventFilter(this);  // the window's LanguageChange words the docks again
    window->splitDockWidget(kvDock, samplingDock, Qt::Vertical);
    window->tabifyDockWidget(kvDock, performanceDock);
    window->tabifyDockWidget(performanceDock, attentionDock);
    window->tabifyDockWidget(attentionDock, profileDock);
    window->tabifyDockWidget(samplingDock, modelDock);
    kvDock->raise();
    samplingDock->raise();
    window->resizeDocks({conversationsDock, kvDock}, {230, 430}, Qt::Horizontal);
    window->resizeDocks({kvDock, samplingDock}, {430, 420}, Qt::Vertical);

    connect(worker_, &InferenceWorker::modelWarmedUp, performance_, &PerformancePanel::setWarmUp);
    connect(worker_, &InferenceWorker::attentionCaptured, attention_, &AttentionPanel::setSnapshot);
    connect(worker_, &InferenceWorker::conversationTokens, attention_,
            &AttentionPanel::setConversationTokens);
    connect(worker_, &InferenceWorker::tokensGenerated, this, [this](const TokenBatch& batch) {
        if (!batch.attention.empty()) attention_->addAttentionRows(batch.attention);
    });
    connect(worker_, &InferenceWorker::stepProfiled, profile_, &StepProfilePanel::showProfile);
    // Every knob change goes straight into the worker's SettingsSlot (thread-safe, see
    // InferenceWorker.h): a queued call would wait until the running reply had finished.
    connect(sampling_, &SamplingPanel::settingsChanged, this, [this](const lantern::SamplingSettings& s) {
        if (worker_->setSamplingSettings(s)) preferences::setSamplingSettings(s);
    });
    connect(attention_, &AttentionPanel::captureLayerChanged, this,
            [this](int layer) { worker_->setAttentionLayer(layer); });
    // Thread-safe as well: it must reach a reply that is being written.
    connect(profile_, &StepProfilePanel::timeNextStepRequested, this,
            [this] { worker_->requestStepProfile(); });
}

void PanelDocks::retranslateUi() {
    attentionNote_->setText(
        tr("Attention weights come from the local engine's own kernels: a "
           "remote server does not send them."));
    profileNote_->setText(
        tr("A step profile times the local engine's own kernels: a remote "
           "server's steps cannot be timed from here."));
    kvDock_->setWindowTitle(tr("KV Cache"));
    samplingDock_->setWindowTitle(tr("Sampling"));
    performanceDock_->setWindowTitle(tr("Performance"));
    attentionDock_->setWindowTitle(tr("Attention"));
    profileDock_->setWindowTitle(tr("Step Profile"));
    modelDock_->setWindowTitle(tr("Model"));
}

bool PanelDocks::eventFilter(QObject* watched, QEvent* event) {
    if (watched == parent() && event->type() == QEvent::LanguageChange) retranslateUi();
    return QObject::eventFilter(watched, event);
}

void PanelDocks::clearForLoad() {
    kv_->clear();
    modelInfo_->clear();
}

void PanelDocks::showLocal(bool local) {
    for (QStackedWidget* stack : {kvStack_, attentionStack_, profileStack_})
        stack->setCurrentIndex(local ? 0 : 1);
    if (local) sampling_->setLocal();
    performance_->setRemote(!local);
}

void PanelDocks::remoteConnected(const RemoteReport& report) {
    showLocal(false);
    kv_->clear();
    modelInfo_->setRemote(report);
    remoteKv_->setServer(report);
    attention_->setModelShape(0, 0);
    profile_->setModelLoaded(false);
    const remote::ExtraSamplingFields extra = remote::extraSamplingFieldsFor(report.kind);
    sampling_->setRemote(remote::serverKindName(report.kind), extra.topK, extra.minP,
                         !extra.repeatPenalty.isEmpty(), extra.repeatLastN);
}

void PanelDocks::remoteMetrics(const RemoteMetrics& metrics) {
    remoteKv_->setMetrics(metrics);
}

void PanelDocks::remoteMetricsUnavailable(const QString& reason) {
    remoteKv_->setUnavailable(reason);
}

void PanelDocks::remoteTurnFigures(const RemoteTurnFigures& f) {
    QStringList parts;
    const remote::ServerTimings& t = f.timings;
    if (t.promptTokensPerSecond > 0)
        parts << tr("prompt %1").arg(display::tokensPerSecond(t.promptTokensPerSecond));
    if (t.generationTokensPerSecond > 0)
        parts << tr("generation %1").arg(display::tokensPerSecond(t.generationTokensPerSecond));
    if (t.timeToFirstTokenMs > 0)
        parts << tr("first token %1").arg(display::milliseconds(t.timeToFirstTokenMs));
    if (t.promptTokensComputed >= 0)
        parts << tr("%1 prompt tokens computed")
                     .arg(display::count(static_cast<uint64_t>(t.promptTokensComputed)));
    if (parts.isEmpty())
        parts << (f.usage ? tr("token counts only (no timings sent)")
                          : tr("nothing (no usage or timings sent)"));
    performance_->setServerFigures(parts.join(QStringLiteral(" · ")));
}

void PanelDocks::modelLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                             const LoadReport& report) {
    showLocal(true);
    modelInfo_->setModel(model, device, report);
    performance_->setLoadReport(report);
    attention_->setModelShape(model.n_layers, model.n_heads);
    profile_->setModelLoaded(true);
    worker_->setAttentionLayer(attention_->captureLayer());
}

void PanelDocks::modelUnloaded() {
    clearForLoad();
    attention_->setModelShape(0, 0);
    profile_->setModelLoaded(false);
}

void PanelDocks::turnStarted() {
    performance_->beginTurn();
}

void PanelDocks::promptProgress(quint32 done, quint32 total) {
    performance_->showPromptProgress(done, total);
}

void PanelDocks::showFrame(const StreamFrame& frame) {
    performance_->addTokens(frame.stepMs);
    sampling_->showCandidates(frame.candidates, frame.token);
}

void PanelDocks::turnFinished(const lantern::TurnStats& stats) {
    performance_->finishTurn(stats);
    kv_->setTurn(stats);
    sampling_->setSeedUsed(stats.seed);
}

void PanelDocks::conversationChanged() {
    attention_->clearWords();
}

void PanelDocks::turnUndone() {
    performance_->cancelTurn();
}
