// MainWindow — lays out and wires the app: the chat (centre), conversations (left), the
// inside-the-engine panels (right), menus, toolbar and status bar (UI thread).
//
// Behaviour lives in the controllers it wires: TurnController (a conversation's turns),
// ModelSession (which model is loaded, and how), ModelPicker, ApiServerControl, ConversationList.
// The InferenceWorker runs on its own thread and is reached only through queued signals, except
// the thread-safe requestStop() and setters that must reach a running generation.
#pragma once
#include <QMainWindow>
#include <QPointer>
#include <QThread>
#include <memory>
#include <optional>

#include "ModelSession.h"
#include "worker/EngineTypes.h"

class ApiServerControl;
class AppMenus;
class AppStatusBar;
class ChatModel;
class ChatView;
class ConversationList;
class ConversationStore;
class DeviceMenu;
class InferenceWorker;
class MessageComposer;
class ModelPicker;
class PanelDocks;
class SystemPromptBar;
class TurnController;
struct StreamFrame;

class ModelDownloads;
class ModelsDialog;
class RemoteEnginesDialog;

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
    // remembered for that model file; if it fails, the length it had is loaded again.
    void setContextLength(uint32_t length);
    // Loads the model again on another device ("" = automatic), remembered for the next start;
    // if it does not load there, it is loaded again where it was, with the reason.
    void chooseDevice(const QString& selector);
    State state() const;
    InferenceWorker* worker() const { return worker_; }  // (lives on its own thread; for tests)
    ModelDownloads* downloads() const { return downloads_; }
    // File > Get Models…: the Hub dialog (one at a time), for the device the model runs on.
    void showModelsDialog();
    // Chats on a remote OpenAI-compatible server instead of a local model (also what --remote
    // does); a failure is said in a message box and leaves no model.
    void openRemote(const RemoteEndpoint& endpoint);
    // File > Remote Engines…: the endpoints dialog (one at a time).
    void showRemoteEnginesDialog();
    PanelDocks* panels() const { return panels_; }  // (for tests)
    // The open conversation as Markdown at `path` (File > Export Conversation…); false with a
    // message in `error` when the file cannot be written.
    bool writeConversationMarkdown(const QString& path, QString* error = nullptr) const;

signals:
    // Requests to the InferenceWorker (queued: it lives on its own thread).
    void systemPromptChanged(const QString& text);
    void listDevicesRequested();
    void measureMessageRequested(quint64 request, const QString& text, int keepMessages);
    // The model picker was filled from a finished scan of the models folders (tests wait on it).
    void modelListChanged();

protected:
    void closeEvent(QCloseEvent* event) override;
    void changeEvent(QEvent* event) override;  // LanguageChange: the title, the state, a dock title
    // A .gguf file dropped on the window is opened (the first part of a split model opens it whole).
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void buildCentralArea();
    void buildDocks();
    void connectWorker();
    void connectTurns();
    void connectModelSession();
    void refreshState();  // buttons, actions and the state label after any change
    void showFrame(const StreamFrame& frame);
    void scheduleMeasure();
    void requestMeasure();
    void onModelLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                       const LoadReport& report);
    void onKvStats(const KvSnapshot& snapshot);
    void connectRemote();
    void onRemoteConnected(const RemoteReport& report);

    std::unique_ptr<ConversationStore> store_;
    QThread workerThread_;
    InferenceWorker* worker_ = nullptr;
    ModelSession* session_ = nullptr;
    TurnController* turns_ = nullptr;
    ApiServerControl* api_ = nullptr;

    ChatModel* chatModel_ = nullptr;
    ChatView* chatView_ = nullptr;
    ConversationList* conversations_ = nullptr;
    MessageComposer* composer_ = nullptr;
    SystemPromptBar* systemPrompt_ = nullptr;
    AppMenus* menus_ = nullptr;

    PanelDocks* panels_ = nullptr;
    ModelDownloads* downloads_ = nullptr;
    QPointer<ModelsDialog> modelsDialog_;
    QPointer<RemoteEnginesDialog> remoteDialog_;
    std::optional<lantern::DeviceInfo> device_;  // the loaded model's
    uint32_t loadedContext_ = 4096;              // the context models are judged at (the loaded one's)

    AppStatusBar* status_ = nullptr;

    State shownState_ = State::NoModel;  // as refreshState last showed it
    QString modelName_;                  // the loaded model's name, as replies are signed
};
