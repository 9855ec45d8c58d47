// Markdown — replies shown the way models write them. Chat models answer in Markdown (lists,
// **bold**, `code`, fenced code blocks, tables); shown as plain text that is a wall of asterisks
// and backticks. Replies are rendered with Qt's Markdown reader (GitHub's dialect) — as they stream,
// so an open code fence is a code block until it closes — and the user can switch it off
// (View > Show Replies as Markdown) to read the raw text.
//
// HTML in a reply is never interpreted: a model that writes "<b>", "<think>" or a stray
// "<|eot_id|>" shows those characters, and nothing in a reply can load an image or a link.
#pragma once
#include <QColor>
#include <QFont>
#include <QList>
#include <QString>
#include <QStringList>

class QTextCursor;
class QTextDocument;

// Replaces the content of `doc` with `markdown` rendered in `font` (code in the system's fixed
// font on a tinted background).
void writeMarkdown(QTextDocument& doc, const QString& markdown, const QFont& font);

// Inserts `markdown` rendered the same way at `cursor` (after a reply's reasoning).
void insertMarkdown(QTextCursor& cursor, const QString& markdown, const QFont& font);

// The background of code blocks and inline code.
QColor codeBackground();

// Where a text can be cut into pieces that, each rendered as a document of its own and stacked
// (stackedGap), show what the whole text rendered at once shows: starts of lines that follow a
// blank line, outside code fences, and — for Markdown — begin a block that cannot belong to the
// block above (not indented; no list item, quote, table row, thematic break or lazy paragraph
// continuation). In ascending order, each > 0. Why: a reply being written is laid out anew at
// every frame, which cost 2.6 ms for 2 500 characters and 26 ms for 30 000 (O(length) per frame,
// on the UI thread); cut into pieces, only the last one changes, and the others keep their
// laid-out documents (MessageDelegate).
// Markdown pieces are text[start_i, start_i+1); plain-text pieces leave out the newline before
// the next piece (setPlainText makes a block of every line, so "a\n" + "b" stacks as "a\n\nb").
QList<qsizetype> pieceStarts(const QString& text, bool markdown);

// `text` cut at pieceStarts: the text of each piece (at least one).
QStringList pieceTexts(const QString& text, bool markdown);

// The space between the last block of `above` and the first of `below` when they are one
// document: Qt collapses the two margins into the larger and leaves out a document's first top
// and last bottom margins, so stacked pieces are this far apart.
double stackedGap(const QTextDocument& above, const QTextDocument& below);
