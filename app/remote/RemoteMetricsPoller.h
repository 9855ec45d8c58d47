// RemoteMetricsPoller — reads a remote server's Prometheus page (/metrics beside its /v1) every
// kIntervalMs while the app is connected, for the KV cache panel: vLLM's KV usage, prefix-cache
// hit rate, running and waiting requests and preemptions; llama-server's; lantern-server's blocks.
// Lives on the InferenceWorker's thread; one request at a time. A server without the page (404,
// llama-server without --metrics: 501) or with another format is said once (unavailable) and not
// asked again; a failed read of a page that worked is retried at the next interval.
#pragma once
#include <QNetworkReply>
#include <QObject>
#include <QPointer>
#include <QTimer>

#include "remote/RemoteEndpoint.h"
#include "remote/RemoteMetrics.h"

class QNetworkAccessManager;

Q_DECLARE_METATYPE(RemoteMetrics)

class RemoteMetricsPoller : public QObject {
    Q_OBJECT
public:
    static constexpr int kIntervalMs = 1000;
    RemoteMetricsPoller(const RemoteEndpoint& endpoint, const QString& model, QObject* parent = nullptr);
    ~RemoteMetricsPoller() override;
    void start();

signals:
    void metricsRead(const RemoteMetrics& metrics);
    void unavailable(const QString& reason);

private:
    void poll();

    RemoteEndpoint endpoint_;
    QString model_;
    QNetworkAccessManager* network_;
    QTimer timer_;
    QPointer<QNetworkReply> reply_;
    bool worked_ = false;  // a page was read before
};
