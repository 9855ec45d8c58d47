#include "json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace lantern::server {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one (overlong
// forms, surrogates and values past U+10FFFF are invalid, as RFC 3629 says).
size_t utf8_length(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    if (c < 0x80) return 1;
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((b(i + k) & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && b(i + 1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // UTF-16 surrogate
    if (c == 0xF0 && b(i + 1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // past U+10FFFF
    return n;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

}  // namespace

class JsonParser {
public:
    explicit JsonParser(std::string_view text) : s_(text) {}

    Json document() {
        Json v = value(0);
        skip_space();
        if (pos_ != s_.size()) fail("unexpected text after the JSON value");
        return v;
    }

private:
    std::string_view s_;
    size_t pos_ = 0;
    size_t values_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw JsonError("invalid JSON: " + what + " at byte " + std::to_string(pos_));
    }
    void skip_space() {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }
    bool take(char c) {
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    void expect(char c, const char* what) {
        if (!take(c)) fail(std::string("expected ") + what);
    }
    void literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) fail("unknown literal");
        pos_ += word.size();
    }

    Json value(int depth) {
        if (depth >= Json::kMaxDepth)
            fail("nesting deeper than " + std::to_string(Json::kMaxDepth) + " levels");
        // A value costs ~112 bytes parsed: without a bound, 8 MiB of "[0,0,..." would hold ~450 MB.
        if (++values_ > Json::kMaxValues)
            fail("more than " + std::to_string(Json::kMaxValues) + " values in one document");
        skip_space();
        if (pos_ >= s_.size()) fail("unexpected end of input");
        const char c = s_[pos_];
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Json(string());
        if (c == 't') return literal("true"), Json(true);
        if (c == 'f') return literal("false"), Json(false);
        if (c == 'n') return literal("null"), Json();
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        fail(std::string("unexpected character '") + c + "'");
    }

    Json object(int depth) {
        ++pos_;
        Json out = Json::object();
        if (take('}')) return out;
        do {
            skip_space();
            if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a member name in quotes");
            std::string key = string();
            expect(':', "':' after a member name");
            out.members_.emplace_back(std::move(key), value(depth + 1));
        } while (take(','));
        expect('}', "',' or '}' in an object");
        return out;
    }

    Json array(int depth) {
        ++pos_;
        Json out = Json::array();
        if (take(']')) return out;
        do {
            out.items_.push_back(value(depth + 1));
        } while (take(','));
        expect(']', "',' or ']' in an array");
        return out;
    }

    uint32_t hex4() {
        if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = s_[pos_++];
            v <<= 4;
            if (h >= '0' && h <= '9')
                v |= static_cast<uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f')
                v |= static_cast<uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                v |= static_cast<uint32_t>(h - 'A' + 10);
            else
                fail("bad hex digit in a \\u escape");
        }
        return v;
    }

    std::string string() {
        ++pos_;  // the opening quote
        std::string out;
        while (true) {
            if (pos_ >= s_.size()) fail("unterminated string");
            const unsigned char c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) fail("control character in a string (escape it)");
            if (c == '\\') {
                if (++pos_ >= s_.size()) fail("unterminated escape");
                const char e = s_[pos_++];
                switch (e) {
                    case '"':
                        out += '"';
                        break;
                    case '\\':
                        out += '\\';
                        break;
                    case '/':
                        out += '/';
                        break;
                    case 'b':
                        out += '\b';
                        break;
                    case 'f':
                        out += '\f';
                        break;
                    case 'n':
                        out += '\n';
                        break;
                    case 'r':
                        out += '\r';
                        break;
                    case 't':
                        out += '\t';
                        break;
                    case 'u': {
                        uint32_t cp = hex4();
                        if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in a \\u escape");
                        if (cp >= 0xD800 && cp <= 0xDBFF) {
                            if (s_.substr(pos_, 2) != "\\u") fail("high surrogate without its low half");
                            pos_ += 2;
                            const uint32_t lo = hex4();
                            if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate without its low half");
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        }
                        append_utf8(out, cp);
                        break;
                    }
                    default:
                        --pos_;
                        fail("unknown escape");
                }
                continue;
            }
            const size_t n = utf8_length(s_, pos_);
            if (n == 0) fail("invalid UTF-8");
            out.append(s_.substr(pos_, n));
            pos_ += n;
        }
    }

    Json number() {
        const size_t start = pos_;
        bool integral = true;
        if (s_[pos_] == '-') ++pos_;
        const auto digits = [&]() {
            const size_t d = pos_;
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
            if (pos_ == d) fail("expected a digit");
        };
        if (pos_ < s_.size() && s_[pos_] == '0') {
            ++pos_;  // no leading zeros
        } else {
            digits();
        }
        if (pos_ < s_.size() && s_[pos_] == '.') {
            ++pos_;
            integral = false;
            digits();
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            ++pos_;
            integral = false;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
            digits();
        }
        const std::string_view text = s_.substr(start, pos_ - start);
        Json out;
        out.type_ = Json::Type::Number;
        // from_chars, not strtod: strtod reads the process's locale, and the app runs under the
        // user's (in de_DE "0.7" would stop at the '.' and read 0). Out of range: a negative
        // exponent underflows to 0 (as strtod rounds it), anything else is too large.
        const auto [number_end, number_ec] =
            std::from_chars(text.data(), text.data() + text.size(), out.number_);
        if (number_ec == std::errc::result_out_of_range && text.find("e-") == std::string_view::npos &&
            text.find("E-") == std::string_view::npos) {
            pos_ = start;
            fail("number out of range");
        }
        if (number_ec == std::errc::result_out_of_range)
            out.number_ = 0.0;
        else if (number_ec != std::errc() || number_end != text.data() + text.size() ||
                 !std::isfinite(out.number_)) {
            pos_ = start;
            fail("number out of range");
        }
        if (integral) {
            int64_t v = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (ec == std::errc() && end == text.data() + text.size()) out.integer_ = v;
        }
        return out;
    }
};

Json Json::parse(std::string_view text) {
    return JsonParser(text).document();
}

const Json* Json::find(std::string_view key) const {
    for (auto it = members_.rbegin(); it != members_.rend(); ++it)
        if (it->first == key) return &it->second;
    return nullptr;
}

Json& Json::push(Json value) {
    type_ = Type::Array;
    items_.push_back(std::move(value));
    return *this;
}

Json& Json::set(std::string key, Json value) {
    type_ = Type::Object;
    for (auto& m : members_)
        if (m.first == key) {
            m.second = std::move(value);
            return *this;
        }
    members_.emplace_back(std::move(key), std::move(value));
    return *this;
}

std::string json_quote(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const size_t n = utf8_length(s, i);
            if (n == 0) {
                out += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not UTF-8
                ++i;
            } else {
                out.append(s.substr(i, n));
                i += n;
            }
            continue;
        }
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
        ++i;
    }
    out += '"';
    return out;
}

