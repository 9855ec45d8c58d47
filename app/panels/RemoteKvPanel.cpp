#include "panels/RemoteKvPanel.h"

#include <QEvent>
#include <QFormLayout>
#include <QLabel>
#include <QProgressBar>
#include <QVBoxLayout>

#include "Format.h"
#include "panels/FormValueRow.h"
#include "panels/ScrollablePanel.h"

RemoteKvPanel::RemoteKvPanel(QWidget* parent) : QWidget(parent) {
    QWidget* content = makeScrollableContent(this);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(10, 8, 10, 8);
    headline_ = new QLabel(content);
    headline_->setObjectName(QStringLiteral("remoteKvHeadline"));
    headline_->setWordWrap(true);
    layout->addWidget(headline_);
    usage_ = new QProgressBar(content);
    usage_->setObjectName(QStringLiteral("remoteKvUsage"));
    usage_->setRange(0, 1000);
    usage_->setTextVisible(true);
    layout->addWidget(usage_);
    auto* form = new QFormLayout();
    form->setVerticalSpacing(4);
    addRow(form, QT_TR_NOOP("KV cache in use"), "usage");
    addRow(form, QT_TR_NOOP("Prefix-cache hits"), "prefixHits");
    addRow(form, QT_TR_NOOP("Running requests"), "running");
    addRow(form, QT_TR_NOOP("Waiting requests"), "waiting");
    addRow(form, QT_TR_NOOP("Preemptions"), "preemptions");
    addRow(form, QT_TR_NOOP("Blocks used / cached / total"), "blocks");
    addRow(form, QT_TR_NOOP("Tokens in the cache"), "tokens");
    addRow(form, QT_TR_NOOP("Prompt / generated tokens"), "tokenTotals");
    addRow(form, QT_TR_NOOP("Server's prompt / generation rate"), "rates");
    layout->addLayout(form);
    mapNote_ = new QLabel(content);
    texts_([this] {
        mapNote_->setText(
            tr("The block map shows the local engine's own KV memory; a remote server does not "
               "send its block table, so only the figures above are shown."));
    });
    mapNote_->setWordWrap(true);
    mapNote_->setProperty("role", QStringLiteral("caption"));
    layout->addWidget(mapNote_);
    layout->addStretch(1);
    setUnavailable(QString());
}

void RemoteKvPanel::addRow(QFormLayout* form, const char* caption, const char* name) {
    QLabel* value = addFormValueRow(form, this, QString(), name);
    values_.insert(QString::fromLatin1(name), value);
    auto* captionLabel = qobject_cast<QLabel*>(form->labelForField(value));
    texts_([captionLabel, caption] { captionLabel->setText(tr(caption)); });
}

void RemoteKvPanel::set(const char* name, const QString& text) {
    if (QLabel* l = values_.value(QString::fromLatin1(name))) l->setText(text);
}

QString RemoteKvPanel::valueText(const QString& name) const {
    const QLabel* l = values_.value(name);
    return l != nullptr ? l->text() : QString();
}

QString RemoteKvPanel::headline() const {
    return headline_->text();
}

void RemoteKvPanel::setServer(const RemoteReport& report) {
    source_ = remote::metricsUrl(report.endpoint.baseUrl).toString();
    headline_->setText(tr("Reading %1 (%2)…").arg(source_, remote::serverKindName(report.kind)));
    usage_->setValue(0);
    usage_->setFormat(tr("not known yet"));
    for (QLabel* l : std::as_const(values_)) l->setText(QStringLiteral("…"));
}

void RemoteKvPanel::setUnavailable(const QString& reason) {
    reason_ = reason;
    headline_->setText(reason.isEmpty() ? tr("Not connected to a remote server.") : reason);
    usage_->setValue(0);
    usage_->setFormat(tr("not exposed"));
    for (QLabel* l : std::as_const(values_)) l->setText(QStringLiteral("—"));
}

void RemoteKvPanel::setMetrics(const RemoteMetrics& m) {
    QString whose;
    switch (m.source) {
        case RemoteMetrics::Source::Vllm:
            whose = QStringLiteral("vLLM");
            break;
        case RemoteMetrics::Source::LlamaCpp:
            whose = QStringLiteral("llama-server");
            break;
        case RemoteMetrics::Source::Lantern:
            whose = QStringLiteral("lantern-server");
            break;
        case RemoteMetrics::Source::None:
            break;
    }
    headline_->setText(tr("From %1 (%2's metrics), every second.").arg(source_, whose));
    const QString notExposed = tr("not exposed by this server");
    const auto fraction = [&](const std::optional<double>& v) {
        return v ? display::percent(*v) : notExposed;
    };
    const auto number = [&](const std::optional<double>& v) {
        return v ? display::count(static_cast<uint64_t>(std::max(*v, 0.0))) : notExposed;
    };
    if (m.kvUsage) {
        usage_->setValue(static_cast<int>(*m.kvUsage * 1000 + 0.5));
        usage_->setFormat(tr("%1 of the KV cache in use").arg(display::percent(*m.kvUsage)));
    } else {
        usage_->setValue(0);
        usage_->setFormat(tr("KV use not exposed"));
    }
    set("usage", fraction(m.kvUsage));
    set("prefixHits", fraction(m.prefixHitRate));
    set("running", number(m.running));
    set("waiting", number(m.waiting));
    set("preemptions", number(m.preemptions));
    set("blocks", m.kvBlocksTotal
                      ? tr("%1 / %2 / %3")
                            .arg(number(m.kvBlocksUsed), number(m.kvBlocksCached), number(m.kvBlocksTotal))
                      : notExposed);
    set("tokens", number(m.kvTokens));
    set("tokenTotals", m.promptTokensTotal || m.generatedTokensTotal
                           ? tr("%1 / %2").arg(number(m.promptTokensTotal), number(m.generatedTokensTotal))
                           : notExposed);
    set("rates",
        m.promptTokensPerSecond || m.generatedTokensPerSecond
            ? tr("%1 / %2").arg(
                  m.promptTokensPerSecond ? display::tokensPerSecond(*m.promptTokensPerSecond) : notExposed,
                  m.generatedTokensPerSecond ? display::tokensPerSecond(*m.generatedTokensPerSecond)
                                             : notExposed)
            : notExposed);
}

void RemoteKvPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void RemoteKvPanel::retranslateUi() {
    texts_.apply();
    if (source_.isEmpty()) setUnavailable(QString());  // (a server's figures: at the next second)
}
