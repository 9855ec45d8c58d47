#include "remote/OpenAiChat.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace remote {

QByteArray chatRequestBody(ServerKind kind, const QString& model, const QVector<Message>& messages,
                           const lantern::SamplingSettings& s, bool continuing) {
    QJsonObject body;
    if (!model.isEmpty()) body.insert(QStringLiteral("model"), model);
    QJsonArray list;
    for (const Message& m : messages)
        list.append(QJsonObject{{QStringLiteral("role"), m.role}, {QStringLiteral("content"), m.content}});
    body.insert(QStringLiteral("messages"), list);
    body.insert(QStringLiteral("stream"), true);
    body.insert(QStringLiteral("stream_options"), QJsonObject{{QStringLiteral("include_usage"), true}});
    body.insert(QStringLiteral("temperature"), double(s.temperature));
    body.insert(QStringLiteral("top_p"), double(s.top_p));
    if (s.presence_penalty != 0) body.insert(QStringLiteral("presence_penalty"), double(s.presence_penalty));
    if (s.frequency_penalty != 0)
        body.insert(QStringLiteral("frequency_penalty"), double(s.frequency_penalty));
    if (s.seed) body.insert(QStringLiteral("seed"), static_cast<qint64>(*s.seed & 0x7fffffffffffffffULL));
    if (s.max_new_tokens > 0) body.insert(QStringLiteral("max_tokens"), s.max_new_tokens);
    if (!s.stop.empty()) {
        QJsonArray stop;
        for (const std::string& text : s.stop) stop.append(QString::fromStdString(text));
        body.insert(QStringLiteral("stop"), stop);
    }
    const ExtraSamplingFields extra = extraSamplingFieldsFor(kind);
    if (extra.topK) body.insert(QStringLiteral("top_k"), s.top_k);
    if (extra.minP) body.insert(QStringLiteral("min_p"), double(s.min_p));
    if (!extra.repeatPenalty.isEmpty()) body.insert(extra.repeatPenalty, double(s.repeat_penalty));
    if (extra.repeatLastN) body.insert(QStringLiteral("repeat_last_n"), s.penalty_last_n);
    if (continuing && continueStyleFor(kind) == ContinueStyle::ContinueFinalMessage) {
        body.insert(QStringLiteral("continue_final_message"), true);
        body.insert(QStringLiteral("add_generation_prompt"), false);
    }
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

namespace {

qint64 integer(const QJsonObject& o, const char* key) {
    const QJsonValue v = o.value(QLatin1String(key));
    return v.isDouble() ? static_cast<qint64>(v.toDouble()) : -1;
}

double number(const QJsonObject& o, const char* key) {
    const QJsonValue v = o.value(QLatin1String(key));
    return v.isDouble() ? v.toDouble() : 0;
}

}  // namespace

bool readStreamChunk(const QByteArray& data, StreamChunk& chunk, QString* error) {
    chunk = StreamChunk();
    QJsonParseError parse;
    const QJsonDocument doc = QJsonDocument::fromJson(data, &parse);
    if (!doc.isObject()) {
        if (error != nullptr)
            *error = parse.error != QJsonParseError::NoError ? parse.errorString()
                                                             : QStringLiteral("not a JSON object");
        return false;
    }
    const QJsonObject o = doc.object();
    if (o.contains(QLatin1String("error"))) {
        chunk.error = errorMessageFrom(data);
        return true;
    }
    const QJsonArray choices = o.value(QLatin1String("choices")).toArray();
    if (!o.value(QLatin1String("choices")).isArray()) {
        if (error != nullptr) *error = QStringLiteral("no choices");
        return false;
    }
    if (!choices.isEmpty()) {
        const QJsonObject choice = choices.at(0).toObject();
        const QJsonObject delta = choice.value(QLatin1String("delta")).toObject();
        chunk.content = delta.value(QLatin1String("content")).toString();
        chunk.reasoning = delta.value(QLatin1String("reasoning_content")).toString();
        if (chunk.reasoning.isEmpty()) chunk.reasoning = delta.value(QLatin1String("reasoning")).toString();
        chunk.finishReason = choice.value(QLatin1String("finish_reason")).toString();
    }
    if (const QJsonValue u = o.value(QLatin1String("usage")); u.isObject()) {
        const QJsonObject usage = u.toObject();
        chunk.hasUsage = true;
        chunk.promptTokens = integer(usage, "prompt_tokens");
        chunk.completionTokens = integer(usage, "completion_tokens");
        chunk.cachedTokens =
            integer(usage.value(QLatin1String("prompt_tokens_details")).toObject(), "cached_tokens");
    }
    if (const QJsonValue t = o.value(QLatin1String("timings")); t.isObject()) {
        const QJsonObject timings = t.toObject();
        ServerTimings& st = chunk.timings;
        st.any = true;
        // llama-server's names, then lantern-server's.
        st.promptTokensPerSecond = number(timings, "prompt_per_second");
        st.generationTokensPerSecond = number(timings, "predicted_per_second");
        if (st.generationTokensPerSecond == 0)
            st.generationTokensPerSecond = number(timings, "decode_tokens_per_s");
        st.timeToFirstTokenMs = number(timings, "time_to_first_token_ms");
        if (st.timeToFirstTokenMs == 0) st.timeToFirstTokenMs = number(timings, "prompt_ms");
        st.promptTokensComputed = integer(timings, "prompt_tokens_computed");
        if (st.promptTokensComputed < 0) st.promptTokensComputed = integer(timings, "prompt_n");
    }
    return true;
}

QString errorMessageFrom(const QByteArray& body) {
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    if (doc.isObject()) {
        const QJsonObject o = doc.object();
        const QJsonValue e = o.value(QLatin1String("error"));
        if (e.isObject() && e.toObject().value(QLatin1String("message")).isString())
            return e.toObject().value(QLatin1String("message")).toString();
        if (e.isString()) return e.toString();
        const QJsonValue detail = o.value(QLatin1String("detail"));
        if (detail.isString()) return detail.toString();
        if (o.value(QLatin1String("message")).isString()) return o.value(QLatin1String("message")).toString();
    }
    QString text = QString::fromUtf8(body).trimmed();
    text = text.section(QLatin1Char('\n'), 0, 0);
    if (text.size() > 300) text = text.left(300) + QStringLiteral("…");
    return text;
}

ModelList readModelList(const QByteArray& body) {
    ModelList list;
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    if (!doc.isObject() || !doc.object().value(QLatin1String("data")).isArray()) return list;
    for (const QJsonValue& v : doc.object().value(QLatin1String("data")).toArray()) {
        const QJsonObject m = v.toObject();
        if (!m.value(QLatin1String("id")).isString()) return list;
        list.ids.append(m.value(QLatin1String("id")).toString());
        list.owners.append(m.value(QLatin1String("owned_by")).toString());
        qint64 context = integer(m, "context_length");
        if (context <= 0) context = integer(m, "max_model_len");
        list.contextLengths.append(context > 0 && context <= 0xFFFFFFFFLL ? static_cast<quint32>(context)
                                                                          : 0);
    }
    list.valid = true;
    return list;
}

lantern::StopReason stopReasonFromFinish(const QString& finishReason) {
    if (finishReason == QLatin1String("length")) return lantern::StopReason::MaxTokens;
    return lantern::StopReason::EndOfText;
}

}  // namespace remote
