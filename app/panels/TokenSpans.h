// TokenSpans — the conversation's text as its tokens make it, and where each token is in it: the
// bytes of every token (ConversationTokens) joined and decoded as UTF-8, and for each token the
// characters its bytes touch, as [begin, end) UTF-16 offsets into that text. A character whose
// bytes two tokens share (a byte-fallback or byte-level split) is in both tokens' spans; bytes
// that form no character are one U+FFFD each. Pure, any thread.
#pragma once
#include <QString>
#include <QVector>
#include <string>
#include <vector>

struct TokenSpan {
    int begin = 0, end = 0;  // UTF-16 offsets into TokenText::text; empty for a token of no bytes
};

struct TokenText {
    QString text;
    QVector<TokenSpan> spans;  // one per token, in order
    // The token whose span holds UTF-16 offset `at` (the last one that does), or -1.
    int tokenAt(int at) const;
};

TokenText tokenSpans(const std::vector<std::string>& tokenBytes);
