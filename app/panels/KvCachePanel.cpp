#include "panels/KvCachePanel.h"

#include <QCoreApplication>
#include <QEvent>
#include <QGridLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPaintEvent>
#include <QPainter>
#include <QScrollArea>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "Format.h"
#include "Theme.h"
#include "panels/ScrollablePanel.h"

namespace {

QColor ownerColorFor(lantern::SequenceId owner, lantern::SequenceId active) {
    if (owner == active) return theme::usedBlock();
    return theme::ownerColor(1 + owner % 7);
}

// Who holds a sequence, in the user's words: the conversation on screen, one of the API server's
// replies (beside the chat, a bare number meant nothing), or any other by its number.
QString ownerName(lantern::SequenceId id, const KvSnapshot& snapshot) {
    if (id == snapshot.active_sequence) return QCoreApplication::translate("KvCachePanel", "this chat");
    const auto& api = snapshot.api_sequences;
    if (std::find(api.begin(), api.end(), id) != api.end())
        return QCoreApplication::translate("KvCachePanel", "API reply (sequence %1)").arg(id);
    return QCoreApplication::translate("KvCachePanel", "sequence %1").arg(id);
}

QString ownerList(const std::vector<lantern::SequenceId>& owners, const KvSnapshot& snapshot) {
    QStringList parts;
    for (lantern::SequenceId id : owners) parts << ownerName(id, snapshot);
    return parts.join(QStringLiteral(", "));
}

}  // namespace

KvBlockGrid::KvBlockGrid(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    setMouseTracking(true);
}

QSize KvBlockGrid::sizeHint() const {
    return {300, 160};
}
QSize KvBlockGrid::minimumSizeHint() const {
    return {120, 80};
}

void KvBlockGrid::setSnapshot(const KvSnapshot& snapshot) {
    snapshot_ = snapshot;
    const bool moved = relayout();
    std::vector<Look> looks(static_cast<size_t>(shownBlocks()));
    for (size_t i = 0; i < looks.size(); ++i) looks[i] = lookOf(static_cast<int>(i));
    if (moved || looks.size() != looks_.size()) {
        update();
    } else {
        QRegion changed;
        for (size_t i = 0; i < looks.size(); ++i)
            if (looks[i] != looks_[i]) changed += blockRect(static_cast<int>(i));
        if (!changed.isEmpty()) update(changed);
    }
    looks_ = std::move(looks);
}

void KvBlockGrid::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    relayout();
}

int KvBlockGrid::shownBlocks() const {
    return static_cast<int>(std::max<size_t>(snapshot_.blocks.size(), snapshot_.stats.total_blocks));
}

bool KvBlockGrid::relayout() {
    const int n = std::max(1, shownBlocks());
    const int w = std::max(1, width() - 2), h = std::max(1, height() - 2);
    // The largest square (cell + gap) that lets n blocks fit in w x h.
    int best = 3;
    for (int pitch = 26; pitch >= 4; --pitch) {
        const int cols = std::max(1, w / pitch);
        const int rows = (n + cols - 1) / cols;
        if (rows * pitch <= h) {
            best = pitch;
            break;
        }
    }
    const int cell = cell_, gap = gap_, columns = columns_;
    gap_ = best >= 10 ? 2 : 1;
    cell_ = std::max(2, best - gap_);
    columns_ = std::max(1, w / (cell_ + gap_));
    return cell != cell_ || gap != gap_ || columns != columns_;
}

KvBlockGrid::Look KvBlockGrid::lookOf(int index) const {
    if (index >= static_cast<int>(snapshot_.blocks.size())) return {theme::emptyBlock().rgba(), 0, false};
    const lantern::KvBlockInfo& b = snapshot_.blocks[static_cast<size_t>(index)];
    const uint32_t blockTokens = std::max<uint32_t>(1, snapshot_.stats.block_tokens);
    const bool partial = !b.owners.empty() && b.filled < blockTokens;
    return {blockColor(b).rgba(), partial ? b.filled : 0, b.owners.size() > 1};
}

QColor KvBlockGrid::blockColor(const lantern::KvBlockInfo& block) const {
    if (!block.owners.empty()) return ownerColorFor(block.owners.front(), snapshot_.active_sequence);
    if (block.cached) return theme::cachedBlock();
    return theme::emptyBlock();
}

QRect KvBlockGrid::blockRect(int index) const {
    const int pitch = cell_ + gap_;
    return {1 + (index % columns_) * pitch, 1 + (index / columns_) * pitch, cell_, cell_};
}

