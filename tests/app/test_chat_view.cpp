// The chat shows a reasoning model's thinking apart from its answer: splitReasoning on streaming
// and finished replies, with and without the prompt having opened the reasoning, and the document
// such a reply becomes (muted reasoning under its heading, then the answer). Replies are rendered
// as Markdown: emphasis, lists, code (fixed font, tinted), with HTML and special-token spellings
// shown as the characters they are.
#include <QApplication>
#include <QFontDatabase>
#include <QImage>
#include <QPaintEvent>
#include <QScreen>
#include <QTest>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFragment>
#include <QTextList>
#include <QTextTable>
#include <memory>

#include "Theme.h"
#include "chat/ChatView.h"
#include "chat/Export.h"
#include "chat/Markdown.h"
#include "chat/Reasoning.h"

class TestChatView : public QObject {
    Q_OBJECT
private slots:
    void splitsReasoningFromTheAnswer_data();
    void splitsReasoningFromTheAnswer();
    void writesReasoningMutedAndTheAnswerPlain();
    void rendersMarkdown();
    void showsHtmlAndMarkersAsText();
    void rendersAnUnfinishedCodeFenceAsCode();
    void rendersTheAnswerAfterReasoningAsMarkdown();
    void exportsTheConversationAsMarkdown();
    void messageSizesFollowTheirText();
    void aStreamingReplyKeepsItsFullWidthAndFitsWhenItEnds();
    void piecesAreCutOnlyWhereABlockCannotBelongAbove();
    void stackedPiecesShowWhatTheWholeTextShows();
    void stackedReasonedPiecesShowWhatTheWholeReplyShows();
    void aStreamingReplyPaintsAsItWillWhenFinished_data();
    void aStreamingReplyPaintsAsItWillWhenFinished();
    void aStreamingReplyRepaintsOnlyItsLastPiece_data();
    void aStreamingReplyRepaintsOnlyItsLastPiece();
};

namespace {
QVector<QTextFragment> fragmentsOf(const QTextDocument& doc) {
    QVector<QTextFragment> out;
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it)
            if (it.fragment().isValid()) out.push_back(it.fragment());
    return out;
}
QTextFragment fragmentWith(const QTextDocument& doc, const QString& text) {
    for (const QTextFragment& f : fragmentsOf(doc))
        if (f.text().contains(text)) return f;
    return {};
}
// An assistant's reply being written.
ChatMessage streamingReply(const QString& text) {
    ChatMessage reply;
    reply.role = ChatMessage::Role::Assistant;
    reply.streaming = true;
    reply.text = text;
    return reply;
}
// A chat view on screen over a model of its own.
struct ShownChat {
    ChatModel model;
    ChatView view;
    explicit ShownChat(QSize size) {
        view.setModel(&model);
        view.resize(size);
        view.show();
    }
};
// What the view gives its delegate for a row (the width the delegate reads is the viewport's).
QStyleOptionViewItem rowOption(ChatView& view) {
    QStyleOptionViewItem option;
    option.initFrom(&view);
    option.rect = QRect(0, 0, view.viewport()->width(), 100);
    option.widget = &view;
    return option;
}
// The HTML of a document's body: what it shows, block by block, with every format.
QString bodyOf(const QTextDocument& doc) {
    const QString html = doc.toHtml();
    const qsizetype from = html.indexOf(QLatin1Char('>'), html.indexOf(QStringLiteral("<body"))) + 1;
    return html.mid(from, html.lastIndexOf(QStringLiteral("</body>")) - from).trimmed();
}
// A reply with every kind of block, blank lines inside its code fence and list.
const char* kEveryBlock =
    "Here is a plan, with **bold** and `code`.\n\n"
    "# Heading one\n\n"
    "Some text\nover two lines.\n\n"
    "1. first\n2. second\n\n   still the second item\n\n3. third\n\n"
    "- a\n- b\n\n"
    "```cpp\nint main() {\n\n    return 0;\n}\n```\n\n"
    "> a quote\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    "    indented code\n\n"
    "Para before a rule\n\n---\n\n"
    "~~~\nfence with\n\n```\nan inner marker\n~~~\n\n"
    "The end.";
