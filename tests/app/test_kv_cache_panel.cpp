// KvCachePanel: paints a synthetic KV cache (no engine) and shows the right numbers.
#include <QImage>
#include <QLabel>
#include <QLocale>
#include <QPaintEvent>
#include <QTest>

#include "Theme.h"
#include "panels/KvCachePanel.h"

namespace {

// 8 blocks of 16 tokens: sequence 1 holds blocks 0-2 (the last one 5/16 full), blocks 3-4 are
// cached for prefix reuse, 5-7 are empty. 2 x 5 layers x 4 KV heads x 8 dims x 2 bytes = 640 B/token.
KvSnapshot syntheticSnapshot() {
    KvSnapshot s;
    lantern::KvStats& k = s.stats;
    k.block_tokens = 16;
    k.total_blocks = 8;
    k.used_blocks = 3;
    k.cached_blocks = 2;
    k.empty_blocks = 3;
    k.capacity_tokens = 128;
    k.layers = 5;
    k.kv_heads = 4;
    k.head_dim = 8;
    k.element_bytes = 2;
    k.bytes_per_token = 2ULL * 5 * 4 * 8 * 2;
    k.capacity_bytes = k.capacity_tokens * k.bytes_per_token;
    k.prefix_query_tokens = 120;
    k.prefix_hit_tokens = 48;
    k.last_query_tokens = 20;
    k.last_hit_tokens = 16;
    k.evictions = 1;
    k.peak_used_blocks = 5;
    k.sequences = {{1, 37, 3}};
    for (uint32_t b = 0; b < 8; ++b) {
        lantern::KvBlockInfo info;
        info.block = b;
        if (b < 3) {
            info.owners = {1};
            info.filled = b < 2 ? 16 : 5;
            info.full_hashed = b < 2;
            info.first_position = static_cast<int32_t>(b * 16);
        } else if (b < 5) {
            info.filled = 16;
            info.cached = true;
            info.full_hashed = true;
        }
        s.blocks.push_back(info);
    }
    s.active_sequence = 1;
    return s;
}

// Records the regions a widget is asked to paint.
class PaintRecorder : public QObject {
public:
    QRegion painted;
    int paints = 0;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Paint) {
            painted += static_cast<QPaintEvent*>(event)->region();
            ++paints;
        }
        return QObject::eventFilter(watched, event);
    }
};

// The panel on screen at a dock's size, showing `snapshot`.
bool showWith(KvCachePanel& panel, const KvSnapshot& snapshot) {
    panel.resize(420, 520);
    panel.setSnapshot(snapshot);
    panel.show();
    return QTest::qWaitForWindowExposed(&panel);
}

QString labelText(const KvCachePanel& panel, const char* name) {
    const auto* label = panel.findChild<QLabel*>(QString::fromLatin1(name));
    if (label == nullptr) qFatal("KvCachePanel has no label named '%s'", name);
    return label->text();
}

}  // namespace

class TestKvCachePanel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QLocale::setDefault(QLocale::c()); }
    void labelsShowTheNumbersOfTheSnapshot();
    void gridPaintsEachBlockInItsStateColour();
    void paintsEmptyAndHugeCachesWithoutCrashing();
    void aNewSnapshotRepaintsOnlyTheBlocksThatChanged();
    void theLegendFlowsOntoMoreLinesAndReLaysOutOnlyWhenItsHeightChanges();
    void lastTurnSaysWhatCameFromTheCacheAndWhenTheTemplateBrokeIt();
};

