#include "remote/RemoteChat.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QRegularExpression>
#include <QSslError>

namespace {

// A reply as the next request sends it back: the reasoning the app shows in <think> is left out,
// as OpenAI's API and the models' templates expect.
QString withoutReasoning(const QString& text) {
    static const QRegularExpression think(QStringLiteral("^\\s*<think>.*?(</think>\\s*|$)"),
                                          QRegularExpression::DotMatchesEverythingOption);
    QString out = text;
    out.remove(think);
    return out;
}

}  // namespace

RemoteChat::RemoteChat(const RemoteEndpoint& endpoint, const std::atomic<bool>* stop, QObject* parent)
    : QObject(parent), endpoint_(endpoint), stop_(stop), network_(new QNetworkAccessManager(this)) {
    report_.endpoint = endpoint;
    report_.endpoint.apiKey.clear();
    stopPoll_.setInterval(30);
    connect(&stopPoll_, &QTimer::timeout, this, [this] {
        if (reply_ && stop_->load()) {
            stopped_ = true;
            reply_->abort();  // closes the stream: the server stops writing this reply
        }
    });
}

RemoteChat::~RemoteChat() {
    if (reply_) {
        reply_->disconnect(this);
        reply_->abort();
    }
}

QNetworkRequest RemoteChat::request(const QUrl& url) const {
    QNetworkRequest r(url);
    if (!endpoint_.apiKey.isEmpty()) r.setRawHeader("Authorization", "Bearer " + endpoint_.apiKey.toUtf8());
    r.setHeader(QNetworkRequest::UserAgentHeader, QStringLiteral("Lantern/" LANTERN_VERSION));
    return r;
}

QString RemoteChat::describeNetworkError(QNetworkReply* reply) const {
    const QString host = remote::hostLabel(endpoint_.baseUrl);
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QString said = remote::errorMessageFrom(errorBody_ + reply->readAll());
    if (status == 401 || status == 403)
        return endpoint_.apiKey.isEmpty()
                   ? tr("%1 needs an API key (%2): %3").arg(host).arg(status).arg(said)
                   : tr("%1 refused the API key (%2): %3").arg(host).arg(status).arg(said);
    if (status == 404)
        return tr("%1 has no %2 (404): it is not an OpenAI-compatible API there. The base URL usually ends "
                  "in /v1.")
            .arg(host, reply->url().path());
    if (status >= 400) return tr("%1 answered %2: %3").arg(host).arg(status).arg(said);
    switch (reply->error()) {
        case QNetworkReply::ConnectionRefusedError:
            return tr("Nothing answers at %1 (connection refused): is the server running, on that port?")
                .arg(host);
        case QNetworkReply::HostNotFoundError:
            return tr("The host %1 could not be found.").arg(reply->url().host());
        case QNetworkReply::TimeoutError:
        case QNetworkReply::OperationCanceledError:
            return tr("%1 did not answer in time.").arg(host);
        case QNetworkReply::SslHandshakeFailedError:
        case QNetworkReply::UnknownNetworkError:
            if (reply->url().scheme() == QLatin1String("https"))
                return tr("The TLS connection to %1 failed: %2").arg(host, reply->errorString());
            break;
        case QNetworkReply::RemoteHostClosedError:
            return tr("%1 closed the connection.").arg(host);
        default:
            break;
    }
    return tr("%1: %2").arg(host, reply->errorString());
}

// ---------------------------------------------------------------------------------------------
// Connecting

void RemoteChat::open() {
    QString error;
    if (!remote::apiRoot(endpoint_.baseUrl, &error).isValid()) {
        emit openFailed(error);
        return;
    }
    QNetworkRequest r = request(remote::apiUrl(endpoint_.baseUrl, QStringLiteral("models")));
    r.setTransferTimeout(kOpenTimeoutMs);
    QElapsedTimer clock;
    clock.start();
    QNetworkReply* reply = network_->get(r);
    connect(reply, &QNetworkReply::sslErrors, this, [reply](const QList<QSslError>& errors) {
        reply->setProperty("sslErrors", errors.isEmpty() ? QString() : errors.first().errorString());
    });
    connect(reply, &QNetworkReply::finished, this, [this, reply, clock] {
        reply->deleteLater();
        errorBody_.clear();
        if (reply->error() != QNetworkReply::NoError) {
            const QString tls = reply->property("sslErrors").toString();
            emit openFailed(tls.isEmpty() ? describeNetworkError(reply)
                                          : tr("The TLS connection to %1 failed: %2")
                                                .arg(remote::hostLabel(endpoint_.baseUrl), tls));
            return;
        }
        const remote::ModelList list = remote::readModelList(reply->readAll());
        if (!list.valid) {
            emit openFailed(tr("%1 answered /v1/models with something that is not a model list: it is not an "
                               "OpenAI-compatible API there.")
                                .arg(remote::hostLabel(endpoint_.baseUrl)));
            return;
        }
        if (list.ids.isEmpty()) {
            emit openFailed(tr("%1 serves no model.").arg(remote::hostLabel(endpoint_.baseUrl)));
            return;
        }
        qsizetype chosen = 0;
        if (!endpoint_.model.isEmpty()) {
            chosen = list.ids.indexOf(endpoint_.model);
            if (chosen < 0) {
                emit openFailed(tr("%1 does not serve “%2”; it serves: %3.")
                                    .arg(remote::hostLabel(endpoint_.baseUrl), endpoint_.model,
                                         list.ids.join(QStringLiteral(", "))));
                return;
            }
        }
        report_.model = list.ids.at(chosen);
        report_.models = list.ids;
        report_.kind = remote::serverKindFromOwner(list.owners.at(chosen));
        report_.contextLength = list.contextLengths.at(chosen);
        report_.connectMs = static_cast<double>(clock.nsecsElapsed()) / 1e6;
        emit opened(report_);
    });
}

