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
#include <QString>

class QTextCursor;
class QTextDocument;

// Replaces the content of `doc` with `markdown` rendered in `font` (code in the system's fixed
// font on a tinted background).
void writeMarkdown(QTextDocument& doc, const QString& markdown, const QFont& font);

// Inserts `markdown` rendered the same way at `cursor` (after a reply's reasoning).
void insertMarkdown(QTextCursor& cursor, const QString& markdown, const QFont& font);

// The background of code blocks and inline code.
QColor codeBackground();