bool isFixedFont(const QTextCharFormat& c) {
    return c.fontFixedPitch() &&
           c.fontFamilies().toStringList() == QFontDatabase::systemFont(QFontDatabase::FixedFont).families();
}
}  // namespace

void TestChatView::splitsReasoningFromTheAnswer_data() {
    QTest::addColumn<QString>("reply");
    QTest::addColumn<bool>("opens");
    QTest::addColumn<bool>("hasReasoning");
    QTest::addColumn<bool>("done");
    QTest::addColumn<QString>("reasoning");
    QTest::addColumn<QString>("answer");
    QTest::newRow("plain reply") << "Hello there." << false << false << false << ""
                                 << "Hello there.";
    QTest::newRow("a plain reply stays plain even with think-like text inside")
        << "Use <think> tags." << false << false << false << ""
        << "Use <think> tags.";
    QTest::newRow("streaming, opened by the prompt")
        << "The user says hi" << true << true << false << "The user says hi"
        << "";
    QTest::newRow("finished, opened by the prompt")
        << "The user says hi.\n</think>\n\nHello!" << true << true << true << "The user says hi."
        << "Hello!";
    QTest::newRow("opened by the reply itself")
        << "<think>\nLet me see.\n</think>\n\nFour." << false << true << true << "Let me see."
        << "Four.";
    QTest::newRow("closing tag only (the prompt opened it)")
        << "Hmm.</think>Yes." << false << true << true << "Hmm."
        << "Yes.";
    QTest::newRow("empty reasoning") << "<think>\n\n</think>\n\nOK" << false << true << true << ""
                                     << "OK";
    QTest::newRow("still reasoning after the tag")
        << "<think>Count: 1, 2" << false << true << false << "Count: 1, 2"
        << "";
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
    writeReasonedReply(done, splitReasoning(QStringLiteral("Step by step.\n</think>\n\nFour."), true), font,
                       small, QStringLiteral("Reasoning"), QString());
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

// What a Llama 3 answer typically looks like: a heading, emphasis, a list, inline code, a fenced
// code block and a table, each becomes its rich-text form and no Markdown syntax is left showing.
void TestChatView::rendersMarkdown() {
    QFont font;
    font.setPointSizeF(10);
    QTextDocument doc;
    writeMarkdown(
        doc,
        QStringLiteral(
            "## Steps\n\nUse **pip** and *venv*:\n\n- install `numpy`\n- run it\n\n"
            "```python\nimport numpy as np\nprint(np.pi)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"),
        font);
    const QString plain = doc.toPlainText();
    for (const char* syntax : {"**", "```", "##", "`", "|---"})
        QVERIFY2(!plain.contains(QLatin1String(syntax)),
                 qPrintable(QStringLiteral("left in the text: ") + syntax + "\n" + plain));
    QVERIFY(plain.contains(QStringLiteral("import numpy as np\nprint(np.pi)")));

    QTextBlock heading = doc.begin();
    QCOMPARE(heading.text(), QStringLiteral("Steps"));
    QCOMPARE(heading.blockFormat().headingLevel(), 2);
    QVERIFY(fragmentWith(doc, QStringLiteral("pip")).charFormat().fontWeight() >= QFont::Bold);
    QVERIFY(fragmentWith(doc, QStringLiteral("venv")).charFormat().fontItalic());

    int listItems = 0;
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
        if (b.textList() != nullptr) ++listItems;
    QCOMPARE(listItems, 2);

    const QTextFragment inlineCode = fragmentWith(doc, QStringLiteral("numpy"));
    QCOMPARE(inlineCode.text(), QStringLiteral("numpy"));
    QVERIFY(isFixedFont(inlineCode.charFormat()));
    QCOMPARE(inlineCode.charFormat().background().color(), codeBackground());
    QVERIFY2(!isFixedFont(fragmentWith(doc, QStringLiteral("install")).charFormat()),
             "only the code is fixed-width");

    int codeLines = 0;
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
        if (!b.text().contains(QStringLiteral("np"))) continue;
        ++codeLines;
        QCOMPARE(b.blockFormat().background().color(), codeBackground());
        for (auto it = b.begin(); !it.atEnd(); ++it) QVERIFY(isFixedFont(it.fragment().charFormat()));
    }
    QCOMPARE(codeLines, 2);

    QTextTable* table = nullptr;
    for (QTextFrame* frame : doc.rootFrame()->childFrames())
        if (auto* t = qobject_cast<QTextTable*>(frame)) table = t;
    QVERIFY2(table != nullptr, "the table is a table");
    QCOMPARE(table->rows(), 2);
    QCOMPARE(table->columns(), 2);
    // Its header is bold and one line in each cell, though it follows a code block (Qt 6.4 puts an
    // empty line into the first cell there).
    for (int c = 0; c < 2; ++c) {
        const QTextTableCell cell = table->cellAt(0, c);
        QCOMPARE(cell.firstCursorPosition().block(), cell.lastCursorPosition().block());
        QCOMPARE(cell.firstCursorPosition().block().text(),
                 c == 0 ? QStringLiteral("a") : QStringLiteral("b"));
        QVERIFY(cell.firstCursorPosition().block().begin().fragment().charFormat().fontWeight() >=
                QFont::Bold);
    }
}

