// Attention on the words: token bytes → the conversation's text and each token's span in it
// (multi-byte characters, characters two tokens share, bytes that are no character), the words
// view highlighting what a token attended to per head and on average, the rows' byte budget, the
// quantised rows, and the heatmap's axis naming tokens.
#include <QTest>

#include "panels/AttentionPanel.h"
#include "panels/AttentionWords.h"
#include "panels/TokenSpans.h"
#include "worker/EngineTypes.h"

namespace {

lantern::AttentionSnapshot snapshot(uint32_t position, const std::vector<std::vector<float>>& heads) {
    lantern::AttentionSnapshot s;
    s.position = position;
    s.n_heads = static_cast<uint32_t>(heads.size());
    s.n_positions = static_cast<uint32_t>(heads.front().size());
    for (const auto& h : heads) s.probs.insert(s.probs.end(), h.begin(), h.end());
    return s;
}

}  // namespace

class TestAttentionWords : public QObject {
    Q_OBJECT
private slots:
    void tokensMapToTheCharactersTheyMake() {
        // " The", " caf" + "é" split over two tokens, " 猫" whole, an emoji split 1 + 3, a lone byte.
        const std::vector<std::string> bytes{" The", " caf",         "\xC3", "\xA9", " \xE7\x8C\xAB",
                                             "\xF0", "\x9F\x98\x80", "\xFF", ""};
        const TokenText t = tokenSpans(bytes);
        QCOMPARE(t.text, QString::fromUtf8(" The café 猫\xF0\x9F\x98\x80") + QChar::ReplacementCharacter);
        QCOMPARE(t.spans.size(), 9);
        QCOMPARE(t.text.mid(t.spans[0].begin, t.spans[0].end - t.spans[0].begin), QStringLiteral(" The"));
        QCOMPARE(t.text.mid(t.spans[1].begin, t.spans[1].end - t.spans[1].begin), QStringLiteral(" caf"));
        // Both halves of "é" stand for the whole character.
        QCOMPARE(t.text.mid(t.spans[2].begin, t.spans[2].end - t.spans[2].begin), QStringLiteral("é"));
        QCOMPARE(t.spans[2].begin, t.spans[3].begin);
        QCOMPARE(t.spans[2].end, t.spans[3].end);
        QCOMPARE(t.text.mid(t.spans[4].begin, t.spans[4].end - t.spans[4].begin), QStringLiteral(" 猫"));
        // The emoji is two UTF-16 units, both tokens' span.
        QCOMPARE(t.spans[5].end - t.spans[5].begin, 2);
        QCOMPARE(t.spans[6].begin, t.spans[5].begin);
        QCOMPARE(t.text.mid(t.spans[7].begin, 1), QString(QChar::ReplacementCharacter));
        QCOMPARE(t.spans[8].begin, t.spans[8].end);  // no bytes: an empty span at the end
        QCOMPARE(t.tokenAt(t.spans[4].begin + 1), 4);
        QCOMPARE(t.tokenAt(t.spans[2].begin), 3);  // (shared: the later token)
    }

    void rowsKeepEachHeadsWeightsWithinAByte() {
        const AttentionRow row =
            AttentionRow::from(snapshot(3, {{0.1f, 0.2f, 0.7f, 0.0f}, {0.5f, 0.5f, 0.0f, 0.0f}}));
        QCOMPARE(row.weights.size(), size_t{8});
        const std::vector<float> h0 = row.over(0), mean = row.over(-1);
        QVERIFY(std::abs(h0[2] - 0.7f) < 0.005f);
        QVERIFY(std::abs(h0[0] - 0.1f) < 0.005f);
        QVERIFY(std::abs(mean[1] - 0.35f) < 0.005f);
    }

    void pointingAtATokenHighlightsWhatItAttendedTo() {
        AttentionWords words;
        ConversationTokens tokens;
        tokens.bytes = {"<s>", " The", " caf", "\xC3", "\xA9", " is"};
        tokens.ids = {1, 2, 3, 4, 5, 6};
        tokens.special = {true, false, false, false, false, false};
        words.setTokens(tokens);
        QCOMPARE(words.toPlainText(), QStringLiteral("<s> The café is"));
        QVERIFY(!words.showToken(5));  // no row yet
        words.addRows({AttentionRow::from(
            snapshot(5, {{0.05f, 0.1f, 0.6f, 0.0f, 0.25f, 0.0f}, {0.9f, 0.1f, 0.0f, 0.0f, 0.0f, 0.0f}}))});
        QVERIFY(words.showToken(5));
        // The mean over heads: "<s>" strongest (0.475), then " caf" (0.3), " The" (0.1), the "é"
        // half (0.125); token 3 (the other half of "é") had nothing.
        QList<QPair<int, double>> h = words.highlighted();
        QCOMPARE(h.size(), 4);
        QCOMPARE(h[0].first, 0);
        QCOMPARE(h[0].second, 1.0);
        words.setHead(0);
        h = words.highlighted();
        QCOMPARE(h.first().first, 0);
        double caf = 0;
        for (const auto& [token, strength] : h)
            if (token == 2) caf = strength;
        QCOMPARE(caf, 1.0);  // head 1 (index 0) looked most at " caf"
        // Its span is the text " caf".
        const TokenSpan s = words.text().spans[2];
        QCOMPARE(words.toPlainText().mid(s.begin, s.end - s.begin), QStringLiteral(" caf"));
        QVERIFY(words.costText().contains(QStringLiteral("2 heads × 6 positions")));
        QVERIFY(!words.showToken(-1));
        QVERIFY(words.highlighted().isEmpty());
    }

    void rowsStayWithinTheirBudgetOldestFirst() {
        AttentionWords words;
        const uint32_t positions = 200000, heads = 8;  // 1.6 MB a row
        std::vector<AttentionRow> rows;
        for (uint32_t p = 0; p < 30; ++p) {
            AttentionRow r;
            r.position = p;
            r.heads = heads;
            r.nPositions = positions;
            r.headMax.assign(heads, 1.0f);
            r.weights.assign(static_cast<size_t>(heads) * positions, 1);
            rows.push_back(std::move(r));
        }
        words.addRows(rows);
        QVERIFY(!words.costText().isEmpty());
        QVERIFY2(words.costText().contains(QStringLiteral("; 20 token")), qPrintable(words.costText()));
        ConversationTokens tokens;
        tokens.bytes.assign(30, "x");
        tokens.ids.assign(30, 1);
        tokens.special.assign(30, false);
        words.setTokens(tokens);
        QVERIFY(!words.showToken(5));  // dropped: among the oldest
        QVERIFY(words.showToken(29));
        // A regenerated reply's row replaces those at its position and after.
        std::vector<AttentionRow> again{rows[25]};
        words.addRows(again);
        QVERIFY(words.showToken(25));
        QVERIFY(!words.showToken(29));
    }

    void theHeatmapAxisNamesTokens() {
        AttentionHeatmap heatmap;
        QCOMPARE(heatmap.axisLabel(3), QStringLiteral("3"));
        heatmap.setTokenPieces({QStringLiteral("<s>"), QStringLiteral(" The"), QStringLiteral(" "),
                                QStringLiteral(" extraordinary")});
        QCOMPARE(heatmap.axisLabel(1), QStringLiteral("The"));
        QCOMPARE(heatmap.axisLabel(2), QStringLiteral("␣"));
        QCOMPARE(heatmap.axisLabel(3), QStringLiteral("extraor…"));
        QCOMPARE(heatmap.axisLabel(9), QStringLiteral("9"));
    }
};

QTEST_MAIN(TestAttentionWords)
#include "test_attention_words.moc"
