#include "json_mode.h"

#include <limits>

#include "lantern/tokenizer.h"

namespace lantern::server {

namespace {
bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
}  // namespace

bool JsonPrefix::feed(std::string_view text) {
    for (const char c : text)
        if (!step(c)) return false;
    return true;
}

bool JsonPrefix::open(char bracket) {
    if (stack_.size() >= kMaxDepth) return false;
    stack_ += bracket;
    mode_ = bracket == '{' ? Mode::FirstKeyOrEnd : Mode::FirstValueOrEnd;
    return true;
}

void JsonPrefix::value_done() {
    if (stack_.empty())
        mode_ = Mode::Done;
    else
        mode_ = stack_.back() == '{' ? Mode::ObjectNext : Mode::ArrayNext;
}

bool JsonPrefix::step(char c) {
    const auto close = [&] {
        stack_.pop_back();
        value_done();
        return true;
    };
    const auto literal = [&](std::string_view word) {
        mode_ = Mode::Literal;
        literal_ = word;
        literal_at_ = 1;
        return true;
    };
    const auto begin_value = [&]() -> bool {
        switch (c) {
            case '{':
            case '[':
                return open(c);
            case '"':
                mode_ = Mode::String;
                key_ = false;
                return true;
            case '-':
                mode_ = Mode::Number;
                number_ = Num::Minus;
                return true;
            case '0':
                mode_ = Mode::Number;
                number_ = Num::Zero;
                return true;
            case 't':
                return literal("true");
            case 'f':
                return literal("false");
            case 'n':
                return literal("null");
            default:
                if (c >= '1' && c <= '9') {
                    mode_ = Mode::Number;
                    number_ = Num::Int;
                    return true;
                }
                return false;
        }
    };
    // Whitespace between tokens, rationed: one space, or a line break and up to 20 spaces or tabs
    // of indent. Unlimited whitespace is a valid JSON prefix forever, and a model steered into
    // JSON may well take that way out (stories260K wrote 200 tokens of blank lines without it).
    const bool structural = mode_ != Mode::String && mode_ != Mode::Escape && mode_ != Mode::Hex &&
                            mode_ != Mode::Literal && mode_ != Mode::Number;
    if (structural && is_space(c)) {
        if (c == '\n' || c == '\r') {
            if (space_run_ != 0) return false;
            line_break_ = true;
        } else if (line_break_ ? space_run_ > 20 : space_run_ != 0) {
            return false;
        }
        ++space_run_;
        return true;
    }
    space_run_ = 0;
    line_break_ = false;
    switch (mode_) {
        case Mode::Start:
            return is_space(c) || (c == '{' && open('{'));
        case Mode::Done:
            return is_space(c);
        case Mode::Value:
            return is_space(c) || begin_value();
        case Mode::FirstValueOrEnd:
            return is_space(c) || (c == ']' ? close() : begin_value());
        case Mode::FirstKeyOrEnd:
            if (c == '}') return close();
            [[fallthrough]];
        case Mode::Key:
            if (is_space(c)) return true;
            if (c != '"') return false;
            mode_ = Mode::String;
            key_ = true;
            return true;
        case Mode::Colon:
            if (c == ':') mode_ = Mode::Value;
            return is_space(c) || c == ':';
        case Mode::ObjectNext:
            if (c == ',') mode_ = Mode::Key;
            return is_space(c) || c == ',' || (c == '}' && close());
        case Mode::ArrayNext:
            if (c == ',') mode_ = Mode::Value;
            return is_space(c) || c == ',' || (c == ']' && close());
        case Mode::String:
            if (c == '"') {
                if (key_) {
                    key_ = false;
                    mode_ = Mode::Colon;
                } else {
                    value_done();
                }
                return true;
            }
            if (c == '\\') mode_ = Mode::Escape;
            return static_cast<unsigned char>(c) >= 0x20;
        case Mode::Escape:
            if (c == 'u') {
                mode_ = Mode::Hex;
                hex_left_ = 4;
                return true;
            }
            mode_ = Mode::String;
            return std::string_view("\"\\/bfnrt").find(c) != std::string_view::npos;
        case Mode::Hex:
            if (!is_hex(c)) return false;
            if (--hex_left_ == 0) mode_ = Mode::String;
            return true;
        case Mode::Literal:
            if (c != literal_[literal_at_]) return false;
            if (++literal_at_ == literal_.size()) value_done();
            return true;
        case Mode::Number: {
            const bool digit = is_digit(c), exp = c == 'e' || c == 'E';
            switch (number_) {
                case Num::Minus:
                    if (!digit) return false;
                    number_ = c == '0' ? Num::Zero : Num::Int;
                    return true;
                case Num::Zero:
                    if (c == '.') return number_ = Num::Dot, true;
                    if (exp) return number_ = Num::Exp, true;
                    break;  // the number ended (no leading zeros)
                case Num::Int:
                    if (digit) return true;
                    if (c == '.') return number_ = Num::Dot, true;
                    if (exp) return number_ = Num::Exp, true;
                    break;
                case Num::Dot:
                    if (!digit) return false;
                    number_ = Num::Frac;
                    return true;
                case Num::Frac:
                    if (digit) return true;
                    if (exp) return number_ = Num::Exp, true;
                    break;
                case Num::Exp:
                    if (c == '+' || c == '-') return number_ = Num::ExpSign, true;
                    if (!digit) return false;
                    number_ = Num::ExpDigits;
                    return true;
                case Num::ExpSign:
                    if (!digit) return false;
                    number_ = Num::ExpDigits;
                    return true;
                case Num::ExpDigits:
                    if (digit) return true;
                    break;
            }
            // A whole number ended at `c` (numbers live in containers, so something follows):
            // `c` belongs to what comes after it.
            value_done();
            return step(c);
        }
    }
    return false;
}

JsonMode::JsonMode(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}

void JsonMode::constrain(std::vector<float>& logits) const {
    constexpr float kMasked = -std::numeric_limits<float>::infinity();
    for (size_t id = 0; id < logits.size(); ++id) {
        const std::string& text = tokenizer_->token_text(static_cast<int32_t>(id));
        // Tokens without text (control and special tokens) add nothing: they could only stall the
        // reply, which ends by itself when the object closes.
        if (text.empty()) {
            logits[id] = kMasked;
            continue;
        }
        JsonPrefix next = state_;
        if (!next.feed(text)) logits[id] = kMasked;
    }
}

bool JsonMode::accept(int32_t token) {
    state_.feed(tokenizer_->token_text(token));
    return state_.complete();
}

}  // namespace lantern::server
