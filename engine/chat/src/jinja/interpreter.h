// The tree-walking interpreter of Jinja templates (private). interpreter.cpp runs statements and
// expressions; builtins.cpp holds the filters, tests, globals and Python methods of values.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ast.h"

namespace lantern::jinja {

using Kwargs = std::vector<std::pair<std::string, Value>>;

struct Scope {
    std::map<std::string, Value, std::less<>> vars;
    std::shared_ptr<Scope> parent;
    const Value* find(std::string_view name) const {
        for (const Scope* s = this; s; s = s->parent.get()) {
            auto it = s->vars.find(name);
            if (it != s->vars.end()) return &it->second;
        }
        return nullptr;
    }
};
using ScopeP = std::shared_ptr<Scope>;

// Byte offsets of a UTF-8 string's code points (Python indexes strings by code point).
std::vector<size_t> codepoint_offsets(const std::string& s);
size_t codepoint_count(const std::string& s);

class Interpreter {
public:
    Interpreter(const RenderOptions& options, const Value& context);

    TaggedText run(const Template::Node& root);

    Value eval(const Template::Node& e, const ScopeP& scope);
    Value call(const Value& callee, std::vector<Value>& args, Kwargs& kwargs);
    Value get_attr(const Value& object, const std::string& name);
    Value get_item(const Value& object, const Value& key);
    Value filter(const std::string& name, const Value& subject, std::vector<Value>& args, Kwargs& kwargs);
    bool test(const std::string& name, const Value& subject, std::vector<Value>& args, Kwargs& kwargs);
    // Iteration as jinja2 does it: list items, dict keys, string characters, nothing for undefined.
    List iterate(const Value& v);

    [[noreturn]] void fail(const std::string& message) const;
    void step();
    void check_string(size_t bytes) const;
    void check_list(size_t items) const;
    // Lists and dicts built by a template nest at most kMaxValueDepth levels (printing, comparing
    // and freeing them recurse).
    static constexpr int kMaxValueDepth = 64;
    void check_depth(const Value& v) const;

    const RenderOptions& options() const { return options_; }
    int line() const { return line_; }
    void set_line(int line) { line_ = line; }

    // Rendering a body into `out`, for macros and call blocks (builtins call back into it).
    enum class Flow { Normal, Break, Continue };
    Flow exec(const Body& body, const ScopeP& scope, TaggedText& out);

    Value make_macro(const Template::Node& macro, const ScopeP& defined_in);

    Value binary(const std::string& op, const Value& l, const Value& r);
    bool compare(const std::string& op, const Value& l, const Value& r);

private:
    void emit(TaggedText& out, const TaggedText& text) const;
    void assign(const ScopeP& scope, const std::vector<std::string>& names, const Value& value);
    Value slice(const Value& object, const Value& start, const Value& stop, const Value& step);
    Flow for_loop(const Template::Node& n, const ScopeP& scope, TaggedText& out);
    // A call's, filter's or test's arguments (a[1..] and kw) evaluated.
    void eval_arguments(const Template::Node& n, const ScopeP& scope, std::vector<Value>& args, Kwargs& kw);
    // A filter block's or block set's body rendered, then put through its filters (n.a).
    Value render_filtered(const Template::Node& n, const ScopeP& scope);

    const RenderOptions& options_;
    ScopeP globals_;
    uint64_t steps_ = 0;
    int line_ = 0;
    int depth_ = 0;
    friend struct CallDepth;
};

// A builtin's arguments by position or keyword, with defaults; errors name the builtin `fn`.
struct Arguments {
    Interpreter& in;
    const std::string& fn;
    std::vector<Value>& pos;
    Kwargs& kw;
    Value get(size_t index, const char* name, Value dflt = Value::none()) const;
    bool flag(size_t index, const char* name, bool dflt) const;
    int64_t integer(size_t index, const char* name, int64_t dflt) const;
    TaggedText string(size_t index, const char* name) const;
};

// Python's ordering for sort(), min(), max(), dictsort(); throws via `in` for unorderable types.
int python_compare(Interpreter& in, const Value& a, const Value& b, bool case_sensitive);
std::string ascii_lower(std::string s);

std::string html_escape(const std::string& s);  // markupsafe.escape

// Python's string operations on tagged text (builtins.cpp), shared with the filters.
bool is_space_byte(char c);
TaggedText strip(const TaggedText& s, const Value& chars, bool left, bool right);
std::string case_map(std::string s, int mode);  // 0 lower, 1 upper (ASCII letters)
std::string title_case(const std::string& s);
Value retext(const TaggedText& s, std::string text);
TaggedText replace_all(Interpreter& in, const TaggedText& s, const TaggedText& old, const TaggedText& with,
                       int64_t count);
Value global_function(const std::string& name);

}  // namespace lantern::jinja
