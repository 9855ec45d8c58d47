#include "remote/RemoteMetricsPoller.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>

RemoteMetricsPoller::RemoteMetricsPoller(const RemoteEndpoint& endpoint, const QString& model,
                                         QObject* parent)
    : QObject(parent), endpoint_(endpoint), model_(model), network_(new QNetworkAccessManager(this)) {
    timer_.setInterval(kIntervalMs);
    connect(&timer_, &QTimer::timeout, this, &RemoteMetricsPoller::poll);
}

RemoteMetricsPoller::~RemoteMetricsPoller() {
    if (reply_) {
        reply_->disconnect(this);
        reply_->abort();
    }
}

void RemoteMetricsPoller::start() {
    poll();
    timer_.start();
}

void RemoteMetricsPoller::poll() {
    if (reply_) return;  // the last one has not answered yet
    QNetworkRequest r(remote::metricsUrl(endpoint_.baseUrl));
    if (!endpoint_.apiKey.isEmpty()) r.setRawHeader("Authorization", "Bearer " + endpoint_.apiKey.toUtf8());
    r.setTransferTimeout(5 * kIntervalMs);
    reply_ = network_->get(r);
    QNetworkReply* reply = reply_;
    connect(reply, &QNetworkReply::finished, this, [this, reply] {
        reply->deleteLater();
        reply_ = nullptr;
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const QString host = remote::hostLabel(endpoint_.baseUrl);
        if (reply->error() != QNetworkReply::NoError || status != 200) {
            if (worked_ && status == 0) return;  // a read lost on the way: the next one may work
            timer_.stop();
            emit unavailable(
                status == 404 || status == 501 || status == 405
                    ? tr("%1 has no /metrics page (llama-server serves one with --metrics; Ollama has "
                         "none).")
                          .arg(host)
                : status == 401 || status == 403
                    ? tr("%1 refused to show its /metrics (%2).").arg(host).arg(status)
                    : tr("%1's /metrics could not be read: %2").arg(host, reply->errorString()));
            return;
        }
        int bad = 0;
        const RemoteMetrics metrics =
            remoteMetricsFrom(parsePrometheusText(reply->read(8 * 1024 * 1024), &bad), model_);
        if (metrics.source == RemoteMetrics::Source::None) {
            timer_.stop();
            emit unavailable(tr("%1's /metrics has none of the KV cache figures Lantern knows (vLLM's, "
                                "llama-server's, lantern-server's).")
                                 .arg(host));
            return;
        }
        worked_ = true;
        emit metricsRead(metrics);
    });
}
