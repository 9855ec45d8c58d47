// lantern/jinja.h — a Jinja2 interpreter for chat templates, rendering as Hugging Face's
// transformers does (jinja2's ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the
// loop controls, `tojson` as json.dumps, `raise_exception`, `strftime_now`).
//
//   auto t = jinja::Template::parse(source);          // throws jinja::TemplateError (line:column)
//   jinja::Object ctx;  ctx.set("messages", ...);     // values: jinja::Value::from_json, or built
//   jinja::TaggedText out = t.render(ctx);            // throws jinja::TemplateError
//
// Every byte of a rendered string remembers where it came from (its tag): 0 for the template's own
// literal text and values the caller marks as trusted (bos_token), other tags for data (message
// text). Chat rendering turns only tag-0 text into special tokens, so nothing a user typed can
// become a control token, and finds each reply's text by its tag to put back the reply's own ids.
//
// Bounded on any input: a step budget, a cap on every string and list, a nesting limit — a
// template that exceeds them fails with TemplateError, it does not hang or exhaust memory.
// Thread-safe to render one parsed Template from several threads (rendering never mutates it).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lantern::jinja {

// A parse or render error; what() is "line L, column C: message" (column only for parse errors).
class TemplateError : public std::runtime_error {
public:
    TemplateError(std::string message, int line, int column);
    int line() const { return line_; }
    int column() const { return column_; }
    const std::string& message() const { return message_; }

private:
    std::string message_;
    int line_;
    int column_;
};

constexpr uint32_t kTrusted = 0;  // the template's literal text and trusted values
constexpr uint32_t kData = 1;     // ordinary data; callers may use tags >= 2 to find their values

// A string with a tag per byte, stored as runs.
struct TaggedText {
    struct Run {
        size_t start;  // byte offset where this tag begins; runs are sorted, the first starts at 0
        uint32_t tag;
    };
    std::string text;
    std::vector<Run> runs;

    TaggedText() = default;
    TaggedText(std::string s, uint32_t tag);
    void append(const TaggedText& other);
    void append(std::string_view s, uint32_t tag);
    TaggedText substr(size_t offset, size_t length) const;
    uint32_t tag_at(size_t offset) const;
    // Whether every byte in [offset, offset + length) carries `tag`.
    bool all_tagged(size_t offset, size_t length, uint32_t tag) const;
};

class Value;
using List = std::vector<Value>;
struct Dict;
struct Callable;
class Interpreter;

// A Python-like value: undefined, None, bool, int, float, str, list (or tuple), dict (ordered,
// also namespace objects), or a callable (macro, builtin, bound method).
class Value {
public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

    Value() = default;  // undefined
    static Value undefined(std::string name = {});
    static Value none();
    Value(bool b);
    Value(int64_t i);
    Value(int i) : Value(static_cast<int64_t>(i)) {}
    Value(double d);
    Value(TaggedText s);
    Value(std::string s, uint32_t tag = kData);
    Value(const char* s, uint32_t tag = kData) : Value(std::string(s), tag) {}
    static Value list(List items = {}, bool tuple = false);
    static Value dict();
    static Value namespace_object();
    static Value function(
        std::string name,
        std::function<Value(Interpreter&, std::vector<Value>&, std::vector<std::pair<std::string, Value>>&)>
            fn);
    // JSON → values; every string gets `tag`.
    static Value from_json(const nlohmann::ordered_json& json, uint32_t tag = kData);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
    bool is_tuple() const;
    // A generator (what jinja2's map, select, unique, reverse... return): iterable, always true,
    // without len() or JSON. `generator()` marks a list as one.
    bool is_generator() const { return kind_ == Kind::List && generator_; }
    Value generator() const;
    // A Markup string (from `safe` or `escape`): `+` with a plain string escapes that string.
    bool is_markup() const { return kind_ == Kind::String && markup_; }
    Value markup() const;
    bool is_namespace() const;

    bool as_bool() const { return b_; }
    int64_t as_int() const { return i_; }
    double as_float() const { return kind_ == Kind::Int ? static_cast<double>(i_) : d_; }
    const TaggedText& as_string() const;
    const std::string& text() const { return as_string().text; }
    List& items() const;  // list or tuple elements
    Dict& entries() const;
    Callable& callable() const;
    const std::string& undefined_name() const;

    // Mutating helpers for building contexts.
    void push_back(Value v) const;
    void set(const std::string& key, Value v) const;

    bool truthy() const;
    // How deeply lists and dicts nest inside this value (0 for scalars).
    int depth() const;
    // Whether `dict` is this value or inside it (namespaces must not come to contain themselves).
    bool contains(const Dict& dict) const;

private:
    Kind kind_ = Kind::Undefined;
    bool b_ = false;
    int64_t i_ = 0;
    double d_ = 0;
    bool tuple_ = false;
    bool generator_ = false;
    bool markup_ = false;
    int depth_ = 0;                    // lists; dicts keep theirs in Dict
    std::shared_ptr<TaggedText> str_;  // a string, or an undefined value's name
    std::shared_ptr<List> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<Callable> fn_;
};

struct Dict {
    std::vector<std::pair<Value, Value>> entries;  // insertion order, keys unique by ==
    bool is_namespace = false;
    int depth = 1;
    Value* find(const Value& key);
    const Value* find_string(std::string_view key) const;
    void set(Value key, Value value);
};

struct Callable {
    std::string name;
    std::function<Value(Interpreter&, std::vector<Value>&, std::vector<std::pair<std::string, Value>>&)> fn;
};

// Python semantics the interpreter and its builtins share.
bool equals(const Value& a, const Value& b);
std::string to_str(const Value& v);  // str(v): None → "None", True → "True", lists as repr
TaggedText to_tagged_str(const Value& v);
std::string repr(const Value& v);
// json.dumps(v, ensure_ascii=False, indent=indent (negative: None), separators=(item_sep,
// key_sep) (empty: Python's defaults), sort_keys=sort_keys).
std::string to_json(const Value& v, int indent = -1, bool sort_keys = false, const std::string& item_sep = {},
                    const std::string& key_sep = {});

struct RenderLimits {
    uint64_t max_steps = 5'000'000;       // expression and statement evaluations
    size_t max_string_bytes = 16u << 20;  // any string, the output included
    size_t max_list_items = 1u << 20;     // any list or range()
    int max_depth = 200;                  // nested calls (macros, recursion)
};

struct RenderOptions {
    RenderLimits limits;
    // strftime_now(format): the local time formatted as C's strftime; the current time if empty.
    std::function<std::string(const std::string& format)> strftime_now;
};

class Template {
public:
    // Parses `source` as jinja2 does with trim_blocks and lstrip_blocks (a trailing newline of the
    // source is dropped, "\r\n" read as "\n"). Throws TemplateError with the line and column.
    static Template parse(std::string_view source);
    // Renders with `context`'s entries as globals (a dict Value). Throws TemplateError — for
    // raise_exception(message) its message, for undefined names used as objects, wrong types,
    // exceeded limits — with the line of the statement that failed.
    TaggedText render(const Value& context, const RenderOptions& options = {}) const;

    struct Node;

private:
    std::shared_ptr<const Node> root_;
};

}  // namespace lantern::jinja
