#include "models/HubToken.h"

#include <qt6keychain/keychain.h>

namespace {
const QString kService = QStringLiteral("Lantern");
const QString kKey = QStringLiteral("huggingface-token");
}  // namespace

HubToken::HubToken(QObject* parent) : QObject(parent) {}

void HubToken::load() {
    const QString env = qEnvironmentVariable("HF_TOKEN", qEnvironmentVariable("HUGGING_FACE_HUB_TOKEN"));
    if (!env.isEmpty()) {
        token_ = env;
        where_ = Where::Environment;
        emit loaded();
        return;
    }
    auto* job = new QKeychain::ReadPasswordJob(kService, this);
    job->setKey(kKey);
    connect(job, &QKeychain::Job::finished, this, [this, job] {
        if (job->error() == QKeychain::NoError && !job->textData().isEmpty()) {
            token_ = job->textData();
            where_ = Where::Keyring;
        }
        emit loaded();
    });
    job->start();
}

void HubToken::save(const QString& token) {
    token_ = token.trimmed();
    if (token_.isEmpty()) {
        auto* job = new QKeychain::DeletePasswordJob(kService, this);
        job->setKey(kKey);
        connect(job, &QKeychain::Job::finished, this, [this] {
            where_ = Where::Nowhere;
            emit saved(where_, QString());
        });
        job->start();
        return;
    }
    auto* job = new QKeychain::WritePasswordJob(kService, this);
    job->setKey(kKey);
    job->setTextData(token_);
    connect(job, &QKeychain::Job::finished, this, [this, job] {
        const bool kept = job->error() == QKeychain::NoError;
        where_ = kept ? Where::Keyring : Where::SessionOnly;
        emit saved(where_, kept ? QString() : job->errorString());
    });
    job->start();
}