bool RemoteChat::canContinue() const {
    return remote::continueStyleFor(report_.kind) != remote::ContinueStyle::None && !turns_.isEmpty() &&
           turns_.last().role == QLatin1String("assistant");
}

void RemoteChat::restore(const QStringList& roles, const QStringList& contents) {
    turns_.clear();
    for (qsizetype i = 0; i < roles.size() && i < contents.size(); ++i)
        turns_.append({roles.at(i), contents.at(i)});
}

// ---------------------------------------------------------------------------------------------
// Turns

void RemoteChat::send(const QString& text, const lantern::SamplingSettings& settings) {
    if (busy()) return;
    turns_.append({QStringLiteral("user"), text});
    startTurn(Turn::Send, settings);
}

void RemoteChat::regenerate(const lantern::SamplingSettings& settings) {
    if (busy()) return;
    if (!turns_.isEmpty() && turns_.last().role == QLatin1String("assistant")) turns_.removeLast();
    if (turns_.isEmpty()) return;
    startTurn(Turn::Regenerate, settings);
}

void RemoteChat::continueReply(const lantern::SamplingSettings& settings) {
    if (busy() || !canContinue()) return;
    startTurn(Turn::Continue, settings);
}

void RemoteChat::startTurn(Turn turn, const lantern::SamplingSettings& settings) {
    turn_ = turn;
    sse_ = SseStream();
    errorBody_.clear();
    replyText_.clear();
    inReasoning_ = false;
    done_ = stopped_ = false;
    finishReason_.clear();
    streamError_.clear();
    usage_ = remote::StreamChunk();
    timings_ = remote::ServerTimings();
    firstTokenMs_ = -1;
    lastTokenMs_ = 0;
    chunks_ = 0;
    batch_ = TokenBatch();

    QVector<remote::Message> messages;
    if (!system_.trimmed().isEmpty()) messages.append({QStringLiteral("system"), system_});
    for (const remote::Message& m : turns_)
        messages.append(
            {m.role, m.role == QLatin1String("assistant") ? withoutReasoning(m.content) : m.content});
    if (turn == Turn::Continue) {
        // A reply that stopped inside its reasoning goes on there, as the app shows it.
        const QString& last = turns_.last().content;
        if (last.contains(QLatin1String("<think>")) && !last.contains(QLatin1String("</think>")))
            messages.last().content = last;
    }
    const QByteArray body =
        remote::chatRequestBody(report_.kind, report_.model, messages, settings, turn == Turn::Continue);
    QNetworkRequest r = request(remote::apiUrl(endpoint_.baseUrl, QStringLiteral("chat/completions")));
    r.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    r.setRawHeader("Accept", "text/event-stream");
    r.setTransferTimeout(kStreamIdleMs);
    clock_.start();
    reply_ = network_->post(r, body);
    connect(reply_, &QNetworkReply::readyRead, this, &RemoteChat::onReadyRead);
    connect(reply_, &QNetworkReply::finished, this, &RemoteChat::onFinished);
    stopPoll_.start();
    emit turnStarted();
}

void RemoteChat::onReadyRead() {
    if (!reply_ || !reply_->isOpen()) return;
    const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 200) {
        if (errorBody_.size() < 64 * 1024) errorBody_ += reply_->readAll().left(64 * 1024);
        return;
    }
    for (const QByteArray& data : sse_.feed(reply_->readAll())) takeEvent(data);
    if (sse_.failed() && streamError_.isEmpty()) {
        streamError_ =
            tr("an event of the stream was larger than %1 MiB").arg(SseStream::kMaxEventBytes >> 20);
        reply_->abort();
    }
    flushBatch();
}