// A reply is never HTML: tags, a reasoning tag and special-token spellings are shown as written.
void TestChatView::showsHtmlAndMarkersAsText() {
    QTextDocument doc;
    const QString reply = QStringLiteral(
        "Use <b>bold</b> or <script>alert(1)</script>, <img src=\"x.png\">, <think> and <|eot_id|>.");
    writeMarkdown(doc, reply, QFont());
    QCOMPARE(doc.toPlainText(), reply);
}

// While a code block streams its closing fence has not arrived: what there is shows as code.
void TestChatView::rendersAnUnfinishedCodeFenceAsCode() {
    QTextDocument doc;
    writeMarkdown(doc, QStringLiteral("Here:\n\n```cpp\nint main() {\u258D"), QFont());
    const QTextFragment code = fragmentWith(doc, QStringLiteral("int main"));
    QVERIFY(code.isValid());
    QVERIFY(isFixedFont(code.charFormat()));
    QVERIFY(!doc.toPlainText().contains(QStringLiteral("```")));
}

// After the reasoning (plain, muted) the answer is Markdown; the reasoning itself never is.
void TestChatView::rendersTheAnswerAfterReasoningAsMarkdown() {
    QTextDocument doc;
    writeReasonedReply(doc,
                       splitReasoning(QStringLiteral("Try **x**.\n</think>\n\nThe answer is **42**."), true),
                       QFont(), QFont(), QStringLiteral("Reasoning"), QString(), true);
    QCOMPARE(doc.toPlainText(), QStringLiteral("Reasoning\nTry **x**.\n\nThe answer is 42."));
    QVERIFY(fragmentWith(doc, QStringLiteral("42")).charFormat().fontWeight() >= QFont::Bold);
    QVERIFY(fragmentWith(doc, QStringLiteral("Try")).charFormat().fontItalic());
}

