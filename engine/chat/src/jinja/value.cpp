// Values of the Jinja interpreter: tagged strings, Python's equality, str(), repr() and
// json.dumps() as transformers' tojson calls it.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "lantern/jinja.h"

namespace lantern::jinja {

TemplateError::TemplateError(std::string message, int line, int column)
    : std::runtime_error(line <= 0    ? message
                         : column > 0 ? "line " + std::to_string(line) + ", column " +
                                            std::to_string(column) + ": " + message
                                      : "line " + std::to_string(line) + ": " + message),
      message_(std::move(message)),
      line_(line),
      column_(column) {}

// ---- TaggedText ---------------------------------------------------------------------------------

TaggedText::TaggedText(std::string s, uint32_t tag) : text(std::move(s)) {
    if (!text.empty()) runs.push_back({0, tag});
}

void TaggedText::append(std::string_view s, uint32_t tag) {
    if (s.empty()) return;
    if (runs.empty() || runs.back().tag != tag) runs.push_back({text.size(), tag});
    text += s;
}

void TaggedText::append(const TaggedText& other) {
    const size_t base = text.size();
    text += other.text;
    for (const Run& r : other.runs) {
        if (!runs.empty() && runs.back().tag == r.tag) continue;
        runs.push_back({base + r.start, r.tag});
    }
}

TaggedText TaggedText::substr(size_t offset, size_t length) const {
    TaggedText out;
    if (offset >= text.size()) return out;
    length = std::min(length, text.size() - offset);
    if (length == 0) return out;
    out.text = text.substr(offset, length);
    for (size_t i = 0; i < runs.size(); ++i) {
        const size_t start = runs[i].start;
        const size_t end = i + 1 < runs.size() ? runs[i + 1].start : text.size();
        if (end <= offset || start >= offset + length) continue;
        const size_t s = std::max(start, offset) - offset;
        if (out.runs.empty() || out.runs.back().tag != runs[i].tag) out.runs.push_back({s, runs[i].tag});
    }
    return out;
}

uint32_t TaggedText::tag_at(size_t offset) const {
    auto it = std::upper_bound(runs.begin(), runs.end(), offset,
                               [](size_t o, const Run& r) { return o < r.start; });
    return it == runs.begin() ? kTrusted : std::prev(it)->tag;
}

bool TaggedText::all_tagged(size_t offset, size_t length, uint32_t tag) const {
    if (length == 0) return true;
    auto it = std::upper_bound(runs.begin(), runs.end(), offset,
                               [](size_t o, const Run& r) { return o < r.start; });
    if (it == runs.begin()) return false;
    --it;
    const size_t end = offset + length;
    for (; it != runs.end() && it->start < end; ++it) {
        if (it->tag != tag) return false;
    }
    return true;
}

// ---- Value ----------------------------------------------------------------------------------------

Value Value::undefined(std::string name) {
    Value v;
    v.str_ = std::make_shared<TaggedText>(std::move(name), kTrusted);
    return v;
}
Value Value::none() {
    Value v;
    v.kind_ = Kind::None;
    return v;
}
Value::Value(bool b) : kind_(Kind::Bool), b_(b) {}
Value::Value(int64_t i) : kind_(Kind::Int), i_(i) {}
Value::Value(double d) : kind_(Kind::Float), d_(d) {}
Value::Value(TaggedText s) : kind_(Kind::String), str_(std::make_shared<TaggedText>(std::move(s))) {}
Value::Value(std::string s, uint32_t tag) : Value(TaggedText(std::move(s), tag)) {}

Value Value::list(List items, bool tuple) {
    Value v;
    v.kind_ = Kind::List;
    v.tuple_ = tuple;
    v.list_ = std::make_shared<List>(std::move(items));
    int depth = 0;
    for (const Value& e : *v.list_) depth = std::max(depth, e.depth());
    v.depth_ = depth + 1;
    return v;
}
Value Value::dict() {
    Value v;
    v.kind_ = Kind::Dict;
    v.dict_ = std::make_shared<Dict>();
    return v;
}
Value Value::namespace_object() {
    Value v = dict();
    v.dict_->is_namespace = true;
    return v;
}
Value Value::function(
    std::string name,
    std::function<Value(Interpreter&, std::vector<Value>&, std::vector<std::pair<std::string, Value>>&)> fn) {
    Value v;
    v.kind_ = Kind::Callable;
    v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
    return v;
}

Value Value::from_json(const nlohmann::ordered_json& json, uint32_t tag) {
    switch (json.type()) {
        case nlohmann::ordered_json::value_t::null:
            return none();
        case nlohmann::ordered_json::value_t::boolean:
            return Value(json.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return Value(json.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = json.get<uint64_t>();
            return u > static_cast<uint64_t>(INT64_MAX) ? Value(static_cast<double>(u))
                                                        : Value(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return Value(json.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return Value(json.get<std::string>(), tag);
        case nlohmann::ordered_json::value_t::array: {
            List items;
            items.reserve(json.size());
            for (const auto& e : json) items.push_back(from_json(e, tag));
            return list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Value d = dict();
            for (const auto& [k, e] : json.items()) d.set(k, from_json(e, tag));
            return d;
        }
        default:
            return undefined();
    }
}

Value Value::generator() const {
    Value v = *this;
    v.generator_ = kind_ == Kind::List;
    return v;
}
Value Value::markup() const {
    Value v = *this;
    v.markup_ = kind_ == Kind::String;
    return v;
}
bool Value::is_tuple() const {
    return kind_ == Kind::List && tuple_;
}
bool Value::is_namespace() const {
    return kind_ == Kind::Dict && dict_->is_namespace;
}
const TaggedText& Value::as_string() const {
    static const TaggedText empty;
    return str_ ? *str_ : empty;
}
List& Value::items() const {
    return *list_;
}
Dict& Value::entries() const {
    return *dict_;
}
Callable& Value::callable() const {
    return *fn_;
}
const std::string& Value::undefined_name() const {
    return as_string().text;
}
void Value::push_back(Value v) const {
    list_->push_back(std::move(v));
}
int Value::depth() const {
    if (kind_ == Kind::List) return depth_;
    if (kind_ == Kind::Dict) return dict_->depth;
    return 0;
}
bool Value::contains(const Dict& dict) const {
    if (kind_ == Kind::Dict) {
        if (dict_.get() == &dict) return true;
        for (const auto& [k, v] : dict_->entries) {
            if (v.contains(dict)) return true;
        }
    } else if (kind_ == Kind::List) {
        for (const Value& v : *list_) {
            if (v.contains(dict)) return true;
        }
    }
    return false;
}
void Value::set(const std::string& key, Value v) const {
    dict_->set(Value(key, kTrusted), std::move(v));
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None:
            return false;
        case Kind::Bool:
            return b_;
        case Kind::Int:
            return i_ != 0;
        case Kind::Float:
            return d_ != 0.0;
        case Kind::String:
            return !str_->text.empty();
        case Kind::List:
            return generator_ || !list_->empty();
        case Kind::Dict:
            return dict_->is_namespace || !dict_->entries.empty();
        case Kind::Callable:
            return true;
    }
    return false;
}

Value* Dict::find(const Value& key) {
    for (auto& [k, v] : entries) {
        if (equals(k, key)) return &v;
    }
    return nullptr;
}
const Value* Dict::find_string(std::string_view key) const {
    for (const auto& [k, v] : entries) {
        if (k.is_string() && k.text() == key) return &v;
    }
    return nullptr;
}
void Dict::set(Value key, Value value) {
    depth = std::max(depth, value.depth() + 1);
    if (Value* existing = find(key)) {
        *existing = std::move(value);
    } else {
        entries.emplace_back(std::move(key), std::move(value));
    }
}

// ---- Python semantics -----------------------------------------------------------------------------

bool equals(const Value& a, const Value& b) {
    using K = Value::Kind;
    const auto numeric = [](const Value& v) {
        return v.kind() == K::Int || v.kind() == K::Float || v.kind() == K::Bool;
    };
    if (numeric(a) && numeric(b)) {
        if (a.kind() == K::Float || b.kind() == K::Float) {
            const double x = a.kind() == K::Bool ? a.as_bool() : a.as_float();
            const double y = b.kind() == K::Bool ? b.as_bool() : b.as_float();
            return x == y;
        }
        const int64_t x = a.kind() == K::Bool ? a.as_bool() : a.as_int();
        const int64_t y = b.kind() == K::Bool ? b.as_bool() : b.as_int();
        return x == y;
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case K::Undefined:
        case K::None:
            return true;
        case K::String:
            return a.text() == b.text();
        case K::List: {
            if (a.is_tuple() != b.is_tuple()) return false;
            if (a.is_generator() || b.is_generator()) return &a.items() == &b.items();
            const List& x = a.items();
            const List& y = b.items();
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i) {
                if (!equals(x[i], y[i])) return false;
            }
            return true;
        }
        case K::Dict: {
            if (&a.entries() == &b.entries()) return true;
            if (a.is_namespace() || b.is_namespace()) return false;
            const auto& x = a.entries().entries;
            if (x.size() != b.entries().entries.size()) return false;
            for (const auto& [k, v] : x) {
                const Value* other = b.entries().find(k);
                if (!other || !equals(v, *other)) return false;
            }
            return true;
        }
        case K::Callable:
            return &a.callable() == &b.callable();
        default:
            return false;
    }
}

namespace {

// Python's repr(float): the shortest digits that read back, scientific below 1e-4 and from 1e16.
std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    const size_t e = sci.find('e');
    const int exponent = std::stoi(sci.substr(e + 1));
    std::string mantissa = sci.substr(0, e);
    const bool negative = mantissa[0] == '-';
    if (negative) mantissa.erase(0, 1);
    std::string digits;
    for (char c : mantissa) {
        if (c != '.') digits += c;
    }
    std::string out;
    if (exponent < -4 || exponent >= 16) {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp[16];
        std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += exp;
    } else if (exponent < 0) {
        out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else {
        const size_t int_digits = static_cast<size_t>(exponent) + 1;
        if (digits.size() <= int_digits) {
            out = digits + std::string(int_digits - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, int_digits) + "." + digits.substr(int_digits);
        }
    }
    return negative ? "-" + out : out;
}

std::string string_repr(const std::string& s) {
    const bool has_single = s.find('\'') != std::string::npos;
    const bool has_double = s.find('"') != std::string::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : s) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == static_cast<unsigned char>(quote)) {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += quote;
    return out;
}

void json_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
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
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
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
    }
    out += '"';
}

std::string json_key(const Value& k) {
    switch (k.kind()) {
        case Value::Kind::String:
            return k.text();
        case Value::Kind::None:
            return "null";
        case Value::Kind::Bool:
            return k.as_bool() ? "true" : "false";
        case Value::Kind::Int:
            return std::to_string(k.as_int());
        case Value::Kind::Float:
            return float_repr(k.as_float());
        default:
            throw TemplateError("keys must be str, int, float, bool or None, not " + repr(k), 0, 0);
    }
}

struct JsonStyle {
    int indent;
    bool sort_keys;
    std::string item_sep;
    std::string key_sep;
};

void json_dump(std::string& out, const Value& v, const JsonStyle& style, int level) {
    const int indent = style.indent;
    const auto newline = [&](int lvl) {
        out += '\n';
        out.append(static_cast<size_t>(indent) * static_cast<size_t>(lvl), ' ');
    };
    switch (v.kind()) {
        case Value::Kind::None:
            out += "null";
            return;
        case Value::Kind::Bool:
            out += v.as_bool() ? "true" : "false";
            return;
        case Value::Kind::Int:
            out += std::to_string(v.as_int());
            return;
        case Value::Kind::Float: {
            const double d = v.as_float();
            if (std::isnan(d)) {
                out += "NaN";
            } else if (std::isinf(d)) {
                out += d < 0 ? "-Infinity" : "Infinity";
            } else {
                out += float_repr(d);
            }
            return;
        }
        case Value::Kind::String:
            json_string(out, v.text());
            return;
        case Value::Kind::List: {
            if (v.is_generator())
                throw TemplateError("Object of type generator is not JSON serializable", 0, 0);
            const List& items = v.items();
            if (items.empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += style.item_sep;
                if (indent >= 0) newline(level + 1);
                json_dump(out, items[i], style, level + 1);
            }
            if (indent >= 0) newline(level);
            out += ']';
            return;
        }
        case Value::Kind::Dict: {
            std::vector<std::pair<std::string, const Value*>> entries;
            for (const auto& [k, e] : v.entries().entries) entries.emplace_back(json_key(k), &e);
            if (style.sort_keys) {
                std::stable_sort(entries.begin(), entries.end(),
                                 [](const auto& a, const auto& b) { return a.first < b.first; });
            }
            if (entries.empty()) {
                out += "{}";
                return;
            }
            out += '{';
            for (size_t i = 0; i < entries.size(); ++i) {
                if (i) out += style.item_sep;
                if (indent >= 0) newline(level + 1);
                json_string(out, entries[i].first);
                out += style.key_sep;
                json_dump(out, *entries[i].second, style, level + 1);
            }
            if (indent >= 0) newline(level);
            out += '}';
            return;
        }
        case Value::Kind::Undefined:
            throw TemplateError("Object of type Undefined is not JSON serializable", 0, 0);
        case Value::Kind::Callable:
            throw TemplateError("Object of type function is not JSON serializable", 0, 0);
    }
}

}  // namespace

