#include "ApiServerControl.h"

#include <QAction>
#include <QEvent>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <algorithm>

#include "Preferences.h"
#include "worker/InferenceWorker.h"

ApiServerControl::ApiServerControl(InferenceWorker* worker, QWidget* window)
    : QObject(window), worker_(worker), window_(window) {
    serverAction_ = new QAction(this);
    serverAction_->setObjectName(QStringLiteral("apiServerAction"));
    serverAction_->setCheckable(true);
    serverAction_->setChecked(preferences::apiServerEnabled());
    connect(serverAction_, &QAction::toggled, this, &ApiServerControl::setEnabled);

    portAction_ = new QAction(this);
    connect(portAction_, &QAction::triggered, this, &ApiServerControl::choosePort);
    keyAction_ = new QAction(this);
    keyAction_->setObjectName(QStringLiteral("apiKeyAction"));
    connect(keyAction_, &QAction::triggered, this, &ApiServerControl::chooseKey);

    // Acts at once, mid-reply too (the worker reads it at every step).
    chatFirstAction_ = new QAction(this);
    chatFirstAction_->setObjectName(QStringLiteral("apiChatFirstAction"));
    chatFirstAction_->setCheckable(true);
    chatFirstAction_->setChecked(preferences::apiChatFirst());
    worker_->setChatFirst(chatFirstAction_->isChecked());
    connect(chatFirstAction_, &QAction::toggled, this, [this](bool on) {
        preferences::setApiChatFirst(on);
        worker_->setChatFirst(on);
        if (port_ != 0) show(true, inProgress_, waiting_, served_);
    });
    retranslateUi();
    window_->installEventFilter(this);  // the window's LanguageChange words the actions again

    label_ = new QLabel(window);
    label_->setObjectName(QStringLiteral("apiLabel"));
    label_->hide();

    connect(this, &ApiServerControl::startRequested, worker_, &InferenceWorker::startApiServer);
    connect(this, &ApiServerControl::stopRequested, worker_, &InferenceWorker::stopApiServer);
    connect(worker_, &InferenceWorker::apiServerStarted, this, [this](quint16 port) {
        port_ = port;
        show(true);
    });
    connect(worker_, &InferenceWorker::apiServerStopped, this, [this] { show(false); });
    connect(worker_, &InferenceWorker::apiServerActivity, this,
            [this](quint32 inProgress, quint32 waiting, quint64 served) {
                show(true, inProgress, waiting, served);
            });
    connect(worker_, &InferenceWorker::apiServerFailed, this, [this](const QString& message) {
        show(false);
        const QSignalBlocker block(serverAction_);
        serverAction_->setChecked(false);
        preferences::setApiServerEnabled(false);
        emit statusMessage(tr("The API server stopped: %1").arg(message), 10000);
    });
}

void ApiServerControl::retranslateUi() {
    serverAction_->setText(tr("Local &API Server"));
    serverAction_->setToolTip(tooltipFor(preferences::apiServerPort()));
    portAction_->setText(tr("API Server &Port…"));
    keyAction_->setText(tr("API Server &Key…"));
    keyAction_->setToolTip(
        tr("A key the API's clients must send (Authorization: Bearer <key>), so that other "
           "programs on this computer cannot use the model without it"));
    chatFirstAction_->setText(tr("API Replies &Wait for the Chat"));
    chatFirstAction_->setToolTip(
        tr("API replies pause while the chat writes a reply and go on when it ends, so the "
           "chat's reply comes at full speed. Off, they are written in the same steps as "
           "the chat's reply (on a CPU device the chat's reply then slows while they run)."));
    if (port_ != 0) show(true, inProgress_, waiting_, served_);
}

bool ApiServerControl::eventFilter(QObject* watched, QEvent* event) {
    if (watched == window_ && event->type() == QEvent::LanguageChange) retranslateUi();
    return QObject::eventFilter(watched, event);
}

bool ApiServerControl::enabled() const {
    return serverAction_->isChecked();
}

