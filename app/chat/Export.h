// Export — a conversation as a Markdown document (File > Export Conversation…): the title, when
// and with which model, the system prompt, then each message under its author, replies with
// their details line and any reasoning quoted apart, so it reads well anywhere Markdown is shown.
#pragma once
#include <QDateTime>
#include <QString>
#include <QVector>

#include "chat/ChatModel.h"

struct ExportHeader {
    QString title;
    QString systemPrompt;
    QString modelFile;   // the conversation's model file, "" if none
    QDateTime exported;  // when (local time is written)
};

// `messages` in conversation order; notices (app messages such as "the context is full") are left out.
QString conversationMarkdown(const ExportHeader& header, const QVector<ChatMessage>& messages);
