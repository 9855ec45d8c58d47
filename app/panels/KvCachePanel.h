// KvCachePanel — the paged KV cache, live: every block as a square (which sequence holds it, how
// full it is, whether it is kept for prefix reuse) and the numbers behind it: block counts,
// capacity, bytes per token and its factors, prefix-cache hits, evictions and the peak.
#pragma once
#include <QHash>
#include <QWidget>

#include "worker/EngineTypes.h"

class QLabel;
class QGridLayout;

// The grid of blocks, custom painted; it scales the squares so every block fits.
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

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool event(QEvent* event) override;

private:
    void relayout();
    int blockAt(const QPoint& pos) const;

    KvSnapshot snapshot_;
    int cell_ = 12, gap_ = 2, columns_ = 1;
};

class KvCachePanel : public QWidget {
    Q_OBJECT
public:
    explicit KvCachePanel(QWidget* parent = nullptr);
    void setSnapshot(const KvSnapshot& snapshot);
    void clear();
    const KvSnapshot& snapshot() const { return snapshot_; }
    KvBlockGrid* grid() const { return grid_; }

private:
    QLabel* addValue(QGridLayout* grid, int row, int column, const QString& caption, const char* name);

    KvSnapshot snapshot_;
    KvBlockGrid* grid_;
    QLabel* legend_;
    QHash<QString, QLabel*> values_;
};