int KvBlockGrid::blockAt(const QPoint& pos) const {
    const int pitch = cell_ + gap_;
    const int col = (pos.x() - 1) / pitch, row = (pos.y() - 1) / pitch;
    if (pos.x() < 1 || pos.y() < 1 || col >= columns_) return -1;
    const int index = row * columns_ + col;
    return index < static_cast<int>(snapshot_.blocks.size()) ? index : -1;
}

void KvBlockGrid::paintEvent(QPaintEvent* event) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, cell_ >= 6);
    const int pitch = cell_ + gap_;
    const double radius = cell_ >= 8 ? 2.0 : 0.0;
    const uint32_t blockTokens = std::max<uint32_t>(1, snapshot_.stats.block_tokens);
    const int shown = shownBlocks();
    for (int i = 0; i < shown; ++i) {
        if (!event->region().intersects(blockRect(i)))
            continue;  // (setSnapshot repaints changed squares only)
        const QRectF r(1 + (i % columns_) * pitch, 1 + (i / columns_) * pitch, cell_, cell_);
        if (i >= static_cast<int>(snapshot_.blocks.size())) {
            p.setPen(Qt::NoPen);
            p.setBrush(theme::emptyBlock());
            p.drawRoundedRect(r, radius, radius);
            continue;
        }
        const lantern::KvBlockInfo& b = snapshot_.blocks[static_cast<size_t>(i)];
        const QColor color = blockColor(b);
        p.setPen(Qt::NoPen);
        if (!b.owners.empty() && b.filled < blockTokens) {
            // Partly written block: a pale square filled from the bottom to its fill level.
            QColor pale = color;
            pale.setAlphaF(0.28f);
            p.setBrush(pale);
            p.drawRoundedRect(r, radius, radius);
            const double level = static_cast<double>(b.filled) / blockTokens;
            QRectF filled = r;
            filled.setTop(r.bottom() - r.height() * level);
            p.setBrush(color);
            p.drawRect(filled);
        } else {
            p.setBrush(color);
            p.drawRoundedRect(r, radius, radius);
        }
        if (b.owners.size() > 1 && cell_ >= 6) {
            // Shared by several sequences (a forked prefix): a white dot.
            p.setBrush(Qt::white);
            const double d = std::max(2.0, cell_ / 3.5);
            p.drawEllipse(r.center(), d / 2, d / 2);
        }
    }
}

bool KvBlockGrid::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int i = blockAt(help->pos());
        if (i < 0) {
            QToolTip::hideText();
            event->ignore();
            return true;
        }
        QToolTip::showText(help->globalPos(), blockToolTip(i), this);
        return true;
    }
    return QWidget::event(event);
}

QString KvBlockGrid::blockToolTip(int index) const {
    if (index < 0 || static_cast<size_t>(index) >= snapshot_.blocks.size()) return {};
    const lantern::KvBlockInfo& b = snapshot_.blocks[static_cast<size_t>(index)];
    QString state;
    if (!b.owners.empty())
        state = tr("in use by %1").arg(ownerList(b.owners, snapshot_));
    else if (b.cached)
        state = tr("cached for prefix reuse");
    else
        state = tr("empty");
    QString text = tr("Block %1: %2\n%3 of %4 tokens written")
                       .arg(b.block)
                       .arg(state)
                       .arg(b.filled)
                       .arg(snapshot_.stats.block_tokens);
    if (b.first_position >= 0)
        text +=
            QLatin1Char('\n') + tr("positions %1–%2")
                                    .arg(b.first_position)
                                    .arg(b.first_position + std::max<int>(0, static_cast<int>(b.filled) - 1));
    if (b.full_hashed) text += QLatin1Char('\n') + tr("registered in the prefix cache");
    return text;
}

KvCachePanel::KvCachePanel(QWidget* parent) : QWidget(parent) {
    // Its values change at every frame of a reply: see ScrollablePanel.h for why a scroll area.
    QWidget* content = makeScrollableContent(this);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(10, 6, 10, 8);
    grid_ = new KvBlockGrid(this);
    grid_->setObjectName(QStringLiteral("blockGrid"));
    layout->addWidget(grid_, 1);

    legend_ = new KvLegend(this);
    legend_->setObjectName(QStringLiteral("legend"));
    layout->addWidget(legend_);

    auto* numbers = new QGridLayout();
    numbers->setHorizontalSpacing(10);
    numbers->setVerticalSpacing(3);
    layout->addLayout(numbers);
    addValue(numbers, 0, 0, QT_TR_NOOP("Used"), "usedBlocks");
    addValue(numbers, 0, 2, QT_TR_NOOP("Cached"), "cachedBlocks");
    addValue(numbers, 1, 0, QT_TR_NOOP("Empty"), "emptyBlocks");
    addValue(numbers, 1, 2, QT_TR_NOOP("Total"), "totalBlocks");
    addValue(numbers, 2, 0, QT_TR_NOOP("Peak used"), "peakBlocks");
    addValue(numbers, 2, 2, QT_TR_NOOP("Evictions"), "evictions");
    addValue(numbers, 3, 0, QT_TR_NOOP("Capacity"), "capacity");
    addValue(numbers, 4, 0, QT_TR_NOOP("Per token"), "bytesPerToken");
    addValue(numbers, 5, 0, QT_TR_NOOP("Prefix hit (last)"), "prefixHitLast");
    addValue(numbers, 6, 0, QT_TR_NOOP("Prefix hit (all)"), "prefixHitTotal");
    addValue(numbers, 7, 0, QT_TR_NOOP("Local layers"), "localLayers");
    addValue(numbers, 8, 0, QT_TR_NOOP("Last turn"), "lastTurn");
    numbers->setColumnStretch(1, 1);
    numbers->setColumnStretch(3, 1);
    clear();
}

