// Lexer and parser of Jinja templates, following jinja2's grammar and its lexer's whitespace rules
// under trim_blocks and lstrip_blocks (as Hugging Face configures it).
#include <cstring>

#include "ast.h"

namespace lantern::jinja {

namespace {

constexpr int kMaxNesting = 128;  // nested expressions and blocks: deeper templates are refused

enum class Tok { Data, BlockBegin, BlockEnd, VarBegin, VarEnd, Name, String, Int, Float, Op, Eof };

struct Token {
    Tok type;
    std::string text;  // Data and String: the value; Name, Op: the spelling
    int64_t i = 0;
    double d = 0;
    int line = 1;
    int column = 1;
};

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Python's unicode-escape decoding of a string literal's body.
std::string unescape(std::string_view s, int line, int column) {
    std::string out;
    const auto utf8 = [&](uint32_t cp) {
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
    };
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        const auto hex = [&](int digits) {
            if (i + static_cast<size_t>(digits) >= s.size())
                throw TemplateError("truncated \\" + std::string(1, c) + " escape in a string", line, column);
            uint32_t v = 0;
            for (int k = 0; k < digits; ++k) {
                const char h = s[i + 1 + static_cast<size_t>(k)];
                v <<= 4;
                if (h >= '0' && h <= '9') {
                    v |= static_cast<uint32_t>(h - '0');
                } else if (h >= 'a' && h <= 'f') {
                    v |= static_cast<uint32_t>(h - 'a' + 10);
                } else if (h >= 'A' && h <= 'F') {
                    v |= static_cast<uint32_t>(h - 'A' + 10);
                } else {
                    throw TemplateError("truncated \\" + std::string(1, c) + " escape in a string", line,
                                        column);
                }
            }
            i += static_cast<size_t>(digits);
            if (v > 0x10FFFF) throw TemplateError("illegal Unicode character in a string", line, column);
            utf8(v);
        };
        switch (c) {
            case '\n':
                break;
            case '\\':
                out += '\\';
                break;
            case '\'':
                out += '\'';
                break;
            case '"':
                out += '"';
                break;
            case 'a':
                out += '\a';
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
            case 'v':
                out += '\v';
                break;
            case 'x':
                hex(2);
                break;
            case 'u':
                hex(4);
                break;
            case 'U':
                hex(8);
                break;
            default:
                if (c >= '0' && c <= '7') {
                    uint32_t v = static_cast<uint32_t>(c - '0');
                    for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
                        v = v * 8 + static_cast<uint32_t>(s[++i] - '0');
                    utf8(v);
                } else {
                    out += '\\';
                    out += c;
                }
        }
    }
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string_view source) {
        src_.reserve(source.size());
        for (size_t i = 0; i < source.size(); ++i) {
            if (source[i] == '\r') {
                src_ += '\n';
                if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
            } else {
                src_ += source[i];
            }
        }
        if (!src_.empty() && src_.back() == '\n') src_.pop_back();  // keep_trailing_newline=False
    }