void TestKvCachePanel::labelsShowTheNumbersOfTheSnapshot() {
    KvCachePanel panel;
    panel.setSnapshot(syntheticSnapshot());
    QCOMPARE(labelText(panel, "usedBlocks"), QStringLiteral("3"));
    QCOMPARE(labelText(panel, "cachedBlocks"), QStringLiteral("2"));
    QCOMPARE(labelText(panel, "emptyBlocks"), QStringLiteral("3"));
    QCOMPARE(labelText(panel, "totalBlocks"), QStringLiteral("8 × 16 tokens"));
    QCOMPARE(labelText(panel, "peakBlocks"), QStringLiteral("5"));
    QCOMPARE(labelText(panel, "evictions"), QStringLiteral("1"));
    QCOMPARE(labelText(panel, "capacity"), QStringLiteral("128 tokens · 80.0 KiB"));
    QCOMPARE(labelText(panel, "bytesPerToken"),
             QStringLiteral("640 B = 2 (K,V) × 5 layers × 4 KV heads × 8 dims × 2 B"));
    QCOMPARE(labelText(panel, "prefixHitLast"), QStringLiteral("16 of 20 tokens"));
    QCOMPARE(labelText(panel, "prefixHitTotal"), QStringLiteral("48 of 120 tokens (40%)"));
    QCOMPARE(labelText(panel, "localLayers"), QStringLiteral("none: every layer keeps every position"));
    // Sliding-window layers (Gemma) apart: their pool's blocks, and the layers the rest counts.
    KvSnapshot windows = syntheticSnapshot();
    windows.stats.window = 512;
    windows.stats.local_layers = 4;
    windows.stats.local_total_blocks = 98;
    windows.stats.local_used_blocks = 33;
    windows.stats.local_capacity_bytes = 98 * 16 * 256;
    windows.stats.bytes_per_token = 128;
    panel.setSnapshot(windows);
    QCOMPARE(labelText(panel, "localLayers"),
             QStringLiteral(
                 "4 of 5 layers keep only their last 512 tokens: 33 of their 98 blocks in use (392.0 KiB)"));
    QCOMPARE(labelText(panel, "bytesPerToken"),
             QStringLiteral("128 B = 2 (K,V) × 1 layers × 4 KV heads × 8 dims × 2 B"));
    panel.setSnapshot(syntheticSnapshot());
    const QString legend = panel.findChild<KvLegend*>(QStringLiteral("legend"))->text();
    QVERIFY2(legend.contains(QStringLiteral("this chat: 37 tokens in 3 blocks")), qPrintable(legend));
    QVERIFY2(legend.contains(QStringLiteral("cached")) && legend.contains(QStringLiteral("empty")),
             qPrintable(legend));

    // Beside the chat, the API server's replies are named as such; any other sequence by number.
    KvSnapshot shared = syntheticSnapshot();
    shared.stats.sequences = {{1, 37, 3}, {5, 20, 2}, {7, 9, 1}};
    shared.api_sequences = {5};
    panel.setSnapshot(shared);
    const QString named = panel.findChild<KvLegend*>(QStringLiteral("legend"))->text();
    QVERIFY2(named.contains(QStringLiteral("this chat: 37 tokens in 3 blocks")), qPrintable(named));
    QVERIFY2(named.contains(QStringLiteral("API reply (sequence 5): 20 tokens in 2 blocks")),
             qPrintable(named));
    QVERIFY2(named.contains(QStringLiteral("sequence 7: 9 tokens in 1 blocks")) &&
                 !named.contains(QStringLiteral("API reply (sequence 7)")),
             qPrintable(named));
    // Hovering a block names its holders the same way: a block the chat and an API reply share
    // (a common prefix), one the API's alone.
    shared.blocks[0].owners = {1, 5};
    shared.blocks[1].owners = {5};
    panel.setSnapshot(shared);
    auto* grid = panel.findChild<KvBlockGrid*>();
    QVERIFY(grid != nullptr);
    QVERIFY2(grid->blockToolTip(0).startsWith(QStringLiteral(
                 "Block 0: in use by this chat, API reply (sequence 5)\n16 of 16 tokens written")),
             qPrintable(grid->blockToolTip(0)));
    QVERIFY2(grid->blockToolTip(1).startsWith(QStringLiteral("Block 1: in use by API reply (sequence 5)\n")),
             qPrintable(grid->blockToolTip(1)));
    QVERIFY2(grid->blockToolTip(6).startsWith(QStringLiteral("Block 6: empty")),
             qPrintable(grid->blockToolTip(6)));
    QVERIFY(grid->blockToolTip(99).isEmpty());

    panel.clear();
    QCOMPARE(labelText(panel, "usedBlocks"), QStringLiteral("—"));
}