QLabel* KvCachePanel::addValue(QGridLayout* grid, int row, int column, const char* caption,
                               const char* name) {
    auto* captionLabel = new QLabel(this);
    texts_([captionLabel, caption] { captionLabel->setText(tr(caption)); });
    captionLabel->setProperty("role", QStringLiteral("caption"));
    auto* value = new QLabel(this);
    value->setObjectName(QString::fromLatin1(name));
    value->setProperty("role", QStringLiteral("value"));
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    grid->addWidget(captionLabel, row, column);
    // Values in the first column of the wide rows (capacity, ...) span the rest of the row.
    const bool wide = column == 0 && row >= 3;
    value->setWordWrap(wide);
    grid->addWidget(value, row, column + 1, 1, wide ? 3 : 1);
    values_.insert(QString::fromLatin1(name), value);
    return value;
}

void KvCachePanel::clear() {
    snapshot_ = {};
    grid_->setSnapshot(snapshot_);
    for (QLabel* l : std::as_const(values_)) l->setText(QStringLiteral("—"));
    legend_->setMessage(tr("No model loaded."));
}

void KvCachePanel::setTurn(const lantern::TurnStats& stats) {
    if (stats.changed_nothing) return;
    QString text = tr("%1 of its %2 prompt tokens came from the cache")
                       .arg(display::count(stats.reused_tokens), display::count(stats.prompt_tokens));
    if (stats.template_broke_prefix)
        text += QStringLiteral(" — ") +
                tr("the chat template wrote the earlier conversation differently this time (it leaves out "
                   "earlier reasoning, or rewrites replies), so only the first %1 tokens could be kept")
                    .arg(display::count(stats.prefix_break_at));
    values_.value(QStringLiteral("lastTurn"))->setText(text);
}

void KvCachePanel::setSnapshot(const KvSnapshot& snapshot) {
    snapshot_ = snapshot;
    grid_->setSnapshot(snapshot);
    const lantern::KvStats& s = snapshot.stats;
    auto set = [this](const char* name, const QString& text) {
        values_.value(QString::fromLatin1(name))->setText(text);
    };
    set("usedBlocks", display::count(s.used_blocks));
    set("cachedBlocks", display::count(s.cached_blocks));
    set("emptyBlocks", display::count(s.empty_blocks));
    set("totalBlocks", tr("%1 × %2 tokens").arg(display::count(s.total_blocks)).arg(s.block_tokens));
    set("peakBlocks", display::count(s.peak_used_blocks));
    set("evictions", display::count(s.evictions));
    set("capacity",
        tr("%1 tokens · %2").arg(display::count(s.capacity_tokens), display::bytes(s.capacity_bytes)));
    set("bytesPerToken", tr("%1 = 2 (K,V) × %2 layers × %3 KV heads × %4 dims × %5 B")
                             .arg(display::bytes(s.bytes_per_token))
                             .arg(s.layers - s.local_layers)
                             .arg(s.kv_heads)
                             .arg(s.head_dim)
                             .arg(s.element_bytes));
    set("prefixHitLast",
        tr("%1 of %2 tokens").arg(display::count(s.last_hit_tokens), display::count(s.last_query_tokens)));
    const double ratio = s.prefix_query_tokens > 0 ? static_cast<double>(s.prefix_hit_tokens) /
                                                         static_cast<double>(s.prefix_query_tokens)
                                                   : 0.0;
    set("prefixHitTotal", tr("%1 of %2 tokens (%3)")
                              .arg(display::count(s.prefix_hit_tokens), display::count(s.prefix_query_tokens),
                                   display::percent(ratio)));

    // Sliding-window layers (Gemma's local layers) keep their window in blocks of their own, which
    // the map above does not show: how many, and how full.
    set("localLayers",
        s.local_layers == 0
            ? tr("none: every layer keeps every position")
            : tr("%1 of %2 layers keep only their last %3 tokens: %4 of their %5 blocks in use (%6)")
                  .arg(s.local_layers)
                  .arg(s.layers)
                  .arg(display::count(s.window))
                  .arg(display::count(s.local_used_blocks), display::count(s.local_total_blocks),
                       display::bytes(s.local_capacity_bytes)));

    QList<KvLegend::Entry> entries;
    for (const lantern::KvSequenceStats& seq : s.sequences) {
        const QString who = ownerName(seq.id, snapshot);
        entries.push_back({ownerColorFor(seq.id, snapshot.active_sequence),
                           tr("%1: %2 tokens in %3 blocks")
                               .arg(who, display::count(seq.tokens), display::count(seq.blocks))});
    }
    entries.push_back({theme::cachedBlock(), tr("cached")});
    entries.push_back({theme::emptyBlock(), tr("empty")});
    legend_->setEntries(entries);
}

