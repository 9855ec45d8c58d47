#include "MainWindow.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QRegularExpression>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QFileDialog>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QSignalBlocker>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QSet>
#include <QStandardPaths>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QToolBar>
#include <QUrl>
#include <QVBoxLayout>
#include <functional>

#include "ContextLengthDialog.h"
#include "ElidedLabel.h"
#include "Format.h"
#include "Language.h"
#include "ModelLibrary.h"
#include "Preferences.h"
#include "StatusLabel.h"
#include "Theme.h"
#include "UiPriority.h"
#include "chat/ChatModel.h"
#include "chat/ChatView.h"
#include "chat/ConversationDelegate.h"
#include "chat/ConversationStore.h"
#include "chat/Export.h"
#include "chat/ReplyDetails.h"
#include "panels/AttentionPanel.h"
#include "panels/KvCachePanel.h"
#include "panels/ModelInfoPanel.h"
#include "panels/PerformancePanel.h"
#include "panels/SamplingPanel.h"
#include "panels/StepProfilePanel.h"
#include "worker/InferenceWorker.h"

namespace {

constexpr int kConversationIdRole = Qt::UserRole + 1;
constexpr int kModelPathRole = Qt::UserRole + 2;

QString conversationTitleFrom(const QString& text) {
    QString title = text.simplified();
    if (title.size() > 48) title = title.left(47) + QChar(0x2026);
    return title;
}

}  // namespace

MainWindow::MainWindow(const QString& storePath, QWidget* parent) : QMainWindow(parent) {
    registerEngineMetaTypes();
    setWindowTitle(tr("Lantern"));
    setWindowIcon(theme::appIcon());
    setDockNestingEnabled(true);

    store_ = std::make_unique<ConversationStore>(storePath.isEmpty() ? ConversationStore::defaultPath() : storePath);

    worker_ = new InferenceWorker();
    worker_->moveToThread(&workerThread_);
    connect(&workerThread_, &QThread::finished, worker_, &QObject::deleteLater);
    workerThread_.setObjectName(QStringLiteral("InferenceWorker"));
    workerThread_.start();

    buildCentralArea();
    buildDocks();
    buildActions();
    buildStatusBar();
    setAcceptDrops(true);  // a .gguf dropped on the window opens it (dropEvent)
    connectWorker();

    if (preferences::apiServerEnabled()) emit apiServerStartRequested(preferences::apiServerPort());

    partialSaveTimer_.setInterval(400);
    connect(&partialSaveTimer_, &QTimer::timeout, this, &MainWindow::savePartialReply);
    streamFrame_.setSingleShot(true);
    connect(&streamFrame_, &QTimer::timeout, this, &MainWindow::flushStream);

    // Restore what the user had.
    const lantern::SamplingSettings sampling = preferences::samplingSettings();
    samplingPanel_->setSettings(sampling);
    worker_->setSamplingSettings(sampling);
    systemPrompt_->setText(preferences::systemPrompt());
    emit systemPromptChanged(systemPrompt_->text());
    deviceSelector_ = preferences::deviceSelector();

    resize(1400, 880);
    if (const QByteArray g = preferences::windowGeometry(); !g.isEmpty()) restoreGeometry(g);
    if (const QByteArray s = preferences::windowState(); !s.isEmpty()) restoreState(s);

    if (!store_->isOpen()) {
        QMessageBox::warning(this, tr("Conversations unavailable"),
                             tr("The conversation database could not be opened, so chats will not be saved.\n\n%1")
                                 .arg(store_->lastError()));
    }
    refreshConversationList();
    fillModelPicker();     // the last model, at once
    refreshModelPicker();  // and every other, once the folders are scanned
    setState(State::NoModel);
    if (const qint64 last = preferences::lastConversation(); last >= 0 && store_->conversation(last).id >= 0)
        openConversation(last);
    emit listDevicesRequested();
}

MainWindow::~MainWindow() {
    if (modelScan_ != nullptr) {  // a scan still running: let it end (it is bounded), then drop it
        modelScan_->wait();
        delete modelScan_;
    }
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

    auto* promptBar = new QWidget(central);
    promptBar->setAutoFillBackground(true);
    QPalette barPalette = promptBar->palette();
    barPalette.setColor(QPalette::Window, theme::window());
    promptBar->setPalette(barPalette);
    auto* promptLayout = new QHBoxLayout(promptBar);
    promptLayout->setContentsMargins(18, 10, 18, 4);
    auto* promptLabel = new QLabel(tr("System prompt"), promptBar);
    promptLabel->setProperty("role", QStringLiteral("caption"));
    systemPrompt_ = new QLineEdit(promptBar);
    systemPrompt_->setObjectName(QStringLiteral("systemPrompt"));
    systemPrompt_->setPlaceholderText(tr("Optional instructions the model sees before the conversation"));
    systemPrompt_->setClearButtonEnabled(true);
    promptLayout->addWidget(promptLabel);
    promptLayout->addWidget(systemPrompt_, 1);
    layout->addWidget(promptBar);

    chatModel_ = new ChatModel(this);
    chatView_ = new ChatView(central);
    connect(chatView_, &ChatView::editRequested, this, &MainWindow::editMessage);
    chatView_->setObjectName(QStringLiteral("chatView"));
    chatView_->setModel(chatModel_);
    layout->addWidget(chatView_, 1);

    auto* inputBar = new QWidget(central);
    inputBar->setAutoFillBackground(true);
    inputBar->setPalette(barPalette);
    auto* inputLayout = new QHBoxLayout(inputBar);
    inputLayout->setContentsMargins(18, 8, 18, 14);
    input_ = new QPlainTextEdit(inputBar);
    input_->setObjectName(QStringLiteral("messageInput"));
    input_->setPlaceholderText(tr("Write a message… (Enter sends, Shift+Enter starts a new line)"));
    input_->setFixedHeight(QFontMetrics(input_->font()).lineSpacing() * 3 + 20);
    input_->setTabChangesFocus(true);
    input_->installEventFilter(this);
    auto* inputColumn = new QVBoxLayout();
    inputColumn->setSpacing(3);
    inputColumn->addWidget(input_);
    // How long the message is and whether it fits, before it is sent (small print under it).
    messageMeasure_ = new ElidedLabel(inputBar);  // one line: a long warning does not move the chat
    messageMeasure_->setObjectName(QStringLiteral("messageMeasure"));
    QFont small = messageMeasure_->font();
    small.setPointSizeF(small.pointSizeF() * 0.9);
    messageMeasure_->setFont(small);
    inputColumn->addWidget(messageMeasure_);
    inputLayout->addLayout(inputColumn, 1);

    auto* buttons = new QVBoxLayout();
    buttons->setSpacing(6);
    sendButton_ = new QPushButton(tr("Send"), inputBar);
    sendButton_->setObjectName(QStringLiteral("sendButton"));
    sendButton_->setCursor(Qt::PointingHandCursor);
    stopButton_ = new QPushButton(tr("Stop"), inputBar);
    stopButton_->setObjectName(QStringLiteral("stopButton"));
    stopButton_->setToolTip(tr("Stop generating (Esc). The text so far is kept."));
    regenerateButton_ = new QPushButton(tr("Regenerate"), inputBar);
    regenerateButton_->setObjectName(QStringLiteral("regenerateButton"));
    regenerateButton_->setToolTip(tr("Replace the last reply with a new one"));
    continueButton_ = new QPushButton(tr("Continue"), inputBar);
    continueButton_->setObjectName(QStringLiteral("continueButton"));
    continueButton_->setToolTip(tr("Write more of the last reply, from where it stopped"));
    buttons->addWidget(sendButton_);
    auto* secondary = new QHBoxLayout();
    secondary->setSpacing(6);
    secondary->addWidget(stopButton_);
    secondary->addWidget(regenerateButton_);
    secondary->addWidget(continueButton_);
    buttons->addLayout(secondary);
    buttons->addStretch(1);
    inputLayout->addLayout(buttons);
    layout->addWidget(inputBar);

    setCentralWidget(central);

    connect(sendButton_, &QPushButton::clicked, this, &MainWindow::sendMessage);
    connect(stopButton_, &QPushButton::clicked, this, &MainWindow::stopGeneration);
    connect(regenerateButton_, &QPushButton::clicked, this, &MainWindow::regenerateReply);
    connect(continueButton_, &QPushButton::clicked, this, &MainWindow::continueReply);
    connect(input_, &QPlainTextEdit::textChanged, this, [this] {
        setState(state_);
        scheduleMeasure();
    });
    measureTimer_.setSingleShot(true);
    connect(&measureTimer_, &QTimer::timeout, this, &MainWindow::requestMeasure);
    connect(systemPrompt_, &QLineEdit::editingFinished, this, [this] {
        const QString text = systemPrompt_->text().trimmed();
        preferences::setSystemPrompt(text);
        if (conversationId_ >= 0) store_->setConversationSystemPrompt(conversationId_, text);
        emit systemPromptChanged(text);
        scheduleMeasure();
    });
}

