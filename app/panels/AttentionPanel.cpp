#include "panels/AttentionPanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QSpinBox>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "Theme.h"
#include "panels/AttentionWords.h"

namespace {
constexpr int kLeftMargin = 34;
constexpr int kBottomMargin = 18;
}  // namespace

AttentionHeatmap::AttentionHeatmap(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setMouseTracking(true);
}

QSize AttentionHeatmap::sizeHint() const {
    return {320, 200};
}
QSize AttentionHeatmap::minimumSizeHint() const {
    return {160, 100};
}

void AttentionHeatmap::setSnapshot(const lantern::AttentionSnapshot& snapshot) {
    snapshot_ = snapshot;
    update();
}

void AttentionHeatmap::setTokenPieces(const QStringList& pieces) {
    pieces_ = pieces;
    update();
}

QString AttentionHeatmap::axisLabel(uint32_t position) const {
    if (position >= static_cast<uint32_t>(pieces_.size())) return QString::number(position);
    QString piece = pieces_[static_cast<int>(position)].simplified();
    if (piece.isEmpty()) piece = QStringLiteral("␣");
    if (piece.size() > 8) piece = piece.left(7) + QStringLiteral("…");
    return piece;
}

void AttentionHeatmap::setHead(int head) {
    head_ = head;
    update();
}

QRect AttentionHeatmap::plotRect() const {
    return rect().adjusted(kLeftMargin, 4, -6, -kBottomMargin);
}

QList<int> AttentionHeatmap::shownHeads() const {
    QList<int> heads;
    if (head_ >= 0 && head_ < static_cast<int>(snapshot_.n_heads)) {
        heads << head_;
    } else {
        for (int h = 0; h < static_cast<int>(snapshot_.n_heads); ++h) heads << h;
    }
    return heads;
}

void AttentionHeatmap::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QRect plot = plotRect();
    p.fillRect(rect(), palette().window());
    const uint32_t n = snapshot_.n_positions;
    if (n == 0 || snapshot_.probs.size() < static_cast<size_t>(snapshot_.n_heads) * n) {
        p.setPen(theme::mutedText());
        p.drawText(
            rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
            tr("Turn capture on and generate a reply to see where each head of the chosen layer looks."));
        return;
    }
    const QList<int> heads = shownHeads();
    const double rowH = static_cast<double>(plot.height()) / heads.size();
    const double colW = static_cast<double>(plot.width()) / n;
    for (int r = 0; r < heads.size(); ++r) {
        const float* row = snapshot_.probs.data() + static_cast<size_t>(heads[r]) * n;
        // Each head normalised to its own maximum, so a head that spreads its attention is still visible.
        const float maxP = std::max(1e-12f, *std::max_element(row, row + n));
        for (uint32_t j = 0; j < n; ++j) {
            const QRectF cell(plot.left() + j * colW, plot.top() + r * rowH, colW + 0.6, rowH + 0.6);
            p.fillRect(cell, theme::heat(static_cast<double>(row[j] / maxP)));
        }
    }
    p.setPen(theme::border());
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot.adjusted(0, 0, -1, -1));
    // Axes: head labels on the left, position ticks below.
    p.setPen(theme::mutedText());
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * 0.8);
    p.setFont(f);
    const int labelEvery =
        std::max(1, static_cast<int>(std::ceil(QFontMetrics(f).height() / std::max(rowH, 1.0))));
    for (int r = 0; r < heads.size(); r += labelEvery)
        p.drawText(QRectF(0, plot.top() + r * rowH, kLeftMargin - 4, rowH), Qt::AlignRight | Qt::AlignVCenter,
                   QStringLiteral("h%1").arg(heads[r] + 1));
    const int ticks = std::min<int>(6, static_cast<int>(n));
    for (int t = 0; t < ticks; ++t) {
        const uint32_t j =
            ticks == 1 ? 0
                       : static_cast<uint32_t>(std::lround(static_cast<double>(t) * (n - 1) / (ticks - 1)));
        const double x = plot.left() + (j + 0.5) * colW;
        p.drawText(QRectF(x - 30, plot.bottom() + 2, 60, kBottomMargin - 2), Qt::AlignHCenter | Qt::AlignTop,
                   axisLabel(j));
    }
}

bool AttentionHeatmap::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip) return QWidget::event(event);
    auto* help = static_cast<QHelpEvent*>(event);
    const QRect plot = plotRect();
    const uint32_t n = snapshot_.n_positions;
    const QList<int> heads = shownHeads();
    if (n == 0 || heads.isEmpty() || !plot.contains(help->pos()) ||
        snapshot_.probs.size() < static_cast<size_t>(snapshot_.n_heads) * n) {
        QToolTip::hideText();
        return true;
    }
    const int r = std::clamp(
        static_cast<int>((help->pos().y() - plot.top()) * heads.size() / std::max(1, plot.height())), 0,
        static_cast<int>(heads.size()) - 1);
    const uint32_t j =
        std::min<uint32_t>(n - 1, static_cast<uint32_t>((help->pos().x() - plot.left()) *
                                                        static_cast<double>(n) / std::max(1, plot.width())));
    const float prob = snapshot_.probs[static_cast<size_t>(heads[r]) * n + j];
    QString where = QString::number(j);
    if (j < static_cast<uint32_t>(pieces_.size()))
        where = tr("%1 “%2”").arg(j).arg(pieces_[static_cast<int>(j)]);
    QToolTip::showText(
        help->globalPos(),
        tr("Head %1 → position %2: %3%").arg(heads[r] + 1).arg(where).arg(prob * 100.0, 0, 'f', 2), this);
    return true;
}