void TestKvCachePanel::gridPaintsEachBlockInItsStateColour() {
    KvCachePanel panel;
    panel.resize(420, 520);
    panel.setSnapshot(syntheticSnapshot());
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    KvBlockGrid* grid = panel.grid();
    QVERIFY(grid->cellSize() >= 8);
    const QImage image = grid->grab().toImage();
    QVERIFY(!image.isNull());
    auto colorAt = [&](int block, double fy) {
        const QRect r = grid->blockRect(block);
        const QPoint p(r.center().x(), r.top() + static_cast<int>(r.height() * fy));
        return QColor(image.pixel(p * image.devicePixelRatio()));
    };
    QCOMPARE(colorAt(0, 0.5).name(), theme::usedBlock().name());    // full, in use
    QCOMPARE(colorAt(3, 0.5).name(), theme::cachedBlock().name());  // cached
    QCOMPARE(colorAt(7, 0.5).name(), theme::emptyBlock().name());   // empty
    // Block 2 is 5/16 full: solid at the bottom, pale at the top.
    QCOMPARE(colorAt(2, 0.9).name(), theme::usedBlock().name());
    QVERIFY2(colorAt(2, 0.15).name() != theme::usedBlock().name(),
             "the unwritten part of a block is drawn pale");
}

void TestKvCachePanel::paintsEmptyAndHugeCachesWithoutCrashing() {
    KvCachePanel panel;
    panel.resize(300, 300);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QVERIFY(!panel.grab().isNull());

    KvSnapshot huge;
    huge.stats.block_tokens = 16;
    huge.stats.total_blocks = 20000;
    huge.stats.empty_blocks = 19999;
    huge.stats.used_blocks = 1;
    lantern::KvBlockInfo one;
    one.owners = {3, 4};  // shared by two sequences
    one.filled = 16;
    huge.blocks.push_back(one);
    huge.blocks.resize(20000);
    panel.setSnapshot(huge);
    QVERIFY(!panel.grab().isNull());
    QCOMPARE(panel.grid()->cellSize(), 2);
}

// While a reply streams a snapshot arrives 20 times a second and usually changes one block (the
// one being written): only that block is repainted, and what is painted is right.
void TestKvCachePanel::aNewSnapshotRepaintsOnlyTheBlocksThatChanged() {
    KvCachePanel panel;
    KvSnapshot snapshot = syntheticSnapshot();
    QVERIFY(showWith(panel, snapshot));
    KvBlockGrid* grid = panel.grid();
    PaintRecorder recorder;
    grid->installEventFilter(&recorder);
    QCoreApplication::processEvents();
    recorder.painted = QRegion();
    recorder.paints = 0;

    // Block 2 gets 6 more tokens (5 -> 11 of 16).
    snapshot.blocks[2].filled = 11;
    snapshot.stats.sequences[0].tokens += 6;
    panel.setSnapshot(snapshot);
    QTRY_VERIFY(recorder.paints > 0);
    QCOMPARE(recorder.painted.boundingRect(), grid->blockRect(2));
    const QImage image = grid->grab().toImage();
    const QRect r = grid->blockRect(2);
    auto colorAt = [&](double fy) {
        return QColor(image.pixel(QPoint(r.center().x(), r.top() + static_cast<int>(r.height() * fy)) *
                                  image.devicePixelRatio()));
    };
    QCOMPARE(colorAt(0.5).name(), theme::usedBlock().name());  // 11/16 full now: solid at half height
    QVERIFY(colorAt(0.15).name() != theme::usedBlock().name());

    // The same snapshot again: nothing to repaint.
    recorder.painted = QRegion();
    recorder.paints = 0;
    panel.setSnapshot(snapshot);
    QCoreApplication::processEvents();
    QCOMPARE(recorder.paints, 0);

    // Block 6 taken by a second sequence, block 3 evicted from the prefix cache: those two.
    snapshot.blocks[6].owners = {2};
    snapshot.blocks[6].filled = 3;
    snapshot.blocks[3].cached = false;
    panel.setSnapshot(snapshot);
    QTRY_VERIFY(recorder.paints > 0);
    QCOMPARE(recorder.painted, QRegion(grid->blockRect(3)) + QRegion(grid->blockRect(6)));

    // A cache of another size moves every square: all of the grid.
    recorder.painted = QRegion();
    recorder.paints = 0;
    snapshot.stats.total_blocks = 40;
    snapshot.blocks.resize(40);
    panel.setSnapshot(snapshot);
    QTRY_VERIFY(recorder.paints > 0);
    QCOMPARE(recorder.painted.boundingRect(), grid->rect());
}

