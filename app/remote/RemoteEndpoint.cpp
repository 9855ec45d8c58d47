#include "remote/RemoteEndpoint.h"

#include <QCoreApplication>

namespace remote {

QString serverKindName(ServerKind kind) {
    switch (kind) {
        case ServerKind::Lantern:
            return QStringLiteral("lantern-server");
        case ServerKind::LlamaCpp:
            return QStringLiteral("llama-server");
        case ServerKind::Vllm:
            return QStringLiteral("vLLM");
        case ServerKind::Ollama:
            return QStringLiteral("Ollama");
        case ServerKind::Other:
            break;
    }
    return QCoreApplication::translate("remote", "OpenAI-compatible server");
}

ServerKind serverKindFromOwner(const QString& ownedBy) {
    const QString o = ownedBy.trimmed().toLower();
    if (o == QLatin1String("lantern")) return ServerKind::Lantern;
    if (o == QLatin1String("llamacpp") || o == QLatin1String("llama.cpp")) return ServerKind::LlamaCpp;
    if (o == QLatin1String("vllm")) return ServerKind::Vllm;
    // Ollama lists its models as owned by "library" (or the namespace they were pulled from).
    if (o == QLatin1String("library") || o == QLatin1String("ollama")) return ServerKind::Ollama;
    return ServerKind::Other;
}

ContinueStyle continueStyleFor(ServerKind kind) {
    switch (kind) {
        case ServerKind::Lantern:
        case ServerKind::Vllm:
            return ContinueStyle::ContinueFinalMessage;
        case ServerKind::LlamaCpp:
        case ServerKind::Ollama:
            return ContinueStyle::TrailingAssistant;
        case ServerKind::Other:
            break;
    }
    return ContinueStyle::None;
}

ExtraSamplingFields extraSamplingFieldsFor(ServerKind kind) {
    switch (kind) {
        case ServerKind::Lantern:
        case ServerKind::LlamaCpp:
            return {.topK = true,
                    .minP = true,
                    .repeatPenalty = QStringLiteral("repeat_penalty"),
                    .repeatLastN = true};
        case ServerKind::Vllm:
            return {.topK = true, .minP = true, .repeatPenalty = QStringLiteral("repetition_penalty")};
        case ServerKind::Ollama:
        case ServerKind::Other:
            break;
    }
    return {};
}

QUrl apiRoot(const QString& baseUrl, QString* error) {
    QString text = baseUrl.trimmed();
    const auto fail = [&](const QString& why) {
        if (error != nullptr) *error = why;
        return QUrl();
    };
    if (text.isEmpty()) return fail(QCoreApplication::translate("remote", "The address is empty."));
    if (!text.contains(QLatin1String("://"))) text.prepend(QStringLiteral("http://"));
    QUrl url(text, QUrl::StrictMode);
    if (!url.isValid() || url.host().isEmpty())
        return fail(
            QCoreApplication::translate("remote", "“%1” is not a server address.").arg(baseUrl.trimmed()));
    const QString scheme = url.scheme().toLower();
    if (scheme != QLatin1String("http") && scheme != QLatin1String("https"))
        return fail(
            QCoreApplication::translate("remote", "The address must begin with http:// or https://."));
    url.setQuery(QString());
    url.setFragment(QString());
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/'))) path.chop(1);
    if (!path.endsWith(QLatin1String("/v1"))) path += QStringLiteral("/v1");
    url.setPath(path + QLatin1Char('/'));
    return url;
}

QUrl apiUrl(const QString& baseUrl, const QString& path) {
    const QUrl root = apiRoot(baseUrl);
    return root.isValid() ? root.resolved(QUrl(path)) : QUrl();
}

QUrl metricsUrl(const QString& baseUrl) {
    const QUrl root = apiRoot(baseUrl);
    if (!root.isValid()) return {};
    QUrl url = root;
    QString path = root.path();  // ".../v1/"
    path.chop(QStringLiteral("v1/").size());
    url.setPath(path + QStringLiteral("metrics"));
    return url;
}

QString hostLabel(const QString& baseUrl) {
    const QUrl root = apiRoot(baseUrl);
    if (!root.isValid()) return baseUrl.trimmed();
    return root.port() >= 0 ? QStringLiteral("%1:%2").arg(root.host()).arg(root.port()) : root.host();
}

}  // namespace remote