AttentionPanel::AttentionPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 6, 10, 8);
    auto* controls = new QHBoxLayout();
    layout->addLayout(controls);
    enabled_ = new QCheckBox(this);
    texts_([this] { enabled_->setText(tr("Capture")); });
    enabled_->setObjectName(QStringLiteral("captureAttention"));
    texts_([this] {
        enabled_->setToolTip(
            tr("Read back the attention weights of the newest token (costs a little speed)."));
    });
    controls->addWidget(enabled_);
    auto* layerLabel = new QLabel(this);
    texts_([layerLabel] { layerLabel->setText(tr("Layer")); });
    controls->addWidget(layerLabel);
    layer_ = new QSpinBox(this);
    layer_->setObjectName(QStringLiteral("attentionLayer"));
    layer_->setRange(1, 1);
    controls->addWidget(layer_);
    auto* headLabel = new QLabel(this);
    texts_([headLabel] { headLabel->setText(tr("Head")); });
    controls->addWidget(headLabel);
    head_ = new QComboBox(this);
    head_->setObjectName(QStringLiteral("attentionHead"));
    head_->addItem(headName(-1), -1);
    controls->addWidget(head_);
    controls->addStretch(1);

    caption_ = new QLabel(this);
    caption_->setProperty("role", QStringLiteral("caption"));
    layout->addWidget(caption_);
    heatmap_ = new AttentionHeatmap(this);
    layout->addWidget(heatmap_, 1);
    words_ = new AttentionWords(this);
    layout->addWidget(words_, 1);
    cost_ = new QLabel(this);
    cost_->setObjectName(QStringLiteral("attentionCost"));
    cost_->setProperty("role", QStringLiteral("caption"));
    cost_->setWordWrap(true);
    layout->addWidget(cost_);
    connect(words_, &AttentionWords::costChanged, cost_, &QLabel::setText);

    connect(enabled_, &QCheckBox::toggled, this, &AttentionPanel::emitLayer);
    connect(layer_, &QSpinBox::valueChanged, this, &AttentionPanel::emitLayer);
    connect(head_, &QComboBox::currentIndexChanged, this, [this] {
        heatmap_->setHead(head_->currentData().toInt());
        words_->setHead(head_->currentData().toInt());
    });
    setModelShape(0, 0);
}

void AttentionPanel::setModelShape(uint32_t layers, uint32_t heads) {
    layers_ = layers;
    layer_->blockSignals(true);
    layer_->setRange(1, std::max<int>(1, static_cast<int>(layers)));
    layer_->setValue(std::max<int>(1, static_cast<int>(layers)));
    layer_->setSuffix(layers > 0 ? tr(" of %1").arg(layers) : QString());
    layer_->blockSignals(false);
    head_->blockSignals(true);
    head_->clear();
    head_->addItem(headName(-1), -1);
    for (uint32_t h = 0; h < heads; ++h) head_->addItem(headName(static_cast<int>(h)), static_cast<int>(h));
    head_->blockSignals(false);
    heatmap_->setHead(-1);
    heatmap_->setSnapshot({});
    heatmap_->setTokenPieces({});
    words_->clear();
    words_->setHead(-1);
    enabled_->setEnabled(layers > 0);
    layer_->setEnabled(layers > 0);
    shownLayer_ = -1;
    showCaption();
    emitLayer();
}

QString AttentionPanel::headName(int head) {
    return head < 0 ? tr("All heads") : tr("Head %1").arg(head + 1);
}

void AttentionPanel::showCaption() {
    if (shownLayer_ >= 0)
        caption_->setText(tr("Layer %1 of %2, token at position %3 attending over %4 positions")
                              .arg(shownLayer_ + 1)
                              .arg(layers_)
                              .arg(shownPosition_)
                              .arg(shownPositions_));
    else
        caption_->setText(layers_ > 0 ? tr("Last layer by default; weights are normalised per head.")
                                      : tr("No model loaded."));
}

int AttentionPanel::captureLayer() const {
    return enabled_->isChecked() && enabled_->isEnabled() ? layer_->value() - 1 : -1;
}

void AttentionPanel::emitLayer() {
    emit captureLayerChanged(captureLayer());
}

void AttentionPanel::setConversationTokens(const ConversationTokens& tokens) {
    words_->setTokens(tokens);
    heatmap_->setTokenPieces(words_->pieces());
}

void AttentionPanel::addAttentionRows(const std::vector<AttentionRow>& rows) {
    words_->addRows(rows);
}

void AttentionPanel::clearWords() {
    words_->clear();
    heatmap_->setTokenPieces({});
}

void AttentionPanel::setSnapshot(const lantern::AttentionSnapshot& snapshot) {
    heatmap_->setSnapshot(snapshot);
    shownLayer_ = static_cast<int>(snapshot.layer);
    shownPosition_ = static_cast<qint64>(snapshot.position);
    shownPositions_ = static_cast<qint64>(snapshot.n_positions);
    showCaption();
}

void AttentionPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void AttentionPanel::retranslateUi() {
    texts_.apply();
    for (int i = 0; i < head_->count(); ++i) head_->setItemText(i, headName(head_->itemData(i).toInt()));
    layer_->setSuffix(layers_ > 0 ? tr(" of %1").arg(layers_) : QString());
    showCaption();
}