    std::vector<Token> run() {
        bool line_starting = true;
        while (pos_ < src_.size()) {
            const size_t tag = find_tag(pos_);
            std::string data = src_.substr(pos_, tag - pos_);
            const int data_line = line_;
            const int data_col = col_;
            advance_to(tag);
            if (tag == src_.size()) {
                push_data(std::move(data), data_line, data_col);
                break;
            }
            const char kind = src_[tag + 1];  // '{', '%', '#'
            const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
            if (sign == '-') {
                while (!data.empty() && is_space(data.back())) data.pop_back();
            } else if (sign != '+' && kind != '{') {
                const size_t nl = data.rfind('\n');
                const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
                if ((l_pos > 0 || line_starting) && l_pos < data.size()) {
                    bool all_space = true;
                    for (size_t k = l_pos; k < data.size(); ++k) all_space = all_space && is_space(data[k]);
                    if (all_space) data.resize(l_pos);
                }
            }
            push_data(std::move(data), data_line, data_col);
            if (kind == '#') {
                line_starting = comment(tag, sign);
            } else if (kind == '%' && raw_begins(tag)) {
                line_starting = raw(tag);
            } else {
                line_starting = tag_tokens(tag, kind, sign);
            }
        }
        tokens_.push_back({Tok::Eof, "", 0, 0, line_, col_});
        return std::move(tokens_);
    }

private:
    size_t find_tag(size_t from) const {
        for (size_t i = from; i + 1 < src_.size(); ++i) {
            if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return src_.size();
    }
    void advance_to(size_t to) {
        for (; pos_ < to; ++pos_) {
            if (src_[pos_] == '\n') {
                ++line_;
                col_ = 1;
            } else {
                ++col_;
            }
        }
    }
    void push_data(std::string data, int line, int column) {
        if (data.empty()) return;
        tokens_.push_back({Tok::Data, std::move(data), 0, 0, line, column});
    }
    [[noreturn]] void fail(const std::string& message) const { throw TemplateError(message, line_, col_); }

    // After a tag's end: `-` strips all whitespace after it; block and comment ends take one
    // newline (trim_blocks). Returns whether what it consumed ends with a newline.
    bool tag_end(size_t end_at, size_t end_len, bool strip, bool trim) {
        advance_to(end_at + end_len);
        bool newline = false;
        if (strip) {
            while (pos_ < src_.size() && is_space(src_[pos_])) {
                newline = src_[pos_] == '\n';
                advance_to(pos_ + 1);
            }
        } else if (trim && pos_ < src_.size() && src_[pos_] == '\n') {
            advance_to(pos_ + 1);
            newline = true;
        }
        return newline;
    }

    bool comment(size_t tag, char sign) {
        const size_t body = tag + 2 + (sign == '-' || sign == '+' ? 1 : 0);
        const size_t end = src_.find("#}", body);
        if (end == std::string::npos) fail("missing end of comment tag");
        const bool strip = end > body && src_[end - 1] == '-';
        return tag_end(end, 2, strip, true);
    }

    // `{% raw %}` (with optional -/+ signs).
    bool raw_begins(size_t tag) const {
        size_t i = tag + 2;
        if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
        while (i < src_.size() && is_space(src_[i])) ++i;
        if (src_.compare(i, 3, "raw") != 0) return false;
        i += 3;
        while (i < src_.size() && is_space(src_[i])) ++i;
        if (i < src_.size() && src_[i] == '-') ++i;
        return src_.compare(i, 2, "%}") == 0;
    }

    bool raw(size_t tag) {
        size_t i = tag + 2;
        if (src_[i] == '-' || src_[i] == '+') ++i;
        while (is_space(src_[i])) ++i;
        i += 3;
        while (is_space(src_[i])) ++i;
        bool strip = false;
        if (src_[i] == '-') {
            strip = true;
            ++i;
        }
        tag_end(i, 2, strip, false);
        // Find {%[-+]? endraw [-+]?%}
        for (size_t k = pos_; k + 1 < src_.size(); ++k) {
            if (src_[k] != '{' || src_[k + 1] != '%') continue;
            size_t j = k + 2;
            const char sign = j < src_.size() ? src_[j] : '\0';
            if (sign == '-' || sign == '+') ++j;
            while (j < src_.size() && is_space(src_[j])) ++j;
            if (src_.compare(j, 6, "endraw") != 0) continue;
            j += 6;
            while (j < src_.size() && is_space(src_[j])) ++j;
            char end_sign = '\0';
            if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) end_sign = src_[j++];
            if (src_.compare(j, 2, "%}") != 0) continue;
            std::string data = src_.substr(pos_, k - pos_);
            if (sign == '-') {
                while (!data.empty() && is_space(data.back())) data.pop_back();
            } else if (sign != '+') {
                const size_t nl = data.rfind('\n');
                if (nl != std::string::npos) {
                    bool all_space = nl + 1 < data.size();
                    for (size_t q = nl + 1; q < data.size(); ++q) all_space = all_space && is_space(data[q]);
                    if (all_space) data.resize(nl + 1);
                }
            }
            const int l = line_, c = col_;
            push_data(std::move(data), l, c);
            return tag_end(j, 2, end_sign == '-', end_sign != '+');
        }
        fail("missing {% endraw %}");
    }

