// AttentionPanel — where the newest token looked: the attention weights of the last token over
// every earlier position, one row per head, for a chosen layer (Engine::capture_attention /
// last_attention, sent by the worker as a value).
#pragma once
#include <QWidget>

#include "Retranslate.h"
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
    // The engine's index of the layer to capture (0 = first), -1 when capture is off. The panel
    // itself counts layers and heads from 1, as people do ("layer 6 of 6"); positions stay the
    // sequence's own indexes, the figures the KV panel and the engine use.
    int captureLayer() const;

signals:
    // The layer to capture from now on (engine index), -1 = off.
    void captureLayerChanged(int layer);

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();               // the texts worded once, in the language now installed
    static QString headName(int head);  // -1: all heads
    void showCaption();                 // the shown snapshot's, or what the panel waits for
    void emitLayer();
    QCheckBox* enabled_;
    QSpinBox* layer_;
    QComboBox* head_;
    QLabel* caption_;
    AttentionHeatmap* heatmap_;
    uint32_t layers_ = 0;
    int shownLayer_ = -1;  // the shown snapshot's layer (-1: none), position and span
    qint64 shownPosition_ = 0;
    qint64 shownPositions_ = 0;
    Retranslate texts_;
};
