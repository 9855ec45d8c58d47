// StatusLabel and the panels that change while a reply streams: a new text that fits repaints the
// field without asking its parents for a new layout (a QLabel asks the whole window), a longer one
// grows it, a fitted one sizes it to its text; and the Performance and KV cache panels' frequent
// value changes stop inside the panel instead of reaching the window that docks it.
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QMainWindow>
#include <QStatusBar>
#include <QTest>

#include "StatusLabel.h"
#include "panels/KvCachePanel.h"
#include "panels/PerformancePanel.h"

namespace {
// Counts the layout requests a widget receives (what a child's size change sends up the tree).
class LayoutRequests : public QObject {
public:
    explicit LayoutRequests(QWidget* w) { w->installEventFilter(this); }
    int count = 0;
    bool eventFilter(QObject*, QEvent* e) override {
        if (e->type() == QEvent::LayoutRequest) ++count;
        return false;
    }
};
// The panel as the window's content, shown and laid out.
bool showIn(QMainWindow& window, QWidget* panel) {
    window.setCentralWidget(panel);
    window.resize(500, 500);
    window.show();
    if (!QTest::qWaitForWindowExposed(&window)) return false;
    QCoreApplication::processEvents();
    return true;
}
}  // namespace

class TestStatusLabel : public QObject {
    Q_OBJECT
private slots:
    void liveTextsThatFitDoNotReLayOutTheParent() {
        QWidget bar;
        auto* layout = new QHBoxLayout(&bar);
        auto* label = new StatusLabel(&bar);
        layout->addWidget(label);
        bar.show();
        QVERIFY(QTest::qWaitForWindowExposed(&bar));
        label->setFittedText(QStringLiteral("Generating… 1000 tokens"));
        QCoreApplication::processEvents();
        const int wide = label->width();
        QCOMPARE(label->minimumWidth(), label->maximumWidth());

        LayoutRequests requests(&bar);
        label->setLiveText(QStringLiteral("Generating… 1001 tokens"));
        label->setLiveText(QStringLiteral("Generating… 9 tokens"));  // shorter: keeps its room
        QCoreApplication::processEvents();
        QCOMPARE(requests.count, 0);
        QCOMPARE(label->text(), QStringLiteral("Generating… 9 tokens"));
        QCOMPARE(label->width(), wide);

        // Longer than the room: the field grows (one new layout).
        label->setLiveText(QStringLiteral("Generating… 1001 tokens, and a good deal more text"));
        QCoreApplication::processEvents();
        QVERIFY(requests.count >= 1);
        QVERIFY(label->width() > wide);
        QVERIFY(label->width() >= label->sizeHint().width());

        // Fitted: exactly the text's size again.
        label->setFittedText(QStringLiteral("Ready"));
        QCoreApplication::processEvents();
        QCOMPARE(label->size(), label->sizeHint());
        QVERIFY2(
            label->width() < wide,
            qPrintable(
                QStringLiteral("%1 %2 %3").arg(label->width()).arg(wide).arg(label->sizeHint().width())));
    }

    // The control: a plain QLabel in the same place asks for a new layout at every new text,
    // which is what StatusLabel is for (if Qt stops doing that, StatusLabel can go).
    void aPlainLabelReLaysOutItsParentAtEveryText() {
        QWidget bar;
        auto* layout = new QHBoxLayout(&bar);
        auto* label = new QLabel(QStringLiteral("Generating… 1000 tokens"), &bar);
        layout->addWidget(label);
        bar.show();
        QVERIFY(QTest::qWaitForWindowExposed(&bar));
        QCoreApplication::processEvents();
        LayoutRequests requests(&bar);
        label->setText(QStringLiteral("Generating… 1001 tokens"));
        QCoreApplication::processEvents();
        QVERIFY(requests.count >= 1);
    }

    void panelValuesChangingDoNotReachTheDockingWindow() {
        QMainWindow window;
        auto* performance = new PerformancePanel(&window);
        QVERIFY(showIn(window, performance));
        LayoutRequests requests(&window);
        performance->beginTurn();
        performance->addToken(250.0);  // the prefill step
        for (int frame = 0; frame < 5; ++frame) {
            // Three steps a frame, each frame's rate and last step different from the one before.
            performance->addTokens({20.0 + frame, 21.0 + frame, 22.0 + 2 * frame});
            QCoreApplication::processEvents();
        }
        QVERIFY(performance->valueText(QStringLiteral("generated")) != QStringLiteral("—"));
        QCOMPARE(requests.count, 0);

        QMainWindow kvWindow;
        auto* kv = new KvCachePanel(&kvWindow);
        QVERIFY(showIn(kvWindow, kv));
        LayoutRequests kvRequests(&kvWindow);
        for (uint32_t used = 1; used <= 5; ++used) {
            KvSnapshot s;
            s.stats.total_blocks = 64;
            s.stats.used_blocks = used;
            s.stats.empty_blocks = 64 - used;
            s.stats.block_tokens = 16;
            kv->setSnapshot(s);
            QCoreApplication::processEvents();
        }
        QCOMPARE(kvRequests.count, 0);
    }
};

QTEST_MAIN(TestStatusLabel)
#include "test_status_label.moc"