// The legend's counts change at every snapshot; the panel is laid out again only when the legend
// needs another height (a narrow dock, another sequence), not for a new count.
void TestKvCachePanel::theLegendFlowsOntoMoreLinesAndReLaysOutOnlyWhenItsHeightChanges() {
    KvCachePanel panel;
    KvSnapshot snapshot = syntheticSnapshot();
    QVERIFY(showWith(panel, snapshot));
    auto* legend = panel.findChild<KvLegend*>(QStringLiteral("legend"));
    QVERIFY(legend != nullptr);
    const int oneLine = legend->heightForWidth(2000);
    QVERIFY2(legend->heightForWidth(80) >= 3 * oneLine, "three entries, one per line when narrow");
    QCOMPARE(legend->height(), legend->heightForWidth(legend->width()));
    // Painted: the active sequence's swatch colour is in the legend's pixels.
    const QImage image = legend->grab().toImage();
    bool swatch = false;
    for (int y = 0; y < image.height() && !swatch; ++y)
        for (int x = 0; x < image.width() && !swatch; ++x)
            swatch = QColor(image.pixel(x, y)).name() == theme::usedBlock().name();
    QVERIFY2(swatch, "the legend paints this chat's colour");

    struct LayoutRequests : QObject {
        int count = 0;
        bool eventFilter(QObject* o, QEvent* e) override {
            if (e->type() == QEvent::LayoutRequest) ++count;
            return QObject::eventFilter(o, e);
        }
    } requests;
    legend->parentWidget()->installEventFilter(&requests);
    QCoreApplication::processEvents();
    requests.count = 0;
    snapshot.stats.sequences[0].tokens = 38;
    panel.setSnapshot(snapshot);
    QCoreApplication::processEvents();
    QVERIFY(legend->text().contains(QStringLiteral("38 tokens")));
    QCOMPARE(requests.count, 0);

    // A second sequence: another entry, which needs another line at this width.
    legend->parentWidget()->resize(160, legend->parentWidget()->height());
    QCoreApplication::processEvents();
    const int before = legend->height();
    requests.count = 0;
    snapshot.stats.sequences.push_back({2, 20, 2});
    panel.setSnapshot(snapshot);
    QTRY_VERIFY(requests.count > 0);
    QTRY_VERIFY(legend->height() > before);
}

// The last turn's row: the prompt tokens the cache supplied, and when the model's template wrote the
// earlier conversation differently (only the common start kept). A turn that changed nothing
// leaves the row as it was.
void TestKvCachePanel::lastTurnSaysWhatCameFromTheCacheAndWhenTheTemplateBrokeIt() {
    KvCachePanel panel;
    auto* row = panel.findChild<QLabel*>(QStringLiteral("lastTurn"));
    QVERIFY(row);
    QCOMPARE(row->text(), QStringLiteral("—"));
    lantern::TurnStats kept;
    kept.prompt_tokens = 120;
    kept.reused_tokens = 100;
    panel.setTurn(kept);
    QCOMPARE(row->text(), QStringLiteral("100 of its 120 prompt tokens came from the cache"));
    lantern::TurnStats broken = kept;
    broken.reused_tokens = 57;
    broken.template_broke_prefix = true;
    broken.prefix_break_at = 57;
    panel.setTurn(broken);
    QVERIFY2(row->text().startsWith(
                 QStringLiteral("57 of its 120 prompt tokens came from the cache — the chat template")) &&
                 row->text().endsWith(QStringLiteral("only the first 57 tokens could be kept")),
             qPrintable(row->text()));
    lantern::TurnStats nothing;
    nothing.changed_nothing = true;
    panel.setTurn(nothing);
    QVERIFY(row->text().endsWith(QStringLiteral("57 tokens could be kept")));
}

QTEST_MAIN(TestKvCachePanel)
#include "test_kv_cache_panel.moc"
