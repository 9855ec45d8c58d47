// PanelDocks — the inside-the-engine panels, docked on the right: KV cache, sampling,
// performance, attention, step profile and model facts, and what feeds them (UI thread).
//
// It connects the panels to the InferenceWorker's reports (queued) and their knobs to its
// thread-safe setters, which reach a reply being written; the window forwards the turn and the
// model events that only it sees.
#pragma once
#include <QObject>

#include "remote/RemoteChat.h"
#include "remote/RemoteMetrics.h"
#include "turn/StreamThrottle.h"
#include "worker/EngineTypes.h"

class AttentionPanel;
class InferenceWorker;
class KvCachePanel;
class ModelInfoPanel;
class PerformancePanel;
class QDockWidget;
class QLabel;
class QMainWindow;
class QStackedWidget;
class RemoteKvPanel;
class SamplingPanel;
class StepProfilePanel;

class PanelDocks : public QObject {
    Q_OBJECT
public:
    // Docks the panels into `window` beside `conversationsDock` (on the left).
    PanelDocks(QMainWindow* window, QDockWidget* conversationsDock, InferenceWorker* worker);

    SamplingPanel* sampling() const { return sampling_; }
    KvCachePanel* kvCache() const { return kv_; }

    void clearForLoad();  // a model is being loaded: the old one's state goes
    void modelLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                     const LoadReport& report);
    void modelUnloaded();
    void turnStarted();
    void promptProgress(quint32 done, quint32 total);
    void showFrame(const StreamFrame& frame);
    void turnFinished(const lantern::TurnStats& stats);
    void turnUndone();  // it wrote nothing: the last reply's figures stay
    // Another conversation, or another version of it, is shown: the attention rows of the old
    // one's tokens go.
    void conversationChanged();
    AttentionPanel* attention() const { return attention_; }
    // The chat runs on a remote server: the panels show what it exposes and say what it cannot
    // feed (attention, step profile, candidates, the block map) instead of showing zeros.
    void remoteConnected(const RemoteReport& report);
    void remoteMetrics(const RemoteMetrics& metrics);
    void remoteMetricsUnavailable(const QString& reason);
    void remoteTurnFigures(const RemoteTurnFigures& figures);
    RemoteKvPanel* remoteKv() const { return remoteKv_; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;  // the window's LanguageChange

private:
    void retranslateUi();  // the dock titles and the notes for a remote server
    InferenceWorker* worker_;
    SamplingPanel* sampling_;
    KvCachePanel* kv_;
    PerformancePanel* performance_;
    AttentionPanel* attention_;
    StepProfilePanel* profile_;
    ModelInfoPanel* modelInfo_;
    RemoteKvPanel* remoteKv_;
    QStackedWidget* kvStack_;
    QStackedWidget* attentionStack_;
    QStackedWidget* profileStack_;
    QLabel* attentionNote_ = nullptr;
    QLabel* profileNote_ = nullptr;
    QDockWidget* kvDock_ = nullptr;
    QDockWidget* samplingDock_ = nullptr;
    QDockWidget* performanceDock_ = nullptr;
    QDockWidget* attentionDock_ = nullptr;
    QDockWidget* profileDock_ = nullptr;
    QDockWidget* modelDock_ = nullptr;
    void showLocal(bool local);
};
