#include "AppMenus.h"

#include <QActionGroup>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QEvent>
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
// A checkable menu entry for a remembered setting: applied now and on every change (its texts
// are set by AppMenus::retranslateUi).
QAction* addSettingToggle(QObject* context, QMenu* menu, bool on, const std::function<void(bool)>& apply) {
    QAction* action = menu->addAction(QString());
    action->setCheckable(true);
    action->setChecked(on);
    apply(on);
    QObject::connect(action, &QAction::toggled, context, apply);
    return action;
}
}  // namespace

AppMenus::AppMenus(const Parts& parts) : QObject(parts.window), p_(parts) {
    buildFile();
    buildView();
    help_ = p_.window->menuBar()->addMenu(QString());
    about_ = help_->addAction(QString(), this, &AppMenus::showAbout);
    buildToolbar();
    retranslateUi();
    p_.window->installEventFilter(this);  // the window's LanguageChange words the menus again
}

void AppMenus::buildFile() {
    file_ = p_.window->menuBar()->addMenu(QString());
    open_ = file_->addAction(QString(), this, [this] {
        const QString current = p_.session->path();
        const QString dir =
            current.isEmpty() ? preferences::modelsDirectory() : QFileInfo(current).absolutePath();
        const QString path = QFileDialog::getOpenFileName(p_.window, tr("Open Model"), dir,
                                                          tr("GGUF models (*.gguf);;All files (*)"));
        if (!path.isEmpty()) emit openModelRequested(path);
    });
    open_->setShortcut(QKeySequence::Open);
    getModels_ = file_->addAction(QString(), this, &AppMenus::getModelsRequested);
    getModels_->setObjectName(QStringLiteral("getModelsAction"));
    remoteEngines_ = file_->addAction(QString(), this, &AppMenus::remoteEnginesRequested);
    remoteEngines_->setObjectName(QStringLiteral("remoteEnginesAction"));
    openFolder_ = file_->addAction(QString(), this, [] {
        QDir().mkpath(preferences::modelsDirectory());
        QDesktopServices::openUrl(QUrl::fromLocalFile(preferences::modelsDirectory()));
    });
    export_ = file_->addAction(QString(), this, &AppMenus::chooseExportPath);
    export_->setObjectName(QStringLiteral("exportAction"));
    deviceMenu_ = new DeviceMenu(p_.window);
    file_->addMenu(deviceMenu_);
    file_->addAction(p_.api->serverAction());
    file_->addAction(p_.api->portAction());
    file_->addAction(p_.api->keyAction());
    file_->addAction(p_.api->chatFirstAction());
    file_->addSeparator();
    newChat_ = file_->addAction(QString(), p_.turns, &TurnController::newConversation);
    newChat_->setShortcut(QKeySequence::New);
    dropOldest_ = addSettingToggle(this, file_, preferences::dropOldestTurns(), [this](bool on) {
        preferences::setDropOldestTurns(on);
        p_.worker->setDropOldestTurns(on);
        p_.turns->setDropOldestTurns(on);  // the room Continue needs
        emit measureInvalidated();         // and the room the message being written needs
    });
    dropOldest_->setObjectName(QStringLiteral("dropOldestAction"));
    // Enabled for models whose template has the switch; the worker applies it from the next turn.
    thinking_ = addSettingToggle(this, file_, preferences::thinking(), [this](bool on) {
        preferences::setThinking(on);
        p_.worker->setThinking(on);
    });
    thinking_->setObjectName(QStringLiteral("thinkingAction"));
    thinking_->setEnabled(false);
    contextLength_ = file_->addAction(QString(), this, &AppMenus::contextLengthRequested);
    contextLength_->setObjectName(QStringLiteral("contextLengthAction"));
    file_->addSeparator();
    quit_ = file_->addAction(QString(), p_.window, &QWidget::close);
    quit_->setShortcut(QKeySequence::Quit);
}

