// AttentionPanel — where the newest token looked: the attention weights of the last token over
// every earlier position, one row per head, for a chosen layer (Engine::capture_attention /
// last_attention, sent by the worker as a value), its axis naming the tokens; and below it the
// same on the words (AttentionWords): the conversation's tokens, and what a token pointed at or
// clicked attended to. Capture is off by default and costs nothing then; on, the panel says what
// its rows cost a token.
#pragma once
#include <QWidget>

#include "Retranslate.h"
#include "lantern/engine.h"
#include "worker/EngineTypes.h"

class AttentionWords;

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
    // The pieces of positions 0..n-1: the axis names tokens (empty: positions only).
    void setTokenPieces(const QStringList& pieces);
    QString axisLabel(uint32_t position) const;  // what the axis writes under a position
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
    QStringList pieces_;
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
    // The words view: the conversation's tokens after a turn, rows while a reply is written.
    void setConversationTokens(const ConversationTokens& tokens);
    void addAttentionRows(const std::vector<AttentionRow>& rows);
    void clearWords();  // another conversation, or another version of it
    AttentionWords* words() const { return words_; }
    AttentionHeatmap* heatmap() const { return heatmap_; }

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
    AttentionWords* words_;
    QLabel* cost_;
    uint32_t layers_ = 0;
    int shownLayer_ = -1;  // the shown snapshot's layer (-1: none), position and span
    qint64 shownPosition_ = 0;
    qint64 shownPositions_ = 0;
    Retranslate texts_;
};