void MainWindow::buildDocks() {
    auto makeDock = [this](const QString& title, const char* name, QWidget* content, Qt::DockWidgetArea area) {
        auto* dock = new QDockWidget(title, this);
        dock->setObjectName(QString::fromLatin1(name));
        dock->setWidget(content);
        dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
        addDockWidget(area, dock);
        return dock;
    };

    // Left: conversations.
    auto* sidebar = new QWidget(this);
    auto* sideLayout = new QVBoxLayout(sidebar);
    sideLayout->setContentsMargins(6, 6, 6, 6);
    auto* newChat = new QPushButton(tr("New Chat"), sidebar);
    newChat->setObjectName(QStringLiteral("newChatButton"));
    sideLayout->addWidget(newChat);
    conversationFilter_ = new QLineEdit(sidebar);
    conversationFilter_->setObjectName(QStringLiteral("conversationFilter"));
    conversationFilter_->setPlaceholderText(tr("Search conversations"));
    conversationFilter_->setClearButtonEnabled(true);
    sideLayout->addWidget(conversationFilter_);
    conversationList_ = new QListWidget(sidebar);
    conversationList_->setObjectName(QStringLiteral("conversationList"));
    conversationList_->setContextMenuPolicy(Qt::CustomContextMenu);
    conversationList_->setItemDelegate(new ConversationDelegate(conversationList_));
    conversationList_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    conversationList_->setMouseTracking(true);
    sideLayout->addWidget(conversationList_, 1);
    QDockWidget* conversationsDock = makeDock(tr("Conversations"), "conversationsDock", sidebar, Qt::LeftDockWidgetArea);
    connect(newChat, &QPushButton::clicked, this, &MainWindow::newConversation);
    connect(conversationFilter_, &QLineEdit::textChanged, this, &MainWindow::refreshConversationList);
    connect(conversationList_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
        const qint64 id = item->data(kConversationIdRole).toLongLong();
        if (id != conversationId_) openConversation(id);
    });
    connect(conversationList_, &QListWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QListWidgetItem* item = conversationList_->itemAt(pos);
        if (item == nullptr) return;
        const qint64 id = item->data(kConversationIdRole).toLongLong();
        QMenu menu(this);
        QAction* rename = menu.addAction(tr("Rename…"));
        QAction* remove = menu.addAction(tr("Delete"));
        remove->setEnabled(state_ != State::Generating || id != conversationId_);
        QAction* chosen = menu.exec(conversationList_->viewport()->mapToGlobal(pos));
        if (chosen == rename) renameConversation(id);
        if (chosen == remove) deleteConversation(id);
    });

    // Right: the panels.
    samplingPanel_ = new SamplingPanel(this);
    kvPanel_ = new KvCachePanel(this);
    performancePanel_ = new PerformancePanel(this);
    attentionPanel_ = new AttentionPanel(this);
    stepProfilePanel_ = new StepProfilePanel(this);
    modelInfoPanel_ = new ModelInfoPanel(this);
    QDockWidget* kvDock = makeDock(tr("KV Cache"), "kvCacheDock", kvPanel_, Qt::RightDockWidgetArea);
    QDockWidget* samplingDock = makeDock(tr("Sampling"), "samplingDock", samplingPanel_, Qt::RightDockWidgetArea);
    QDockWidget* performanceDock = makeDock(tr("Performance"), "performanceDock", performancePanel_, Qt::RightDockWidgetArea);
    QDockWidget* attentionDock = makeDock(tr("Attention"), "attentionDock", attentionPanel_, Qt::RightDockWidgetArea);
    QDockWidget* profileDock = makeDock(tr("Step Profile"), "stepProfileDock", stepProfilePanel_, Qt::RightDockWidgetArea);
    QDockWidget* modelDock = makeDock(tr("Model"), "modelDock", modelInfoPanel_, Qt::RightDockWidgetArea);
    splitDockWidget(kvDock, samplingDock, Qt::Vertical);
    tabifyDockWidget(kvDock, performanceDock);
    tabifyDockWidget(performanceDock, attentionDock);
    tabifyDockWidget(attentionDock, profileDock);
    tabifyDockWidget(samplingDock, modelDock);
    kvDock->raise();
    samplingDock->raise();
    resizeDocks({conversationsDock, kvDock}, {230, 430}, Qt::Horizontal);
    resizeDocks({kvDock, samplingDock}, {430, 420}, Qt::Vertical);

    // Every knob change goes straight into the worker's SettingsSlot (thread-safe, see
    // InferenceWorker.h): a queued call would wait until the running reply had finished.
    connect(samplingPanel_, &SamplingPanel::settingsChanged, this, [this](const lantern::SamplingSettings& s) {
        if (worker_->setSamplingSettings(s)) preferences::setSamplingSettings(s);
    });
    connect(attentionPanel_, &AttentionPanel::captureLayerChanged, this, [this](int layer) { worker_->setAttentionLayer(layer); });
    // Thread-safe as well: it must reach a reply that is being written.
    connect(stepProfilePanel_, &StepProfilePanel::timeNextStepRequested, this, [this] { worker_->requestStepProfile(); });
}

void MainWindow::buildActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    openAction_ = file->addAction(tr("&Open Model…"), this, [this] {
        QString dir = QFileInfo(modelPath_).absolutePath();
        if (modelPath_.isEmpty()) dir = preferences::modelsDirectory();
        const QString path = QFileDialog::getOpenFileName(this, tr("Open Model"), dir, tr("GGUF models (*.gguf);;All files (*)"));
        if (!path.isEmpty()) openModel(path);
    });
    openAction_->setShortcut(QKeySequence::Open);
    file->addAction(tr("Open Models &Folder"), this, [] {
        QDir().mkpath(preferences::modelsDirectory());
        QDesktopServices::openUrl(QUrl::fromLocalFile(preferences::modelsDirectory()));
    });
    exportAction_ = file->addAction(tr("&Export Conversation…"), this, &MainWindow::exportConversation);
    exportAction_->setObjectName(QStringLiteral("exportAction"));
    deviceMenu_ = file->addMenu(tr("&Device"));
    deviceGroup_ = new QActionGroup(this);
    apiServerAction_ = file->addAction(tr("Local &API Server"));
    apiServerAction_->setObjectName(QStringLiteral("apiServerAction"));
    apiServerAction_->setCheckable(true);
    apiServerAction_->setChecked(preferences::apiServerEnabled());
    apiServerAction_->setToolTip(tr("Lets editors, scripts and other apps on this computer use the loaded model "
                                    "through an OpenAI-compatible API (http://127.0.0.1:%1/v1).")
                                     .arg(preferences::apiServerPort()));
    connect(apiServerAction_, &QAction::toggled, this, &MainWindow::setApiServerEnabled);
    file->addAction(tr("API Server &Port…"), this, &MainWindow::chooseApiServerPort);
    // Acts at once, mid-reply too (the worker reads it at every step).
    apiChatFirstAction_ = file->addAction(tr("API Replies &Wait for the Chat"));
    apiChatFirstAction_->setObjectName(QStringLiteral("apiChatFirstAction"));
    apiChatFirstAction_->setCheckable(true);
    apiChatFirstAction_->setChecked(preferences::apiChatFirst());
    apiChatFirstAction_->setToolTip(tr("API replies pause while the chat writes a reply and go on when it ends, so the "
                                       "chat's reply comes at full speed. Off, they are written in the same steps as "
                                       "the chat's reply (on a CPU device the chat's reply then slows while they run)."));
    worker_->setChatFirst(apiChatFirstAction_->isChecked());
    connect(apiChatFirstAction_, &QAction::toggled, this, [this](bool on) {
        preferences::setApiChatFirst(on);
        worker_->setChatFirst(on);
        if (apiPort_ != 0) showApiServerState(true, apiInProgress_, apiWaiting_, apiServed_);
    });
    file->addSeparator();
    newChatAction_ = file->addAction(tr("&New Chat"), this, &MainWindow::newConversation);
    newChatAction_->setShortcut(QKeySequence::New);
    // A checkable menu entry for a remembered setting: applied now and on every change.
    const auto addSettingToggle = [this](QMenu* menu, const QString& text, const QString& tip, bool on,
                                         const std::function<void(bool)>& apply) {
        QAction* action = menu->addAction(text);
        action->setCheckable(true);
        action->setChecked(on);
        action->setToolTip(tip);
        apply(on);
        connect(action, &QAction::toggled, this, apply);
        return action;
    };
    QAction* dropOldest = addSettingToggle(file, tr("When the Context Is Full, Drop the Oldest Turns"),
                     tr("Otherwise the reply stops and you are told the context is full."), preferences::dropOldestTurns(),
                     [this](bool on) {
                         preferences::setDropOldestTurns(on);
                         worker_->setDropOldestTurns(on);
                         dropOldestTurns_ = on;
                         updateContinueButton();  // dropping may make the room Continue needs
                         scheduleMeasure();       // and the room the message being written needs
                     });
    dropOldest->setObjectName(QStringLiteral("dropOldestAction"));
    // Enabled for models whose template has the switch (onLoaded); the worker applies it from the
    // next turn.
    thinkingAction_ = addSettingToggle(file, tr("Let the Model &Think Before Answering"),
                                       tr("For models that can reason first (Qwen3): on, the reply starts with its "
                                          "reasoning, shown apart; off, the model is told to answer at once."),
                                       preferences::thinking(), [this](bool on) {
                                           preferences::setThinking(on);
                                           worker_->setThinking(on);
                                       });
    thinkingAction_->setObjectName(QStringLiteral("thinkingAction"));
    thinkingAction_->setEnabled(false);
    contextLengthAction_ = file->addAction(tr("Context &Length…"), this, &MainWindow::chooseContextLength);
    contextLengthAction_->setObjectName(QStringLiteral("contextLengthAction"));
    contextLengthAction_->setToolTip(tr("How many tokens of the conversation the model sees at once, and the "
                                        "memory that takes"));
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    viewMenu_ = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* dock : findChildren<QDockWidget*>()) viewMenu_->addAction(dock->toggleViewAction());
    viewMenu_->addSeparator();
    addSettingToggle(viewMenu_, tr("Show Replies as &Markdown"), tr("Otherwise replies show the raw text the model wrote."),
                     preferences::renderMarkdown(), [this](bool on) {
                         preferences::setRenderMarkdown(on);
                         chatView_->setRenderMarkdown(on);
                     })
        ->setObjectName(QStringLiteral("renderMarkdownAction"));
    viewMenu_->addSeparator();
    QMenu* languageMenu = viewMenu_->addMenu(tr("&Language"));
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

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Lantern"), this, &MainWindow::showAbout);

    auto* toolbar = addToolBar(tr("Model"));
    toolbar->setObjectName(QStringLiteral("modelToolbar"));
    toolbar->setMovable(false);
    auto* modelLabel = new QLabel(tr("Model"), toolbar);
    modelLabel->setProperty("role", QStringLiteral("caption"));
    toolbar->addWidget(modelLabel);
    modelPicker_ = new QComboBox(toolbar);
    modelPicker_->setObjectName(QStringLiteral("modelPicker"));
    modelPicker_->setMinimumContentsLength(28);
    modelPicker_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    modelPicker_->setToolTip(tr("Models in %1, those LM Studio, GPT4All, Jan, llama.cpp, the Hugging Face cache and "
                                "Ollama downloaded, and models you opened")
                                 .arg(QDir::toNativeSeparators(preferences::modelsDirectory())));
    toolbar->addWidget(modelPicker_);
    toolbar->addAction(openAction_);
    toolbar->addSeparator();
    toolbar->addAction(newChatAction_);
    connect(modelPicker_, &QComboBox::activated, this, [this](int index) {
        const QString path = modelPicker_->itemData(index, kModelPathRole).toString();
        if (!path.isEmpty() && path != modelPath_) openModel(path);
    });

    modelsWatcher_ = new QFileSystemWatcher(this);
    QDir().mkpath(preferences::modelsDirectory());
    for (const model_library::Source& source : model_library::sources(preferences::modelsDirectory()))
        modelsWatcher_->addPath(source.dir);
    connect(modelsWatcher_, &QFileSystemWatcher::directoryChanged, this, &MainWindow::refreshModelPicker);
}

