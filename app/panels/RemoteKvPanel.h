// RemoteKvPanel — the KV cache panel while the chat runs on a remote server: what the server's
// Prometheus page says (RemoteMetricsPoller, every second) — KV cache use, prefix-cache hit rate,
// running and waiting requests, preemptions, Lantern's block counts — each figure the server does
// not expose said so rather than shown as 0; and why the block map is not there (it needs the
// engine's own memory). UI thread.
#pragma once
#include <QHash>
#include <QWidget>

#include "Retranslate.h"
#include "remote/RemoteEndpoint.h"
#include "remote/RemoteMetrics.h"

class QLabel;
class QProgressBar;

class RemoteKvPanel : public QWidget {
    Q_OBJECT
public:
    explicit RemoteKvPanel(QWidget* parent = nullptr);
    void setServer(const RemoteReport& report);  // connected: figures come next
    void setMetrics(const RemoteMetrics& metrics);
    void setUnavailable(const QString& reason);    // the server has no metrics Lantern can read
    QString valueText(const QString& name) const;  // for tests
    QString headline() const;

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();  // the texts worded once, in the language now installed
    void addRow(class QFormLayout* form, const char* caption, const char* name);  // caption: QT_TR_NOOP
    void set(const char* name, const QString& text);

    QLabel* headline_;
    QProgressBar* usage_;
    QLabel* mapNote_;
    QHash<QString, QLabel*> values_;
    QString source_;
    QString reason_;  // setUnavailable's (empty: not connected)
    Retranslate texts_;
};
