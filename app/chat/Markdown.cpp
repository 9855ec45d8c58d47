#include "chat/Markdown.h"

#include <QColor>
#include <QFontDatabase>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextDocumentFragment>
#include <QTextFrame>
#include <QTextTable>

#include <algorithm>

#include "Theme.h"

namespace {

constexpr auto kFeatures =
    QTextDocument::MarkdownFeatures(QTextDocument::MarkdownDialectGitHub | QTextDocument::MarkdownNoHTML);

// Qt's reader marks code with the family name "monospace", which only fontconfig resolves: code
// gets the system's fixed font by its real name instead, at the size of the text around it.
void styleCode(QTextDocument& doc, const QFont& font) {
    QFont fixed = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    fixed.setPointSizeF(font.pointSizeF() > 0 ? font.pointSizeF() * 0.95 : fixed.pointSizeF());
    QTextCursor cursor(&doc);
    for (QTextBlock block = doc.begin(); block.isValid(); block = block.next()) {
        const bool codeBlock = block.blockFormat().hasProperty(QTextFormat::BlockCodeFence) ||
                               block.blockFormat().hasProperty(QTextFormat::BlockCodeLanguage);
        if (codeBlock) {
            QTextBlockFormat bf = block.blockFormat();
            bf.setBackground(codeBackground());
            bf.setLeftMargin(6);
            bf.setRightMargin(6);
            cursor.setPosition(block.position());
            cursor.setBlockFormat(bf);
        }
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            QTextCharFormat cf = fragment.charFormat();
            if (!codeBlock && !cf.fontFixedPitch()) continue;
            cf.setFontFamilies(fixed.families());
            cf.setFontFixedPitch(true);
            cf.setFontPointSize(fixed.pointSizeF());
            if (!codeBlock) cf.setBackground(codeBackground());  // inline code
            cursor.setPosition(fragment.position());
            cursor.setPosition(fragment.position() + fragment.length(), QTextCursor::KeepAnchor);
            cursor.setCharFormat(cf);
        }
    }
}

// Tables in the chat's colours: thin collapsed borders and some padding (Qt's default is a
// raised double border that looks like a form).
void styleTables(QTextDocument& doc) {
    for (QTextFrame* frame : doc.rootFrame()->childFrames()) {
        auto* table = qobject_cast<QTextTable*>(frame);
        if (table == nullptr) continue;
        QTextTableFormat f = table->format();
        f.setBorder(1);
        f.setBorderStyle(QTextFrameFormat::BorderStyle_Solid);
        f.setBorderBrush(theme::border());
        f.setBorderCollapse(true);
        f.setCellSpacing(0);
        f.setCellPadding(4);
        f.setTopMargin(4);
        f.setBottomMargin(4);
        table->setFormat(f);
        for (int r = 0; r < table->rows(); ++r) {
            for (int c = 0; c < table->columns(); ++c) {
                const QTextTableCell cell = table->cellAt(r, c);
                QTextCursor cursor = cell.firstCursorPosition();
                // Qt 6.4 opens the first cell of a table that follows a code block with an empty
                // line (and drops its bold): join it to the cell's text.
                if (r == 0 && c == 0 && cursor.block().text().isEmpty() &&
                    cell.lastCursorPosition().block() != cursor.block())
                    cursor.deleteChar();
                if (r == 0) {  // GitHub tables always have a header row: bold, as Qt does for the others
                    cursor.setPosition(cell.lastCursorPosition().position(), QTextCursor::KeepAnchor);
                    QTextCharFormat bold;
                    bold.setFontWeight(QFont::Bold);
                    cursor.mergeCharFormat(bold);
                }
            }
        }
    }
}

}  // namespace

QColor codeBackground() {
    return QColor(0xF1, 0xF3, 0xF5);
}

void writeMarkdown(QTextDocument& doc, const QString& markdown, const QFont& font) {
    doc.setDefaultFont(font);
    // One edit block around the import and the restyling: otherwise each piece of text Qt's
    // reader inserts (one per format run) makes the cursor lay out the whole paragraph so far to
    // find its x position (QTextCursor::insertText -> setX), which made a long paragraph
    // quadratic: 30 000 characters without a blank line cost 283 ms a frame instead of 18
    // (lantern-chat-bench --break 0). Tables are restyled after it ends: inside an edit block Qt
    // has not yet rebuilt their cells.
    QTextCursor batch(&doc);
    batch.beginEditBlock();
    doc.setMarkdown(markdown, kFeatures);
    styleCode(doc, font);
    batch.endEditBlock();
    styleTables(doc);
}

