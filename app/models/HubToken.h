// HubToken — the Hugging Face access token (gated and private repositories), a KeyringSecret:
// in the user's keyring, never in plain settings; HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) first.
#pragma once
#include "KeyringSecret.h"

class HubToken : public KeyringSecret {
    Q_OBJECT
public:
    explicit HubToken(QObject* parent = nullptr)
        : KeyringSecret(QStringLiteral("huggingface-token"),
                        {QStringLiteral("HF_TOKEN"), QStringLiteral("HUGGING_FACE_HUB_TOKEN")}, parent) {}
    QString token() const { return secret(); }
};
