// StepProfilePanel — where one step's time goes, on request: each op family of the model (the
// embedding, Q/K/V with RoPE and the KV store, attention, the output projection, the FFN, the LM
// head) with its time on the device, its share of the step, the bytes it read per second and, inside
// fused layers (a run of layers as one dispatch on CPU drivers, EngineOptions::fused_decode), how
// long the driver's threads waited for each other (decision 0043). The worker times two steps
// (Engine::profile_steps) and sends the second's lantern::StepProfile; the panel only paints what
// it is given.
#pragma once
#include <QStringList>
#include <QWidget>
#include <vector>

#include "Retranslate.h"
#include "lantern/engine.h"

class QLabel;
class QPushButton;

// One bar per op family, in the order the step runs them.
class OpBars : public QWidget {
    Q_OBJECT
public:
    struct Row {
        QString name;
        double ms = 0;
        double share = 0;  // of the step's device time
        QString detail;    // "6.1 GB/s · 6 % waiting"
    };
    explicit OpBars(QWidget* parent = nullptr);
    void setRows(std::vector<Row> rows);
    const std::vector<Row>& rows() const { return rows_; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: its tooltip
    void paintEvent(QPaintEvent* event) override;

private:
    void retranslateUi();
    int rowHeight() const;
    std::vector<Row> rows_;
};

class StepProfilePanel : public QWidget {
    Q_OBJECT
public:
    explicit StepProfilePanel(QWidget* parent = nullptr);
    // Shows a timed step: its token's position, the device time and dispatches, and the bars.
    void showProfile(const lantern::StepProfile& profile, quint32 position);
    void setModelLoaded(bool loaded);
    // The user's words for an op of lantern::OpTime ("qkv+rope+kv" -> "Q/K/V, RoPE, KV store").
    static QString opName(const std::string& op);
    // For tests: "name: time" per bar, in order.
    QStringList rowTexts() const;
    QString status() const;

signals:
    void timeNextStepRequested();

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();  // the texts worded once, in the language now installed
    QPushButton* timeButton_;
    QLabel* status_;
    QLabel* summary_;
    OpBars* bars_;
    Retranslate texts_;
};
