#include "panels/StepProfilePanel.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>
#include <algorithm>

#include "Format.h"
#include "Theme.h"

OpBars::OpBars(QWidget* parent) : QWidget(parent) {
    retranslateUi();
}

void OpBars::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void OpBars::retranslateUi() {
    setToolTip(
        tr("Each op family's time on the device in the timed step, with the bytes it read per second. "
           "\"Waiting\": inside a fused layer, the share of the driver threads' time in that op spent "
           "waiting for another thread's last piece of work."));
}

int OpBars::rowHeight() const {
    return fontMetrics().height() * 2 + 8;
}

void OpBars::setRows(std::vector<Row> rows) {
    rows_ = std::move(rows);
    updateGeometry();
    update();
}

QSize OpBars::sizeHint() const {
    return {320, rowHeight() * std::max<int>(6, static_cast<int>(rows_.size()))};
}
QSize OpBars::minimumSizeHint() const {
    return {200, rowHeight() * static_cast<int>(rows_.size())};
}

void OpBars::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const int h = rowHeight(), line = fontMetrics().height();
    double longest = 0;
    for (const auto& r : rows_) longest = std::max(longest, r.ms);
    for (size_t i = 0; i < rows_.size(); ++i) {
        const Row& r = rows_[i];
        const int y = static_cast<int>(i) * h;
        // Line 1: the op's name, and its time and share at the right.
        p.setPen(theme::text());
        const QString right =
            QStringLiteral("%1 · %2 %").arg(display::milliseconds(r.ms)).arg(100.0 * r.share, 0, 'f', 1);
        const int rightWidth = fontMetrics().horizontalAdvance(right);
        p.drawText(QRect(0, y, width() - rightWidth - 8, line), Qt::AlignLeft | Qt::AlignVCenter,
                   fontMetrics().elidedText(r.name, Qt::ElideRight, width() - rightWidth - 8));
        p.drawText(QRect(0, y, width(), line), Qt::AlignRight | Qt::AlignVCenter, right);
        // Line 2: a bar scaled to the longest op, and the detail beside it.
        const int barTop = y + line + 2, barHeight = line - 4;
        const QString detail = r.detail;
        const int detailWidth = detail.isEmpty() ? 0 : fontMetrics().horizontalAdvance(detail) + 8;
        const int barSpace = std::max(20, width() - detailWidth);
        p.setPen(Qt::NoPen);
        p.setBrush(theme::emptyBlock());
        p.drawRoundedRect(QRectF(0, barTop, barSpace, barHeight), 3, 3);
        if (longest > 0) {
            p.setBrush(theme::accent());
            p.drawRoundedRect(QRectF(0, barTop, std::max(2.0, barSpace * r.ms / longest), barHeight), 3, 3);
        }
        if (!detail.isEmpty()) {
            p.setPen(theme::mutedText());
            p.drawText(QRect(barSpace + 8, barTop - 2, detailWidth, line), Qt::AlignLeft | Qt::AlignVCenter,
                       detail);
        }
    }
}

StepProfilePanel::StepProfilePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 6, 10, 8);
    auto* top = new QHBoxLayout();
    timeButton_ = new QPushButton(this);
    texts_([this] { timeButton_->setText(tr("Time the Next Step")); });
    timeButton_->setObjectName(QStringLiteral("timeNextStep"));
    texts_([this] {
        timeButton_->setToolTip(
            tr("Times the next steps of a reply op by op on the device (GPU timestamps, and clocks "
               "inside fused layers) and shows where one step's time goes. If no reply is being "
               "written, the next reply's steps are timed."));
    });
    top->addWidget(timeButton_);
    top->addStretch(1);
    layout->addLayout(top);
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("profileStatus"));
    status_->setWordWrap(true);
    status_->setProperty("role", QStringLiteral("caption"));
    layout->addWidget(status_);
    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("profileSummary"));
    summary_->setWordWrap(true);
    layout->addWidget(summary_);
    bars_ = new OpBars(this);
    bars_->setObjectName(QStringLiteral("opBars"));
    layout->addWidget(bars_, 1);
    connect(timeButton_, &QPushButton::clicked, this, [this] {
        status_->setText(tr("Timing the next two steps (the first may compile the timed kernels)…"));
        emit timeNextStepRequested();
    });
    setModelLoaded(false);
}

void StepProfilePanel::setModelLoaded(bool loaded) {
    timeButton_->setEnabled(loaded);
    status_->setText(loaded ? tr("Press the button while a reply is written, or before sending one.")
                            : tr("Load a model to time its steps."));
    summary_->clear();
    bars_->setRows({});
}

QString StepProfilePanel::opName(const std::string& op) {
    if (op == "embed") return tr("Embedding lookup");
    if (op == "qkv+rope+kv") return tr("Q/K/V, RoPE, KV store");
    if (op == "attention") return tr("Attention");
    if (op == "attn_output") return tr("Attention output");
    if (op == "ffn_gate_up") return tr("FFN gate/up, SwiGLU");
    if (op == "ffn_down") return tr("FFN down");
    if (op == "lm_head") return tr("Output layer (logits)");
    if (op == "fused_layer") return tr("Layers (fused dispatches)");
    if (op == "fused_start") return tr("Layer dispatches starting");
    return QString::fromStdString(op);
}

void StepProfilePanel::showProfile(const lantern::StepProfile& profile, quint32 position) {
    if (profile.ops.empty()) {
        status_->setText(tr("This device cannot time its steps (no timestamp queries)."));
        return;
    }
    status_->setText(tr("Token %1, timed on the device:").arg(position + 1));
    summary_->setText(tr("%1 of %2 in all, %n dispatch(es)%3", nullptr, static_cast<int>(profile.dispatches))
                          .arg(display::milliseconds(profile.gpu_ms), display::milliseconds(profile.total_ms))
                          .arg(profile.fused_layers ? tr(" (each layer one dispatch)") : QString()));
    // Fused layers with clocks inside: their op families replace the one "fused_layer" entry.
    std::vector<lantern::OpTime> ops;
    for (const auto& o : profile.ops) {
        if (o.op == "fused_layer" && !profile.fused_ops.empty())
            ops.insert(ops.end(), profile.fused_ops.begin(), profile.fused_ops.end());
        else
            ops.push_back(o);
    }
    std::vector<OpBars::Row> rows;
    for (const auto& o : ops) {
        OpBars::Row r;
        r.name = opName(o.op);
        r.ms = o.ms;
        r.share = profile.gpu_ms > 0 ? o.ms / profile.gpu_ms : 0;
        QStringList detail;
        if (o.bytes > 0 && o.ms > 0) detail << tr("%1 GB/s").arg(o.bytes / (o.ms * 1e6), 0, 'f', 1);
        if (o.idle_fraction >= 0) detail << tr("%1 % waiting").arg(100.0 * o.idle_fraction, 0, 'f', 0);
        r.detail = detail.join(QStringLiteral(" · "));
        rows.push_back(r);
    }
    bars_->setRows(std::move(rows));
}

QStringList StepProfilePanel::rowTexts() const {
    QStringList out;
    for (const auto& r : bars_->rows())
        out << QStringLiteral("%1: %2").arg(r.name, display::milliseconds(r.ms));
    return out;
}

QString StepProfilePanel::status() const {
    return status_->text();
}

void StepProfilePanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void StepProfilePanel::retranslateUi() {
    texts_.apply();
    if (summary_->text().isEmpty()) setModelLoaded(timeButton_->isEnabled());  // (a profile: at the next)
}
