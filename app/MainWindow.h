// MainWindow — the chat (centre), conversations (left), and the inside-the-engine panels (right):
// sampling knobs, KV cache map, performance, attention heatmap and model facts.
//
// It owns the UI-side models (ChatModel, the conversation list) and the ConversationStore, and
// talks to the InferenceWorker on its thread only through queued signals; the two exceptions are
// the thread-safe requestStop() and setSamplingSettings(), which must reach a running generation.
#pragma once
#include <QElapsedTimer>
#include <QMainWindow>
#include <QThread>
#include <QVector>
#include <QTimer>
#include <memory>
#include <optional>

#include "ModelLibrary.h"
#include "chat/ChatModel.h"
#include "chat/ConversationStore.h"
#include "worker/EngineTypes.h"

class AttentionPanel;
class ChatModel;
class ChatView;
class ConversationStore;
class ElidedLabel;
class KvCachePanel;
class ModelInfoPanel;
class PerformancePanel;
class SamplingPanel;
class StepProfilePanel;
class InferenceWorker;
class QActionGroup;
class QComboBox;
class QDockWidget;
class QFileSystemWatcher;
class QLabel;
class StatusLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QMenu;
class QPlainTextEdit;
class QPushButton;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    enum class State { NoModel, Loading, Ready, Generating };

    // storePath: the conversation database (tests pass a temporary one).
    explicit MainWindow(const QString& storePath = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Loads a model on the worker thread (also what --model does). deviceSelector "" = preference.
    void openModel(const QString& path, const QString& deviceSelector = {});
    // Loads the model again with this context length (0 = automatic: the model's, at most 4096),
    // remembered for that model file; the conversation goes on in the new context. If the load
    // fails, the length it had before is loaded again (File > Context Length… calls it).
    void setContextLength(uint32_t length);
    // Loads the model again on another device (a Device menu entry; "" = automatic), remembered
    // for the next start. If it does not load there (too big for that device at the model's
    // context length, a device that went away), the model is loaded again where it was and the
    // choice goes back, with the reason.
    void chooseDevice(const QString& selector);
    State state() const { return state_; }
    InferenceWorker* worker() const { return worker_; }  // (lives on its own thread; for tests)

signals:
    // Requests to the InferenceWorker (queued: it lives on its own thread).
    void loadModelRequested(const QString& path, const QString& deviceSelector, quint32 contextLength);
    void sendRequested(const QString& text);
    void regenerateRequested();
    void continueRequested();
    void systemPromptChanged(const QString& text);
    void resetConversationRequested();
    void restoreConversationRequested(const QStringList& roles, const QStringList& contents);
    void listDevicesRequested();
    void apiServerStartRequested(quint16 port);
    void apiServerStopRequested();
    void measureMessageRequested(quint64 request, const QString& text, int keepMessages);
    // The model picker was filled from a finished scan of the models folders (tests wait on it).
    void modelListChanged();

protected:
    void closeEvent(QCloseEvent* event) override;
    // A .gguf file dropped on the window is opened (the first part of a split model opens it whole).
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void buildActions();
    void buildCentralArea();
    void buildDocks();
    void buildStatusBar();
    void connectWorker();
    // File > Local API Server: on/off (remembered), and its port.
    void setApiServerEnabled(bool on);
    void chooseApiServerPort();
    void chooseContextLength();  // File > Context Length… (ContextLengthDialog)
    void showApiServerState(bool listening, quint32 inProgress = 0, quint32 waiting = 0, quint64 served = 0);
    void setState(State state);
    void refreshModelPicker();  // scans the models folders on a thread, then fills the picker
    void fillModelPicker();     // from the last scan, with the loaded and last models
    void watchModelFolders(const QStringList& folders);  // the folders the last scan walked
    void refreshConversationList();
    // What to call the model file at `path`: its file name, or the name the app that downloaded
    // it gives it where the file name is only a digest (Ollama).
    QString modelFileName(const QString& path, bool withExtension = true) const;
    void openConversation(qint64 id);
    void newConversation();
    void deleteConversation(qint64 id);
    void renameConversation(qint64 id);
    void sendMessage();
    // Gives the model the open conversation's user/assistant turns (after opening a stored
    // conversation or loading another model), so the next reply continues it.
    void restoreConversationToModel();
    void stopGeneration();
    void regenerateReply();
    // Writes more of the last reply (cut by the token limit or Stop, or reopened from disk).
    void continueReply();
    // Puts the user message at `row` back into the input; the next send replaces it and every
    // message after it (a branch from that point; the prefix cache keeps what came before).
    void editMessage(int row);
    void cancelEdit();
    void exportConversation();

public:
    // The open conversation as Markdown at `path` (File > Export Conversation…); false with a
    // message in `error` when the file cannot be written.
    bool writeConversationMarkdown(const QString& path, QString* error = nullptr) const;

protected:
    int continuableRow() const;  // the last reply's row if the conversation ends with one, else -1
    void beginAssistantReply(qint64 replaces = -1);  // replaces: store id of the first message it replaces
    // The reply at `row` (stored as `storeId`, holding `textSoFar`) receives the tokens to come.
    void startStreaming(int row, qint64 storeId, const QString& textSoFar);
    void savePartialReply();
    void endAssistantReply(bool complete, const QString& details);
    void addNotice(const QString& text);
    void undoTurnThatWroteNothing(const lantern::TurnStats& stats);
    bool roomToContinue(int row) const;  // Continue could write more of the reply at `row`
    void updateContinueButton();
    // The input's length and whether it fits (ChatSession::measure), under the input: asked a
    // moment after typing stops, and again whenever the conversation or the policy changes.
    void scheduleMeasure();
    void requestMeasure();
    void showMeasure(quint64 request, const lantern::MessageFit& fit);
    void chooseLanguage(const QString& name);
    void showAbout();

    // Worker results.
    void onModelLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device, const LoadReport& report);
    void onLoadFailed(const QString& message);
    void onModelReloading();  // the worker loads the same model again (InferenceWorker::reloadingModel)
    void clearForLoad();      // the panels that show the loaded model's state
    void onModelUnloaded();
    void onTokens(const TokenBatch& batch);
    void onTurnFinished(const lantern::TurnStats& stats);
    void onKvStats(const KvSnapshot& snapshot);
    void onError(const QString& message);
    void onDevicesListed(const DeviceList& devices);

    std::unique_ptr<ConversationStore> store_;
    QThread workerThread_;
    InferenceWorker* worker_ = nullptr;

    ChatModel* chatModel_ = nullptr;
    ChatView* chatView_ = nullptr;
    QPlainTextEdit* input_ = nullptr;
    QLineEdit* systemPrompt_ = nullptr;
    QPushButton* sendButton_ = nullptr;
    QPushButton* stopButton_ = nullptr;
    QPushButton* regenerateButton_ = nullptr;
    QPushButton* continueButton_ = nullptr;
    QAction* exportAction_ = nullptr;
    QLineEdit* conversationFilter_ = nullptr;
    QComboBox* modelPicker_ = nullptr;
    QListWidget* conversationList_ = nullptr;
    QFileSystemWatcher* modelsWatcher_ = nullptr;
    // The scan of the models folders (ModelLibrary) runs off the UI thread: other apps' folders
    // may be large or on a slow disk.
    QThread* modelScan_ = nullptr;
    QVector<model_library::Model> scannedModels_;  // the last scan's models
    bool modelsScanned_ = false;    // a scan has finished at least once
    bool modelRescanWanted_ = false;  // the folders changed during a scan

    SamplingPanel* samplingPanel_ = nullptr;
    KvCachePanel* kvPanel_ = nullptr;
    PerformancePanel* performancePanel_ = nullptr;
    AttentionPanel* attentionPanel_ = nullptr;
    StepProfilePanel* stepProfilePanel_ = nullptr;
    ModelInfoPanel* modelInfoPanel_ = nullptr;

    StatusLabel* stateLabel_ = nullptr;
    StatusLabel* contextLabel_ = nullptr;
    QLabel* deviceLabel_ = nullptr;
    QLabel* apiLabel_ = nullptr;  // where the API server listens, hidden while it is off
    QAction* apiServerAction_ = nullptr;
    quint16 apiPort_ = 0;  // the port it listens on (0 while off)
    QAction* apiChatFirstAction_ = nullptr;  // File > API Replies Wait for the Chat
    QAction* thinkingAction_ = nullptr;      // File > Let the Model Think Before Answering (Qwen3)
    // The API's last activity report (InferenceWorker::apiServerActivity), shown by apiLabel_.
    quint32 apiInProgress_ = 0;
    quint32 apiWaiting_ = 0;
    quint64 apiServed_ = 0;

    QMenu* viewMenu_ = nullptr;
    QMenu* deviceMenu_ = nullptr;
    QActionGroup* deviceGroup_ = nullptr;
    QAction* openAction_ = nullptr;
    QAction* newChatAction_ = nullptr;
    QAction* contextLengthAction_ = nullptr;

    State state_ = State::NoModel;
    QString modelPath_;         // loaded (or loading) model
    QString loadedModelName_;
    QString deviceSelector_;
    uint32_t contextLength_ = 0;
    lantern::ModelInfo loadedModel_;    // as the last successful load reported them
    lantern::DeviceInfo loadedDevice_;
    // While a model loads with a newly chosen context length: the length it had before, loaded
    // again if the new one fails (-1: not such a load).
    qint64 contextLengthBefore_ = -1;
    // Likewise while it loads on a newly chosen device: the selector it had before.
    std::optional<QString> deviceBefore_;
    // The active sequence's tokens in the KV cache, as the worker last reported them (-1: none
    // yet). While a reply streams, the status bar counts the token just sampled too; once it ends,
    // the bar says what the cache holds, the figure the KV panel shows.
    int cachedContextTokens_ = -1;
    qint64 conversationId_ = -1;
    int streamingRow_ = -1;
    qint64 streamingStoreId_ = -1;
    QString streamingText_;
    int streamingTokens_ = 0;
    // The model's conversation holds the last reply (made in this session, or restored with a
    // reopened conversation): Regenerate and Continue act on it. Also true when it ends with the
    // user's turn after a Regenerate that wrote nothing: Regenerate then writes the reply it lacks.
    bool canRegenerate_ = false;
    QString continuedDetails_;  // the reply being continued: its details before (null: not continuing)
    quint32 replySharedTokens_ = 0;  // of the turn ending, tokens written beside API replies (replyShared)
    bool continuedComplete_ = true;  // and whether it was complete
    // What the running turn is, so that one that cannot start (no room in the context) is undone
    // the right way: a sent message goes back to the input, a reply keeps what it had.
    enum class Turn { Send, Regenerate, Continue };
    Turn turn_ = Turn::Send;
    QString sentText_;  // the text of the message being answered (Turn::Send)
    bool dropOldestTurns_ = true;  // File > When the Context Is Full, Drop the Oldest Turns
    int editingRow_ = -1;       // the user message being edited (editMessage), -1: none
    // What a running Edit and Resend or Regenerate replaces: off the screen and out of the model's
    // conversation, but still in the store until the turn has begun (its first token, or a turn
    // that changed something). A turn that changes nothing (no room, stopped while its prompt was
    // read) puts them back, so a refused replacement loses nothing.
    struct Replaced {
        int row = -1;                    // where they were; -1: nothing replaced
        QVector<ChatMessage> messages;
        bool editing = false;            // Edit and Resend: the edit goes on after an undo
        qint64 by = -1;                  // store id of the new turn's first message, which names them
        qint64 firstStoreId() const { return messages.isEmpty() ? -1 : messages.first().store_id; }
    };
    Replaced replaced_;
    void setAsideFrom(int row, bool editing);  // rows [row, end) become replaced_
    void commitReplacement();                  // the turn has begun: they leave the store
    void undoReplacement();                    // the turn changed nothing: they come back
    // A turn that never began (the app was killed while its prompt was read) left its messages in
    // the store after those it was to replace: they go, and an edit's text is back in the input.
    QVector<StoredMessage> withoutTurnThatNeverBegan(const QVector<StoredMessage>& stored, int& editRow, QString& editText);
    QTimer partialSaveTimer_;
    QTimer measureTimer_;
    quint64 measureRequest_ = 0;  // the latest request; older answers are ignored
    ElidedLabel* messageMeasure_ = nullptr;
    QElapsedTimer turnClock_;
    // Streamed tokens reach the widgets at most every kStreamFrameMs (the chat row, the latency
    // chart, the candidates, the status labels), the first of a burst at once: each update re-lays
    // out the growing reply and repaints the chart, and on a 2-core machine the UI thread took 35 %
    // of a core at 40 tok/s, from the same cores the CPU driver decodes on (see flushStream).
    static constexpr int kStreamFrameMs = 50;
    void flushStream();
    void showContextCount(int tokens);
    QTimer streamFrame_;
    QElapsedTimer sinceFlush_;
    QString pendingText_;
    std::vector<double> pendingSteps_;
    TokenCandidates pendingCandidates_;
    qint32 pendingToken_ = -1;
    quint32 pendingPosition_ = 0;
};
