// RemoteEnginesDialog — File > Remote Engines…: the OpenAI-compatible servers the user chats with
// instead of the local engine. Add, edit and remove endpoints (name, base URL, API key, model);
// "Fetch models" fills the model list from /v1/models; "Test connection" says what is wrong
// (unreachable, TLS, 401, not an OpenAI API) or what answered; "Connect" asks the window to chat
// there (connectRequested). Endpoints are kept by RemoteEndpointStore, keys in the keyring
// (KeyringSecret; said when only this session keeps one). UI thread; a test talks to the server
// from here (asynchronously), never through the inference worker.
#pragma once
#include <QDialog>
#include <QList>
#include <atomic>

#include "Retranslate.h"
#include "remote/RemoteEndpoint.h"

class KeyringSecret;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class RemoteChat;

class RemoteEnginesDialog : public QDialog {
    Q_OBJECT
public:
    explicit RemoteEnginesDialog(QWidget* parent = nullptr);
    ~RemoteEnginesDialog() override;

    // The endpoint as the form holds it (key included).
    RemoteEndpoint endpoint() const;
    QString resultText() const;  // what the last test or fetch said

signals:
    void connectRequested(const RemoteEndpoint& endpoint);
    void tested(bool ok);  // a test or a fetch ended

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();  // the texts worded once, in the language now installed
    void fillList();
    void select(int row);
    void addEndpoint();
    void removeEndpoint();
    bool saveEndpoint();  // false (said) when the form is not a usable endpoint
    void test(bool fillModels);
    void showResult(const QString& text, bool ok);

    QList<RemoteEndpoint> endpoints_;
    int current_ = -1;
    QListWidget* list_;
    QLineEdit* name_;
    QLineEdit* url_;
    QLineEdit* key_;
    QLabel* keyNote_;
    QComboBox* model_;
    QLabel* result_;
    QPushButton* test_;
    QPushButton* fetch_;
    QPushButton* connect_;
    KeyringSecret* secret_;
    RemoteChat* probe_ = nullptr;
    std::atomic<bool> neverStop_{false};
    Retranslate texts_;
};
