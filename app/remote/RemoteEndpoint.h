// RemoteEndpoint — an OpenAI-compatible server the app can chat with instead of the local engine
// (lantern-server, llama-server, vLLM, Ollama, or any server speaking /v1/chat/completions), and
// what the app knows about each kind of server: the URLs, which sampling fields it accepts, how
// it continues a reply. Plain values and pure functions, usable from any thread.
#pragma once
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QUrl>

struct RemoteEndpoint {
    QString name;     // what the user calls it ("GPU box")
    QString baseUrl;  // as typed: "http://gpu-box:8000/v1" or "http://gpu-box:8000"
    QString model;    // the model to ask for ("" = the first /v1/models lists)
    QString apiKey;   // sent as "Authorization: Bearer <key>" ("" = none); never stored in settings
};

namespace remote {

// The kind of server, recognised from /v1/models (owned_by) — it decides which sampling fields go
// in a request (the others are refused or silently ignored by that server) and how Continue works.
enum class ServerKind { Other, Lantern, LlamaCpp, Vllm, Ollama };
QString serverKindName(
    ServerKind kind);  // "lantern-server", "llama-server", "vLLM", "Ollama", "OpenAI-compatible"
ServerKind serverKindFromOwner(const QString& ownedBy);

// How a server goes on with the last reply: vLLM's (and lantern-server's) continue_final_message,
// or a trailing assistant message (llama-server, Ollama); None: Continue is not offered.
enum class ContinueStyle { None, ContinueFinalMessage, TrailingAssistant };
ContinueStyle continueStyleFor(ServerKind kind);

// Which of the sampling panel's fields beyond OpenAI's own (temperature, top_p, seed, presence and
// frequency penalties, max_tokens, stop) the server takes, and under which names.
struct ExtraSamplingFields {
    bool topK = false, minP = false;
    QString repeatPenalty;  // "repeat_penalty" (llama.cpp, Lantern), "repetition_penalty" (vLLM), "" = none
    bool repeatLastN = false;  // the penalties' window as repeat_last_n (llama.cpp, Lantern)
};
ExtraSamplingFields extraSamplingFieldsFor(ServerKind kind);

// "http://h:8000/v1/" for "http://h:8000", "http://h:8000/v1", "h:8000/v1/" (http assumed);
// an invalid QUrl (with `error` said) when it is no http(s) URL with a host.
QUrl apiRoot(const QString& baseUrl, QString* error = nullptr);
// apiRoot + "chat/completions", "models"…
QUrl apiUrl(const QString& baseUrl, const QString& path);
// The server's Prometheus page: the origin's /metrics (vLLM, llama-server, lantern-server serve
// it beside /v1, not under it).
QUrl metricsUrl(const QString& baseUrl);
// "gpu-box:8000": what the status bar and messages call the endpoint.
QString hostLabel(const QString& baseUrl);

}  // namespace remote

// What a successful connection found (InferenceWorker::remoteConnected).
struct RemoteReport {
    RemoteEndpoint endpoint;  // (apiKey cleared)
    QString model;            // the model the chat uses
    QStringList models;       // every model /v1/models lists
    remote::ServerKind kind = remote::ServerKind::Other;
    quint32 contextLength = 0;  // 0: the server does not say (lantern-server and vLLM do)
    double connectMs = 0;       // the /v1/models round trip
};

Q_DECLARE_METATYPE(RemoteEndpoint)
Q_DECLARE_METATYPE(RemoteReport)
