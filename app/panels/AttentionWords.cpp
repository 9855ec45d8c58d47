#include "panels/AttentionWords.h"

#include <QMouseEvent>
#include <QTextBlock>
#include <algorithm>

#include "Format.h"
#include "Theme.h"

namespace {

size_t bytesOf(const AttentionRow& r) {
    return r.weights.size() + r.headMax.size() * sizeof(float) + sizeof(AttentionRow);
}

}  // namespace

AttentionWords::AttentionWords(QWidget* parent) : QPlainTextEdit(parent) {
    setObjectName(QStringLiteral("attentionWords"));
    setReadOnly(true);
    setMouseTracking(true);
    viewport()->setMouseTracking(true);
    setLineWrapMode(QPlainTextEdit::WidgetWidth);
    setPlaceholderText(placeholder());
}

void AttentionWords::changeEvent(QEvent* event) {
    QPlainTextEdit::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) {
        setPlaceholderText(placeholder());
        emit costChanged(costText());
    }
}

QString AttentionWords::placeholder() {
    return tr(
        "Turn capture on and send a message: the conversation's tokens appear here. Point at a "
        "token of a reply to see what it attended to.");
}

void AttentionWords::clear() {
    tokens_ = {};
    text_ = {};
    rows_.clear();
    rowBytes_ = 0;
    shown_ = -1;
    pinned_ = false;
    highlighted_.clear();
    QPlainTextEdit::clear();
    emit costChanged(costText());
}

void AttentionWords::setTokens(const ConversationTokens& tokens) {
    tokens_ = tokens;
    text_ = tokenSpans(tokens.bytes);
    setPlainText(text_.text);
    // Rows past the conversation's end belong to tokens it no longer holds.
    rows_.erase(rows_.lower_bound(static_cast<quint32>(tokens.ids.size())), rows_.end());
    rowBytes_ = 0;
    for (const auto& [position, row] : rows_) rowBytes_ += bytesOf(row);
    shown_ = -1;
    pinned_ = false;
    paintTokens();
    emit costChanged(costText());
}

void AttentionWords::addRows(const std::vector<AttentionRow>& rows) {
    for (const AttentionRow& row : rows) {
        for (auto it = rows_.lower_bound(row.position); it != rows_.end(); it = rows_.erase(it))
            rowBytes_ -= bytesOf(it->second);
        rows_.emplace(row.position, row);
        rowBytes_ += bytesOf(row);
    }
    while (rowBytes_ > kBudgetBytes && !rows_.empty()) {  // the oldest go first
        rowBytes_ -= bytesOf(rows_.begin()->second);
        rows_.erase(rows_.begin());
    }
    emit costChanged(costText());
}

void AttentionWords::setHead(int head) {
    head_ = head;
    if (shown_ >= 0) showToken(shown_);
}

QString AttentionWords::costText() const {
    if (rows_.empty()) return {};
    const AttentionRow& last = rows_.rbegin()->second;
    return tr("Capture keeps %1 a token (%2 heads × %3 positions, one byte each); %n token(s) kept, at most "
              "%4.",
              nullptr, static_cast<int>(rows_.size()))
        .arg(display::bytes(last.weights.size() + last.headMax.size() * sizeof(float)))
        .arg(last.heads)
        .arg(last.nPositions)
        .arg(display::bytes(kBudgetBytes));
}

QStringList AttentionWords::pieces() const {
    QStringList out;
    for (const TokenSpan& s : text_.spans) out << text_.text.mid(s.begin, s.end - s.begin);
    return out;
}

bool AttentionWords::showToken(int position) {
    shown_ = -1;
    highlighted_.clear();
    const auto it = position >= 0 ? rows_.find(static_cast<quint32>(position)) : rows_.end();
    if (it != rows_.end()) {
        shown_ = position;
        const std::vector<float> w = it->second.over(head_);
        const float top = w.empty() ? 0.0f : *std::max_element(w.begin(), w.end());
        for (size_t j = 0; j < w.size() && j < static_cast<size_t>(text_.spans.size()); ++j)
            if (top > 0 && w[j] / top >= 0.02f) highlighted_.append({static_cast<int>(j), w[j] / top});
    }
    paintTokens();
    return shown_ >= 0;
}

void AttentionWords::paintTokens() {
    QList<QTextEdit::ExtraSelection> selections;
    const auto select = [&](const TokenSpan& span, const QTextCharFormat& format) {
        if (span.end <= span.begin) return;
        QTextEdit::ExtraSelection s;
        s.cursor = QTextCursor(document());
        s.cursor.setPosition(span.begin);
        s.cursor.setPosition(span.end, QTextCursor::KeepAnchor);
        s.format = format;
        selections << s;
    };
    // Boundaries: consecutive tokens in two tints; special tokens muted.
    const QColor tints[2] = {theme::window(), theme::border()};
    for (int t = 0; t < text_.spans.size(); ++t) {
        QTextCharFormat f;
        f.setBackground(tints[t % 2]);
        if (t < static_cast<int>(tokens_.special.size()) && tokens_.special[t])
            f.setForeground(theme::mutedText());
        select(text_.spans[t], f);
    }
    for (const auto& [token, strength] : std::as_const(highlighted_)) {
        QTextCharFormat f;
        f.setBackground(theme::heat(strength));
        if (strength > 0.6) f.setForeground(Qt::white);
        select(text_.spans[token], f);
    }
    if (shown_ >= 0 && shown_ < text_.spans.size()) {
        QTextCharFormat f;
        f.setUnderlineStyle(QTextCharFormat::SingleUnderline);
        f.setUnderlineColor(theme::accentDark());
        f.setFontUnderline(true);
        f.setFontWeight(QFont::Bold);
        select(text_.spans[shown_], f);
    }
    setExtraSelections(selections);
}

int AttentionWords::tokenUnder(const QPoint& pos) const {
    const QTextCursor c = cursorForPosition(pos);
    int at = c.position();
    // (The cursor nearest the pointer: past the character when the pointer is on its right half.)
    if (at > 0 && cursorRect(c).left() > pos.x()) --at;
    return text_.tokenAt(at);
}

void AttentionWords::mouseMoveEvent(QMouseEvent* event) {
    if (!pinned_) {
        const int token = tokenUnder(event->position().toPoint());
        if (token != shown_) showToken(token);
    }
    QPlainTextEdit::mouseMoveEvent(event);
}

void AttentionWords::mousePressEvent(QMouseEvent* event) {
    const int token = tokenUnder(event->position().toPoint());
    if (pinned_ && token == shown_) {
        pinned_ = false;  // a second click lets go
    } else if (showToken(token)) {
        pinned_ = true;
    }
    QPlainTextEdit::mousePressEvent(event);
}

void AttentionWords::leaveEvent(QEvent* event) {
    if (!pinned_) showToken(-1);
    QPlainTextEdit::leaveEvent(event);
}
