#include "panels/ModelInfoPanel.h"
#include "panels/ChatTemplateDialog.h"
#include "panels/FormValueRow.h"
#include "panels/ScrollablePanel.h"

#include <QEvent>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QScrollArea>
#include <QTextDocumentFragment>
#include <QVBoxLayout>

#include <algorithm>

#include "Format.h"

void ModelInfoPanel::showTemplate() {
    auto* dialog = new ChatTemplateDialog(report_, this);
    dialog->setObjectName(QStringLiteral("chatTemplateDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
}

namespace {

QString parameterCount(uint64_t n) {
    if (n >= 1'000'000'000ULL) return QStringLiteral("%1 B").arg(static_cast<double>(n) / 1e9, 0, 'f', 2);
    if (n >= 1'000'000ULL) return QStringLiteral("%1 M").arg(static_cast<double>(n) / 1e6, 0, 'f', 1);
    if (n >= 1'000ULL) return QStringLiteral("%1 K").arg(static_cast<double>(n) / 1e3, 0, 'f', 1);
    return QString::number(n);
}

}  // namespace

ModelInfoPanel::ModelInfoPanel(QWidget* parent) : QWidget(parent) {
    QWidget* content = makeScrollableContent(this);
    auto* form = new QFormLayout(content);
    form->setContentsMargins(10, 6, 10, 8);
    form->setVerticalSpacing(4);
    addRow(form, QT_TR_NOOP("Name"), "name");
    addRow(form, QT_TR_NOOP("File"), "file");
    addRow(form, QT_TR_NOOP("Architecture"), "architecture");
    addRow(form, QT_TR_NOOP("Parameters"), "parameters");
    addRow(form, QT_TR_NOOP("Weights"), "weightTypes");
    addRow(form, QT_TR_NOOP("Size"), "size");
    addRow(form, QT_TR_NOOP("Layers"), "layers");
    addRow(form, QT_TR_NOOP("Embedding / FFN"), "dims");
    addRow(form, QT_TR_NOOP("Heads / KV heads"), "heads");
    addRow(form, QT_TR_NOOP("Head dim / RoPE"), "rope");
    addRow(form, QT_TR_NOOP("Attention"), "attention");
    addRow(form, QT_TR_NOOP("Context"), "context");
    addRow(form, QT_TR_NOOP("Vocabulary"), "vocab");
    addRow(form, QT_TR_NOOP("Chat template"), "template");
    QLabel* templateLabel = values_.value(QStringLiteral("template"));
    templateLabel->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
    connect(templateLabel, &QLabel::linkActivated, this, &ModelInfoPanel::showTemplate);
    addRow(form, QT_TR_NOOP("Device"), "device");
    addRow(form, QT_TR_NOOP("Driver"), "driver");
    addRow(form, QT_TR_NOOP("Device memory"), "deviceMemory");
    addRow(form, QT_TR_NOOP("Subgroup size"), "subgroup");
    clear();
}

void ModelInfoPanel::addRow(QFormLayout* form, const char* caption, const char* name) {
    QLabel* value = addFormValueRow(form, this, QString(), name);
    values_.insert(QString::fromLatin1(name), value);
    auto* captionLabel = qobject_cast<QLabel*>(form->labelForField(value));
    texts_([captionLabel, caption] { captionLabel->setText(tr(caption)); });
}

void ModelInfoPanel::set(const char* name, const QString& text) {
    if (QLabel* l = values_.value(QString::fromLatin1(name))) l->setText(text);
}

QString ModelInfoPanel::valueText(const QString& name) const {
    const QLabel* l = values_.value(name);
    if (l == nullptr) return QString();
    // The template row is rich text (a link): its words as a reader sees them.
    return l->textFormat() == Qt::RichText ? QTextDocumentFragment::fromHtml(l->text()).toPlainText()
                                           : l->text();
}

void ModelInfoPanel::clear() {
    shown_ = nullptr;
    for (QLabel* l : std::as_const(values_)) l->setText(QStringLiteral("—"));
}

void ModelInfoPanel::setModel(const lantern::ModelInfo& m, const lantern::DeviceInfo& d,
                              const LoadReport& report) {
    shown_ = [this, m, d, report] { setModel(m, d, report); };  // worded again on LanguageChange
    const QString path = QString::fromStdString(m.path);
    set("name", m.name.empty() ? QFileInfo(path).completeBaseName() : QString::fromStdString(m.name));
    set("file", QFileInfo(path).fileName());
    values_.value(QStringLiteral("file"))->setToolTip(path);
    set("architecture", QString::fromStdString(m.architecture));
    set("parameters", parameterCount(m.parameters));
    set("weightTypes", QString::fromStdString(m.weight_types));
    set("size",
        tr("%1 file, %2 on the device").arg(display::bytes(m.file_bytes), display::bytes(m.weight_bytes)));
    set("layers", QString::number(m.n_layers));
    set("dims", tr("%1 / %2").arg(m.dim).arg(m.ffn_dim));
    set("heads", tr("%1 / %2").arg(m.n_heads).arg(m.n_kv_heads));
    QString rope =
        tr("%1 / %2 dims, base %3").arg(m.head_dim).arg(m.n_rot).arg(static_cast<double>(m.rope_freq_base));
    if (m.rope_scaling.type == lantern::RopeScaling::Type::Linear)
        rope += tr(", positions ÷ %1 (linear scaling)").arg(static_cast<double>(m.rope_scaling.factor));
    if (m.rope_scaling.type == lantern::RopeScaling::Type::Yarn)
        rope += tr(", YaRN ×%1 over %2 tokens")
                    .arg(static_cast<double>(m.rope_scaling.factor))
                    .arg(display::count(m.rope_scaling.original_context));
    if (!m.rope_scaling.frequency_factors.empty())
        rope += tr(", frequency factors per pair (Llama 3.1 scaling)");
    const auto local = static_cast<uint32_t>(std::count(m.local_layers.begin(), m.local_layers.end(), true));
    if (local > 0 && m.rope_freq_base_local != m.rope_freq_base)
        rope += tr(", local layers base %1").arg(static_cast<double>(m.rope_freq_base_local));
    set("rope", rope);
    // Sliding-window layers (Gemma) apart from the global ones, and soft-capped scores.
    QString attention =
        local == 0 ? tr("the whole context on every layer")
                   : tr("a window of %1 tokens on %2 of %3 layers (local), the whole context on the other %4")
                         .arg(display::count(m.sliding_window))
                         .arg(local)
                         .arg(m.n_layers)
                         .arg(m.n_layers - local);
    if (m.attn_softcap > 0)
        attention += tr(", scores soft-capped at %1").arg(static_cast<double>(m.attn_softcap));
    set("attention", attention);
    // And how many conversations of that length the KV cache holds: the chat alone, or with the
    // local API server on, the room its parallel replies share too (File > Context Length…
    // changes the length).
    set("context",
        tr("%1 tokens (trained: %2)")
                .arg(display::count(report.context_length), display::count(m.context_length)) +
            QStringLiteral(" · ") +
            (report.sequences > 1
                 ? tr("KV room for the chat and %n more conversation(s) that the API server's replies share",
                      nullptr, static_cast<int>(report.sequences - 1))
                 : tr("KV room for the chat")));
    set("vocab",
        tr("%1 tokens%2")
                .arg(display::count(m.vocab))
                .arg(m.tied_output ? tr(", output tied to embeddings") : QString()) +
            (report.tokenizer_kind.isEmpty() ? QString() : QStringLiteral(" · ") + report.tokenizer_kind));
    // The renderer in use, and a link to the template's text.
    report_ = report;
    QString renderer;
    if (report.template_is_models) {
        renderer = report.template_name == QStringLiteral("completion")
                       ? tr("the model's own (Jinja)")
                       : tr("the model's own (Jinja; %1 family)").arg(report.template_name);
    } else if (report.chat_template) {
        renderer =
            tr("built-in %1 format — the model's template could not be used").arg(report.template_name);
    } else if (!report.template_source.isEmpty()) {
        renderer = tr("none usable — completion mode (your text is continued)");
    } else {
        renderer = tr("none — completion mode (your text is continued)");
    }
    QLabel* label = values_.value(QStringLiteral("template"));
    label->setTextFormat(Qt::RichText);
    label->setText(renderer.toHtmlEscaped() +
                   (report.template_source.isEmpty()
                        ? QString()
                        : QStringLiteral(" · <a href=\"template\">%1</a>").arg(tr("show the template"))));
    label->setToolTip(report.template_fallback_reason);
    set("device", deviceDescription(d));
    set("driver", QString::fromStdString(d.driver));
    set("deviceMemory", display::bytes(d.device_local_bytes));
    set("subgroup", QString::number(d.subgroup_size));
}

void ModelInfoPanel::setRemote(const RemoteReport& report) {
    shown_ = [this, report] { setRemote(report); };
    clear();
    const QString notSaid = tr("not said by the server");
    set("name", report.model);
    set("file", report.endpoint.baseUrl);
    values_.value(QStringLiteral("file"))->setToolTip(report.endpoint.name);
    set("architecture", notSaid);
    set("context",
        report.contextLength > 0 ? tr("%1 tokens").arg(display::count(report.contextLength)) : notSaid);
    set("template", tr("the server's"));
    set("device", tr("Remote: %1 (%2)")
                      .arg(remote::hostLabel(report.endpoint.baseUrl), remote::serverKindName(report.kind)));
    set("driver", tr("%n model(s) served", nullptr, static_cast<int>(report.models.size())));
}

void ModelInfoPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void ModelInfoPanel::retranslateUi() {
    texts_.apply();
    if (shown_) {
        const std::function<void()> show = shown_;  // (showing replaces shown_)
        show();
    }
}