// ---------------------------------------------------------------------------------------------
// KvLegend

namespace {
constexpr int kSwatchGap = 5;  // swatch to its words
constexpr int kEntryGap = 14;  // one entry to the next on a line
}  // namespace

KvLegend::KvLegend(QWidget* parent) : QWidget(parent) {
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
}

void KvLegend::setEntries(const QList<Entry>& entries) {
    if (entries == entries_) return;
    const int height = heightForWidth(width());
    const QSize minimum = minimumSizeHint();
    entries_ = entries;
    measure();
    // A new layout only when the legend needs another height at its width (or another minimum);
    // otherwise its entries change within its rectangle, and a repaint shows them.
    if (heightForWidth(width()) != height || minimumSizeHint() != minimum) updateGeometry();
    update();
}

void KvLegend::setMessage(const QString& text) {
    setEntries({{QColor(), text}});
}

QString KvLegend::text() const {
    QStringList parts;
    for (const Entry& e : entries_) parts << e.text;
    return parts.join(QStringLiteral("   "));
}

void KvLegend::measure() {
    // Once per change of the entries (or font): layouts ask heightForWidth many times.
    const QFontMetrics fm(font());
    widths_.clear();
    for (const Entry& e : entries_)
        widths_.push_back((e.color.isValid() ? fm.height() * 3 / 4 + kSwatchGap : 0) +
                          fm.horizontalAdvance(e.text));
}

void KvLegend::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) {
        measure();
        updateGeometry();
    }
}

QList<KvLegend::Placed> KvLegend::place(int width, int* lines) const {
    QList<Placed> places;
    int x = 0, line = 0;
    for (const int w : widths_) {
        if (x > 0 && x + w > width) {  // onto the next line (an entry wider than the legend stays whole)
            x = 0;
            ++line;
        }
        places.push_back({x, line});
        x += w + kEntryGap;
    }
    if (lines != nullptr) *lines = entries_.isEmpty() ? 0 : line + 1;
    return places;
}

int KvLegend::heightForWidth(int width) const {
    int lines = 0;
    place(width, &lines);
    return std::max(1, lines) * (fontMetrics().height() + 2);
}

QSize KvLegend::sizeHint() const {
    int w = 0;
    for (const int e : widths_) w += e + kEntryGap;
    return {std::max(0, w - kEntryGap), heightForWidth(std::max(1, w))};
}

QSize KvLegend::minimumSizeHint() const {
    int w = 0;
    for (const int e : widths_) w = std::max(w, e);
    return {std::min(w, 120), fontMetrics().height() + 2};
}

void KvLegend::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QFontMetrics fm(font());
    const int lineHeight = fm.height() + 2;
    const QList<Placed> places = place(width(), nullptr);
    for (qsizetype i = 0; i < entries_.size(); ++i) {
        const Entry& e = entries_[i];
        int x = places[i].x;
        const int top = places[i].line * lineHeight + 1;
        if (e.color.isValid()) {
            const int side = fm.height() * 3 / 4;
            p.setPen(Qt::NoPen);
            p.setBrush(e.color);
            p.drawRoundedRect(QRectF(x, top + (fm.height() - side) / 2.0, side, side), 2, 2);
            x += side + kSwatchGap;
        }
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(QPoint(x, top + fm.ascent()), e.text);
    }
}

void KvCachePanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void KvCachePanel::retranslateUi() {
    texts_.apply();
    // The figures are worded with the texts: shown again (or the empty panel's message).
    if (snapshot_.stats.total_blocks > 0)
        setSnapshot(snapshot_);
    else
        legend_->setMessage(tr("No model loaded."));
}