// Export: the title, the system prompt quoted, each message under its author (a reply under the
// model that wrote it), reasoning quoted apart from the answer, details in small print, an
// interrupted reply marked, notices left out.
void TestChatView::exportsTheConversationAsMarkdown() {
    ExportHeader header;
    header.title = QStringLiteral("Cats");
    header.systemPrompt = QStringLiteral("Be brief.\nUse lists.");
    header.modelFile = QStringLiteral("stories260K.gguf");
    header.exported = QDateTime(QDate(2026, 11, 30), QTime(23, 5));
    QVector<ChatMessage> messages(5);
    messages[0].role = ChatMessage::Role::User;
    messages[0].text = QStringLiteral("Why do cats purr?");
    messages[1].role = ChatMessage::Role::Assistant;
    messages[1].text = QStringLiteral("<think>\nThink.\n\nMore.\n</think>\n\n**Contentment**, mostly.");
    messages[1].model = QStringLiteral("DeepSeek R1 Distill");
    messages[1].details = QStringLiteral("12 tokens · 40 tok/s");
    messages[2].role = ChatMessage::Role::Notice;
    messages[2].text = QStringLiteral("The context is full.");
    messages[3].role = ChatMessage::Role::User;
    messages[3].text = QStringLiteral("And dogs?");
    messages[4].role = ChatMessage::Role::Assistant;
    messages[4].text = QStringLiteral("They wag");
    messages[4].complete = false;
    const QString md = conversationMarkdown(header, messages);
    const QString expected = QStringLiteral(
        "# Cats\n\n"
        "*Exported from Lantern on 2026-11-30 23:05 · model file stories260K.gguf*\n\n"
        "**System prompt**\n\n> Be brief.\n> Use lists.\n\n"
        "## You\n\nWhy do cats purr?\n\n"
        "## DeepSeek R1 Distill\n\n> **Reasoning**\n>\n> Think.\n>\n> More.\n\n**Contentment**, mostly.\n\n"
        "<sub>12 tokens · 40 tok/s</sub>\n\n"
        "## You\n\nAnd dogs?\n\n"
        "## Assistant\n\nThey wag\n\n<sub>interrupted</sub>\n");
    QCOMPARE(md, expected);
}

// The delegate keeps laid-out messages (the list asks every row's size on each token): a message
// whose text, details or rendering changed is laid out again, one that did not keeps its size.
void TestChatView::messageSizesFollowTheirText() {
    ChatModel model;
    ChatMessage reply;
    reply.role = ChatMessage::Role::Assistant;
    reply.text = QStringLiteral("Short.");
    model.append(reply);
    ChatView view;
    view.setModel(&model);
    view.resize(600, 400);
    const QStyleOptionViewItem option = rowOption(view);
    const QModelIndex index = model.index(0, 0);
    const int shortHeight = view.itemDelegate()->sizeHint(option, index).height();
    QCOMPARE(view.itemDelegate()->sizeHint(option, index).height(), shortHeight);
    model.appendToMessage(0, QStringLiteral("\n\nMore.\n\nAnd more.\n\nAnd more still."));
    const int longHeight = view.itemDelegate()->sizeHint(option, index).height();
    QVERIFY2(longHeight > shortHeight,
             qPrintable(QStringLiteral("%1 -> %2").arg(shortHeight).arg(longHeight)));
    model.setDetails(0, QStringLiteral("12 tokens"));
    QVERIFY(view.itemDelegate()->sizeHint(option, index).height() > longHeight);
    model.setText(0, QStringLiteral("```\nline 1\nline 2\nline 3\nline 4\nline 5\nline 6\n```"));
    const int code = view.itemDelegate()->sizeHint(option, index).height();
    view.setRenderMarkdown(false);  // the fences become lines of their own
    QVERIFY(view.itemDelegate()->sizeHint(option, index).height() > code);
}

// Each frame of a streaming reply lays it out anew; fitting the bubble to the text's longest line
// is a second layout, so a reply whose lines fill most of the width keeps the full width until it
// ends, and then fits. A short reply fits all along.
void TestChatView::aStreamingReplyKeepsItsFullWidthAndFitsWhenItEnds() {
    ChatModel model;
    ChatView view;
    view.setModel(&model);
    view.resize(600, 400);
    const QStyleOptionViewItem option = rowOption(view);
    auto* delegate = qobject_cast<MessageDelegate*>(view.itemDelegate());
    QVERIFY(delegate != nullptr);

    ChatMessage reply;
    reply.role = ChatMessage::Role::Assistant;
    reply.streaming = true;
    reply.text = QStringLiteral("Hi there.");
    model.append(reply);
    const QModelIndex index = model.index(0, 0);
    const QRect shortStreaming = delegate->bubbleRect(option, index);

    // A first line a little shorter than the widest bubble, then a short one.
    const QFontMetrics fm(option.font);
    QString line;
    const double widest = 0.82 * std::max(200, view.viewport()->width()) - 26;  // (bubble padding: 13 a side)
    while (fm.horizontalAdvance(line + QStringLiteral("word ")) < 0.85 * widest)
        line += QStringLiteral("word ");
    model.setText(0, line.trimmed() + QStringLiteral("\n\nEnd."));
    const QRect longStreaming = delegate->bubbleRect(option, index);
    model.finish(0, true);
    const QRect longDone = delegate->bubbleRect(option, index);
    QVERIFY2(
        longDone.width() < longStreaming.width(),
        qPrintable(QStringLiteral("%1 streaming, %2 done").arg(longStreaming.width()).arg(longDone.width())));
    QVERIFY(longDone.width() >= fm.horizontalAdvance(line.trimmed()));
    QCOMPARE(longDone.height(), longStreaming.height());

    QVERIFY2(shortStreaming.width() < longDone.width() / 2,
             "a short reply's bubble fits it while it streams");
}

