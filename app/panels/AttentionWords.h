// AttentionWords — attention on the words: the conversation's text as its tokens make it, each
// token's boundary marked by alternating tints (special tokens muted), and, when the pointer is on
// a token whose attention was captured (or one was clicked, which pins it), every earlier token
// tinted by how much that token attended to it — for the chosen head, or the mean over heads.
// Rows come from the worker while capture is on (TokenBatch::attention); they are kept within
// kBudgetBytes, oldest dropped first, and the panel says what they cost (costText). UI thread.
#pragma once
#include <QPlainTextEdit>
#include <map>

#include "panels/TokenSpans.h"
#include "worker/EngineTypes.h"

class AttentionWords : public QPlainTextEdit {
    Q_OBJECT
public:
    static constexpr size_t kBudgetBytes = 32u << 20;
    explicit AttentionWords(QWidget* parent = nullptr);

    void setTokens(const ConversationTokens& tokens);
    // Rows of a reply being written: a row replaces those at its position and after (a
    // regenerated reply's tokens take the old ones' positions).
    void addRows(const std::vector<AttentionRow>& rows);
    void clear();
    void setHead(int head);  // -1: the mean over heads

    // The token at `position` attended to: highlight it (what hovering it does); false when no
    // row was kept for it. -1 clears.
    bool showToken(int position);
    int shownToken() const { return shown_; }
    const TokenText& text() const { return text_; }
    // The highlighted tokens and their strengths (0..1, the strongest 1), for tests.
    QList<QPair<int, double>> highlighted() const { return highlighted_; }
    // "4.0 KiB a token (8 heads × 512 positions); 120 tokens kept" or "" without rows.
    QString costText() const;
    // The token pieces of positions 0..n-1 (for the heatmap's axis).
    QStringList pieces() const;

signals:
    void costChanged(const QString& text);

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void changeEvent(QEvent* event) override;  // a language change: the placeholder and the cost

private:
    static QString placeholder();
    void paintTokens();
    int tokenUnder(const QPoint& pos) const;

    ConversationTokens tokens_;
    TokenText text_;
    std::map<quint32, AttentionRow> rows_;
    size_t rowBytes_ = 0;
    int head_ = -1;
    int shown_ = -1;
    bool pinned_ = false;
    QList<QPair<int, double>> highlighted_;
};
