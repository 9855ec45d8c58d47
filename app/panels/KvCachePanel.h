// KvCachePanel — the paged KV cache, live: every block as a square (which sequence holds it, how
// full it is, whether it is kept for prefix reuse) and the numbers behind it: block counts,
// capacity, bytes per token and its factors, prefix-cache hits, evictions and the peak.
#pragma once
#include <QHash>
#include <QWidget>
#include <vector>

#include "Retranslate.h"
#include "worker/EngineTypes.h"

class QLabel;
class QGridLayout;

// The grid of blocks, custom painted; it scales the squares so every block fits. A new snapshot
// repaints only the squares that look different (while a reply streams, that is the block being
// written), not the whole grid (docs/decisions/0035-frame-cost-does-not-grow-with-the-reply.md).
class KvBlockGrid : public QWidget {
    Q_OBJECT
public:
    explicit KvBlockGrid(QWidget* parent = nullptr);
    void setSnapshot(const KvSnapshot& snapshot);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    int cellSize() const { return cell_; }
    QRect blockRect(int index) const;  // where block `index` is painted
    // Colour of a block as painted (for the legend and tests).
    QColor blockColor(const lantern::KvBlockInfo& block) const;
    // What hovering block `index` shows: who holds it (in the user's words), how full it is, its
    // positions and whether the prefix cache knows it ("" past the last block).
    QString blockToolTip(int index) const;

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool event(QEvent* event) override;

private:
    // What decides a square's pixels.
    struct Look {
        QRgb color = 0;
        uint32_t filled = 0;  // tokens written, for a partly written block (else 0)
        bool shared = false;  // held by several sequences
        bool operator==(const Look&) const = default;
    };
    bool relayout();  // true if the squares moved or changed size
    int shownBlocks() const;
    Look lookOf(int index) const;
    int blockAt(const QPoint& pos) const;

    KvSnapshot snapshot_;
    std::vector<Look> looks_;  // of the squares as last scheduled for painting
    int cell_ = 12, gap_ = 2, columns_ = 1;
};

// The key under the grid: a colour swatch and words per entry ("this chat: 37 tokens in 3
// blocks", "cached", "empty"), flowing onto more lines in a narrow dock. Its counts change with
// every snapshot while a reply streams; a new text repaints it, and it asks for a new layout only
// when the lines it needs at its width change (why not a rich-text QLabel: decision 0035).
class KvLegend : public QWidget {
    Q_OBJECT
public:
    struct Entry {
        QColor color;
        QString text;
        bool operator==(const Entry&) const = default;
    };
    explicit KvLegend(QWidget* parent = nullptr);
    void setEntries(const QList<Entry>& entries);
    void setMessage(const QString& text);  // words alone (no model loaded)
    QString text() const;                  // the entries' words, as shown, for tests and tooltips
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    // Where each entry goes at `width`: its swatch's left edge and baseline row.
    struct Placed {
        int x = 0, line = 0;
    };
    QList<Placed> place(int width, int* lines) const;
    void measure();

    QList<Entry> entries_;
    QList<int> widths_;  // of each entry: its swatch and words
};

class KvCachePanel : public QWidget {
    Q_OBJECT
public:
    explicit KvCachePanel(QWidget* parent = nullptr);
    void setSnapshot(const KvSnapshot& snapshot);
    // What the last turn's prompt took from the KV cache, and when the chat template rendered the
    // earlier conversation differently from what the cache held (TurnStats::template_broke_prefix).
    void setTurn(const lantern::TurnStats& stats);
    void clear();
    const KvSnapshot& snapshot() const { return snapshot_; }
    KvBlockGrid* grid() const { return grid_; }

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();  // the texts worded once, in the language now installed
    // caption: the source text (QT_TR_NOOP), worded by retranslateUi.
    QLabel* addValue(QGridLayout* grid, int row, int column, const char* caption, const char* name);

    KvSnapshot snapshot_;
    KvBlockGrid* grid_;
    KvLegend* legend_;
    QHash<QString, QLabel*> values_;
    Retranslate texts_;
};
