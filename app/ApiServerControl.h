// ApiServerControl — the app's local OpenAI-compatible API server, as the user sees it: File >
// Local API Server (on/off, remembered), its port, API Replies Wait for the Chat, and the status
// bar label that says where it listens and what it is doing (UI thread).
//
// It asks the InferenceWorker to start and stop the server (queued) and shows the worker's
// reports. The window puts actions() in its menu and label() in its status bar.
#pragma once
#include <QObject>
#include <QString>

class InferenceWorker;
class QAction;
class QLabel;
class QWidget;

class ApiServerControl : public QObject {
    Q_OBJECT
public:
    // `worker` lives on its own thread; `window` parents the dialogs and the label.
    ApiServerControl(InferenceWorker* worker, QWidget* window);

    QAction* serverAction() const { return serverAction_; }
    QAction* portAction() const { return portAction_; }
    QAction* keyAction() const { return keyAction_; }
    QAction* chatFirstAction() const { return chatFirstAction_; }
    QLabel* label() const { return label_; }
    bool enabled() const;

    // Starts the server if the user left it on (call once the worker is wired).
    void startIfEnabled();
    // What the rest of the window is doing: a model loaded (the server needs one), a chat reply
    // being written (API replies are then paused or shared), a load (the switch waits).
    void setModelLoaded(bool loaded) { modelLoaded_ = loaded; }
    void setBusy(bool generating, bool loading);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;  // the window's LanguageChange

signals:
    void startRequested(quint16 port, const QString& apiKey);
    void stopRequested();
    void statusMessage(const QString& text, int timeoutMs);

private:
    void retranslateUi();  // the actions' texts and the label, in the language now installed
    void setEnabled(bool on);
    void choosePort();
    void chooseKey();
    void show(bool listening, quint32 inProgress = 0, quint32 waiting = 0, quint64 served = 0);
    QString tooltipFor(quint16 port) const;

    InferenceWorker* worker_;
    QWidget* window_;
    QAction* serverAction_ = nullptr;
    QAction* portAction_ = nullptr;
    QAction* keyAction_ = nullptr;
    QAction* chatFirstAction_ = nullptr;
    QLabel* label_ = nullptr;
    bool modelLoaded_ = false;
    bool generating_ = false;
    quint16 port_ = 0;  // the port it listens on (0 while off)
    // The API's last activity report (InferenceWorker::apiServerActivity).
    quint32 inProgress_ = 0;
    quint32 waiting_ = 0;
    quint64 served_ = 0;
};