std::string repr(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return "";
        case Value::Kind::None:
            return "None";
        case Value::Kind::Bool:
            return v.as_bool() ? "True" : "False";
        case Value::Kind::Int:
            return std::to_string(v.as_int());
        case Value::Kind::Float:
            return float_repr(v.as_float());
        case Value::Kind::String:
            return string_repr(v.text());
        case Value::Kind::List: {
            if (v.is_generator()) return "<generator object>";
            const List& items = v.items();
            std::string out = v.is_tuple() ? "(" : "[";
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += ", ";
                out += repr(items[i]);
            }
            if (v.is_tuple() && items.size() == 1) out += ",";
            out += v.is_tuple() ? ")" : "]";
            return out;
        }
        case Value::Kind::Dict: {
            if (v.is_namespace()) return "<Namespace>";
            std::string out = "{";
            bool first = true;
            for (const auto& [k, e] : v.entries().entries) {
                if (!first) out += ", ";
                first = false;
                out += repr(k) + ": " + repr(e);
            }
            return out + "}";
        }
        case Value::Kind::Callable:
            return "<function " + v.callable().name + ">";
    }
    return "";
}

std::string to_str(const Value& v) {
    if (v.is_string()) return v.text();
    return repr(v);
}

TaggedText to_tagged_str(const Value& v) {
    if (v.is_string()) return v.as_string();
    // Structures keep the tag of the data inside them: data printed as a list stays data.
    const bool any_data = [&] {
        if (v.kind() != Value::Kind::List && v.kind() != Value::Kind::Dict) return false;
        return true;
    }();
    return TaggedText(repr(v), any_data ? kData : kTrusted);
}

std::string to_json(const Value& v, int indent, bool sort_keys, const std::string& item_sep,
                    const std::string& key_sep) {
    std::string out;
    const JsonStyle style{indent, sort_keys,
                          item_sep.empty() && key_sep.empty() ? (indent >= 0 ? "," : ", ") : item_sep,
                          item_sep.empty() && key_sep.empty() ? ": " : key_sep};
    json_dump(out, v, style, 0);
    return out;
}

}  // namespace lantern::jinja
