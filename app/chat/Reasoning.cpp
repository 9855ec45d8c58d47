#include "chat/Reasoning.h"

#include <QTextCharFormat>
#include <QTextCursor>
#include <QTextDocument>

#include "Theme.h"
#include "chat/Markdown.h"

namespace {
const QString kOpen = QStringLiteral("<think>");
const QString kClose = QStringLiteral("</think>");
}  // namespace

ReplyParts splitReasoning(const QString& reply, bool opens_in_reasoning) {
    ReplyParts parts;
    qsizetype start = 0;
    const QString lead = reply.trimmed();
    if (lead.startsWith(kOpen)) {
        start = reply.indexOf(kOpen) + kOpen.size();
        parts.has_reasoning = true;
    } else if (opens_in_reasoning || reply.contains(kClose)) {
        // A closing tag without an opening one: the opening tag was the end of the prompt.
        parts.has_reasoning = true;
    }
    if (!parts.has_reasoning) {
        parts.answer = reply;
        return parts;
    }
    const qsizetype close = reply.indexOf(kClose, start);
    if (close < 0) {
        parts.reasoning = reply.mid(start).trimmed();
        return parts;
    }
    parts.reasoning_done = true;
    parts.reasoning = reply.mid(start, close - start).trimmed();
    QString answer = reply.mid(close + kClose.size());
    while (answer.startsWith(QLatin1Char('\n')) || answer.startsWith(QLatin1Char('\r'))) answer.remove(0, 1);
    parts.answer = answer;
    return parts;
}

namespace {

struct ReplyFormats {
    QTextCharFormat head, muted, plain;
    ReplyFormats(const QFont& font, const QFont& small) {
        head.setFont(small);
        head.setFontWeight(QFont::Bold);
        head.setForeground(theme::mutedText());
        muted.setFont(small);
        muted.setFontItalic(true);
        muted.setForeground(theme::mutedText());
        plain.setFont(font);
        plain.setForeground(theme::text());
    }
};

}  // namespace

void writeReasonedReply(QTextDocument& doc, const ReplyParts& parts, const QFont& font, const QFont& small,
                        const QString& heading, const QString& tail, bool markdown) {
    const ReplyFormats f(font, small);
    QTextCursor cursor(&doc);
    cursor.insertText(heading, f.head);
    if (!parts.reasoning.isEmpty()) cursor.insertText(QStringLiteral("\n") + parts.reasoning, f.muted);
    if (!parts.reasoning_done) {
        if (!tail.isEmpty()) cursor.insertText(tail, f.muted);
        return;
    }
    if (!markdown) {
        cursor.insertText(QStringLiteral("\n\n") + parts.answer + tail, f.plain);
        return;
    }
    cursor.insertText(QStringLiteral("\n\n"), f.plain);
    insertMarkdown(cursor, parts.answer + tail, font);
}

QList<ReasonedPiece> reasonedPieces(const ReplyParts& parts, bool markdown) {
    QList<ReasonedPiece> pieces;
    const QStringList reasoning = pieceTexts(parts.reasoning, false);
    for (qsizetype i = 0; i < reasoning.size(); ++i)
        pieces.push_back(
            {i == 0 ? ReasonedPiece::Kind::Heading : ReasonedPiece::Kind::Reasoning, reasoning[i]});
    if (!parts.reasoning_done) return pieces;
    const QStringList answer = pieceTexts(parts.answer, markdown);
    for (qsizetype i = 0; i < answer.size(); ++i)
        pieces.push_back(
            {i == 0 ? ReasonedPiece::Kind::FirstAnswer : ReasonedPiece::Kind::Answer, answer[i]});
    return pieces;
}

void writeReasonedPiece(QTextDocument& doc, const ReasonedPiece& piece, const QFont& font, const QFont& small,
                        const QString& heading, const QString& tail, bool markdown) {
    const ReplyFormats f(font, small);
    QTextCursor cursor(&doc);
    switch (piece.kind) {
        case ReasonedPiece::Kind::Heading:
            cursor.insertText(heading, f.head);
            if (!piece.text.isEmpty()) cursor.insertText(QStringLiteral("\n") + piece.text, f.muted);
            if (!tail.isEmpty()) cursor.insertText(tail, f.muted);
            return;
        case ReasonedPiece::Kind::Reasoning:
            // The block's own format as in the whole document, where the reasoning's lines are
            // blocks begun by muted line breaks.
            cursor.setBlockCharFormat(f.muted);
            cursor.insertText(piece.text + tail, f.muted);
            return;
        case ReasonedPiece::Kind::FirstAnswer:
            // This document's first block is the empty line between the reasoning and the answer.
            cursor.setBlockCharFormat(f.plain);
            if (!markdown) {
                cursor.insertText(QStringLiteral("\n") + piece.text + tail, f.plain);
                return;
            }
            cursor.insertText(QStringLiteral("\n"), f.plain);
            insertMarkdown(cursor, piece.text + tail, font);
            return;
        case ReasonedPiece::Kind::Answer:
            cursor.setBlockCharFormat(f.plain);
            if (!markdown) {
                cursor.insertText(piece.text + tail, f.plain);
                return;
            }
            insertMarkdown(cursor, piece.text + tail, font);
            return;
    }
}
