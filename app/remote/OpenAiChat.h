// OpenAiChat — the OpenAI chat API as the app's remote backend speaks it: the request body for
// /v1/chat/completions from the conversation and the sampling panel's settings, and the pieces of
// what comes back (a stream chunk, an error body, the /v1/models list). Pure functions over bytes,
// any thread; nothing here touches the network.
#pragma once
#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>
#include <QVector>

#include "lantern/sampling.h"
#include "lantern/stop_reason.h"
#include "remote/RemoteEndpoint.h"

namespace remote {

struct Message {
    QString role;  // "system", "user", "assistant"
    QString content;
};

// The streamed request: the messages (the last an assistant's when `continuing`: it goes on from
// there, as continueStyleFor(kind) says), the settings the server takes (extraSamplingFieldsFor),
// usage asked in the last chunk. max_new_tokens 0 sends no max_tokens (the server's limit).
QByteArray chatRequestBody(ServerKind kind, const QString& model, const QVector<Message>& messages,
                           const lantern::SamplingSettings& settings, bool continuing);

// The server's own figures for a reply (llama-server's and lantern-server's "timings").
struct ServerTimings {
    bool any = false;
    double promptTokensPerSecond = 0;      // 0: not said
    double generationTokensPerSecond = 0;  // 0: not said
    double timeToFirstTokenMs = 0;         // 0: not said
    qint64 promptTokensComputed = -1;      // -1: not said
};

// One data event of a streamed reply, read.
struct StreamChunk {
    QString content;    // delta.content
    QString reasoning;  // delta.reasoning_content (or vLLM's delta.reasoning)
    QString finishReason;
    bool hasUsage = false;
    qint64 promptTokens = -1, completionTokens = -1, cachedTokens = -1;
    ServerTimings timings;
    QString error;  // an error event's message ({"error": {...}} in the stream)
};
// false (with `error`) when the data is not a chat completion chunk.
bool readStreamChunk(const QByteArray& data, StreamChunk& chunk, QString* error);

// The message of an error body: OpenAI's {"error": {"message"}}, FastAPI's {"detail"} (vLLM),
// {"error": "text"} (Ollama), else the body's first line (at most 300 characters).
QString errorMessageFrom(const QByteArray& body);

// GET /v1/models: ids in order, who owns each, and the context length where it is said
// (lantern-server's context_length, vLLM's max_model_len; 0 otherwise).
struct ModelList {
    bool valid = false;  // an object with a "data" array of objects with an "id"
    QStringList ids, owners;
    QList<quint32> contextLengths;
};
ModelList readModelList(const QByteArray& body);

// finish_reason → StopReason: "stop" → EndOfText, "length" → MaxTokens, anything else → EndOfText.
lantern::StopReason stopReasonFromFinish(const QString& finishReason);

}  // namespace remote