    // The tokens of a {{ }} or {% %} tag. Returns whether its end consumed a newline.
    bool tag_tokens(size_t tag, char kind, char sign) {
        const bool block = kind == '%';
        tokens_.push_back({block ? Tok::BlockBegin : Tok::VarBegin, "", 0, 0, line_, col_});
        advance_to(tag + 2 + (sign == '-' || sign == '+' ? 1 : 0));
        int depth = 0;
        while (true) {
            while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
            if (pos_ >= src_.size())
                fail(block ? "missing end of block tag %}" : "missing end of variable tag }}");
            const char end_char = block ? '%' : '}';
            if (depth == 0) {
                size_t at = pos_;
                char end_sign = '\0';
                const std::string closing{end_char, '}'};
                if ((src_[at] == '-' || src_[at] == '+') && src_.compare(at + 1, 2, closing) == 0) {
                    end_sign = src_[at];
                    ++at;
                }
                if (src_.compare(at, 2, closing) == 0) {
                    tokens_.push_back({block ? Tok::BlockEnd : Tok::VarEnd, "", 0, 0, line_, col_});
                    return tag_end(at, 2, end_sign == '-', block && end_sign != '+');
                }
            }
            lex_one(depth);
        }
    }

    void lex_one(int& depth) {
        const int line = line_, col = col_;
        const char c = src_[pos_];
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
            static_cast<unsigned char>(c) >= 0x80) {
            size_t e = pos_;
            while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_' ||
                                       static_cast<unsigned char>(src_[e]) >= 0x80))
                ++e;
            tokens_.push_back({Tok::Name, src_.substr(pos_, e - pos_), 0, 0, line, col});
            advance_to(e);
            return;
        }
        if (std::isdigit(static_cast<unsigned char>(c))) {
            size_t e = pos_;
            const auto digits = [&] {
                const size_t start = e;
                while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) ||
                                           (src_[e] == '_' && e + 1 < src_.size() &&
                                            std::isdigit(static_cast<unsigned char>(src_[e + 1])))))
                    ++e;
                return e > start;
            };
            digits();
            bool is_float = false;
            if (e + 1 < src_.size() && src_[e] == '.' &&
                std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
                ++e;
                digits();
                is_float = true;
            }
            if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
                size_t save = e;
                ++e;
                if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
                if (digits()) {
                    is_float = true;
                } else {
                    e = save;
                }
            }
            std::string spelled;
            for (size_t k = pos_; k < e; ++k) {
                if (src_[k] != '_') spelled += src_[k];
            }
            Token t{is_float ? Tok::Float : Tok::Int, spelled, 0, 0, line, col};
            if (is_float) {
                t.d = std::strtod(spelled.c_str(), nullptr);
            } else {
                errno = 0;
                t.i = std::strtoll(spelled.c_str(), nullptr, 10);
                if (errno == ERANGE) fail("integer literal too large");
            }
            tokens_.push_back(std::move(t));
            advance_to(e);
            return;
        }
        if (c == '\'' || c == '"') {
            size_t e = pos_ + 1;
            while (e < src_.size() && src_[e] != c) e += src_[e] == '\\' ? 2 : 1;
            if (e >= src_.size()) fail("unterminated string");
            tokens_.push_back({Tok::String,
                               unescape(std::string_view(src_).substr(pos_ + 1, e - pos_ - 1), line, col), 0,
                               0, line, col});
            advance_to(e + 1);
            return;
        }
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/",
                                           "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                           "<",  ">",  "=",  ".",  ":",  "|",  ",", ";"};
        for (const char* op : kOps) {
            const size_t n = std::strlen(op);
            if (src_.compare(pos_, n, op) == 0) {
                if (op[0] == '(' || op[0] == '[' || op[0] == '{') ++depth;
                if (op[0] == ')' || op[0] == ']' || op[0] == '}') {
                    if (depth == 0) fail(std::string("unexpected '") + op + "'");
                    --depth;
                }
                tokens_.push_back({Tok::Op, op, 0, 0, line, col});
                advance_to(pos_ + n);
                return;
            }
        }
        fail(std::string("unexpected character '") + c + "'");
    }

    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    int col_ = 1;
    std::vector<Token> tokens_;
};

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

    NodeP parse() {
        auto root = node(Template::Node::Kind::Scope, t_[0]);
        std::string end;
        root->bodies.push_back(body({}, end));
        return root;
    }

