#include "panels/PanelDocks.h"

#include <QDockWidget>
#include <QMainWindow>

#include "Preferences.h"
#include "panels/AttentionPanel.h"
#include "panels/KvCachePanel.h"
#include "panels/ModelInfoPanel.h"
#include "panels/PerformancePanel.h"
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
      modelInfo_(new ModelInfoPanel(window)) {
    auto dock = [window](const QString& title, const char* name, QWidget* content) {
        auto* d = new QDockWidget(title, window);
        d->setObjectName(QString::fromLatin1(name));
        d->setWidget(content);
        d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                       QDockWidget::DockWidgetClosable);
        window->addDockWidget(Qt::RightDockWidgetArea, d);
        return d;
    };
    QDockWidget* kvDock = dock(tr("KV Cache"), "kvCacheDock", kv_);
    QDockWidget* samplingDock = dock(tr("Sampling"), "samplingDock", sampling_);
    QDockWidget* performanceDock = dock(tr("Performance"), "performanceDock", performance_);
    QDockWidget* attentionDock = dock(tr("Attention"), "attentionDock", attention_);
    QDockWidget* profileDock = dock(tr("Step Profile"), "stepProfileDock", profile_);
    QDockWidget* modelDock = dock(tr("Model"), "modelDock", modelInfo_);
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

void PanelDocks::clearForLoad() {
    kv_->clear();
    modelInfo_->clear();
}

void PanelDocks::modelLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                             const LoadReport& report) {
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

void PanelDocks::turnUndone() {
    performance_->cancelTurn();
}
