// JSON mode (response_format {"type": "json_object"}): the reply is constrained, token by token, to
// be a JSON object. Before each token is sampled, every token whose text cannot continue the
// reply as the start of a JSON object is masked out; the reply ends when the object closes.
//
// JsonPrefix is the automaton that decides "can this text continue it": a pushdown reader of
// RFC 8259 text that accepts every prefix of an object and nothing else. It works on bytes, so a
// token that ends inside a UTF-8 character is fine; inside strings it checks JSON's rules (no
// control characters, escapes and \u + 4 hex digits), not that the bytes form valid UTF-8 (the
// server's JSON writer turns stray bytes into U+FFFD). Whitespace between tokens is rationed (one
// space, or a line break and an indent of up to 20), as llama.cpp's JSON grammar does: otherwise
// blank lines are a valid prefix forever.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lantern {
class Tokenizer;
}

namespace lantern::server {

class JsonPrefix {
public:
    static constexpr size_t kMaxDepth = 32;  // objects and arrays open at once

    // Reads `text` after what was read so far. False when it cannot continue a JSON object (or goes
    // on after the object closed, other than with whitespace); the state is then unspecified, so
    // callers try text on a copy.
    bool feed(std::string_view text);
    // The object has closed: a whole JSON object was read.
    bool complete() const { return mode_ == Mode::Done; }

private:
    enum class Mode : uint8_t {
        Start,            // before the object: whitespace, then '{'
        Value,            // a value is expected (after ':' or ',' in an array)
        FirstKeyOrEnd,    // after '{': a key or '}'
        Key,              // after ',' in an object: a key
        Colon,            // after a key
        ObjectNext,       // after a member's value: ',' or '}'
        FirstValueOrEnd,  // after '[': a value or ']'
        ArrayNext,        // after an element: ',' or ']'
        String,           // inside a string
        Escape,           // after a backslash
        Hex,              // inside \uXXXX (hex_left_ digits to go)
        Number,           // inside a number (number_ says where)
        Literal,          // inside true / false / null
        Done,             // the object closed
    };
    enum class Num : uint8_t { Minus, Zero, Int, Dot, Frac, Exp, ExpSign, ExpDigits };

    bool step(char c);
    bool open(char bracket);
    void value_done();  // a value ended: what may come next depends on the container

    Mode mode_ = Mode::Start;
    Num number_ = Num::Int;
    bool key_ = false;  // the string being read is an object key
    uint8_t hex_left_ = 0;
    std::string_view literal_;  // the literal being read ("true", ...), and how far
    size_t literal_at_ = 0;
    std::string stack_;        // the open containers, '{' or '['
    uint8_t space_run_ = 0;    // whitespace characters in a row (outside strings)
    bool line_break_ = false;  // ... starting with a line break
};

// The per-step mask of JSON mode for one reply: which tokens may come next.
class JsonMode {
public:
    explicit JsonMode(const Tokenizer& tokenizer);
    // Sets the logit of every token that cannot continue the reply to -infinity.
    void constrain(std::vector<float>& logits) const;
    // The token that was sampled (its text continues the reply). Returns complete().
    bool accept(int32_t token);
    bool complete() const { return state_.complete(); }

private:
    const Tokenizer* tokenizer_;
    JsonPrefix state_;
};

}  // namespace lantern::server
