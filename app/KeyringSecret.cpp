#include "KeyringSecret.h"

#include <qt6keychain/keychain.h>

// A job is not this object's child: deleted while the keyring still answers (a dialog closed right
// after Save), QtKeychain's libsecret callback would reach a deleted job. It deletes itself when
// it ends (autoDelete), and its connection to this object goes with this object.

namespace {
const QString kService = QStringLiteral("Lantern");
}  // namespace

KeyringSecret::KeyringSecret(const QString& key, const QStringList& environment, QObject* parent)
    : QObject(parent), key_(key), environment_(environment) {}

void KeyringSecret::load() {
    for (const QString& name : environment_) {
        const QString value = qEnvironmentVariable(name.toLocal8Bit().constData());
        if (value.isEmpty()) continue;
        secret_ = value;
        where_ = Where::Environment;
        emit loaded();
        return;
    }
    auto* job = new QKeychain::ReadPasswordJob(kService);  // (not a child: see the top)
    job->setKey(key_);
    connect(job, &QKeychain::Job::finished, this, [this, job] {
        if (job->error() == QKeychain::NoError && !job->textData().isEmpty()) {
            secret_ = job->textData();
            where_ = Where::Keyring;
        }
        emit loaded();
    });
    job->start();
}

void KeyringSecret::save(const QString& secret) {
    secret_ = secret.trimmed();
    if (secret_.isEmpty()) {
        auto* job = new QKeychain::DeletePasswordJob(kService);  // (not a child: see the top)
        job->setKey(key_);
        connect(job, &QKeychain::Job::finished, this, [this] {
            where_ = Where::Nowhere;
            emit saved(where_, QString());
        });
        job->start();
        return;
    }
    auto* job = new QKeychain::WritePasswordJob(kService);  // (not a child: see the top)
    job->setKey(key_);
    job->setTextData(secret_);
    connect(job, &QKeychain::Job::finished, this, [this, job] {
        const bool kept = job->error() == QKeychain::NoError;
        where_ = kept ? Where::Keyring : Where::SessionOnly;
        emit saved(where_, kept ? QString() : job->errorString());
    });
    job->start();
}
