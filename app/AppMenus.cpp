#include "AppMenus.h"

#include <QActionGroup>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMainWindow>
#include <QMenuBar>
#include <QMessageBox>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QStatusBar>
#include <QToolBar>
#include <QUrl>

#include "ApiServerControl.h"
#include "DeviceMenu.h"
#include "Language.h"
#include "ModelPicker.h"
#include "ModelSession.h"
#include "Preferences.h"
#include "chat/ChatView.h"
#include "chat/ConversationStore.h"
#include "turn/TurnController.h"
#include "worker/InferenceWorker.h"

namespace {
// A checkable menu entry for a remembered setting: applied now and on every change.
QAction* addSettingToggle(QObject* context, QMenu* menu, const QString& text, const QString& tip, bool on,
                          const std::function<void(bool)>& apply) {
    QAction* action = menu->addAction(text);
    action->setCheckable(true);
    action->setChecked(on);
    action->setToolTip(tip);
    apply(on);
    QObject::connect(action, &QAction::toggled, context, apply);
    return action;
}
}  // namespace

AppMenus::AppMenus(const Parts& parts) : QObject(parts.window), p_(parts) {
    buildFile();
    buildView();
    QMenu* help = p_.window->menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Lantern"), this, &AppMenus::showAbout);
    buildToolbar();
}

void AppMenus::buildFile() {
    QMenu* file = p_.window->menuBar()->addMenu(tr("&File"));
    open_ = file->addAction(tr("&Open Model…"), this, [this] {
        const QString current = p_.session->path();
        const QString dir =
            current.isEmpty() ? preferences::modelsDirectory() : QFileInfo(current).absolutePath();
        const QString path = QFileDialog::getOpenFileName(p_.window, tr("Open Model"), dir,
                                                          tr("GGUF models (*.gguf);;All files (*)"));
        if (!path.isEmpty()) emit openModelRequested(path);
    });
    open_->setShortcut(QKeySequence::Open);
    QAction* getModels = file->addAction(tr("&Get Models…"), this, &AppMenus::getModelsRequested);
    getModels->setObjectName(QStringLiteral("getModelsAction"));
    getModels->setToolTip(tr("Find and download GGUF models from the Hugging Face Hub"));
    QAction* remoteEngines = file->addAction(tr("&Remote Engines…"), this, &AppMenus::remoteEnginesRequested);
    remoteEngines->setObjectName(QStringLiteral("remoteEnginesAction"));
    remoteEngines->setToolTip(
        tr("Chat with a model on another machine: lantern-server, vLLM, llama-server, Ollama or any "
           "OpenAI-compatible "
           "server"));
    file->addAction(tr("Open Models &Folder"), this, [] {
        QDir().mkpath(preferences::modelsDirectory());
        QDesktopServices::openUrl(QUrl::fromLocalFile(preferences::modelsDirectory()));
    });
    export_ = file->addAction(tr("&Export Conversation…"), this, &AppMenus::chooseExportPath);
    export_->setObjectName(QStringLiteral("exportAction"));
    deviceMenu_ = new DeviceMenu(p_.window);
    file->addMenu(deviceMenu_);
    file->addAction(p_.api->serverAction());
    file->addAction(p_.api->portAction());
    file->addAction(p_.api->keyAction());
    file->addAction(p_.api->chatFirstAction());
    file->addSeparator();
    newChat_ = file->addAction(tr("&New Chat"), p_.turns, &TurnController::newConversation);
    newChat_->setShortcut(QKeySequence::New);
    addSettingToggle(this, file, tr("When the Context Is Full, Drop the Oldest Turns"),
                     tr("Otherwise the reply stops and you are told the context is full."),
                     preferences::dropOldestTurns(),
                     [this](bool on) {
                         preferences::setDropOldestTurns(on);
                         p_.worker->setDropOldestTurns(on);
                         p_.turns->setDropOldestTurns(on);  // the room Continue needs
                         emit measureInvalidated();         // and the room the message being written needs
                     })
        ->setObjectName(QStringLiteral("dropOldestAction"));
    // Enabled for models whose template has the switch; the worker applies it from the next turn.
    thinking_ = addSettingToggle(this, file, tr("Let the Model &Think Before Answering"),
                                 tr("For models that can reason first (Qwen3): on, the reply starts with its "
                                    "reasoning, shown apart; off, the model is told to answer at once."),
                                 preferences::thinking(), [this](bool on) {
                                     preferences::setThinking(on);
                                     p_.worker->setThinking(on);
                                 });
    thinking_->setObjectName(QStringLiteral("thinkingAction"));
    thinking_->setEnabled(false);
    contextLength_ = file->addAction(tr("Context &Length…"), this, &AppMenus::contextLengthRequested);
    contextLength_->setObjectName(QStringLiteral("contextLengthAction"));
    contextLength_->setToolTip(
        tr("How many tokens of the conversation the model sees at once, and the memory that takes"));
    file->addSeparator();
    file->addAction(tr("&Quit"), p_.window, &QWidget::close)->setShortcut(QKeySequence::Quit);
}

