#include "chat/Markdown.h"

#include <QColor>
#include <QFontDatabase>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextDocumentFragment>
#include <QTextFrame>
#include <QTextTable>

#include "Theme.h"

namespace {

constexpr auto kFeatures = QTextDocument::MarkdownFeatures(QTextDocument::MarkdownDialectGitHub |
                                                           QTextDocument::MarkdownNoHTML);

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

QColor codeBackground() { return QColor(0xF1, 0xF3, 0xF5); }

void writeMarkdown(QTextDocument& doc, const QString& markdown, const QFont& font) {
    doc.setDefaultFont(font);
    doc.setMarkdown(markdown, kFeatures);
    styleCode(doc, font);
    styleTables(doc);
}

void insertMarkdown(QTextCursor& cursor, const QString& markdown, const QFont& font) {
    QTextDocument rendered;
    writeMarkdown(rendered, markdown, font);
    cursor.insertFragment(QTextDocumentFragment(&rendered));
}