void MainWindow::buildStatusBar() {
    stateLabel_ = new StatusLabel(this);
    stateLabel_->setObjectName(QStringLiteral("stateLabel"));
    contextLabel_ = new StatusLabel(this);
    contextLabel_->setObjectName(QStringLiteral("contextLabel"));
    deviceLabel_ = new QLabel(tr("No device"), this);
    deviceLabel_->setObjectName(QStringLiteral("deviceLabel"));
    apiLabel_ = new QLabel(this);
    apiLabel_->setObjectName(QStringLiteral("apiLabel"));
    apiLabel_->hide();
    statusBar()->addPermanentWidget(apiLabel_);
    statusBar()->addPermanentWidget(stateLabel_);
    statusBar()->addPermanentWidget(contextLabel_);
    statusBar()->addPermanentWidget(deviceLabel_);
}

void MainWindow::setApiServerEnabled(bool on) {
    preferences::setApiServerEnabled(on);
    if (on) {
        emit apiServerStartRequested(preferences::apiServerPort());
        if (modelPath_.isEmpty())
            statusBar()->showMessage(tr("The API server starts when a model is loaded."), 6000);
    } else {
        emit apiServerStopRequested();
    }
}

void MainWindow::chooseApiServerPort() {
    bool ok = false;
    const int port = QInputDialog::getInt(this, tr("API Server Port"), tr("Port on 127.0.0.1 (this computer only):"),
                                          preferences::apiServerPort(), 1, 65535, 1, &ok);
    if (!ok) return;
    preferences::setApiServerPort(static_cast<quint16>(port));
    apiServerAction_->setToolTip(tr("Lets editors, scripts and other apps on this computer use the loaded model "
                                    "through an OpenAI-compatible API (http://127.0.0.1:%1/v1).")
                                     .arg(port));
    if (apiServerAction_->isChecked()) emit apiServerStartRequested(static_cast<quint16>(port));  // moves it
}

void MainWindow::showApiServerState(bool listening, quint32 inProgress, quint32 waiting, quint64 served) {
    if (!listening) {
        apiPort_ = 0;
        apiLabel_->hide();
        return;
    }
    apiInProgress_ = inProgress;
    apiWaiting_ = waiting;
    apiServed_ = served;
    const QString url = QStringLiteral("http://127.0.0.1:%1/v1").arg(apiPort_);
    const QString address = QStringLiteral("127.0.0.1:%1").arg(apiPort_);
    waiting = std::min(waiting, inProgress);
    const bool chatFirst = apiChatFirstAction_ != nullptr && apiChatFirstAction_->isChecked();
    const int writing = static_cast<int>(inProgress - waiting);
    // While the chat goes first and writes, the API's replies are paused, not being written.
    QString text = writing == 0 ? tr("API %1").arg(address)
                   : chatFirst && state_ == State::Generating
                       ? tr("API %1 · %n repl(ies) paused for the chat", nullptr, writing).arg(address)
                       : tr("API %1 · writing %n repl(ies)", nullptr, writing).arg(address);
    // Replies beyond the room the KV cache gives them (or beyond the replies written at once) wait
    // their turn: said, so that a client's slow start has a reason on screen.
    if (waiting > 0) text += QStringLiteral(" · ") + tr("%n waiting", nullptr, static_cast<int>(waiting));
    apiLabel_->setText(text);
    apiLabel_->setToolTip(
        (chatFirst ? tr("OpenAI-compatible API at %1 — %n repl(ies) served. API replies pause while the chat writes a "
                        "reply (File > API Replies Wait for the Chat), and share one conversation's room in the KV "
                        "cache: past it, the reply that started last waits and then goes on where it was.",
                        nullptr, static_cast<int>(served))
                   : tr("OpenAI-compatible API at %1 — %n repl(ies) served. API replies are written in the same "
                        "steps as the chat's reply, and share one conversation's room in the KV cache: past "
                        "it, the reply that started last waits and then goes on where it was.",
                        nullptr, static_cast<int>(served)))
            .arg(url));
    apiLabel_->show();
}