void RemoteChat::takeEvent(const QByteArray& data) {
    if (data.trimmed() == "[DONE]") {
        done_ = true;
        return;
    }
    remote::StreamChunk chunk;
    QString error;
    if (!remote::readStreamChunk(data, chunk, &error)) {
        if (streamError_.isEmpty())
            streamError_ = tr("the stream sent something that is not a chat chunk (%1)").arg(error);
        return;
    }
    if (!chunk.error.isEmpty()) {
        streamError_ = chunk.error;
        return;
    }
    // One chunk is one token on every server we know (llama-server, vLLM, lantern-server): its
    // latency is the time since the chunk before (the first's: since the request).
    const auto token = [this] {
        const double now = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
        batch_.stepMs.push_back(firstTokenMs_ < 0 ? now : now - lastTokenMs_);
        batch_.tokens.push_back(-1);  // (no ids over the API)
        if (firstTokenMs_ < 0) firstTokenMs_ = now;
        lastTokenMs_ = now;
        batch_.position = ++chunks_;
    };
    if (!chunk.reasoning.isEmpty()) {
        if (!inReasoning_) {
            inReasoning_ = true;
            addText(QStringLiteral("<think>\n"));
        }
        addText(chunk.reasoning);
        token();
    }
    if (!chunk.content.isEmpty()) {
        if (inReasoning_) {
            inReasoning_ = false;
            addText(QStringLiteral("\n</think>\n\n"));
        }
        addText(chunk.content);
        if (chunk.reasoning.isEmpty()) token();
    }
    if (!chunk.finishReason.isEmpty()) {
        finishReason_ = chunk.finishReason;
        done_ = true;
    }
    if (chunk.hasUsage) usage_ = chunk;
    if (chunk.timings.any) timings_ = chunk.timings;
}

void RemoteChat::addText(const QString& text) {
    batch_.text += text;
    replyText_ += text;
}

void RemoteChat::flushBatch() {
    if (batch_.empty()) return;
    emit tokensGenerated(batch_);
    batch_ = TokenBatch();
}

void RemoteChat::onFinished() {
    QNetworkReply* reply = reply_;
    if (reply == nullptr) return;
    stopPoll_.stop();
    if (reply->error() == QNetworkReply::NoError || reply->error() == QNetworkReply::OperationCanceledError)
        onReadyRead();  // what is left
    const bool hadTokens = chunks_ > 0;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    QString failure;
    bool connectionLost = false;
    if (!stopped_) {
        if (!streamError_.isEmpty()) {
            failure =
                tr("The reply from %1 failed: %2").arg(remote::hostLabel(endpoint_.baseUrl), streamError_);
        } else if (reply->error() != QNetworkReply::NoError || status >= 400) {
            failure = describeNetworkError(reply);
            connectionLost = status < 400;
        } else if (!done_) {
            failure =
                tr("%1 ended the reply before it was finished.").arg(remote::hostLabel(endpoint_.baseUrl));
            connectionLost = true;
        }
    }
    flushBatch();
    reply_ = nullptr;
    reply->deleteLater();

    // What came stays in the conversation, as it stays on the screen.
    if (turn_ == Turn::Continue) {
        turns_.last().content += replyText_;
    } else if (hadTokens || failure.isEmpty()) {
        turns_.append({QStringLiteral("assistant"), replyText_});
    } else if (turn_ == Turn::Send) {
        turns_.removeLast();  // refused before a word: the message is not in the conversation
    }
    if (!failure.isEmpty()) {
        emit turnFailed(connectionLost && hadTokens ? tr("%1 Lantern kept the %n token(s) that came.",
                                                         nullptr, static_cast<int>(chunks_))
                                                          .arg(failure)
                                                    : failure,
                        connectionLost);
        return;
    }

    lantern::TurnStats stats;
    stats.stop_reason = stopped_ ? lantern::StopReason::User : remote::stopReasonFromFinish(finishReason_);
    stats.generated_tokens =
        usage_.completionTokens > 0 ? static_cast<uint32_t>(usage_.completionTokens) : chunks_;
    if (usage_.promptTokens >= 0) {
        stats.prompt_tokens = static_cast<uint32_t>(usage_.promptTokens);
        stats.reused_tokens = usage_.cachedTokens > 0 ? static_cast<uint32_t>(usage_.cachedTokens) : 0;
        stats.computed_tokens = stats.prompt_tokens - std::min(stats.reused_tokens, stats.prompt_tokens);
    }
    stats.ttft_ms = std::max(firstTokenMs_, 0.0);
    stats.prefill_ms = stats.ttft_ms;
    if (timings_.promptTokensPerSecond > 0)
        stats.prefill_tokens_per_s = timings_.promptTokensPerSecond;
    else if (stats.computed_tokens > 0 && stats.ttft_ms > 0)
        stats.prefill_tokens_per_s = stats.computed_tokens * 1000.0 / stats.ttft_ms;
    stats.decode_ms = firstTokenMs_ >= 0 ? lastTokenMs_ - firstTokenMs_ : 0;
    if (chunks_ > 1 && stats.decode_ms > 0)
        stats.decode_tokens_per_s = (chunks_ - 1) * 1000.0 / stats.decode_ms;
    stats.can_continue = canContinue();
    stats.can_continue_dropping = stats.can_continue;
    RemoteTurnFigures figures;
    figures.timings = timings_;
    figures.usage = usage_.hasUsage;
    figures.clientTokensPerSecond = stats.decode_tokens_per_s;
    emit turnFinished(stats, figures);
}
