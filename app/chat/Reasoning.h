// Reasoning — the "thinking" part of a reply from models that reason before they answer
// (DeepSeek-R1 and its distilled Llama models write "<think>...</think>" and then the answer).
// The chat shows the reasoning muted and apart from the answer, as it streams.
#pragma once
#include <QFont>
#include <QList>
#include <QString>

class QTextDocument;

struct ReplyParts {
    bool has_reasoning = false;   // the reply opened a reasoning section
    bool reasoning_done = false;  // ... and closed it ("</think>" arrived)
    QString reasoning;            // without the tags, trimmed
    QString answer;               // the rest, with the blank lines after "</think>" dropped
};

// `opens_in_reasoning`: the prompt already ended with "<think>" (ChatFormat::DeepSeekR1), so the
// reply starts inside the reasoning. A reply may also open it itself with a leading "<think>".
ReplyParts splitReasoning(const QString& reply, bool opens_in_reasoning);

// Writes a reply that reasons into `doc`: `heading` and the reasoning in `small` muted type (the
// reasoning italic, always plain text), then, once the reasoning is done, the answer in `font` and
// the text colour, rendered as Markdown when `markdown` (chat/Markdown.h). `tail` (the streaming
// cursor) goes after whatever is being written.
void writeReasonedReply(QTextDocument& doc, const ReplyParts& parts, const QFont& font, const QFont& small,
                        const QString& heading, const QString& tail, bool markdown = false);

// A reply that reasons, while it is being written, cut into pieces that each get a document of
// their own (as a reply without reasoning is, MessageDelegate): a model may reason for tens of
// thousands of characters, and laying all of them out again at every frame made a frame's cost
// grow with the reply. The reasoning is cut where its paragraphs end, the answer where its blocks
// end (pieceStarts in chat/Markdown.h). Written with writeReasonedPiece and stacked (stackedGap),
// the pieces show what writeReasonedReply shows for the same parts.
struct ReasonedPiece {
    enum class Kind {
        Heading,      // the heading and the reasoning's first paragraphs
        Reasoning,    // more of the reasoning
        FirstAnswer,  // the blank line after the reasoning and the answer's first blocks
        Answer,       // more of the answer
    };
    Kind kind = Kind::Heading;
    QString text;
};
QList<ReasonedPiece> reasonedPieces(const ReplyParts& parts, bool markdown);

// Writes one piece into an empty `doc`; `tail` (the streaming cursor) goes to the last piece.
void writeReasonedPiece(QTextDocument& doc, const ReasonedPiece& piece, const QFont& font, const QFont& small,
                        const QString& heading, const QString& tail, bool markdown);