QString ApiServerControl::tooltipFor(quint16 port) const {
    return tr("Lets editors, scripts and other apps on this computer use the loaded model "
              "through an OpenAI-compatible API (http://127.0.0.1:%1/v1).")
        .arg(port);
}

void ApiServerControl::startIfEnabled() {
    if (preferences::apiServerEnabled())
        emit startRequested(preferences::apiServerPort(), preferences::apiServerKey());
}

void ApiServerControl::setBusy(bool generating, bool loading) {
    generating_ = generating;
    // Switching the server on may load the model again, which waits for no reply.
    serverAction_->setEnabled(!generating && !loading);
    if (port_ != 0) show(true, inProgress_, waiting_, served_);  // paused or writing
}

void ApiServerControl::setEnabled(bool on) {
    preferences::setApiServerEnabled(on);
    if (!on) {
        emit stopRequested();
        return;
    }
    emit startRequested(preferences::apiServerPort(), preferences::apiServerKey());
    if (!modelLoaded_) emit statusMessage(tr("The API server starts when a model is loaded."), 6000);
}

void ApiServerControl::choosePort() {
    bool ok = false;
    const int port =
        QInputDialog::getInt(window_, tr("API Server Port"), tr("Port on 127.0.0.1 (this computer only):"),
                             preferences::apiServerPort(), 1, 65535, 1, &ok);
    if (!ok) return;
    preferences::setApiServerPort(static_cast<quint16>(port));
    serverAction_->setToolTip(tooltipFor(static_cast<quint16>(port)));
    if (serverAction_->isChecked())
        emit startRequested(static_cast<quint16>(port), preferences::apiServerKey());  // moves it
}

void ApiServerControl::chooseKey() {
    bool ok = false;
    const QString key =
        QInputDialog::getText(
            window_, tr("API Server Key"),
            tr("Clients must send \"Authorization: Bearer <key>\". Leave it empty for no key:"),
            QLineEdit::Normal, preferences::apiServerKey(), &ok)
            .trimmed();
    if (!ok) return;
    preferences::setApiServerKey(key);
    if (serverAction_->isChecked())
        emit startRequested(preferences::apiServerPort(), key);  // with the new key
}

void ApiServerControl::show(bool listening, quint32 inProgress, quint32 waiting, quint64 served) {
    if (!listening) {
        port_ = 0;
        label_->hide();
        return;
    }
    inProgress_ = inProgress;
    waiting_ = waiting;
    served_ = served;
    const QString url = QStringLiteral("http://127.0.0.1:%1/v1").arg(port_);
    const QString address = QStringLiteral("127.0.0.1:%1").arg(port_);
    waiting = std::min(waiting, inProgress);
    const bool chatFirst = chatFirstAction_->isChecked();
    const int writing = static_cast<int>(inProgress - waiting);
    // While the chat goes first and writes, the API's replies are paused, not being written.
    QString text = writing == 0 ? tr("API %1").arg(address)
                   : chatFirst && generating_
                       ? tr("API %1 · %n repl(ies) paused for the chat", nullptr, writing).arg(address)
                       : tr("API %1 · writing %n repl(ies)", nullptr, writing).arg(address);
    // Replies beyond the room the KV cache gives them (or beyond the replies written at once) wait
    // their turn: said, so that a client's slow start has a reason on screen.
    if (waiting > 0) text += QStringLiteral(" · ") + tr("%n waiting", nullptr, static_cast<int>(waiting));
    label_->setText(text);
    label_->setToolTip(
        (chatFirst
             ? tr("OpenAI-compatible API at %1 — %n repl(ies) served. API replies pause while the chat "
                  "writes a "
                  "reply (File > API Replies Wait for the Chat), and share one conversation's room in the KV "
                  "cache: past it, the reply that started last waits and then goes on where it was.",
                  nullptr, static_cast<int>(served))
             : tr("OpenAI-compatible API at %1 — %n repl(ies) served. API replies are written in the same "
                  "steps as the chat's reply, and share one conversation's room in the KV cache: past "
                  "it, the reply that started last waits and then goes on where it was.",
                  nullptr, static_cast<int>(served)))
            .arg(url));
    label_->show();
}