// A streaming reply is cut into pieces so that only its last one is rendered at each frame
// (pieceStarts): never inside a code fence, nor before a line that may continue the block above.
void TestChatView::piecesAreCutOnlyWhereABlockCannotBelongAbove() {
    const QString text = QString::fromUtf8(kEveryBlock);
    QStringList firstLines;
    for (const qsizetype start : pieceStarts(text, true)) {
        QVERIFY(start > 0 && text[start - 1] == QLatin1Char('\n'));
        firstLines << text.mid(start, text.indexOf(QLatin1Char('\n'), start) - start);
    }
    QCOMPARE(firstLines, QStringList({QStringLiteral("# Heading one"), QStringLiteral("Some text"),
                                      QStringLiteral("```cpp"), QStringLiteral("Para before a rule"),
                                      QStringLiteral("~~~"), QStringLiteral("The end.")}));
    // (None before "1." "3." "-" ">" "|" "    " "---", each of which may belong to the block above,
    // and none inside the fences, whose blank lines and inner markers are code.)
    // Plain text is cut at every blank line.
    QCOMPARE(pieceStarts(QStringLiteral("a\n\nb\n\n\nc\n"), false), QList<qsizetype>({3, 7}));
    QCOMPARE(pieceStarts(QStringLiteral("a\n\nb\n"), true), QList<qsizetype>({3}));
    QCOMPARE(pieceStarts(QStringLiteral("a\n\nb"), true), QList<qsizetype>({3}));  // "b" being written
    // Not before a fence with nothing in it yet, or a line being written that may become one.
    QVERIFY(pieceStarts(QStringLiteral("a\n\n```cpp\n"), true).isEmpty());
    QVERIFY(pieceStarts(QStringLiteral("a\n\n``"), true).isEmpty());
    QCOMPARE(pieceStarts(QStringLiteral("a\n\n```cpp\nint"), true), QList<qsizetype>({3}));
    QVERIFY(pieceStarts(QStringLiteral("no blank line\nat all"), true).isEmpty());
}

// What the cut relies on: at every length a reply passes through while it streams, its pieces
// rendered one by one and stacked show exactly what the text rendered at once shows — the same
// blocks with the same formats, and the same height.
void TestChatView::stackedPiecesShowWhatTheWholeTextShows() {
    const QString full = QString::fromUtf8(kEveryBlock);
    const QFont font = QApplication::font();
    auto rendered = [&](const QString& markdown, bool md) {
        auto doc = std::make_unique<QTextDocument>();
        doc->setDocumentMargin(0);
        if (md)
            writeMarkdown(*doc, markdown, font);
        else
            doc->setPlainText(markdown);
        doc->setTextWidth(300);
        return doc;
    };
    int cutLengths = 0;
    for (const bool md : {true, false}) {
        for (qsizetype n = 1; n <= full.size(); n += (n % 5) + 1) {
            const QString text = full.left(n);
            const QList<qsizetype> starts = pieceStarts(text, md);
            if (starts.isEmpty()) continue;
            ++cutLengths;
            QStringList bodies;
            double height = 0;
            std::unique_ptr<QTextDocument> previous;
            for (qsizetype i = 0; i <= starts.size(); ++i) {
                const qsizetype from = i == 0 ? 0 : starts[i - 1];
                const qsizetype to = i < starts.size() ? starts[i] - (md ? 0 : 1) : text.size();
                auto piece = rendered(text.mid(from, to - from), md);
                bodies << bodyOf(*piece);
                if (previous) height += stackedGap(*previous, *piece);
                height += piece->size().height();
                previous = std::move(piece);
            }
            const auto whole = rendered(text, md);
            QCOMPARE(bodies.join(QLatin1Char('\n')), bodyOf(*whole));
            QCOMPARE(height, whole->size().height());
        }
    }
    QVERIFY(cutLengths > 100);
}

