#include "chat/Export.h"

#include <QCoreApplication>
#include <QStringList>

#include "chat/Reasoning.h"
#include "chat/ReplyDetails.h"

namespace {

// Every line of `text` quoted ("> "), blank lines kept inside the quote.
QString quoted(const QString& text) {
    QStringList lines = text.split(QLatin1Char('\n'));
    for (QString& line : lines) line = line.isEmpty() ? QStringLiteral(">") : QStringLiteral("> ") + line;
    return lines.join(QLatin1Char('\n'));
}

}  // namespace

QString conversationMarkdown(const ExportHeader& header, const QVector<ChatMessage>& messages) {
    QStringList out;
    out << QStringLiteral("# ") + (header.title.isEmpty()
                                       ? QCoreApplication::translate("Export", "Conversation")
                                       : header.title);
    QString about = QCoreApplication::translate("Export", "Exported from Lantern on %1")
                        .arg(header.exported.toString(QStringLiteral("yyyy-MM-dd HH:mm")));
    if (!header.modelFile.isEmpty())
        about += QStringLiteral(" · ") +
                 QCoreApplication::translate("Export", "model file %1").arg(header.modelFile);
    out << QStringLiteral("*") + about + QStringLiteral("*");
    if (!header.systemPrompt.trimmed().isEmpty())
        out << QStringLiteral("**") + QCoreApplication::translate("Export", "System prompt") +
                   QStringLiteral("**\n\n") + quoted(header.systemPrompt.trimmed());
    for (const ChatMessage& m : messages) {
        if (m.role == ChatMessage::Role::Notice) continue;
        QString who;
        switch (m.role) {
            case ChatMessage::Role::User:
                who = QCoreApplication::translate("Export", "You");
                break;
            case ChatMessage::Role::System:
                who = QCoreApplication::translate("Export", "System prompt");
                break;
            default:
                who = m.model.isEmpty() ? QCoreApplication::translate("Export", "Assistant") : m.model;
                break;
        }
        QString body = m.text;
        if (m.role == ChatMessage::Role::Assistant) {
            const ReplyParts parts = splitReasoning(m.text, false);
            if (parts.has_reasoning) {
                body = QStringLiteral("> **") + QCoreApplication::translate("Export", "Reasoning") +
                       QStringLiteral("**\n>\n") + quoted(parts.reasoning);
                if (!parts.answer.isEmpty()) body += QStringLiteral("\n\n") + parts.answer;
            }
        }
        QString section = QStringLiteral("## ") + who + QStringLiteral("\n\n") + body;
        QString details = reply_details::display(m.details);
        if (!m.complete)
            details = details.isEmpty() ? QCoreApplication::translate("Export", "interrupted")
                                        : details + QStringLiteral(" · ") +
                                              QCoreApplication::translate("Export", "interrupted");
        if (!details.isEmpty())
            section += QStringLiteral("\n\n<sub>") + details.toHtmlEscaped() + QStringLiteral("</sub>");
        out << section;
    }
    return out.join(QStringLiteral("\n\n")) + QStringLiteral("\n");
}