void AppMenus::buildView() {
    view_ = p_.window->menuBar()->addMenu(QString());
    // (the docks' toggle actions follow their titles, which PanelDocks and the window word)
    for (QDockWidget* dock : p_.window->findChildren<QDockWidget*>())
        view_->addAction(dock->toggleViewAction());
    view_->addSeparator();
    markdown_ = addSettingToggle(this, view_, preferences::renderMarkdown(), [this](bool on) {
        preferences::setRenderMarkdown(on);
        p_.chatView->setRenderMarkdown(on);
    });
    markdown_->setObjectName(QStringLiteral("renderMarkdownAction"));
    view_->addSeparator();
    languageMenu_ = view_->addMenu(QString());
    languageMenu_->setObjectName(QStringLiteral("languageMenu"));
    auto* languageGroup = new QActionGroup(this);
    auto addLanguage = [&](const QString& label, const QString& name) {
        QAction* a = languageMenu_->addAction(label, this, [this, name] { chooseLanguage(name); });
        a->setObjectName(QStringLiteral("languageAction_") +
                         (name.isEmpty() ? QStringLiteral("system") : name));
        a->setCheckable(true);
        a->setData(name);
        languageGroup->addAction(a);
        return a;
    };
    automaticLanguage_ = addLanguage(QString(), QString());  // worded by retranslateUi
    addLanguage(QStringLiteral("English"), QStringLiteral("en"));
    for (const QString& name : language::available()) addLanguage(language::nativeName(name), name);
    checkLanguage();
}

void AppMenus::buildToolbar() {
    toolbar_ = p_.window->addToolBar(QString());
    toolbar_->setObjectName(QStringLiteral("modelToolbar"));
    toolbar_->setMovable(false);
    modelLabel_ = new QLabel(toolbar_);
    modelLabel_->setProperty("role", QStringLiteral("caption"));
    toolbar_->addWidget(modelLabel_);
    modelPicker_ = new ModelPicker(toolbar_);
    toolbar_->addWidget(modelPicker_);
    toolbar_->addAction(open_);
    toolbar_->addSeparator();
    toolbar_->addAction(newChat_);
}

void AppMenus::retranslateUi() {
    file_->setTitle(tr("&File"));
    open_->setText(tr("&Open Model…"));
    getModels_->setText(tr("&Get Models…"));
    getModels_->setToolTip(tr("Find and download GGUF models from the Hugging Face Hub"));
    remoteEngines_->setText(tr("&Remote Engines…"));
    remoteEngines_->setToolTip(
        tr("Chat with a model on another machine: lantern-server, vLLM, llama-server, Ollama or any "
           "OpenAI-compatible "
           "server"));
    openFolder_->setText(tr("Open Models &Folder"));
    export_->setText(tr("&Export Conversation…"));
    newChat_->setText(tr("&New Chat"));
    dropOldest_->setText(tr("When the Context Is Full, Drop the Oldest Turns"));
    dropOldest_->setToolTip(tr("Otherwise the reply stops and you are told the context is full."));
    thinking_->setText(tr("Let the Model &Think Before Answering"));
    thinking_->setToolTip(
        tr("For models that can reason first (Qwen3): on, the reply starts with its "
           "reasoning, shown apart; off, the model is told to answer at once."));
    contextLength_->setText(tr("Context &Length…"));
    contextLength_->setToolTip(
        tr("How many tokens of the conversation the model sees at once, and the memory that takes"));
    quit_->setText(tr("&Quit"));

    view_->setTitle(tr("&View"));
    markdown_->setText(tr("Show Replies as &Markdown"));
    markdown_->setToolTip(tr("Otherwise replies show the raw text the model wrote."));
    languageMenu_->setTitle(tr("&Language"));
    automaticLanguage_->setText(tr("Automatic (System)"));

    help_->setTitle(tr("&Help"));
    about_->setText(tr("&About Lantern"));

    toolbar_->setWindowTitle(tr("Model"));
    modelLabel_->setText(tr("Model"));
}

bool AppMenus::eventFilter(QObject* watched, QEvent* event) {
    if (watched == p_.window && event->type() == QEvent::LanguageChange) retranslateUi();
    return QObject::eventFilter(watched, event);
}

void AppMenus::checkLanguage() {
    const QString current = preferences::language();
    for (QAction* a : languageMenu_->actions()) a->setChecked(a->data().toString() == current);
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
    // Switched at once: every widget gets LanguageChange and words itself again.
    preferences::setLanguage(name);
    language::use(name);
    checkLanguage();
}

void AppMenus::showAbout() {
    QMessageBox::about(
        p_.window, tr("About Lantern"),
        tr("<h3>Lantern %1</h3>"
           "<p>Chat with Llama models on your own computer, on its own Vulkan inference engine — "
           "and see what happens inside: the KV cache, attention, sampling and honest speed figures.</p>")
            .arg(QCoreApplication::applicationVersion()));
}