// The same for a reply that reasons: at every length it passes through (reasoning still being
// written, then the answer), its pieces stacked show what writeReasonedReply shows, with the
// cursor on the last piece.
void TestChatView::stackedReasonedPiecesShowWhatTheWholeReplyShows() {
    const QString full = QStringLiteral(
                             "<think>\nThe user asks for a plan.\nFirst paragraph.\n\nSecond, after a blank "
                             "line.\n\n\nThird, after two.\n  indented\n\n</think>\n\n") +
                         QString::fromUtf8(kEveryBlock);
    const QFont font = QApplication::font();
    QFont small = font;
    small.setPointSizeF(font.pointSizeF() * 0.85);
    const QString tail = QStringLiteral("\u258d");
    auto fresh = [] {
        auto doc = std::make_unique<QTextDocument>();
        doc->setDocumentMargin(0);
        return doc;
    };
    int cutLengths = 0, answerCuts = 0;
    for (const bool md : {true, false}) {
        for (qsizetype n = 8; n <= full.size(); n += (n % 3) + 1) {
            const ReplyParts parts = splitReasoning(full.left(n), false);
            QVERIFY(parts.has_reasoning);
            const QString heading =
                parts.reasoning_done ? QStringLiteral("Reasoning") : QStringLiteral("Reasoning…");
            const QList<ReasonedPiece> pieces = reasonedPieces(parts, md);
            QVERIFY(!pieces.isEmpty());
            QCOMPARE(pieces.front().kind, ReasonedPiece::Kind::Heading);
            if (pieces.size() == 1) continue;
            ++cutLengths;
            answerCuts += pieces.back().kind == ReasonedPiece::Kind::Answer;
            QStringList bodies;
            double height = 0;
            std::unique_ptr<QTextDocument> previous;
            for (qsizetype i = 0; i < pieces.size(); ++i) {
                auto piece = fresh();
                writeReasonedPiece(*piece, pieces[i], font, small, heading,
                                   i + 1 == pieces.size() ? tail : QString(), md);
                piece->setTextWidth(300);
                bodies << bodyOf(*piece);
                if (previous) height += stackedGap(*previous, *piece);
                height += piece->size().height();
                previous = std::move(piece);
            }
            auto whole = fresh();
            writeReasonedReply(*whole, parts, font, small, heading, tail, md);
            whole->setTextWidth(300);
            QCOMPARE(bodies.join(QLatin1Char('\n')), bodyOf(*whole));
            QCOMPARE(height, whole->size().height());
        }
    }
    QVERIFY(cutLengths > 100);
    QVERIFY(answerCuts > 20);
}

// Painted while streaming (pieces) and once finished (one document), a reply looks the same.
void TestChatView::aStreamingReplyPaintsAsItWillWhenFinished_data() {
    QTest::addColumn<QString>("reply");
    const QString answer = QString::fromUtf8(kEveryBlock) +
                           QStringLiteral("\n\nA last line as long as the others are, or longer than that.");
    const QString reasoning = QStringLiteral(
        "<think>\nA first thought, long enough to wrap onto a second line of the bubble at this width.\n\n"
        "A second one.\n\n\nA third, after two blank lines.");
    QTest::newRow("answer") << answer;
    QTest::newRow("still reasoning") << reasoning;
    QTest::newRow("reasoning, then the answer") << reasoning + QStringLiteral("\n</think>\n\n") + answer;
}