private:
    using Kind = Template::Node::Kind;
    using MNode = std::shared_ptr<Template::Node>;

    const Token& cur() const { return t_[i_]; }
    const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
    bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
    bool is_name(const char* name) const { return cur().type == Tok::Name && cur().text == name; }
    [[noreturn]] void fail(const std::string& message) const {
        throw TemplateError(message, cur().line, cur().column);
    }
    [[noreturn]] void fail_at(const std::string& message, const Token& at) const {
        throw TemplateError(message, at.line, at.column);
    }
    void expect_op(const char* op) {
        if (!is_op(op)) fail(std::string("expected '") + op + "'" + found());
        ++i_;
    }
    std::string found() const {
        switch (cur().type) {
            case Tok::BlockEnd:
                return ", found the end of the tag";
            case Tok::VarEnd:
                return ", found the end of the print tag";
            case Tok::Eof:
                return ", found the end of the template";
            case Tok::String:
                return ", found a string";
            default:
                return ", found '" + cur().text + "'";
        }
    }
    std::string expect_name() {
        if (cur().type != Tok::Name) fail("expected a name" + found());
        return t_[i_++].text;
    }
    void expect_block_end() {
        if (cur().type != Tok::BlockEnd) fail("expected the end of the tag" + found());
        ++i_;
    }
    MNode node(Kind k, const Token& at) const {
        auto n = std::make_shared<Template::Node>();
        n->kind = k;
        n->line = at.line;
        n->column = at.column;
        return n;
    }
    struct DepthGuard {
        explicit DepthGuard(Parser& p) : p_(p) {
            if (++p_.depth_ > kMaxNesting)
                p_.fail("the template nests deeper than " + std::to_string(kMaxNesting) + " levels");
        }
        ~DepthGuard() { --p_.depth_; }
        Parser& p_;
    };

    // Statements until a block tag named in `ends` (which is consumed up to its name; `end`
    // receives it). With no ends, until the end of the template.
    Body body(const std::vector<std::string>& ends, std::string& end) {
        DepthGuard guard(*this);
        Body out;
        while (true) {
            const Token& t = cur();
            switch (t.type) {
                case Tok::Eof:
                    if (!ends.empty()) fail("unexpected end of template; expected {% " + ends[0] + " %}");
                    return out;
                case Tok::Data: {
                    auto n = node(Kind::Data, t);
                    n->value = Value(t.text, kTrusted);
                    out.push_back(n);
                    ++i_;
                    break;
                }
                case Tok::VarBegin: {
                    ++i_;
                    auto n = node(Kind::Print, t);
                    n->a.push_back(tuple_expr(true));
                    if (cur().type != Tok::VarEnd) fail("expected the end of the print tag }}" + found());
                    ++i_;
                    out.push_back(n);
                    break;
                }
                case Tok::BlockBegin: {
                    ++i_;
                    if (cur().type != Tok::Name) fail("expected a statement name" + found());
                    const std::string name = cur().text;
                    for (const auto& e : ends) {
                        if (name == e) {
                            ++i_;
                            end = name;
                            return out;
                        }
                    }
                    out.push_back(statement());
                    break;
                }
                default:
                    fail("unexpected token" + found());
            }
        }
    }

    NodeP statement() {
        const Token& at = cur();
        const std::string name = expect_name();
        if (name == "if") return if_statement(at);
        if (name == "for") return for_statement(at);
        if (name == "set") return set_statement(at);
        if (name == "macro") return macro_statement(at);
        if (name == "call") return call_statement(at);
        if (name == "filter") {
            auto n = node(Kind::FilterBlock, at);
            n->a = filter_chain();
            expect_block_end();
            std::string end;
            n->bodies.push_back(body({"endfilter"}, end));
            expect_block_end();
            return n;
        }
        if (name == "break" || name == "continue") {
            if (loops_ == 0) fail_at("'" + name + "' outside a loop", at);
            auto n = node(name == "break" ? Kind::Break : Kind::Continue, at);
            expect_block_end();
            return n;
        }
        if (name == "generation") {
            auto n = node(Kind::Scope, at);
            expect_block_end();
            std::string end;
            n->bodies.push_back(body({"endgeneration"}, end));
            expect_block_end();
            return n;
        }
        fail_at("unknown tag '" + name + "'" +
                    (name == "include" || name == "import" || name == "extends" || name == "from" ||
                             name == "block"
                         ? " (templates that load other templates are not supported)"
                         : ""),
                at);
    }

    NodeP if_statement(const Token& at) {
        auto n = node(Kind::If, at);
        n->a.push_back(expression(true));
        expect_block_end();
        while (true) {
            std::string end;
            n->bodies.push_back(body({"elif", "else", "endif"}, end));
            if (end == "elif") {
                n->a.push_back(expression(true));
                expect_block_end();
                continue;
            }
            if (end == "else") {
                expect_block_end();
                n->flag = true;
                n->bodies.push_back(body({"endif"}, end));
            }
            expect_block_end();
            return n;
        }
    }

    std::vector<std::string> targets() {
        std::vector<std::string> names;
        const bool paren = is_op("(");
        if (paren) ++i_;
        names.push_back(expect_name());
        while (is_op(",")) {
            ++i_;
            if (cur().type != Tok::Name) break;
            names.push_back(expect_name());
        }
        if (paren) expect_op(")");
        return names;
    }

    NodeP for_statement(const Token& at) {
        auto n = node(Kind::For, at);
        n->names = targets();
        if (!is_name("in")) fail("expected 'in'" + found());
        ++i_;
        n->a.push_back(tuple_expr(false));
        n->a.push_back(nullptr);
        if (is_name("if")) {
            ++i_;
            n->a[1] = expression(true);
        }
        if (is_name("recursive")) fail("recursive loops are not supported");
        expect_block_end();
        ++loops_;
        std::string end;
        n->bodies.push_back(body({"else", "endfor"}, end));
        --loops_;
        if (end == "else") {
            expect_block_end();
            n->bodies.push_back(body({"endfor"}, end));
        } else {
            n->bodies.emplace_back();
        }
        expect_block_end();
        return n;
    }

    NodeP set_statement(const Token& at) {
        const std::string first = expect_name();
        if (is_op(".")) {
            ++i_;
            auto n = node(Kind::Set, at);
            n->names.push_back(first);
            n->attr = expect_name();
            expect_op("=");
            n->a.push_back(tuple_expr(true));
            expect_block_end();
            return n;
        }
        std::vector<std::string> names{first};
        while (is_op(",")) {
            ++i_;
            names.push_back(expect_name());
        }
        if (is_op("=")) {
            ++i_;
            auto n = node(Kind::Set, at);
            n->names = names;
            n->a.push_back(tuple_expr(true));
            expect_block_end();
            return n;
        }
        if (names.size() != 1) fail("expected '='" + found());
        auto n = node(Kind::SetBlock, at);
        n->names = names;
        if (is_op("|")) n->a = filter_chain();
        expect_block_end();
        std::string end;
        n->bodies.push_back(body({"endset"}, end));
        expect_block_end();
        return n;
    }

    // Parameters of a macro or a call block: names with optional defaults.
    void parameters(const MNode& n) {
        expect_op("(");
        while (!is_op(")")) {
            if (!n->names.empty()) expect_op(",");
            if (is_op(")")) break;
            n->names.push_back(expect_name());
            if (is_op("=")) {
                ++i_;
                n->a.push_back(expression(true));
            } else {
                n->a.push_back(nullptr);
            }
        }
        ++i_;
    }

    NodeP macro_statement(const Token& at) {
        auto n = node(Kind::Macro, at);
        n->name = expect_name();
        parameters(n);
        expect_block_end();
        const int saved = loops_;
        loops_ = 0;
        std::string end;
        n->bodies.push_back(body({"endmacro"}, end));
        loops_ = saved;
        if (cur().type == Tok::Name) ++i_;  // {% endmacro name %}
        expect_block_end();
        return n;
    }

    NodeP call_statement(const Token& at) {
        auto n = node(Kind::CallBlock, at);
        n->a.push_back(nullptr);
        if (is_op("(")) {
            auto params = node(Kind::CallBlock, at);
            parameters(params);
            n->names = params->names;
            n->a.insert(n->a.end(), params->a.begin(), params->a.end());
        }
        auto call = expression(true);
        if (call->kind != Kind::Call) fail_at("expected a call after 'call'", at);
        n->a[0] = call;
        expect_block_end();
        std::string end;
        n->bodies.push_back(body({"endcall"}, end));
        expect_block_end();
        return n;
    }

    // `| f(args) | g` for filter blocks and block sets: filters with no subject.
    std::vector<NodeP> filter_chain() {
        std::vector<NodeP> out;
        if (is_op("|")) ++i_;
        out.push_back(filter(nullptr));
        while (is_op("|")) {
            ++i_;
            out.push_back(filter(nullptr));
        }
        return out;
    }

    // ---- expressions (jinja2's precedence) ----

    NodeP tuple_expr(bool with_condexpr) {
        const Token& at = cur();
        NodeP first = expression(with_condexpr);
        if (!is_op(",")) return first;
        auto n = node(Kind::TupleLit, at);
        n->a.push_back(first);
        while (is_op(",")) {
            ++i_;
            if (cur().type == Tok::BlockEnd || cur().type == Tok::VarEnd || is_op(")") || is_op("=")) break;
            n->a.push_back(expression(with_condexpr));
        }
        return n;
    }

    NodeP expression(bool with_condexpr) {
        DepthGuard guard(*this);
        NodeP e = or_expr();
        if (!with_condexpr) return e;
        while (is_name("if")) {
            const Token& at = cur();
            ++i_;
            auto n = node(Kind::Cond, at);
            n->a.push_back(e);
            n->a.push_back(or_expr());
            if (is_name("else")) {
                ++i_;
                n->a.push_back(expression(true));
            } else {
                n->a.push_back(nullptr);
            }
            e = n;
        }
        return e;
    }

    NodeP binary(const char* op, NodeP l, NodeP r, const Token& at) {
        auto n = node(Kind::Binary, at);
        n->name = op;
        n->a = {std::move(l), std::move(r)};
        return n;
    }

    NodeP or_expr() {
        NodeP l = and_expr();
        while (is_name("or")) {
            const Token& at = cur();
            ++i_;
            l = binary("or", l, and_expr(), at);
        }
        return l;
    }
    NodeP and_expr() {
        NodeP l = not_expr();
        while (is_name("and")) {
            const Token& at = cur();
            ++i_;
            l = binary("and", l, not_expr(), at);
        }
        return l;
    }
    NodeP not_expr() {
        if (is_name("not")) {
            DepthGuard guard(*this);
            auto n = node(Kind::Unary, cur());
            ++i_;
            n->name = "not";
            n->a.push_back(not_expr());
            return n;
        }
        return compare();
    }
    NodeP compare() {
        const Token& at = cur();
        NodeP first = math1();
        std::shared_ptr<Template::Node> n;
        while (true) {
            std::string op;
            if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                          cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
                op = cur().text;
                ++i_;
            } else if (is_name("in")) {
                op = "in";
                ++i_;
            } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
                op = "not in";
                i_ += 2;
            } else {
                break;
            }
            if (!n) {
                n = node(Kind::Compare, at);
                n->a.push_back(first);
            }
            n->names.push_back(op);
            n->a.push_back(math1());
        }
        return n ? NodeP(n) : first;
    }
    NodeP math1() {
        NodeP l = concat();
        while (is_op("+") || is_op("-")) {
            const Token& at = cur();
            const char* op = cur().text == "+" ? "+" : "-";
            ++i_;
            l = binary(op, l, concat(), at);
        }
        return l;
    }
    NodeP concat() {
        NodeP l = math2();
        while (is_op("~")) {
            const Token& at = cur();
            ++i_;
            l = binary("~", l, math2(), at);
        }
        return l;
    }
    NodeP math2() {
        NodeP l = power();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& at = cur();
            const std::string op = cur().text;
            ++i_;
            auto n = node(Kind::Binary, at);
            n->name = op;
            n->a = {l, power()};
            l = n;
        }
        return l;
    }
    NodeP power() {
        NodeP l = unary(true);
        while (is_op("**")) {
            const Token& at = cur();
            ++i_;
            l = binary("**", l, unary(true), at);
        }
        return l;
    }
    NodeP unary(bool with_filter) {
        DepthGuard guard(*this);
        NodeP n;
        if (is_op("-") || is_op("+")) {
            auto u = node(Kind::Unary, cur());
            u->name = cur().text;
            ++i_;
            u->a.push_back(unary(false));
            n = u;
        } else {
            n = primary();
        }
        n = postfix(n);
        if (with_filter) n = filter_expr(n);
        return n;
    }

    NodeP primary() {
        const Token& t = cur();
        switch (t.type) {
            case Tok::Name: {
                ++i_;
                if (t.text == "true" || t.text == "True") return literal(Value(true), t);
                if (t.text == "false" || t.text == "False") return literal(Value(false), t);
                if (t.text == "none" || t.text == "None") return literal(Value::none(), t);
                auto n = node(Kind::Name, t);
                n->name = t.text;
                return n;
            }
            case Tok::String: {
                std::string s = t.text;
                ++i_;
                while (cur().type == Tok::String) s += t_[i_++].text;
                return literal(Value(std::move(s), kTrusted), t);
            }
            case Tok::Int:
                ++i_;
                return literal(Value(t.i), t);
            case Tok::Float:
                ++i_;
                return literal(Value(t.d), t);
            case Tok::Op:
                if (t.text == "(") {
                    ++i_;
                    if (is_op(")")) {
                        ++i_;
                        auto n = node(Kind::TupleLit, t);
                        return n;
                    }
                    NodeP e = expression(true);
                    if (is_op(",")) {
                        auto n = node(Kind::TupleLit, t);
                        n->a.push_back(e);
                        while (is_op(",")) {
                            ++i_;
                            if (is_op(")")) break;
                            n->a.push_back(expression(true));
                        }
                        e = n;
                    }
                    expect_op(")");
                    return e;
                }
                if (t.text == "[") {
                    ++i_;
                    auto n = node(Kind::ListLit, t);
                    while (!is_op("]")) {
                        if (!n->a.empty()) expect_op(",");
                        if (is_op("]")) break;
                        n->a.push_back(expression(true));
                    }
                    ++i_;
                    return n;
                }
                if (t.text == "{") {
                    ++i_;
                    auto n = node(Kind::DictLit, t);
                    while (!is_op("}")) {
                        if (!n->a.empty()) expect_op(",");
                        if (is_op("}")) break;
                        n->a.push_back(expression(true));
                        expect_op(":");
                        n->a.push_back(expression(true));
                    }
                    ++i_;
                    return n;
                }
                break;
            default:
                break;
        }
        fail("unexpected token" + found());
    }

    NodeP literal(Value v, const Token& at) const {
        auto n = node(Kind::Literal, at);
        n->value = std::move(v);
        return n;
    }

    NodeP postfix(NodeP n) {
        while (true) {
            DepthGuard guard(*this);
            const Token& at = cur();
            if (is_op(".")) {
                ++i_;
                if (cur().type == Tok::Int) {
                    auto g = node(Kind::GetItem, at);
                    g->a = {n, literal(Value(cur().i), cur())};
                    ++i_;
                    n = g;
                } else {
                    auto g = node(Kind::GetAttr, at);
                    g->a.push_back(n);
                    g->name = expect_name();
                    n = g;
                }
            } else if (is_op("[")) {
                ++i_;
                n = subscript(n, at);
            } else if (is_op("(")) {
                n = call(n);
            } else {
                return n;
            }
        }
    }

    NodeP subscript(NodeP object, const Token& at) {
        std::vector<NodeP> parts;
        bool is_slice = false;
        NodeP slice[3];
        int part = 0;
        if (!is_op(":")) slice[0] = expression(true);
        while (is_op(":")) {
            is_slice = true;
            ++i_;
            if (++part > 2) fail("a slice takes at most three parts");
            if (!is_op(":") && !is_op("]")) slice[part] = expression(true);
        }
        if (is_slice) {
            expect_op("]");
            auto n = node(Kind::Slice, at);
            n->a = {object, slice[0], slice[1], slice[2]};
            return n;
        }
        NodeP key = slice[0];
        if (is_op(",")) {
            auto t = node(Kind::TupleLit, at);
            t->a.push_back(key);
            while (is_op(",")) {
                ++i_;
                if (is_op("]")) break;
                t->a.push_back(expression(true));
            }
            key = t;
        }
        expect_op("]");
        auto n = node(Kind::GetItem, at);
        n->a = {object, key};
        return n;
    }

    void call_args(const MNode& n) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
            if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
                std::string key = cur().text;
                i_ += 2;
                n->kw.emplace_back(std::move(key), expression(true));
            } else {
                if (!n->kw.empty()) fail("a positional argument after keyword arguments");
                n->a.push_back(expression(true));
            }
        }
        ++i_;
    }

    NodeP call(NodeP callee) {
        auto n = node(Kind::Call, cur());
        n->a.push_back(callee);
        call_args(n);
        return n;
    }

    NodeP filter(NodeP subject) {
        const Token& at = cur();
        auto n = node(Kind::Filter, at);
        n->a.push_back(subject);
        n->name = expect_name();
        while (is_op(".")) {
            ++i_;
            n->name += "." + expect_name();
        }
        if (is_op("(")) call_args(n);
        return n;
    }

    NodeP filter_expr(NodeP n) {
        while (true) {
            DepthGuard guard(*this);
            if (is_op("|")) {
                ++i_;
                n = filter(n);
            } else if (is_name("is")) {
                const Token& at = cur();
                ++i_;
                auto t = node(Kind::Test, at);
                if (is_name("not")) {
                    ++i_;
                    t->flag = true;
                }
                t->a.push_back(n);
                t->name = expect_name();
                while (is_op(".")) {
                    ++i_;
                    t->name += "." + expect_name();
                }
                if (is_op("(")) {
                    call_args(t);
                } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Int ||
                            cur().type == Tok::Float || is_op("(") || is_op("[") || is_op("{")) &&
                           !is_name("else") && !is_name("or") && !is_name("and")) {
                    if (is_name("is")) fail("you cannot chain multiple tests with 'is'");
                    t->a.push_back(postfix(primary()));
                }
                n = t;
            } else if (is_op("(")) {
                n = call(n);
            } else {
                return n;
            }
        }
    }

    std::vector<Token> t_;
    size_t i_ = 0;
    int depth_ = 0;
    int loops_ = 0;
};

}  // namespace

NodeP parse_template(std::string_view source) {
    Lexer lexer(source);
    Parser parser(lexer.run());
    return parser.parse();
}

Template Template::parse(std::string_view source) {
    Template t;
    t.root_ = parse_template(source);
    return t;
}

}  // namespace lantern::jinja
