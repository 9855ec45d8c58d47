// HubToken — the Hugging Face access token (gated and private repositories): kept in the user's
// keyring (QtKeychain: the Secret Service or KWallet) and never in plain settings. Where no keyring
// answers, it is kept for this session only, and stored() says so. HF_TOKEN, when set, comes first.
// Asynchronous: load() and save() end with loaded()/saved() on the UI thread.
#pragma once
#include <QObject>
#include <QString>

class HubToken : public QObject {
    Q_OBJECT
public:
    enum class Where { Nowhere, Environment, Keyring, SessionOnly };
    explicit HubToken(QObject* parent = nullptr);

    QString token() const { return token_; }
    Where where() const { return where_; }
    void load();                      // HF_TOKEN, else the keyring's
    void save(const QString& token);  // an empty token forgets it

signals:
    void loaded();
    void saved(HubToken::Where where, const QString& keyringError);

private:
    QString token_;
    Where where_ = Where::Nowhere;
};