void insertMarkdown(QTextCursor& cursor, const QString& markdown, const QFont& font) {
    QTextDocument rendered;
    writeMarkdown(rendered, markdown, font);
    cursor.insertFragment(QTextDocumentFragment(&rendered));
}

namespace {

// The fence a line opens or closes: "```" or "~~~" (3 or more) after at most 3 spaces.
struct Fence {
    QChar mark;
    qsizetype length = 0;
};
Fence fenceOf(QStringView line) {
    qsizetype i = 0;
    while (i < line.size() && i < 3 && line[i] == QLatin1Char(' ')) ++i;
    if (i >= line.size() || (line[i] != QLatin1Char('`') && line[i] != QLatin1Char('~'))) return {};
    const QChar mark = line[i];
    qsizetype n = 0;
    while (i + n < line.size() && line[i + n] == mark) ++n;
    return n >= 3 ? Fence{mark, n} : Fence{};
}

bool blank(QStringView line) {
    return line.trimmed().isEmpty();
}

// A line that may continue the block above it even after a blank line, or change it: indented
// (code, or a list item's continuation), a list item, a quote, a table row, a thematic break or
// setext underline, a footnote or link reference definition.
bool mayBelongAbove(QStringView line) {
    if (line.isEmpty()) return true;
    const QChar c = line[0];
    if (c == QLatin1Char(' ') || c == QLatin1Char('\t')) return true;
    if (c == QLatin1Char('-') || c == QLatin1Char('*') || c == QLatin1Char('+') || c == QLatin1Char('>') ||
        c == QLatin1Char('|') || c == QLatin1Char('=') || c == QLatin1Char('_') || c == QLatin1Char('[') ||
        c.isDigit())
        return true;
    return false;
}

}  // namespace

QList<qsizetype> pieceStarts(const QString& text, bool markdown) {
    QList<qsizetype> starts;
    Fence open;                  // the code fence we are inside, if any
    bool previousBlank = false;  // the line before was blank (and outside a fence)
    qsizetype start = 0;
    while (start < text.size()) {
        qsizetype end = text.indexOf(QLatin1Char('\n'), start);
        const bool last = end < 0;
        if (last) end = text.size();
        const QStringView line = QStringView(text).mid(start, end - start);
        if (markdown && open.length > 0) {
            const Fence f = fenceOf(line);
            if (f.mark == open.mark && f.length >= open.length &&
                blank(line.mid(line.indexOf(f.mark) + f.length)))
                open = {};
            previousBlank = false;
        } else if (blank(line)) {
            previousBlank = true;
        } else {
            const Fence fence = markdown ? fenceOf(line) : Fence{};
            // Not at a code fence with nothing in it yet, nor at a line still being written that
            // may become one ("`", "``"): rendered alone, an empty fence is an empty line that the
            // whole text does not have. (A paragraph's first characters already say what block
            // it is, so the line being written may start the last piece.)
            const bool fenceLike = line[0] == QLatin1Char('`') || line[0] == QLatin1Char('~');
            const bool written = fence.length > 0 ? end + 1 < text.size() : !(last && fenceLike);
            if (previousBlank && start > 0 && written && (!markdown || !mayBelongAbove(line)))
                starts.push_back(start);
            previousBlank = false;
            open = fence;
        }
        if (last) break;
        start = end + 1;
    }
    return starts;
}

QStringList pieceTexts(const QString& text, bool markdown) {
    const QList<qsizetype> starts = pieceStarts(text, markdown);
    QStringList pieces;
    for (qsizetype i = 0; i <= starts.size(); ++i) {
        const qsizetype from = i == 0 ? 0 : starts[i - 1];
        const qsizetype to = i < starts.size() ? starts[i] - (markdown ? 0 : 1) : text.size();
        pieces << text.mid(from, to - from);
    }
    return pieces;
}

double stackedGap(const QTextDocument& above, const QTextDocument& below) {
    return std::max(above.lastBlock().blockFormat().bottomMargin(),
                    below.firstBlock().blockFormat().topMargin());
}