void AppMenus::buildView() {
    QMenu* view = p_.window->menuBar()->addMenu(tr("&View"));
    for (QDockWidget* dock : p_.window->findChildren<QDockWidget*>())
        view->addAction(dock->toggleViewAction());
    view->addSeparator();
    addSettingToggle(this, view, tr("Show Replies as &Markdown"),
                     tr("Otherwise replies show the raw text the model wrote."),
                     preferences::renderMarkdown(),
                     [this](bool on) {
                         preferences::setRenderMarkdown(on);
                         p_.chatView->setRenderMarkdown(on);
                     })
        ->setObjectName(QStringLiteral("renderMarkdownAction"));
    view->addSeparator();
    QMenu* languageMenu = view->addMenu(tr("&Language"));
    auto* languageGroup = new QActionGroup(this);
    const QString current = preferences::language();
    auto addLanguage = [&](const QString& label, const QString& name) {
        QAction* a = languageMenu->addAction(label, this, [this, name] { chooseLanguage(name); });
        a->setCheckable(true);
        a->setChecked(current == name);
        languageGroup->addAction(a);
    };
    addLanguage(tr("Automatic (System)"), QString());
    addLanguage(QStringLiteral("English"), QStringLiteral("en"));
    for (const QString& name : language::available()) addLanguage(language::nativeName(name), name);
}

void AppMenus::buildToolbar() {
    auto* toolbar = p_.window->addToolBar(tr("Model"));
    toolbar->setObjectName(QStringLiteral("modelToolbar"));
    toolbar->setMovable(false);
    auto* modelLabel = new QLabel(tr("Model"), toolbar);
    modelLabel->setProperty("role", QStringLiteral("caption"));
    toolbar->addWidget(modelLabel);
    modelPicker_ = new ModelPicker(toolbar);
    toolbar->addWidget(modelPicker_);
    toolbar->addAction(open_);
    toolbar->addSeparator();
    toolbar->addAction(newChat_);
}

void AppMenus::setBusy(bool generating, bool loading, bool ready, bool hasMessages) {
    export_->setEnabled(!generating && hasMessages);
    modelPicker_->setEnabled(!generating && !loading);
    deviceMenu_->setEnabled(!generating && !loading);
    open_->setEnabled(!generating && !loading);
    newChat_->setEnabled(!generating);
    contextLength_->setEnabled(ready);
}

void AppMenus::chooseExportPath() {
    const qint64 id = p_.turns->conversationId();
    const QString title = id >= 0 ? p_.store->conversation(id).title : QString();
    QString name = title.isEmpty() ? tr("Conversation") : title;
    name.replace(QRegularExpression(QStringLiteral("[\\\\/:*?\"<>|]")), QStringLiteral("_"));
    const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    const QString path = QFileDialog::getSaveFileName(p_.window, tr("Export Conversation"),
                                                      QDir(documents).filePath(name + ".md"),
                                                      tr("Markdown (*.md);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    if (!exportConversation(path, &error))
        QMessageBox::warning(p_.window, tr("Export failed"), error);
    else
        p_.window->statusBar()->showMessage(tr("Exported to %1").arg(QDir::toNativeSeparators(path)), 8000);
}

bool AppMenus::exportConversation(const QString& path, QString* error) const {
    return p_.turns->exportMarkdown(path, systemPrompt_ ? systemPrompt_() : QString(), error);
}

void AppMenus::chooseLanguage(const QString& name) {
    if (name == preferences::language()) return;
    preferences::setLanguage(name);
    QMessageBox::information(p_.window, tr("Language"),
                             tr("The new language is used from the next start of Lantern."));
}

void AppMenus::showAbout() {
    QMessageBox::about(
        p_.window, tr("About Lantern"),
        tr("<h3>Lantern %1</h3>"
           "<p>Chat with Llama models on your own computer, on its own Vulkan inference engine — "
           "and see what happens inside: the KV cache, attention, sampling and honest speed figures.</p>")
            .arg(QCoreApplication::applicationVersion()));
}