void TestChatView::aStreamingReplyPaintsAsItWillWhenFinished() {
    QFETCH(QString, reply);
    ShownChat chat(QSize(640, 2400));
    QVERIFY(QTest::qWaitForWindowExposed(&chat.view));
    ChatModel& model = chat.model;
    ChatView& view = chat.view;
    model.append(streamingReply(reply));
    QCoreApplication::processEvents();
    const QStyleOptionViewItem option = rowOption(view);
    auto* delegate = qobject_cast<MessageDelegate*>(view.itemDelegate());
    const QRect streamingBubble = delegate->bubbleRect(option, model.index(0, 0));
    const QImage streaming = view.viewport()->grab(streamingBubble).toImage();
    // Finished, with the cursor's width left alone: the same text at the same width.
    model.finish(0, true);
    QCoreApplication::processEvents();
    const QRect doneBubble = delegate->bubbleRect(option, model.index(0, 0));
    QCOMPARE(doneBubble.height(), streamingBubble.height());
    const QImage done = view.viewport()->grab(doneBubble).toImage();
    // Compare the left part (the finished bubble may be narrower, and the streaming one ends
    // with the cursor).
    const int w = std::min(streaming.width(), done.width()) - 40;
    int differing = 0;
    for (int y = 0; y < std::min(streaming.height(), done.height()) - 40; ++y)
        for (int x = 0; x < w; ++x) differing += streaming.pixel(x, y) != done.pixel(x, y);
    QCOMPARE(differing, 0);
}

// A frame of a streaming reply that keeps its height repaints only the reply's last piece (the
// rest of the view, other messages and finished paragraphs, stays as painted), and what is on
// screen then is what a full repaint shows.
void TestChatView::aStreamingReplyRepaintsOnlyItsLastPiece_data() {
    QTest::addColumn<QString>("opening");  // what the reply starts with
    QTest::addColumn<QString>("last");     // its last paragraph, being written
    QTest::newRow("answer") << QString() << QStringLiteral("The");
    QTest::newRow("reasoning") << QStringLiteral("<think>\n") << QStringLiteral("The");
    QTest::newRow("answer after reasoning")
        << QStringLiteral("<think>\nA thought.\n</think>\n\n") << QStringLiteral("The");
}

void TestChatView::aStreamingReplyRepaintsOnlyItsLastPiece() {
    QFETCH(QString, opening);
    QFETCH(QString, last);
    ShownChat chat(QSize(640, 700));
    QVERIFY(QTest::qWaitForWindowExposed(&chat.view));
    ChatModel& model = chat.model;
    ChatView& view = chat.view;
    ChatMessage question;
    question.role = ChatMessage::Role::User;
    question.text = QStringLiteral("Tell me a story.");
    model.append(question);
    QString first;
    for (int i = 0; i < 40; ++i) first += QStringLiteral("Once upon a time ");
    model.append(streamingReply(opening + first + QStringLiteral("\n\n") + last));
    auto settle = [] {
        for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
    };
    settle();
    model.appendToMessage(1, QStringLiteral(" end"));  // (the first change after a layout repaints the row)
    settle();

    struct Painted : QObject {
        QRegion region;
        bool eventFilter(QObject* o, QEvent* e) override {
            if (e->type() == QEvent::Paint) region += static_cast<QPaintEvent*>(e)->region();
            return QObject::eventFilter(o, e);
        }
    } painted;
    view.viewport()->installEventFilter(&painted);
    model.appendToMessage(1, QStringLiteral(" came"));
    settle();
    const QRect row = view.visualRect(model.index(1, 0));
    const QRect live =
        qobject_cast<MessageDelegate*>(view.itemDelegate())->liveRect(rowOption(view), model.index(1, 0));
    QVERIFY(!live.isEmpty());
    QVERIFY2(!painted.region.isEmpty(), "the change was painted");
    QCOMPARE(painted.region.boundingRect(), live.translated(row.topLeft()) & view.viewport()->rect());
    QVERIFY2(live.top() > row.height() / 2, "the finished paragraph above is not repainted");

    // On screen, the same as a full repaint.
    QScreen* screen = view.screen();
    const QImage partial = screen->grabWindow(view.winId()).toImage();
    view.viewport()->repaint();
    const QImage full = screen->grabWindow(view.winId()).toImage();
    QVERIFY(!partial.isNull());
    QCOMPARE(partial, full);
}

QTEST_MAIN(TestChatView)
#include "test_chat_view.moc"