void MainWindow::connectWorker() {
    // Requests: queued, because the worker lives on workerThread_.
    connect(this, &MainWindow::loadModelRequested, worker_, &InferenceWorker::loadModel);
    connect(this, &MainWindow::sendRequested, worker_, &InferenceWorker::send);
    connect(this, &MainWindow::regenerateRequested, worker_, &InferenceWorker::regenerate);
    connect(this, &MainWindow::continueRequested, worker_, &InferenceWorker::continueReply);
    connect(this, &MainWindow::systemPromptChanged, worker_, &InferenceWorker::setSystemPrompt);
    connect(this, &MainWindow::resetConversationRequested, worker_, &InferenceWorker::resetConversation);
    connect(this, &MainWindow::restoreConversationRequested, worker_, &InferenceWorker::restoreConversation);
    connect(this, &MainWindow::listDevicesRequested, worker_, &InferenceWorker::listDevices);
    connect(this, &MainWindow::apiServerStartRequested, worker_, &InferenceWorker::startApiServer);
    connect(this, &MainWindow::apiServerStopRequested, worker_, &InferenceWorker::stopApiServer);
    connect(this, &MainWindow::measureMessageRequested, worker_, &InferenceWorker::measureMessage);
    connect(worker_, &InferenceWorker::messageMeasured, this, &MainWindow::showMeasure);
    connect(worker_, &InferenceWorker::apiServerStarted, this, [this](quint16 port) {
        apiPort_ = port;
        showApiServerState(true);
    });
    connect(worker_, &InferenceWorker::apiServerStopped, this, [this] { showApiServerState(false); });
    connect(worker_, &InferenceWorker::apiServerActivity, this,
            [this](quint32 inProgress, quint32 waiting, quint64 served) {
                showApiServerState(true, inProgress, waiting, served);
            });
    connect(worker_, &InferenceWorker::apiServerFailed, this, [this](const QString& message) {
        showApiServerState(false);
        const QSignalBlocker block(apiServerAction_);
        apiServerAction_->setChecked(false);
        preferences::setApiServerEnabled(false);
        statusBar()->showMessage(tr("The API server stopped: %1").arg(message), 10000);
    });
    // Results: queued back to this (UI) thread, carrying values.
    connect(worker_, &InferenceWorker::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(worker_, &InferenceWorker::reloadingModel, this, &MainWindow::onModelReloading);
    connect(worker_, &InferenceWorker::continueRoomMeasured, this, [this](bool fits, bool fitsDropping) {
        // For the conversation just restored: a reply that filled a shorter context may go on in
        // a longer one, one reopened from disk may have no room left.
        const int row = continuableRow();
        if (row < 0) return;
        chatModel_->setRoomToContinue(row, fits, fitsDropping);
        updateContinueButton();
    });
    connect(worker_, &InferenceWorker::loadFailed, this, &MainWindow::onLoadFailed);
    connect(worker_, &InferenceWorker::modelUnloaded, this, &MainWindow::onModelUnloaded);
    connect(worker_, &InferenceWorker::modelWarmedUp, performancePanel_, &PerformancePanel::setWarmUp);
    connect(worker_, &InferenceWorker::tokensGenerated, this, &MainWindow::onTokens);
    connect(worker_, &InferenceWorker::replyShared, this, [this](quint32 tokens) { replySharedTokens_ = tokens; });
    connect(worker_, &InferenceWorker::turnFinished, this, &MainWindow::onTurnFinished);
    connect(worker_, &InferenceWorker::promptProgress, this, [this](quint32 done, quint32 total) {
        // A long prompt on a CPU driver takes a while before the first token: say how far it is
        // (Stop works meanwhile, from the next chunk).
        if (state_ != State::Generating || streamingTokens_ > 0) return;
        stateLabel_->setLiveText(tr("Reading the prompt… %1 of %2 tokens").arg(display::count(done), display::count(total)));
        performancePanel_->showPromptProgress(done, total);
    });
    connect(worker_, &InferenceWorker::kvStatsChanged, this, &MainWindow::onKvStats);
    connect(worker_, &InferenceWorker::attentionCaptured, attentionPanel_, &AttentionPanel::setSnapshot);
    connect(worker_, &InferenceWorker::stepProfiled, stepProfilePanel_, &StepProfilePanel::showProfile);
    connect(worker_, &InferenceWorker::errorOccurred, this, &MainWindow::onError);
    connect(worker_, &InferenceWorker::devicesListed, this, &MainWindow::onDevicesListed);
    connect(worker_, &InferenceWorker::settingsRejected, this,
            [this](const QString& message) { statusBar()->showMessage(tr("Sampling settings not applied: %1").arg(message), 6000); });
}

// ---------------------------------------------------------------------------------------------
// State

void MainWindow::setState(State state) {
    const State before = state_;
    state_ = state;
    if (state == State::Ready && before != State::Ready) scheduleMeasure();  // (the conversation may have changed)
    if (state == State::NoModel && messageMeasure_ != nullptr) messageMeasure_->clear();
    const bool ready = state == State::Ready;
    const bool generating = state == State::Generating;
    sendButton_->setEnabled(ready && !input_->toPlainText().trimmed().isEmpty());
    stopButton_->setEnabled(generating);
    regenerateButton_->setEnabled(ready && canRegenerate_);
    updateContinueButton();
    if (exportAction_ != nullptr) exportAction_->setEnabled(!generating && chatModel_->rowCount() > 0);
    modelPicker_->setEnabled(!generating && state != State::Loading);
    openAction_->setEnabled(!generating && state != State::Loading);
    deviceMenu_->setEnabled(!generating && state != State::Loading);
    conversationList_->setEnabled(!generating);
    newChatAction_->setEnabled(!generating);
    if (contextLengthAction_ != nullptr) contextLengthAction_->setEnabled(ready);
    // Switching the API server on may load the model again (setApiServerEnabled), which waits
    // for no reply.
    apiServerAction_->setEnabled(!generating && state != State::Loading);
    if (apiPort_ != 0) showApiServerState(true, apiInProgress_, apiWaiting_, apiServed_);  // paused or writing
    switch (state) {
    case State::NoModel:
        stateLabel_->setFittedText(tr("No model"));
        chatView_->setEmptyText(tr("Welcome to Lantern"),
                                tr("Open a GGUF model (File > Open Model…) or pick one from the toolbar. "
                                   "Models in %1, and those LM Studio, GPT4All, Jan, llama.cpp, the Hugging Face cache or "
                                   "Ollama downloaded, are listed automatically.")
                                    .arg(QDir::toNativeSeparators(preferences::modelsDirectory())));
        break;
    case State::Loading:
        stateLabel_->setFittedText(tr("Loading %1…").arg(modelFileName(modelPath_)));
        chatView_->setEmptyText(tr("Loading the model…"), tr("Weights are uploaded to the device and the compute pipelines are built."));
        break;
    case State::Ready:
        stateLabel_->setFittedText(tr("Ready"));
        chatView_->setEmptyText(tr("Ready when you are"), tr("%1 is loaded. Write a message below to start.").arg(loadedModelName_));
        break;
    case State::Generating:
        stateLabel_->setFittedText(tr("Generating…"));
        break;
    }
}

void MainWindow::refreshModelPicker() {
    if (modelScan_ != nullptr) {  // one scan at a time; the next starts when it ends
        modelRescanWanted_ = true;
        return;
    }
    // The thread fills its own list; the window takes it once the thread has finished.
    auto found = std::make_shared<QVector<model_library::Model>>();
    auto folders = std::make_shared<QStringList>();
    modelScan_ = QThread::create([found, folders, dir = preferences::modelsDirectory()] {
        *found = model_library::find(model_library::sources(dir), 20000, folders.get());
    });
    connect(modelScan_, &QThread::finished, this, [this, found, folders] {
        modelScan_->deleteLater();
        modelScan_ = nullptr;
        scannedModels_ = std::move(*found);
        watchModelFolders(*folders);
        modelsScanned_ = true;
        fillModelPicker();
        emit modelListChanged();
        if (modelRescanWanted_) {
            modelRescanWanted_ = false;
            refreshModelPicker();
        }
    });
    modelScan_->start(QThread::LowPriority);
}

void MainWindow::watchModelFolders(const QStringList& folders) {
    // Every folder the scan walked, so that a model another app downloads into a folder of its
    // own (LM Studio's publisher/model/, a Hugging Face snapshot, an Ollama tag) shows up while
    // Lantern runs; at most a couple of thousand, well within the system's watch limit.
    const QStringList first = folders.mid(0, 2000);
    const QSet<QString> wanted(first.begin(), first.end());
    const QStringList current = modelsWatcher_->directories();
    const QSet<QString> watched(current.begin(), current.end());
    QStringList gone, added;
    for (const QString& dir : current)
        if (!wanted.contains(dir)) gone << dir;
    for (const QString& dir : first)
        if (!watched.contains(dir)) added << dir;
    if (!gone.isEmpty()) modelsWatcher_->removePaths(gone);
    if (!added.isEmpty()) modelsWatcher_->addPaths(added);
}

void MainWindow::fillModelPicker() {
    QVector<model_library::Model> models = scannedModels_;
    for (const QString& extra : {preferences::lastModel(), modelPath_}) {
        if (extra.isEmpty() || !QFileInfo::exists(extra)) continue;
        const QString path = QFileInfo(extra).absoluteFilePath();
        const bool listed = std::any_of(models.begin(), models.end(), [&](const auto& m) { return m.path == path; });
        if (!listed) models.push_back({path, QString(), model_library::modelBytes(path), QString()});
    }

    const QSignalBlocker block(modelPicker_);
    modelPicker_->clear();
    modelPicker_->addItem(!models.isEmpty()  ? tr("Choose a model…")
                          : modelsScanned_ ? tr("No models found — use Open Model…")
                                           : tr("Looking for models…"));
    modelPicker_->setItemData(0, QString(), kModelPathRole);
    for (const model_library::Model& m : models) {
        const QString name = m.name.isEmpty() ? QFileInfo(m.path).completeBaseName() : m.name;
        const QString where = QDir::toNativeSeparators(m.path);
        // Models other apps downloaded say whose they are.
        QString label = m.source.isEmpty() ? tr("%1  (%2)").arg(name, display::bytes(m.bytes))
                                           : tr("%1  (%2 · %3)").arg(name, display::bytes(m.bytes), m.source);
        QString tip = where;
        // A model of another architecture is listed, so that the user sees why it is not offered,
        // but cannot be chosen.
        const bool runs = m.architecture.isEmpty() || lantern::supported_architecture(m.architecture.toStdString());
        if (!runs) {
            label = tr("%1 — %2, not supported").arg(label, m.architecture);
            tip = tr("%1\nLantern runs llama, qwen2 and qwen3 models; this one is %2.").arg(where, m.architecture);
        }
        modelPicker_->addItem(label);
        const int row = modelPicker_->count() - 1;
        modelPicker_->setItemData(row, m.path, kModelPathRole);
        modelPicker_->setItemData(row, tip, Qt::ToolTipRole);
        if (auto* items = qobject_cast<QStandardItemModel*>(modelPicker_->model()); items && !runs)
            items->item(row)->setEnabled(false);
    }
    const int current = modelPicker_->findData(QFileInfo(modelPath_).absoluteFilePath(), kModelPathRole);
    modelPicker_->setCurrentIndex(current >= 0 ? current : 0);
}

QString MainWindow::modelFileName(const QString& path, bool withExtension) const {
    // Ollama's blobs are named by digest: its own name for the model says more.
    for (const model_library::Model& m : scannedModels_)
        if (m.path == path && !m.name.isEmpty()) return m.name;
    return withExtension ? QFileInfo(path).fileName() : QFileInfo(path).completeBaseName();
}

void MainWindow::refreshConversationList() {
    const QSignalBlocker block(conversationList_);
    conversationList_->clear();
    const QLocale locale;
    // With search text, only the conversations whose title or messages contain it.
    const QString filter = conversationFilter_->text().trimmed();
    const QVector<qint64> matching = filter.isEmpty() ? QVector<qint64>{} : store_->search(filter);
    for (const ConversationSummary& c : store_->conversations()) {
        if (!filter.isEmpty() && !matching.contains(c.id)) continue;
        auto* item = new QListWidgetItem(conversationList_);
        item->setText(c.title);
        item->setData(ConversationDelegate::SubtitleRole,
                      tr("%1 · %n message(s)", nullptr, c.message_count)
                          .arg(c.updated.date() == QDate::currentDate() ? locale.toString(c.updated.time(), QStringLiteral("HH:mm"))
                                                                        : locale.toString(c.updated.date(), QLocale::ShortFormat)));
        item->setData(kConversationIdRole, c.id);
        item->setToolTip(c.model.isEmpty() ? c.title : tr("%1\nModel: %2").arg(c.title, c.model));
        if (c.id == conversationId_) conversationList_->setCurrentItem(item);
    }
}

// ---------------------------------------------------------------------------------------------
// Models

void MainWindow::openModel(const QString& path, const QString& deviceSelector) {
    if (state_ == State::Generating || state_ == State::Loading) return;
    if (!deviceSelector.isEmpty()) deviceSelector_ = deviceSelector;
    contextLengthBefore_ = -1;  // (setContextLength and chooseDevice set them again for their own load)
    deviceBefore_.reset();
    modelPath_ = path;
    canRegenerate_ = false;
    setState(State::Loading);
    statusBar()->showMessage(tr("Loading %1…").arg(QDir::toNativeSeparators(path)));
    clearForLoad();
    emit loadModelRequested(path, deviceSelector_, preferences::contextLength(path));
}

void MainWindow::clearForLoad() {
    kvPanel_->clear();
    cachedContextTokens_ = -1;  // the next model's cache has not been reported yet
    modelInfoPanel_->clear();
}

void MainWindow::onModelReloading() {
    if (state_ == State::Loading || modelPath_.isEmpty()) return;  // another load is under way anyway
    canRegenerate_ = false;
    setState(State::Loading);
    statusBar()->showMessage(tr("Loading the model again with room in its KV cache for the API server's replies…"));
    clearForLoad();
}

void MainWindow::chooseContextLength() {
    if (state_ != State::Ready) return;
    ContextLengthDialog dialog(loadedModel_, loadedDevice_, preferences::contextLength(modelPath_),
                               InferenceWorker::kvConversationsFor(apiServerAction_->isChecked()),
                               static_cast<uint32_t>(std::max(cachedContextTokens_, 0)), this);
    if (dialog.exec() == QDialog::Accepted) setContextLength(dialog.chosenLength());
}

void MainWindow::setContextLength(uint32_t length) {
    if (state_ != State::Ready || modelPath_.isEmpty()) return;
    const uint32_t before = preferences::contextLength(modelPath_);
    if (length == before) return;
    preferences::setContextLength(modelPath_, length);
    const QString path = modelPath_;
    openModel(path);
    contextLengthBefore_ = before;
}

void MainWindow::chooseDevice(const QString& selector) {
    const QString before = deviceSelector_;
    deviceSelector_ = selector;
    preferences::setDeviceSelector(selector);
    if (modelPath_.isEmpty() || state_ != State::Ready || selector == before) return;
    const QString path = modelPath_;
    openModel(path);
    deviceBefore_ = before;
}

void MainWindow::onModelLoaded(const lantern::ModelInfo& model, const lantern::DeviceInfo& device, const LoadReport& report) {
    loadedModelName_ = model.name.empty() ? modelFileName(modelPath_, false) : QString::fromStdString(model.name);
    contextLength_ = report.context_length;
    loadedModel_ = model;
    loadedDevice_ = device;
    contextLengthBefore_ = -1;
    deviceBefore_.reset();
    preferences::setLastModel(modelPath_);
    fillModelPicker();
    setWindowTitle(tr("%1 — Lantern").arg(loadedModelName_));
    chatView_->setRepliesOpenInReasoning(report.chat_template && report.template_name == QStringLiteral("deepseek-r1"));
    thinkingAction_->setEnabled(report.thinking_switch);

    QString deviceText = QString::fromStdString(device.name);
    if (device.type == lantern::DeviceType::Cpu) {
        deviceText += QStringLiteral(" · ") + deviceTypeDescription(device.type);
        yieldUiThreadToInference();  // the model now runs on the UI's cores (UiPriority.h)
    }
    deviceLabel_->setText(deviceText);
    deviceLabel_->setToolTip(tr("%1\nDriver: %2").arg(deviceDescription(device), QString::fromStdString(device.driver)));
    for (QAction* a : deviceGroup_->actions())
        if (a->data().toString().isEmpty() ? deviceSelector_.isEmpty() : a->data().toString() == deviceSelector_) a->setChecked(true);

    modelInfoPanel_->setModel(model, device, report);
    performancePanel_->setLoadReport(report);
    attentionPanel_->setModelShape(model.n_layers, model.n_heads);
    stepProfilePanel_->setModelLoaded(true);
    worker_->setAttentionLayer(attentionPanel_->captureLayer());
    statusBar()->showMessage(tr("Loaded %1 on %2 in %3").arg(loadedModelName_, QString::fromStdString(device.name),
                                                             display::milliseconds(report.load_ms)),
                             8000);
    if (conversationId_ >= 0) store_->setConversationModel(conversationId_, modelFileName(modelPath_));
    if (chatModel_->rowCount() > 0) restoreConversationToModel();
    if (!report.chat_template)
        statusBar()->showMessage(tr("%1 has no chat template: it continues your text (completion mode).").arg(loadedModelName_), 10000);
    setState(State::Ready);
    input_->setFocus();
}

void MainWindow::onLoadFailed(const QString& message) {
    const QString path = modelPath_;
    // A newly chosen context length or device did not load: say why, put the setting back and
    // load the model again as it was, so nothing is lost.
    auto loadAgainAsBefore = [&](const QString& title, const QString& text) {
        setState(State::NoModel);
        QMessageBox box(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
        box.setInformativeText(message);
        box.exec();
        openModel(path);
    };
    if (contextLengthBefore_ >= 0) {
        const uint32_t asked = preferences::contextLength(path);
        preferences::setContextLength(path, static_cast<uint32_t>(contextLengthBefore_));
        contextLengthBefore_ = -1;
        loadAgainAsBefore(tr("Could not change the context length"),
                          tr("Lantern could not load %1 with a context of %2 tokens; it is loaded again as before.")
                              .arg(QDir::toNativeSeparators(path), display::count(asked)));
        return;
    }
    if (deviceBefore_) {
        const QString asked = deviceSelector_;
        // Named as the Device menu names it; a selector it does not list (a device gone since), as given.
        QString device = asked.isEmpty() ? tr("the automatically chosen device") : asked;
        for (QAction* a : deviceGroup_->actions())
            if (!asked.isEmpty() && a->data().toString() == asked) device = a->text();
        deviceSelector_ = *deviceBefore_;
        deviceBefore_.reset();
        preferences::setDeviceSelector(deviceSelector_);
        for (QAction* a : deviceGroup_->actions()) a->setChecked(a->data().toString() == deviceSelector_);
        loadAgainAsBefore(tr("Could not change the device"),
                          tr("Lantern could not load %1 on %2; it is loaded again on the device it ran on.")
                              .arg(QDir::toNativeSeparators(path), device));
        return;
    }
    modelPath_.clear();
    loadedModelName_.clear();
    setWindowTitle(tr("Lantern"));
    deviceLabel_->setText(tr("No device"));
    fillModelPicker();
    setState(State::NoModel);
    statusBar()->showMessage(tr("Could not load the model."), 8000);
    QMessageBox box(QMessageBox::Critical, tr("Could not load the model"),
                    tr("Lantern could not load %1.").arg(QDir::toNativeSeparators(path)), QMessageBox::Ok, this);
    box.setInformativeText(message);
    box.exec();
}

void MainWindow::onModelUnloaded() {
    if (state_ == State::Loading) return;  // the old model is dropped before a new one loads
    if (state_ == State::Generating) {
        commitReplacement();  // the reply stays on screen as far as it got, so the store matches it
        endAssistantReply(false, reply_details::append(continuedDetails_, {.ending = reply_details::Ending::DeviceLost}));
        continuedDetails_ = QString();
    }
    modelPath_.clear();
    loadedModelName_.clear();
    canRegenerate_ = false;
    deviceLabel_->setText(tr("No device"));
    kvPanel_->clear();
    modelInfoPanel_->clear();
    attentionPanel_->setModelShape(0, 0);
    stepProfilePanel_->setModelLoaded(false);
    setState(State::NoModel);
}

void MainWindow::onDevicesListed(const DeviceList& devices) {
    deviceMenu_->clear();
    for (QAction* a : deviceGroup_->actions()) deviceGroup_->removeAction(a);
    auto addDevice = [this](const QString& label, const QString& selector) {
        QAction* a = deviceMenu_->addAction(label);
        a->setCheckable(true);
        a->setData(selector);
        a->setChecked(selector == deviceSelector_);
        deviceGroup_->addAction(a);
        connect(a, &QAction::triggered, this, [this, selector] { chooseDevice(selector); });
    };
    addDevice(tr("Automatic (best available)"), QString());
    deviceMenu_->addSeparator();
    for (const lantern::DeviceInfo& d : devices) addDevice(deviceDescription(d), QString::number(d.index));
}

// ---------------------------------------------------------------------------------------------
// Conversations

void MainWindow::newConversation() {
    if (state_ == State::Generating) return;
    cancelEdit();
    conversationId_ = -1;
    preferences::setLastConversation(-1);
    chatModel_->clear();
    canRegenerate_ = false;
    conversationList_->clearSelection();
    emit resetConversationRequested();
    setState(state_);
    scheduleMeasure();
    input_->setFocus();
}

void MainWindow::openConversation(qint64 id) {
    if (state_ == State::Generating) return;
    const ConversationSummary summary = store_->conversation(id);
    if (summary.id < 0) return;
    cancelEdit();
    conversationId_ = id;
    preferences::setLastConversation(id);
    QVector<ChatMessage> messages;
    int editRow = -1;
    QString editText;
    for (const StoredMessage& m : withoutTurnThatNeverBegan(store_->messages(id), editRow, editText)) {
        ChatMessage msg;
        msg.role = ChatModel::roleFromName(m.role);
        msg.text = m.content;
        msg.complete = m.complete;
        msg.details = m.details;
        msg.model = m.model;
        msg.store_id = m.id;
        messages.push_back(msg);
    }
    chatModel_->setMessages(messages);
    systemPrompt_->setText(summary.system_prompt);
    emit systemPromptChanged(summary.system_prompt);
    restoreConversationToModel();
    if (editRow >= 0) {
        // Back where the user was: editing that message, the edit in the input.
        editingRow_ = editRow;
        input_->setPlainText(editText);
        input_->moveCursor(QTextCursor::End);
        statusBar()->showMessage(tr("Editing a message: sending replaces it and everything after it (Esc cancels)."));
    }
    setState(state_);
    chatView_->scrollToEnd();
}

void MainWindow::scheduleMeasure() {
    if (input_ == nullptr || messageMeasure_ == nullptr) return;  // (while the window is built)
    if (input_->toPlainText().trimmed().isEmpty()) {
        ++measureRequest_;  // an answer still on its way is for text that is gone
        measureTimer_.stop();
        messageMeasure_->clear();
        return;
    }
    measureTimer_.start(250);
}

void MainWindow::requestMeasure() {
    const QString text = input_->toPlainText().trimmed();
    if (text.isEmpty()) return;
    if (state_ != State::Ready) return;  // asked again once the reply is written (setState)
    // An edited message replaces itself and everything after it: it is measured after the
    // messages before it (those the model's conversation holds: the users' and the replies).
    int keep = -1;
    if (editingRow_ >= 0) {
        keep = 0;
        for (int row = 0; row < editingRow_ && row < chatModel_->rowCount(); ++row) {
            const ChatMessage::Role role = chatModel_->message(row).role;
            if (role == ChatMessage::Role::User || role == ChatMessage::Role::Assistant) ++keep;
        }
    }
    emit measureMessageRequested(++measureRequest_, text, keep);
}

void MainWindow::showMeasure(quint64 request, const lantern::MessageFit& fit) {
    if (request != measureRequest_ || input_->toPlainText().trimmed().isEmpty()) return;
    const QString tokens = tr("%Ln token(s)", nullptr, static_cast<int>(fit.message_tokens));
    QString text;
    bool warn = false;
    if (fit.fits && fit.dropped_turns == 0) {
        text = tokens;
    } else if (fit.fits) {
        text = tr("%1 · sending it leaves the oldest %n message(s) out of the model's context", nullptr,
                  static_cast<int>(fit.dropped_turns))
                   .arg(tokens);
    } else if (fit.fits_dropping) {
        warn = true;
        text = tr("%1 · no room: the conversation would be %2 tokens, the context holds %3. Turn on File > When "
                  "the Context Is Full, Drop the Oldest Turns, or start a new chat.")
                   .arg(tokens, display::count(fit.prompt_tokens), display::count(fit.context));
    } else {
        warn = true;
        text = tr("%1 · too long: the conversation would be %2 tokens, the context holds %3 and a reply needs room too.")
                   .arg(tokens, display::count(fit.prompt_tokens), display::count(fit.context));
    }
    QPalette palette = messageMeasure_->palette();
    palette.setColor(QPalette::WindowText, warn ? theme::warningText() : theme::mutedText());
    messageMeasure_->setPalette(palette);
    messageMeasure_->setText(text);
}

void MainWindow::restoreConversationToModel() {
    QStringList roles, contents;
    for (int row = 0; row < chatModel_->rowCount(); ++row) {
        const ChatMessage& m = chatModel_->message(row);
        if (m.role != ChatMessage::Role::User && m.role != ChatMessage::Role::Assistant) continue;
        // The model gets the whole conversation again; the next turn drops what does not fit.
        chatModel_->setOutOfContext(row, false);
        roles << ChatModel::roleName(m.role);
        contents << m.text;
    }
    emit restoreConversationRequested(roles, contents);
    // The model's conversation now ends with the last reply, if there is one: it can be
    // regenerated or continued, by whichever model is loaded. One that ends with the user's turn
    // (its reply was never begun: the app was killed first) gets that reply from Regenerate.
    int last = chatModel_->rowCount() - 1;
    while (last >= 0 && chatModel_->message(last).role == ChatMessage::Role::Notice) --last;
    canRegenerate_ = continuableRow() >= 0 || (last >= 0 && chatModel_->message(last).role == ChatMessage::Role::User);
    scheduleMeasure();  // the message being written joins another conversation
}

void MainWindow::deleteConversation(qint64 id) {
    const ConversationSummary c = store_->conversation(id);
    if (QMessageBox::question(this, tr("Delete conversation"), tr("Delete “%1” and all its messages?").arg(c.title)) !=
        QMessageBox::Yes)
        return;
    store_->deleteConversation(id);
    if (id == conversationId_) newConversation();
    refreshConversationList();
}

void MainWindow::renameConversation(qint64 id) {
    const ConversationSummary c = store_->conversation(id);
    bool ok = false;
    const QString title = QInputDialog::getText(this, tr("Rename conversation"), tr("Title:"), QLineEdit::Normal, c.title, &ok);
    if (!ok || title.trimmed().isEmpty()) return;
    store_->renameConversation(id, title.trimmed());
    refreshConversationList();
}

// ---------------------------------------------------------------------------------------------
// Turns

void MainWindow::exportConversation() {
    if (chatModel_->rowCount() == 0) return;
    const ConversationSummary summary = conversationId_ >= 0 ? store_->conversation(conversationId_) : ConversationSummary{};
    QString name = summary.title.isEmpty() ? tr("Conversation") : summary.title;
    name.replace(QRegularExpression(QStringLiteral("[\\\\/:*?\"<>|]")), QStringLiteral("_"));
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export Conversation"), QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation)).filePath(name + ".md"),
        tr("Markdown (*.md);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    if (!writeConversationMarkdown(path, &error)) QMessageBox::warning(this, tr("Export failed"), error);
    else statusBar()->showMessage(tr("Exported to %1").arg(QDir::toNativeSeparators(path)), 8000);
}

bool MainWindow::writeConversationMarkdown(const QString& path, QString* error) const {
    ExportHeader header;
    const ConversationSummary summary = conversationId_ >= 0 ? store_->conversation(conversationId_) : ConversationSummary{};
    header.title = summary.title;
    header.systemPrompt = systemPrompt_->text();
    header.modelFile = summary.model;
    header.exported = QDateTime::currentDateTime();
    QVector<ChatMessage> messages;
    for (int row = 0; row < chatModel_->rowCount(); ++row) messages.push_back(chatModel_->message(row));
    // Written to a temporary file and renamed into place: an existing file is never left half written.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text) || file.write(conversationMarkdown(header, messages).toUtf8()) < 0 ||
        !file.commit()) {
        if (error) *error = tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    return true;
}

void MainWindow::editMessage(int row) {
    if (state_ == State::Generating || row < 0 || row >= chatModel_->rowCount() ||
        chatModel_->message(row).role != ChatMessage::Role::User)
        return;
    editingRow_ = row;
    input_->setPlainText(chatModel_->message(row).text);
    input_->moveCursor(QTextCursor::End);
    input_->setFocus();
    statusBar()->showMessage(tr("Editing a message: sending replaces it and everything after it (Esc cancels)."));
}

void MainWindow::cancelEdit() {
    if (editingRow_ < 0) return;
    editingRow_ = -1;
    input_->clear();
    statusBar()->clearMessage();
}

void MainWindow::sendMessage() {
    const QString text = input_->toPlainText().trimmed();
    if (text.isEmpty() || state_ != State::Ready) return;
    if (editingRow_ >= 0) {
        // The edited message and everything after it go, from the screen, the store and the
        // model's view of the conversation; the new message continues from what stays.
        // They stay in the store until the new turn has begun (setAsideFrom).
        const int row = std::min(editingRow_, chatModel_->rowCount());
        editingRow_ = -1;
        statusBar()->clearMessage();
        setAsideFrom(row, true);
        restoreConversationToModel();
    }
    if (conversationId_ < 0) {
        conversationId_ = store_->createConversation(conversationTitleFrom(text), systemPrompt_->text().trimmed(),
                                                     modelFileName(modelPath_));
        preferences::setLastConversation(conversationId_);
    }
    ChatMessage user;
    user.role = ChatMessage::Role::User;
    user.text = text;
    // An edit names the first message it replaces until its turn has begun (commitReplacement),
    // so a kill before then is undone when the conversation is opened again.
    const qint64 replaces = replaced_.row >= 0 ? replaced_.firstStoreId() : -1;
    user.store_id = store_->appendMessage(conversationId_, QStringLiteral("user"), text, true, {}, {}, replaces);
    if (replaces >= 0) replaced_.by = user.store_id;
    chatModel_->append(user);
    input_->clear();
    turn_ = Turn::Send;
    sentText_ = text;
    beginAssistantReply();
    emit sendRequested(text);
    refreshConversationList();
}

void MainWindow::regenerateReply() {
    if (state_ != State::Ready || !canRegenerate_) return;
    // The reply that ends the conversation goes; a conversation that ends with the user's turn (a
    // regenerate stopped during its prompt) gets the reply it lacks.
    int row = chatModel_->rowCount() - 1;
    while (row >= 0 && chatModel_->message(row).role == ChatMessage::Role::Notice) --row;
    if (row < 0) return;
    if (chatModel_->message(row).role == ChatMessage::Role::Assistant) {
        setAsideFrom(row, false);  // with the notices about it; stored until the new reply begins
    } else if (chatModel_->message(row).role != ChatMessage::Role::User) {
        return;
    }
    turn_ = Turn::Regenerate;
    beginAssistantReply(replaced_.row >= 0 ? replaced_.firstStoreId() : -1);
    emit regenerateRequested();
}

void MainWindow::setAsideFrom(int row, bool editing) {
    replaced_ = Replaced{row, {}, editing};
    while (chatModel_->rowCount() > row) {
        replaced_.messages.prepend(chatModel_->message(chatModel_->rowCount() - 1));
        chatModel_->removeMessage(chatModel_->rowCount() - 1);
    }
}

void MainWindow::commitReplacement() {
    if (replaced_.row < 0) return;
    QVector<qint64> ids;
    for (const ChatMessage& m : replaced_.messages)
        if (m.store_id >= 0) ids << m.store_id;
    store_->completeReplacement(replaced_.by, ids);
    replaced_ = Replaced{};
}

QVector<StoredMessage> MainWindow::withoutTurnThatNeverBegan(const QVector<StoredMessage>& stored, int& editRow,
                                                             QString& editText) {
    editRow = -1;
    QVector<StoredMessage> out = stored;
    for (int i = 0; i < out.size(); ++i) {
        if (out[i].replaces < 0) continue;
        int target = -1;
        for (int j = 0; j < i; ++j)
            if (out[j].id == out[i].replaces) target = j;
        if (target < 0) {  // what it named is gone some other way: nothing to undo, an ordinary message
            store_->completeReplacement(out[i].id, {});
            out[i].replaces = -1;
            continue;
        }
        if (out[i].role == QStringLiteral("user")) {
            editRow = target;
            editText = out[i].content;
        }
        for (int k = i; k < out.size(); ++k) store_->deleteMessage(out[k].id);
        out.resize(i);
        break;
    }
    // A reply killed before its first token is an empty, unfinished row: nothing to show. The
    // conversation then ends with the user's turn, which Regenerate answers.
    while (!out.isEmpty() && out.last().role == QStringLiteral("assistant") && !out.last().complete &&
           out.last().content.isEmpty()) {
        store_->deleteMessage(out.last().id);
        out.removeLast();
    }
    return out;
}

void MainWindow::undoReplacement() {
    if (replaced_.row < 0) return;
    QVector<ChatMessage> rows;
    for (int r = 0; r < chatModel_->rowCount(); ++r) rows << chatModel_->message(r);
    const int at = std::min(replaced_.row, static_cast<int>(rows.size()));
    for (int i = 0; i < replaced_.messages.size(); ++i) rows.insert(at + i, replaced_.messages[i]);
    const Replaced was = replaced_;
    replaced_ = Replaced{};
    chatModel_->setMessages(rows);
    restoreConversationToModel();  // the model's conversation is whole again
    if (was.editing) {
        // Still editing that message: sending again replaces it.
        editingRow_ = was.row;
        statusBar()->showMessage(tr("Editing a message: sending replaces it and everything after it (Esc cancels)."));
    }
}

bool MainWindow::roomToContinue(int row) const {
    const ChatMessage& m = chatModel_->message(row);
    return m.roomToContinue || (dropOldestTurns_ && m.roomToContinueDropping);
}

void MainWindow::updateContinueButton() {
    if (continueButton_ == nullptr) return;
    const int row = continuableRow();
    const bool full = row >= 0 && !roomToContinue(row);
    continueButton_->setEnabled(state_ == State::Ready && canRegenerate_ && row >= 0 && !full);
    continueButton_->setToolTip(full ? tr("There is no room left in the context to continue this reply")
                                     : tr("Write more of the last reply, from where it stopped"));
}

int MainWindow::continuableRow() const {
    for (int row = chatModel_->rowCount() - 1; row >= 0; --row) {
        const ChatMessage& m = chatModel_->message(row);
        if (m.role == ChatMessage::Role::Notice) continue;  // notices are not part of the conversation
        return m.role == ChatMessage::Role::Assistant && !m.text.isEmpty() ? row : -1;
    }
    return -1;
}

void MainWindow::continueReply() {
    const int row = continuableRow();
    if (state_ != State::Ready || row < 0) return;
    const ChatMessage& reply = chatModel_->message(row);
    continuedDetails_ = reply.details.isNull() ? QStringLiteral("") : reply.details;
    continuedComplete_ = reply.complete;
    turn_ = Turn::Continue;
    chatModel_->resume(row);
    startStreaming(row, reply.store_id, reply.text);
    emit continueRequested();
}

void MainWindow::startStreaming(int row, qint64 storeId, const QString& textSoFar) {
    streamingRow_ = row;
    streamingStoreId_ = storeId;
    streamingText_ = textSoFar;
    streamingTokens_ = 0;
    pendingText_.clear();
    pendingSteps_.clear();
    sinceFlush_.invalidate();  // the first token shows at once
    canRegenerate_ = false;
    performancePanel_->beginTurn();
    turnClock_.start();
    partialSaveTimer_.start();
    chatView_->scrollToEnd();
    setState(State::Generating);
}

void MainWindow::beginAssistantReply(qint64 replaces) {
    continuedDetails_ = QString();
    ChatMessage reply;
    reply.role = ChatMessage::Role::Assistant;
    reply.streaming = true;
    reply.complete = false;
    reply.model = loadedModelName_;
    if (conversationId_ >= 0)
        reply.store_id =
            store_->appendMessage(conversationId_, QStringLiteral("assistant"), QString(), false, QString(), reply.model, replaces);
    if (replaces >= 0) replaced_.by = reply.store_id;
    startStreaming(chatModel_->append(reply), reply.store_id, QString());
}

void MainWindow::stopGeneration() {
    if (state_ != State::Generating) return;
    worker_->requestStop();  // thread-safe: the worker polls it between steps
    stateLabel_->setFittedText(tr("Stopping…"));
}

void MainWindow::savePartialReply() {
    if (streamingStoreId_ >= 0) store_->updateMessage(streamingStoreId_, streamingText_, false);
}

void MainWindow::endAssistantReply(bool complete, const QString& details) {
    flushStream();  // what the last frame held back goes in before the reply ends
    // The token sampled last is not in the cache (a stopped reply's goes in with the next turn's
    // prompt): the bar now counts what the cache holds, as the KV panel does. The worker sends its
    // cache figures before it says the turn ended, so they are current here.
    showContextCount(cachedContextTokens_);
    partialSaveTimer_.stop();
    if (streamingRow_ >= 0) {
        chatModel_->setDetails(streamingRow_, details);
        chatModel_->finish(streamingRow_, complete);
    }
    if (streamingStoreId_ >= 0) store_->updateMessage(streamingStoreId_, streamingText_, complete, details);
    streamingRow_ = -1;
    streamingStoreId_ = -1;
    refreshConversationList();
}

void MainWindow::onTokens(const TokenBatch& batch) {
    if (state_ != State::Generating || streamingRow_ < 0) return;
    // streamingText_ is always whole (the partial-reply save reads it); the widgets get the
    // pending text and steps by frames (kStreamFrameMs).
    if (!batch.text.isEmpty()) {
        streamingText_ += batch.text;
        pendingText_ += batch.text;
    }
    if (!batch.tokens.empty()) {
        commitReplacement();  // the turn has begun: what it replaces leaves the store
        streamingTokens_ += static_cast<int>(batch.tokens.size());
        pendingSteps_.insert(pendingSteps_.end(), batch.stepMs.begin(), batch.stepMs.end());
        pendingCandidates_ = batch.candidates;
        pendingToken_ = batch.tokens.back();
        pendingPosition_ = batch.position;
    }
    if (!sinceFlush_.isValid() || sinceFlush_.elapsed() >= kStreamFrameMs)
        flushStream();
    else if (!streamFrame_.isActive())
        streamFrame_.start(static_cast<int>(kStreamFrameMs - sinceFlush_.elapsed()));
}

void MainWindow::flushStream() {
    streamFrame_.stop();
    sinceFlush_.start();
    if (streamingRow_ < 0) {
        pendingText_.clear();
        pendingSteps_.clear();
        return;
    }
    if (!pendingText_.isEmpty()) chatModel_->appendToMessage(streamingRow_, pendingText_);
    pendingText_.clear();
    if (pendingSteps_.empty()) return;
    performancePanel_->addTokens(pendingSteps_);
    pendingSteps_.clear();
    samplingPanel_->showCandidates(pendingCandidates_, pendingToken_);
    stateLabel_->setLiveText(tr("Generating… %Ln token(s)", nullptr, streamingTokens_));
    // The token just sampled enters the context at the next step; the last one of a reply that
    // filled the context never does, so the count stops at the context's size.
    showContextCount(static_cast<int>(std::min(pendingPosition_ + 1, contextLength_)));
}

void MainWindow::showContextCount(int tokens) {
    if (contextLength_ == 0 || tokens < 0) return;
    contextLabel_->setLiveText(tr("Context %1 / %2").arg(display::count(tokens), display::count(contextLength_)));
}

void MainWindow::onTurnFinished(const lantern::TurnStats& stats) {
    if (state_ != State::Generating) return;
    if (stats.changed_nothing) {
        undoTurnThatWroteNothing(stats);
        return;
    }
    commitReplacement();
    reply_details::Part part;
    part.tokens = static_cast<qint64>(stats.generated_tokens);
    part.tokensPerSecond = stats.decode_tokens_per_s;
    part.firstTokenMs = stats.ttft_ms;
    part.stopReason = QString::fromUtf8(lantern::stop_reason_name(stats.stop_reason));
    part.besideApi = std::min<qint64>(replySharedTokens_, part.tokens);
    replySharedTokens_ = 0;
    if (!continuedDetails_.isNull()) {
        // A continued reply keeps what its first part said; the continuation adds its own figures.
        const ChatMessage& reply = chatModel_->message(streamingRow_);
        part.continued = true;
        if (!reply.model.isEmpty() && reply.model != loadedModelName_) part.continuedBy = loadedModelName_;
    }
    const QString details = reply_details::append(continuedDetails_, part);
    continuedDetails_ = QString();
    chatModel_->setRoomToContinue(streamingRow_, stats.can_continue, stats.can_continue_dropping);
    endAssistantReply(true, details);
    performancePanel_->finishTurn(stats);
    samplingPanel_->setSeedUsed(stats.seed);
    canRegenerate_ = true;
    if (stats.dropped_turns > 0) {
        // The session dropped its oldest messages: the same ones, in order, of those on screen
        // that it still held.
        uint32_t left = stats.dropped_turns;
        for (int row = 0; row < chatModel_->rowCount() && left > 0; ++row) {
            const ChatMessage& m = chatModel_->message(row);
            if ((m.role != ChatMessage::Role::User && m.role != ChatMessage::Role::Assistant) || m.outOfContext) continue;
            chatModel_->setOutOfContext(row, true);
            --left;
        }
        addNotice(tr("%n earlier turn(s) were dropped to make room in the context.", nullptr, static_cast<int>(stats.dropped_turns)));
    }
    if (stats.stop_reason == lantern::StopReason::ContextFull)
        addNotice(dropOldestTurns_ ? tr("The reply filled the context. Your next message makes room by dropping the oldest turns.")
                                   : tr("The context is full. Start a new chat, or turn on File > When the Context Is Full, "
                                        "Drop the Oldest Turns."));
    setState(State::Ready);
}

// A turn that had no room in the context (TurnStats::would_fit_dropping), or that was stopped
// while its prompt was read, changed nothing in the model's conversation: the screen and the store
// go back to how they were, a sent message goes back into the input, and (no room) a notice says
// why and what would help.
void MainWindow::undoTurnThatWroteNothing(const lantern::TurnStats& stats) {
    const int row = streamingRow_;
    const bool stopped = stats.stop_reason == lantern::StopReason::User;
    const QString fix = stats.would_fit_dropping
                            ? tr("Turn on File > When the Context Is Full, Drop the Oldest Turns to make room, or start a new chat.")
                            : QString();
    performancePanel_->cancelTurn();  // it wrote nothing: the last reply's figures stay
    if (turn_ == Turn::Continue) {
        // The reply as it was: its text, details and completeness.
        endAssistantReply(continuedComplete_, continuedDetails_);
        continuedDetails_ = QString();
        canRegenerate_ = true;
        if (!stopped) {
            chatModel_->setRoomToContinue(row, false, stats.would_fit_dropping);
            // (Whole sentences with placeholders, so that each language joins them its own way.)
            addNotice(tr("There is no room left in the context to continue this reply. %1")
                          .arg(fix.isEmpty() ? tr("Start a new chat to go on.") : fix));
        }
        setState(State::Ready);
        return;
    }
    // The empty reply goes, from the screen and the store.
    streamFrame_.stop();
    partialSaveTimer_.stop();
    pendingText_.clear();
    pendingSteps_.clear();
    if (streamingStoreId_ >= 0) store_->deleteMessage(streamingStoreId_);
    if (row >= 0) chatModel_->removeMessage(row);
    streamingRow_ = -1;
    streamingStoreId_ = -1;
    const QString size = tr("The conversation would be %1 tokens long; the context holds %2, and a reply needs room too.")
                             .arg(display::count(stats.prompt_tokens), display::count(contextLength_));
    if (turn_ == Turn::Send) {
        // So does the message: the model's conversation never took it, and it goes back into the
        // input to be shortened, sent again (what was computed of it is reused) or elsewhere.
        const int user = chatModel_->lastRow(ChatMessage::Role::User);
        if (user >= 0 && chatModel_->message(user).text == sentText_) {
            if (chatModel_->message(user).store_id >= 0) store_->deleteMessage(chatModel_->message(user).store_id);
            chatModel_->removeMessage(user);
        }
        undoReplacement();  // an edited message and what followed it come back
        if (input_->toPlainText().trimmed().isEmpty()) {
            input_->setPlainText(sentText_);
            input_->moveCursor(QTextCursor::End);
        }
        bool anyStored = false;  // (notices are not stored)
        for (int r = 0; r < chatModel_->rowCount() && !anyStored; ++r) anyStored = chatModel_->message(r).store_id >= 0;
        if (conversationId_ >= 0 && !anyStored) {  // it was the conversation's first message
            store_->deleteConversation(conversationId_);
            conversationId_ = -1;
        }
        canRegenerate_ = continuableRow() >= 0;
        if (stopped)
            statusBar()->showMessage(tr("Stopped before the reply began: your message is back in the input."), 8000);
        else
            addNotice(tr("This message does not fit in the context. %1 %2")
                          .arg(size, fix.isEmpty() ? tr("Shorten it, or start a new chat.") : fix));
    } else {
        undoReplacement();      // the reply it was to replace comes back
        canRegenerate_ = true;  // (if none: the conversation ends with the user's turn, which Regenerate answers)
        if (!stopped)
            addNotice(tr("There is no room left in the context for a new reply. %1 %2")
                          .arg(size, fix.isEmpty() ? tr("Start a new chat to go on.") : fix));
    }
    refreshConversationList();
    setState(State::Ready);
}

void MainWindow::onKvStats(const KvSnapshot& snapshot) {
    kvPanel_->setSnapshot(snapshot);
    for (const lantern::KvSequenceStats& seq : snapshot.stats.sequences) {
        if (seq.id != snapshot.active_sequence) continue;
        cachedContextTokens_ = static_cast<int>(seq.tokens);
        // While a reply streams, its frames count the token just sampled as well (it enters the
        // cache at the next step); a cache figure here would make the bar flicker one back.
        if (streamingRow_ < 0 || streamingTokens_ == 0) showContextCount(cachedContextTokens_);
    }
}

void MainWindow::onError(const QString& message) {
    if (state_ == State::Generating) {
        // A continued reply keeps what its first part said.
        commitReplacement();  // the failed reply stays on screen, so the store matches it
        endAssistantReply(false, reply_details::append(continuedDetails_, {.ending = reply_details::Ending::Failed}));
        continuedDetails_ = QString();
        canRegenerate_ = false;
        setState(modelPath_.isEmpty() ? State::NoModel : State::Ready);
        addNotice(message);
        QMessageBox::warning(this, tr("Generation failed"), message);
        return;
    }
    statusBar()->showMessage(message, 10000);
}

void MainWindow::addNotice(const QString& text) {
    ChatMessage notice;
    notice.role = ChatMessage::Role::Notice;
    notice.text = text;
    chatModel_->append(notice);
}

// ---------------------------------------------------------------------------------------------
// Window

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
    if (watched == input_ && event->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && !(key->modifiers() & Qt::ShiftModifier)) {
            sendMessage();
            return true;
        }
        if (key->key() == Qt::Key_Escape) {
            if (state_ == State::Generating) stopGeneration();
            else cancelEdit();
            return true;
        }
    }
    return QMainWindow::eventFilter(watched, event);
}

namespace {
// The model file among dropped URLs: the first local *.gguf.
QString droppedModel(const QMimeData* mime) {
    if (mime == nullptr || !mime->hasUrls()) return {};
    for (const QUrl& url : mime->urls())
        if (url.isLocalFile() && url.toLocalFile().endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive)) return url.toLocalFile();
    return {};
}
}  // namespace

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (!droppedModel(event->mimeData()).isEmpty() && state_ != State::Generating && state_ != State::Loading)
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QString path = droppedModel(event->mimeData());
    if (path.isEmpty()) return;
    event->acceptProposedAction();
    openModel(path);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (state_ == State::Generating) {
        // Keep what was generated so far: stored as an interrupted reply.
        worker_->requestStop();
        commitReplacement();  // the store keeps what the screen shows
        endAssistantReply(false, reply_details::append(continuedDetails_, {.ending = reply_details::Ending::AppClosed}));
        continuedDetails_ = QString();
    }
    preferences::setWindowLayout(saveGeometry(), saveState());
    preferences::setSamplingSettings(samplingPanel_->settings());
    QMainWindow::closeEvent(event);
}

void MainWindow::chooseLanguage(const QString& name) {
    if (name == preferences::language()) return;
    preferences::setLanguage(name);
    QMessageBox::information(this, tr("Language"), tr("The new language is used from the next start of Lantern."));
}

void MainWindow::showAbout() {
    QMessageBox::about(this, tr("About Lantern"),
                       tr("<h3>Lantern %1</h3>"
                          "<p>Chat with Llama models on your own computer, on its own Vulkan inference engine — "
                          "and see what happens inside: the KV cache, attention, sampling and honest speed figures.</p>")
                           .arg(QCoreApplication::applicationVersion()));
}
