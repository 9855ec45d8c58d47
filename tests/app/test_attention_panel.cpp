// AttentionPanel, given a model shape and snapshots by hand (no engine): the panel counts layers
// and heads from 1 ("layer 6 of 6", "head 1") while it asks the worker for the engine's 0-based
// layer index, and the caption and the heatmap's tooltip name the head and the layer the same way.
#include <QCheckBox>
#include <QComboBox>
#include <QHelpEvent>
#include <QLabel>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>
#include <QToolTip>

#include "panels/AttentionPanel.h"

namespace {
// The line above the heatmap (its QLabel has the "caption" role).
QLabel* caption(AttentionPanel& panel) {
    for (QLabel* label : panel.findChildren<QLabel*>())
        if (label->property("role").toString() == QStringLiteral("caption")) return label;
    return nullptr;
}
}  // namespace

class TestAttentionPanel : public QObject {
    Q_OBJECT
private slots:
    void layersAndHeadsAreCountedFromOne() {
        AttentionPanel panel;
        panel.setModelShape(6, 8);
        auto* layer = panel.findChild<QSpinBox*>(QStringLiteral("attentionLayer"));
        auto* head = panel.findChild<QComboBox*>(QStringLiteral("attentionHead"));
        auto* capture = panel.findChild<QCheckBox*>(QStringLiteral("captureAttention"));
        QVERIFY(layer && head && capture && caption(panel));
        QCOMPARE(layer->minimum(), 1);
        QCOMPARE(layer->maximum(), 6);
        QCOMPARE(layer->text(), QStringLiteral("6 of 6"));  // the last layer by default
        QCOMPARE(head->count(), 9);
        QCOMPARE(head->itemText(0), QStringLiteral("All heads"));
        QCOMPARE(head->itemText(1), QStringLiteral("Head 1"));
        QCOMPARE(head->itemData(1).toInt(), 0);
        QCOMPARE(head->itemText(8), QStringLiteral("Head 8"));
        QCOMPARE(head->itemData(8).toInt(), 7);

        // The worker is asked for engine indexes: the last layer is 5, the first 0, off is -1.
        QSignalSpy asked(&panel, &AttentionPanel::captureLayerChanged);
        QCOMPARE(panel.captureLayer(), -1);
        capture->setChecked(true);
        QCOMPARE(asked.size(), 1);
        QCOMPARE(asked.last().at(0).toInt(), 5);
        layer->setValue(1);
        QCOMPARE(asked.last().at(0).toInt(), 0);
        QCOMPARE(panel.captureLayer(), 0);
        capture->setChecked(false);
        QCOMPARE(asked.last().at(0).toInt(), -1);

        // A snapshot of the engine's layer 0, head 2 looking hard at position 1.
        lantern::AttentionSnapshot snapshot;
        snapshot.layer = 0;
        snapshot.n_heads = 8;
        snapshot.n_positions = 3;
        snapshot.position = 2;
        snapshot.probs.assign(8 * 3, 1.0f / 3.0f);
        snapshot.probs[2 * 3 + 0] = 0.1f;
        snapshot.probs[2 * 3 + 1] = 0.8f;
        snapshot.probs[2 * 3 + 2] = 0.1f;
        panel.setSnapshot(snapshot);
        QCOMPARE(caption(panel)->text(),
                 QStringLiteral("Layer 1 of 6, token at position 2 attending over 3 positions"));

        // Only head 2 shown (the third entry), so the whole plot is its row; the tooltip over the
        // middle column names it as the combo box does.
        panel.resize(400, 300);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        head->setCurrentIndex(3);
        auto* heatmap = panel.findChild<AttentionHeatmap*>();
        QVERIFY(heatmap);
        const QPoint middle = heatmap->rect().center();
        QHelpEvent help(QEvent::ToolTip, middle, heatmap->mapToGlobal(middle));
        QCoreApplication::sendEvent(heatmap, &help);
        QCOMPARE(QToolTip::text(), QStringLiteral("Head 3 → position 1: 80.00%"));
    }

    void noModelMeansNothingToCapture() {
        AttentionPanel panel;
        panel.setModelShape(0, 0);
        auto* capture = panel.findChild<QCheckBox*>(QStringLiteral("captureAttention"));
        capture->setChecked(true);
        QCOMPARE(panel.captureLayer(), -1);
        QVERIFY(!panel.findChild<QSpinBox*>(QStringLiteral("attentionLayer"))->isEnabled());
        QCOMPARE(caption(panel)->text(), QStringLiteral("No model loaded."));
    }
};

QTEST_MAIN(TestAttentionPanel)
#include "test_attention_panel.moc"