std::string Json::dump() const {
    std::string out;
    dump_to(out);
    return out;
}

void Json::dump_to(std::string& out) const {
    switch (type_) {
        case Type::Null:
            out += "null";
            break;
        case Type::Bool:
            out += bool_ ? "true" : "false";
            break;
        case Type::Number: {
            if (integer_) {
                out += std::to_string(*integer_);
            } else if (!std::isfinite(number_)) {
                out += "null";
            } else if (number_ == 0 && std::signbit(number_)) {
                out += "-0.0";  // "-0" would read back as the integer 0
            } else {
                char buf[32];
                // Shortest text that reads back as the same double.
                auto [end, ec] = std::to_chars(buf, buf + sizeof buf, number_);
                out.append(buf, ec == std::errc() ? end : buf);
            }
            break;
        }
        case Type::String:
            out += json_quote(string_);
            break;
        case Type::Array:
            out += '[';
            for (size_t i = 0; i < items_.size(); ++i) {
                if (i) out += ',';
                items_[i].dump_to(out);
            }
            out += ']';
            break;
        case Type::Object:
            out += '{';
            for (size_t i = 0; i < members_.size(); ++i) {
                if (i) out += ',';
                out += json_quote(members_[i].first);
                out += ':';
                members_[i].second.dump_to(out);
            }
            out += '}';
            break;
    }
}

}  // namespace lantern::server
