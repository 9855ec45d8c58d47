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

void writeReasonedReply(QTextDocument& doc, const ReplyParts& parts, const QFont& font, const QFont& small,
                        const QString& heading, const QString& tail, bool markdown) {
    QTextCursor cursor(&doc);
    QTextCharFormat head;
    head.setFont(small);
    head.setFontWeight(QFont::Bold);
    head.setForeground(theme::mutedText());
    cursor.insertText(heading, head);
    QTextCharFormat muted;
    muted.setFont(small);
    muted.setFontItalic(true);
    muted.setForeground(theme::mutedText());
    if (!parts.reasoning.isEmpty()) cursor.insertText(QStringLiteral("\n") + parts.reasoning, muted);
    if (!parts.reasoning_done) {
        if (!tail.isEmpty()) cursor.insertText(tail, muted);
        return;
    }
    QTextCharFormat plain;
    plain.setFont(font);
    plain.setForeground(theme::text());
    if (!markdown) {
        cursor.insertText(QStringLiteral("\n\n") + parts.answer + tail, plain);
        return;
    }
    cursor.insertText(QStringLiteral("\n\n"), plain);
    insertMarkdown(cursor, parts.answer + tail, font);
}
