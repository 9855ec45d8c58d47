// AttentionPanel — where the newest token looked: the attention weights of the last token over
// every earlier position, one row per head, for a chosen layer (Engine::capture_attention /
// last_attention, sent by the worker as a value).
#pragma once
#include <QWidget>

#include "lantern/engine.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSpinBox;

class AttentionHeatmap : public QWidget {
    Q_OBJECT
public:
    explicit AttentionHeatmap(QWidget* parent = nullptr);
    void setSnapshot(const lantern::AttentionSnapshot& snapshot);
    void setHead(int head);  // -1 = all heads
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRect plotRect() const;
    QList<int> shownHeads() const;
    lantern::AttentionSnapshot snapshot_;
    int head_ = -1;
};

class AttentionPanel : public QWidget {
    Q_OBJECT
public:
    explicit AttentionPanel(QWidget* parent = nullptr);
    // Layers and heads of the loaded model (0, 0 = none loaded).
    void setModelShape(uint32_t layers, uint32_t heads);
    void setSnapshot(const lantern::AttentionSnapshot& snapshot);
    int captureLayer() const;  // -1 when capture is off

signals:
    // The layer to capture from now on, -1 = off.
    void captureLayerChanged(int layer);

private:
    void emitLayer();
    QCheckBox* enabled_;
    QSpinBox* layer_;
    QComboBox* head_;
    QLabel* caption_;
    AttentionHeatmap* heatmap_;
};
