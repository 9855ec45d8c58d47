// AppMenus — the menu bar (File, View, Help) and the model toolbar, with the commands that are
// only a dialog or a remembered setting: open a model, export the conversation, the context
// length, dropping the oldest turns, thinking first, Markdown, the language, About (UI thread).
// View > Language switches the interface at once and is remembered; the menus and the toolbar
// are worded again on the window's LanguageChange (an event filter on it).
//
// Settings are applied at once (to the InferenceWorker's thread-safe setters or the views) and
// remembered in Preferences. Commands that need the window's other rooms go through its parts.
#pragma once
#include <QObject>
#include <functional>

class ApiServerControl;
class ChatView;
class ConversationStore;
class DeviceMenu;
class InferenceWorker;
class ModelPicker;
class ModelSession;
class QAction;
class QLabel;
class QMainWindow;
class QMenu;
class QToolBar;
class TurnController;

class AppMenus : public QObject {
    Q_OBJECT
public:
    struct Parts {
        QMainWindow* window;
        InferenceWorker* worker;
        ModelSession* session;
        TurnController* turns;
        ApiServerControl* api;
        ConversationStore* store;
        ChatView* chatView;
    };
    // Builds the menus and the toolbar into parts.window (its docks must exist: View lists them).
    explicit AppMenus(const Parts& parts);

    DeviceMenu* deviceMenu() const { return deviceMenu_; }
    ModelPicker* modelPicker() const { return modelPicker_; }
    QAction* thinkingAction() const { return thinking_; }  // enabled for templates with the switch
    // Which commands apply now: a reply being written or a model loading blocks some; Context
    // Length needs a loaded model; Export a conversation with messages.
    void setBusy(bool generating, bool loading, bool ready, bool hasMessages);
    // The system prompt an export writes in its header.
    void setSystemPromptSource(std::function<QString()> source) { systemPrompt_ = std::move(source); }
    bool exportConversation(const QString& path, QString* error) const;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;  // the window's LanguageChange

signals:
    void openModelRequested(const QString& path);
    void contextLengthRequested();
    void getModelsRequested();
    void remoteEnginesRequested();  // File > Remote Engines…
    void measureInvalidated();      // a setting changed the room a message has

private:
    void buildFile();
    void buildView();
    void buildToolbar();
    void chooseExportPath();
    void retranslateUi();  // every text of the menus and the toolbar
    void chooseLanguage(const QString& name);
    void checkLanguage();  // checks the View > Language entry of the remembered choice
    void showAbout();

    Parts p_;
    std::function<QString()> systemPrompt_;
    DeviceMenu* deviceMenu_ = nullptr;
    ModelPicker* modelPicker_ = nullptr;
    QMenu* file_ = nullptr;
    QMenu* view_ = nullptr;
    QMenu* help_ = nullptr;
    QMenu* languageMenu_ = nullptr;
    QToolBar* toolbar_ = nullptr;
    QLabel* modelLabel_ = nullptr;
    QAction* open_ = nullptr;
    QAction* getModels_ = nullptr;
    QAction* remoteEngines_ = nullptr;
    QAction* openFolder_ = nullptr;
    QAction* export_ = nullptr;
    QAction* newChat_ = nullptr;
    QAction* dropOldest_ = nullptr;
    QAction* contextLength_ = nullptr;
    QAction* thinking_ = nullptr;
    QAction* quit_ = nullptr;
    QAction* markdown_ = nullptr;
    QAction* automaticLanguage_ = nullptr;
    QAction* about_ = nullptr;
};
