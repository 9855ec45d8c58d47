// The chat shows a reasoning model's thinking apart from its answer: splitReasoning on streaming
// and finished replies, with and without the prompt having opened the reasoning, and the document
// such a reply becomes (muted reasoning under its heading, then the answer).
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextFragment>

#include "Theme.h"
#include "chat/Reasoning.h"

class TestChatView : public QObject {
    Q_OBJECT
private slots:
    void splitsReasoningFromTheAnswer_data();
    void splitsReasoningFromTheAnswer();
    void writesReasoningMutedAndTheAnswerPlain();
};

void TestChatView::splitsReasoningFromTheAnswer_data() {
    QTest::addColumn<QString>("reply");
    QTest::addColumn<bool>("opens");
    QTest::addColumn<bool>("hasReasoning");
    QTest::addColumn<bool>("done");
    QTest::addColumn<QString>("reasoning");
    QTest::addColumn<QString>("answer");
    QTest::newRow("plain reply") << "Hello there." << false << false << false << "" << "Hello there.";
    QTest::newRow("a plain reply stays plain even with think-like text inside")
        << "Use <think> tags." << false << false << false << "" << "Use <think> tags.";
    QTest::newRow("streaming, opened by the prompt") << "The user says hi" << true << true << false << "The user says hi" << "";
    QTest::newRow("finished, opened by the prompt")
        << "The user says hi.\n</think>\n\nHello!" << true << true << true << "The user says hi." << "Hello!";
    QTest::newRow("opened by the reply itself")
        << "<think>\nLet me see.\n</think>\n\nFour." << false << true << true << "Let me see." << "Four.";
    QTest::newRow("closing tag only (the prompt opened it)")
        << "Hmm.</think>Yes." << false << true << true << "Hmm." << "Yes.";
    QTest::newRow("empty reasoning") << "<think>\n\n</think>\n\nOK" << false << true << true << "" << "OK";
    QTest::newRow("still reasoning after the tag") << "<think>Count: 1, 2" << false << true << false << "Count: 1, 2" << "";
}

void TestChatView::splitsReasoningFromTheAnswer() {
    QFETCH(QString, reply);
    QFETCH(bool, opens);
    QFETCH(bool, hasReasoning);
    QFETCH(bool, done);
    QFETCH(QString, reasoning);
    QFETCH(QString, answer);
    const ReplyParts p = splitReasoning(reply, opens);
    QCOMPARE(p.has_reasoning, hasReasoning);
    QCOMPARE(p.reasoning_done, done);
    QCOMPARE(p.reasoning, reasoning);
    QCOMPARE(p.answer, answer);
}

// The document a reasoning reply becomes: the heading, the reasoning italic and muted, the answer
// plain in the text colour; while the reasoning streams, no answer yet and the cursor after it.
void TestChatView::writesReasoningMutedAndTheAnswerPlain() {
    const QFont font, small;
    const auto fragments = [](const QTextDocument& doc) {
        QVector<QTextFragment> out;
        for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
            for (auto it = b.begin(); !it.atEnd(); ++it)
                if (it.fragment().isValid()) out.push_back(it.fragment());
        return out;
    };
    QTextDocument done;
    writeReasonedReply(done, splitReasoning(QStringLiteral("Step by step.\n</think>\n\nFour."), true), font, small,
                       QStringLiteral("Reasoning"), QString());
    QCOMPARE(done.toPlainText(), QStringLiteral("Reasoning\nStep by step.\n\nFour."));
    bool sawReasoning = false, sawAnswer = false;
    for (const QTextFragment& f : fragments(done)) {
        const QTextCharFormat c = f.charFormat();
        if (f.text().contains(QStringLiteral("Step by step."))) {
            sawReasoning = true;
            QVERIFY(c.fontItalic());
            QCOMPARE(c.foreground().color(), theme::mutedText());
        }
        if (f.text().contains(QStringLiteral("Four."))) {
            sawAnswer = true;
            QVERIFY(!c.fontItalic());
            QCOMPARE(c.foreground().color(), theme::text());
        }
    }
    QVERIFY(sawReasoning && sawAnswer);

    QTextDocument streaming;
    writeReasonedReply(streaming, splitReasoning(QStringLiteral("Step by"), true), font, small,
                       QStringLiteral("Reasoning…"), QStringLiteral("|"));
    QCOMPARE(streaming.toPlainText(), QStringLiteral("Reasoning…\nStep by|"));
}

QTEST_MAIN(TestChatView)
#include "test_chat_view.moc"
