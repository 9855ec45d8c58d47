// KeyringSecret — one secret of the user's (an access token, an API key) kept in their keyring
// (QtKeychain: the Secret Service or KWallet) under service "Lantern" and a key, never in plain
// settings. Where no keyring answers it is kept for this session only, and where() says so. An
// environment variable, when set, comes first (HF_TOKEN, LANTERN_API_KEY).
// Asynchronous: load() and save() end with loaded()/saved() on the thread that called them (UI).
#pragma once
#include <QObject>
#include <QString>
#include <QStringList>

class KeyringSecret : public QObject {
    Q_OBJECT
public:
    enum class Where { Nowhere, Environment, Keyring, SessionOnly };
    // `key`: the keyring entry's name; `environment`: variables read first, in order.
    KeyringSecret(const QString& key, const QStringList& environment, QObject* parent = nullptr);

    QString secret() const { return secret_; }
    Where where() const { return where_; }
    void setKey(const QString& key) { key_ = key; }
    void load();                       // the environment's, else the keyring's
    void save(const QString& secret);  // an empty secret forgets it
    void forget() { save(QString()); }

signals:
    void loaded();
    void saved(KeyringSecret::Where where, const QString& keyringError);

private:
    QString key_;
    QStringList environment_;
    QString secret_;
    Where where_ = Where::Nowhere;
};
