// jinja2's filters and tests, and the globals a chat template sees: jinja2's (range with the
// sandbox's limit, dict, namespace, joiner) and Hugging Face's (raise_exception,
// strftime_now). `tojson` is transformers' json.dumps(ensure_ascii=False), not jinja2's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>

#include "interpreter.h"

namespace lantern::jinja {

std::string ascii_lower(std::string s) {
    return case_map(std::move(s), 0);
}

namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

bool all_trusted(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::String:
            return v.as_string().all_tagged(0, v.text().size(), kTrusted);
        case Value::Kind::List:
            return std::all_of(v.items().begin(), v.items().end(),
                               [](const Value& e) { return all_trusted(e); });
        case Value::Kind::Dict:
            for (const auto& [k, e] : v.entries().entries) {
                if (!all_trusted(k) || !all_trusted(e)) return false;
            }
            return true;
        default:
            return true;
    }
}

// "a.b.0": jinja2's attribute getter (item lookup first, integers as indexes).
Value lookup_path(Interpreter& in, Value v, const Value& attribute) {
    if (attribute.kind() == Value::Kind::Int) return in.get_item(v, attribute);
    const std::string path = to_str(attribute);
    size_t start = 0;
    while (start <= path.size()) {
        const size_t dot = path.find('.', start);
        const std::string part =
            path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
        });
        v = in.get_item(v, digits ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part, kTrusted));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return v;
}

}  // namespace

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

namespace {

// Non-ASCII characters as \uXXXX (json.dumps with ensure_ascii=True).
std::string ascii_json(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
            continue;
        }
        const int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        uint32_t cp = c & (n == 4 ? 0x07 : n == 3 ? 0x0F : 0x1F);
        for (int k = 1; k < n && i + static_cast<size_t>(k) < s.size(); ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3F);
        i += static_cast<size_t>(n);
        char buf[16];
        if (cp >= 0x10000) {
            cp -= 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        }
        out += buf;
    }
    return out;
}

TaggedText indent(Interpreter& in, const TaggedText& s, const TaggedText& prefix, bool first, bool blank) {
    // jinja2: s += "\n"; lines = s.splitlines(); then joins, indenting all but the first line
    // (blank lines only with blank=True).
    TaggedText src = s;
    src.append("\n", kTrusted);
    std::vector<TaggedText> lines;
    size_t start = 0;
    for (size_t i = 0; i < src.text.size(); ++i) {
        const char c = src.text[i];
        if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') {
            lines.push_back(src.substr(start, i - start));
            if (c == '\r' && i + 1 < src.text.size() && src.text[i + 1] == '\n') ++i;
            start = i + 1;
        }
    }
    TaggedText out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out.append("\n", kTrusted);
        const bool indent_this = i == 0 ? first : (blank || !lines[i].text.empty());
        if (indent_this) out.append(prefix);
        out.append(lines[i]);
        in.check_string(out.text.size());
    }
    return out;
}

List sorted(Interpreter& in, List items, bool reverse, bool case_sensitive, const Value& attribute) {
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& v : items) {
        Value key = attribute.is_none() || attribute.is_undefined() ? v : lookup_path(in, v, attribute);
        keyed.emplace_back(std::move(key), std::move(v));
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        const int c = python_compare(in, a.first, b.first, case_sensitive);
        return reverse ? c > 0 : c < 0;
    });
    List out;
    for (auto& [k, v] : keyed) out.push_back(std::move(v));
    return out;
}

Value to_int(const Value& v, const Value& dflt, int64_t base) {
    switch (v.kind()) {
        case Value::Kind::Int:
            return v;
        case Value::Kind::Bool:
            return Value(static_cast<int64_t>(v.as_bool()));
        case Value::Kind::Float:
            if (!std::isfinite(v.as_float()) || std::fabs(v.as_float()) > 9.2e18) return dflt;
            return Value(static_cast<int64_t>(v.as_float()));
        case Value::Kind::String: {
            std::string s = v.text();
            while (!s.empty() && is_space_byte(s.back())) s.pop_back();
            size_t b = 0;
            while (b < s.size() && is_space_byte(s[b])) ++b;
            s = s.substr(b);
            std::string digits;
            for (char c : s) {
                if (c != '_') digits += c;
            }
            if (digits.empty()) return dflt;
            errno = 0;
            char* end = nullptr;
            const long long x = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
            if (errno == 0 && end && *end == '\0') return Value(static_cast<int64_t>(x));
            // jinja2 then tries int(float(value))
            char* fend = nullptr;
            const double d = std::strtod(digits.c_str(), &fend);
            if (fend && *fend == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18)
                return Value(static_cast<int64_t>(d));
            return dflt;
        }
        default:
            return dflt;
    }
}

Value to_float(const Value& v, const Value& dflt) {
    switch (v.kind()) {
        case Value::Kind::Int:
        case Value::Kind::Float:
            return Value(v.as_float());
        case Value::Kind::Bool:
            return Value(v.as_bool() ? 1.0 : 0.0);
        case Value::Kind::String: {
            std::string s = v.text();
            char* end = nullptr;
            const double d = std::strtod(s.c_str(), &end);
            while (end && *end && is_space_byte(*end)) ++end;
            if (end == s.c_str() || (end && *end)) return dflt;
            return Value(d);
        }
        default:
            return dflt;
    }
}

double python_round(double x, int64_t digits, const std::string& method) {
    const double scale = std::pow(10.0, static_cast<double>(digits));
    const double y = x * scale;
    double r;
    if (method == "ceil") {
        r = std::ceil(y);
    } else if (method == "floor") {
        r = std::floor(y);
    } else {
        r = std::nearbyint(y);  // round half to even, as Python's round()
    }
    return r / scale;
}

}  // namespace

Value Interpreter::filter(const std::string& name, const Value& v, std::vector<Value>& pos, Kwargs& kw) {
    Arguments p{*this, name, pos, kw};
    const auto str_of = [&](const Value& x) { return to_tagged_str(x); };
    if (name == "default" || name == "d") {
        const bool boolean = p.flag(1, "boolean", false);
        if (v.is_undefined() || (boolean && !v.truthy()))
            return p.get(0, "default_value", Value(std::string(), kTrusted));
        return v;
    }
    if (name == "length" || name == "count") {
        if (v.is_string()) return Value(static_cast<int64_t>(codepoint_count(v.text())));
        if (v.is_generator()) fail("object of type 'generator' has no len()");
        if (v.is_list()) return Value(static_cast<int64_t>(v.items().size()));
        if (v.is_dict()) return Value(static_cast<int64_t>(v.entries().entries.size()));
        if (v.is_undefined()) return Value(int64_t{0});
        fail(std::string("object of type '") + (v.is_none() ? "NoneType" : repr(v)) + "' has no len()");
    }
    if (name == "trim") return Value(strip(str_of(v), p.get(0, "chars"), true, true));
    if (name == "upper" || name == "lower") {
        const TaggedText s = str_of(v);
        return retext(s, case_map(s.text, name == "upper"));
    }
    if (name == "title") {
        const TaggedText s = str_of(v);
        return retext(s, title_case(s.text));
    }
    if (name == "capitalize") {
        const TaggedText s = str_of(v);
        std::string t = case_map(s.text, 0);
        if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
        return retext(s, t);
    }
    if (name == "string") return v.is_undefined() ? Value(std::string(), kTrusted) : Value(str_of(v));
    if (name == "safe") return (v.is_string() ? v : Value(str_of(v))).markup();
    if (name == "escape" || name == "e" || name == "forceescape") {
        if (v.is_markup() && name != "forceescape") return v;
        const TaggedText s = str_of(v);
        return Value(html_escape(s.text), all_trusted(v) ? kTrusted : kData).markup();
    }
    if (name == "replace") {
        const Value old = p.get(0, "old", Value::undefined());
        const Value with = p.get(1, "new", Value::undefined());
        if (old.is_undefined() || with.is_undefined()) fail("replace() needs the old and the new string");
        const int64_t count = p.get(2, "count").is_none() ? -1 : p.integer(2, "count", -1);
        return Value(replace_all(*this, str_of(v), str_of(old), str_of(with), count));
    }
    if (name == "join") {
        const Value sep = p.get(0, "d", Value(std::string(), kTrusted));
        const Value attribute = p.get(1, "attribute");
        TaggedText out;
        bool first = true;
        for (const Value& item : iterate(v)) {
            if (!first) out.append(str_of(sep));
            first = false;
            out.append(str_of(attribute.is_none() ? item : lookup_path(*this, item, attribute)));
            check_string(out.text.size());
        }
        return Value(std::move(out));
    }
    if (name == "first" || name == "last") {
        if (name == "last" && v.is_generator()) fail("'generator' object is not reversible");
        List items = iterate(v);
        if (items.empty()) return Value::undefined(std::string("No ") + name + " item, sequence was empty.");
        return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value::list(iterate(v));
    if (name == "reverse") {
        if (v.is_string()) {
            List chars = iterate(v);
            TaggedText out;
            for (auto it = chars.rbegin(); it != chars.rend(); ++it) out.append(it->as_string());
            return Value(std::move(out));
        }
        if (v.is_generator()) fail("'generator' object is not reversible");
        List items = iterate(v);
        std::reverse(items.begin(), items.end());
        return Value::list(std::move(items)).generator();
    }
    if (name == "items") {
        if (v.is_undefined()) return Value::list();
        if (!v.is_dict()) fail("items(): expected a mapping, got " + repr(v));
        List out;
        for (const auto& [k, e] : v.entries().entries) out.push_back(Value::list({k, e}, true));
        return Value::list(std::move(out)).generator();
    }
    if (name == "dictsort") {
        if (!v.is_dict()) fail("dictsort(): expected a mapping");
        const bool case_sensitive = p.flag(0, "case_sensitive", false);
        const std::string by = to_str(p.get(1, "by", Value("key", kTrusted)));
        const bool reverse = p.flag(2, "reverse", false);
        if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
        std::vector<std::pair<Value, Value>> entries = v.entries().entries;
        const size_t idx = by == "key" ? 0 : 1;
        std::stable_sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) {
            const Value& x = idx == 0 ? a.first : a.second;
            const Value& y = idx == 0 ? b.first : b.second;
            const int c = python_compare(*this, x, y, case_sensitive);
            return reverse ? c > 0 : c < 0;
        });
        List out;
        for (auto& [k, e] : entries) out.push_back(Value::list({k, e}, true));
        return Value::list(std::move(out));
    }
    if (name == "sort") {
        return Value::list(sorted(*this, iterate(v), p.flag(0, "reverse", false),
                                  p.flag(1, "case_sensitive", false), p.get(2, "attribute")));
    }
    if (name == "unique") {
        const bool case_sensitive = p.flag(0, "case_sensitive", false);
        const Value attribute = p.get(1, "attribute");
        List out, seen;
        for (const Value& item : iterate(v)) {
            Value key = attribute.is_none() ? item : lookup_path(*this, item, attribute);
            if (!case_sensitive && key.is_string()) key = Value(ascii_lower(key.text()), kTrusted);
            bool dup = false;
            for (const Value& s : seen) dup = dup || equals(s, key);
            if (dup) continue;
            seen.push_back(key);
            out.push_back(item);
        }
        return Value::list(std::move(out)).generator();
    }
    if (name == "min" || name == "max") {
        const bool case_sensitive = p.flag(0, "case_sensitive", false);
        const Value attribute = p.get(1, "attribute");
        List items = iterate(v);
        if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
        Value best = items[0];
        for (size_t i = 1; i < items.size(); ++i) {
            const Value a = attribute.is_none() ? items[i] : lookup_path(*this, items[i], attribute);
            const Value b = attribute.is_none() ? best : lookup_path(*this, best, attribute);
            const int c = python_compare(*this, a, b, case_sensitive);
            if (name == "min" ? c < 0 : c > 0) best = items[i];
        }
        return best;
    }
    if (name == "sum") {
        const Value attribute = p.get(0, "attribute");
        Value total = p.get(1, "start", Value(int64_t{0}));
        for (const Value& item : iterate(v)) {
            total = binary("+", total, attribute.is_none() ? item : lookup_path(*this, item, attribute));
        }
        return total;
    }
    if (name == "map") {
        List out;
        if (!v.truthy()) return Value::list().generator();
        const Value attribute = p.get(SIZE_MAX, "attribute");
        if (!attribute.is_none()) {
            const Value dflt = p.get(SIZE_MAX, "default", Value::undefined());
            for (const Value& item : iterate(v)) {
                Value x = lookup_path(*this, item, attribute);
                out.push_back(x.is_undefined() && !dflt.is_undefined() ? dflt : x);
            }
            return Value::list(std::move(out)).generator();
        }
        if (pos.empty()) fail("map requires a filter argument");
        const std::string inner = to_str(pos[0]);
        std::vector<Value> rest(pos.begin() + 1, pos.end());
        for (const Value& item : iterate(v)) {
            std::vector<Value> args = rest;
            Kwargs kws = kw;
            out.push_back(filter(inner, item, args, kws));
        }
        return Value::list(std::move(out)).generator();
    }
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
        const bool attr_mode = name.ends_with("attr");
        const bool want = name.starts_with("select");
        size_t next = 0;
        Value attribute;
        if (attr_mode) {
            if (pos.empty()) fail(name + " requires an attribute");
            attribute = pos[next++];
        }
        std::string test_name;
        if (next < pos.size()) test_name = to_str(pos[next++]);
        std::vector<Value> rest(pos.begin() + static_cast<std::ptrdiff_t>(std::min(next, pos.size())),
                                pos.end());
        List out;
        if (!v.truthy()) return Value::list().generator();
        for (const Value& item : iterate(v)) {
            const Value subject = attr_mode ? lookup_path(*this, item, attribute) : item;
            bool ok;
            if (test_name.empty()) {
                ok = subject.truthy();
            } else {
                std::vector<Value> args = rest;
                Kwargs kws = kw;
                ok = test(test_name, subject, args, kws);
            }
            if (ok == want) out.push_back(item);
        }
        return Value::list(std::move(out)).generator();
    }
    if (name == "tojson") {
        const Value indent_v = p.get(SIZE_MAX, "indent");
        const int indent_n =
            indent_v.is_none()
                ? -1
                : static_cast<int>(std::clamp<int64_t>(p.integer(SIZE_MAX, "indent", 0), 0, 64));
        std::string json;
        const Value separators = p.get(SIZE_MAX, "separators");
        if (separators.is_list() && separators.items().size() == 2)
            json = to_json(v, indent_n, p.flag(SIZE_MAX, "sort_keys", false), to_str(separators.items()[0]),
                           to_str(separators.items()[1]));
        else
            json = to_json(v, indent_n, p.flag(SIZE_MAX, "sort_keys", false));
        if (!pos.empty()) fail("tojson() takes keyword arguments only");
        if (p.flag(SIZE_MAX, "ensure_ascii", false)) json = ascii_json(json);
        check_string(json.size());
        return Value(std::move(json), all_trusted(v) ? kTrusted : kData);
    }
    if (name == "indent") {
        const Value width = p.get(0, "width", Value(int64_t{4}));
        const TaggedText prefix = width.is_string()
                                      ? width.as_string()
                                      : TaggedText(std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                                   p.integer(0, "width", 4), 0, 1 << 16)),
                                                               ' '),
                                                   kTrusted);
        return Value(indent(*this, str_of(v), prefix, p.flag(1, "first", false), p.flag(2, "blank", false)));
    }
    if (name == "int") return to_int(v, p.get(0, "default", Value(int64_t{0})), p.integer(1, "base", 10));
    if (name == "float") return to_float(v, p.get(0, "default", Value(0.0)));
    if (name == "abs") {
        if (v.kind() == Value::Kind::Int) {
            if (v.as_int() == INT64_MIN) fail("integer overflow");
            return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
        }
        if (v.kind() == Value::Kind::Float) return Value(std::fabs(v.as_float()));
        fail("bad operand type for abs(): " + repr(v));
    }
    if (name == "round") {
        if (!v.is_number()) fail("round(): a number is required");
        return Value(python_round(v.as_float(), p.integer(0, "precision", 0),
                                  to_str(p.get(1, "method", Value("common", kTrusted)))));
    }
    if (name == "attr") {
        // Python attributes only (getattr): a dict's methods, a namespace's attributes, never a key.
        const std::string attribute = to_str(p.get(0, "name", Value::undefined()));
        if (v.is_dict() && !v.is_namespace()) {
            const Value m = get_attr(Value::dict(), attribute);
            return m.kind() == Value::Kind::Callable
                       ? get_attr(v, attribute)
                       : Value::undefined("'dict object' has no attribute '" + attribute + "'");
        }
        return get_attr(v, attribute);
    }
    if (name == "format") {
        Value args = Value::list(pos, true);
        std::string s = to_str(binary("%", v, args));
        return Value(std::move(s), all_trusted(v) && all_trusted(args) ? kTrusted : kData);
    }
    if (name == "center") {
        const TaggedText s = str_of(v);
        const int64_t width = std::clamp<int64_t>(p.integer(0, "width", 80), 0, 1 << 16);
        const int64_t len = static_cast<int64_t>(codepoint_count(s.text));
        if (width <= len) return Value(s);
        const int64_t total = width - len;
        const int64_t left = total / 2 + (total & width & 1);
        TaggedText out(std::string(static_cast<size_t>(left), ' '), kTrusted);
        out.append(s);
        out.append(std::string(static_cast<size_t>(total - left), ' '), kTrusted);
        return Value(std::move(out));
    }
    if (name == "wordcount") {
        int64_t n = 0;
        bool in_word = false;
        for (char c : str_of(v).text) {
            const bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                           static_cast<unsigned char>(c) >= 0x80;
            if (w && !in_word) ++n;
            in_word = w;
        }
        return Value(n);
    }
    if (name == "striptags") {
        std::string out;
        bool tag = false;
        for (char c : str_of(v).text) {
            if (c == '<') tag = true;
            if (!tag) out += c;
            if (c == '>') tag = false;
        }
        std::vector<TaggedText> words;
        std::string joined;
        for (size_t i = 0; i < out.size();) {
            while (i < out.size() && is_space_byte(out[i])) ++i;
            size_t j = i;
            while (j < out.size() && !is_space_byte(out[j])) ++j;
            if (j > i) joined += (joined.empty() ? "" : " ") + out.substr(i, j - i);
            i = j;
        }
        return Value(joined, all_trusted(v) ? kTrusted : kData);
    }
    if (name == "truncate") {
        const TaggedText s = str_of(v);
        const int64_t length = p.integer(0, "length", 255);
        const bool killwords = p.flag(1, "killwords", false);
        const TaggedText end = str_of(p.get(2, "end", Value("...", kTrusted)));
        const int64_t leeway = p.get(3, "leeway").is_none() ? 5 : p.integer(3, "leeway", 5);
        const auto offsets = codepoint_offsets(s.text);
        const int64_t n = static_cast<int64_t>(offsets.size());
        if (n <= length + leeway) return Value(s);
        const int64_t keep = std::max<int64_t>(0, length - static_cast<int64_t>(codepoint_count(end.text)));
        TaggedText head = s.substr(0, keep < n ? offsets[static_cast<size_t>(keep)] : s.text.size());
        if (!killwords) {
            const size_t sp = head.text.rfind(' ');
            head = head.substr(0, sp == std::string::npos ? 0 : sp);
        }
        head.append(end);
        return Value(std::move(head));
    }
    if (name == "batch" || name == "slice") {
        const int64_t count = p.integer(0, name == "batch" ? "linecount" : "slices", 1);
        if (count <= 0) fail(name + "(): the count must be positive");
        const Value fill = p.get(1, "fill_with");
        List items = iterate(v);
        List out;
        if (name == "batch") {
            for (size_t i = 0; i < items.size(); i += static_cast<size_t>(count)) {
                List row(items.begin() + static_cast<std::ptrdiff_t>(i),
                         items.begin() + static_cast<std::ptrdiff_t>(
                                             std::min(items.size(), i + static_cast<size_t>(count))));
                while (!fill.is_none() && row.size() < static_cast<size_t>(count)) row.push_back(fill);
                out.push_back(Value::list(std::move(row)));
            }
        } else {
            const size_t n = items.size(), k = static_cast<size_t>(std::min<int64_t>(count, 1 << 20));
            const size_t per = n / k, extra = n % k;
            size_t offset = 0;
            for (size_t i = 0; i < k; ++i) {
                const size_t start = offset + std::min(i, extra);
                const size_t end = start + per + (i < extra ? 1 : 0);
                List row(items.begin() + static_cast<std::ptrdiff_t>(start),
                         items.begin() + static_cast<std::ptrdiff_t>(end));
                if (!fill.is_none() && i >= extra && extra > 0) row.push_back(fill);
                out.push_back(Value::list(std::move(row)));
                offset += per;
            }
        }
        return Value::list(std::move(out)).generator();
    }
    if (name == "groupby") {
        const Value attribute = p.get(0, "attribute", Value::undefined());
        const Value dflt = p.get(1, "default");
        const bool case_sensitive = p.flag(2, "case_sensitive", false);
        List items;
        for (const Value& item : iterate(v)) items.push_back(item);
        List keys;
        for (const Value& item : items) {
            Value k = lookup_path(*this, item, attribute);
            keys.push_back(k.is_undefined() && !dflt.is_none() ? dflt : k);
        }
        std::vector<size_t> order(items.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return python_compare(*this, keys[a], keys[b], case_sensitive) < 0;
        });
        List groups;
        for (size_t idx : order) {
            const Value key = case_sensitive || !keys[idx].is_string()
                                  ? keys[idx]
                                  : Value(ascii_lower(keys[idx].text()), kTrusted);
            if (groups.empty() || !equals(groups.back().items()[0], key))
                groups.push_back(Value::list({key, Value::list()}, true));
            groups.back().items()[1].push_back(items[idx]);
        }
        return Value::list(std::move(groups));
    }
    if (name == "pprint") return Value(repr(v), all_trusted(v) ? kTrusted : kData);
    if (name == "urlencode") {
        const std::string s = to_str(v);
        std::string out;
        for (unsigned char c : s) {
            if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || c == '/') {
                out += static_cast<char>(c);
            } else {
                char buf[8];
                std::snprintf(buf, sizeof buf, "%%%02X", c);
                out += buf;
            }
        }
        return Value(out, all_trusted(v) ? kTrusted : kData);
    }
    fail("no filter named '" + name + "'");
}

bool Interpreter::test(const std::string& name, const Value& v, std::vector<Value>& pos, Kwargs& kw) {
    Arguments p{*this, name, pos, kw};
    using K = Value::Kind;
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.kind() == K::Bool;
    if (name == "true") return v.kind() == K::Bool && v.as_bool();
    if (name == "false") return v.kind() == K::Bool && !v.as_bool();
    if (name == "integer") return v.kind() == K::Int;
    if (name == "float") return v.kind() == K::Float;
    if (name == "number") return v.kind() == K::Int || v.kind() == K::Float || v.kind() == K::Bool;
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_dict() && !v.is_namespace();
    if (name == "iterable")
        return v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
    if (name == "sequence")
        return v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
    if (name == "callable") return v.kind() == K::Callable;
    if (name == "escaped") return false;
    if (name == "sameas") {
        const Value other = p.get(0, "other", Value::undefined());
        if (v.kind() != other.kind()) return false;
        switch (v.kind()) {
            case K::None:
            case K::Undefined:
                return true;
            case K::Bool:
                return v.as_bool() == other.as_bool();
            case K::Int:
                return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
            case K::List:
                return &v.items() == &other.items();
            case K::Dict:
                return &v.entries() == &other.entries();
            case K::String:
                return &v.as_string() == &other.as_string();
            default:
                return false;
        }
    }
    if (name == "odd" || name == "even") {
        if (v.kind() != K::Int && v.kind() != K::Bool)
            fail(name + " test: an integer is required, not " + repr(v));
        const int64_t x = v.kind() == K::Bool ? v.as_bool() : v.as_int();
        return name == "odd" ? (x % 2 != 0) : (x % 2 == 0);
    }
    if (name == "divisibleby") {
        const int64_t d = p.integer(0, "num", 1);
        if (d == 0) fail("integer division or modulo by zero");
        if (v.kind() != K::Int) fail("divisibleby test: an integer is required");
        return v.as_int() % d == 0;
    }
    if (name == "lower" || name == "upper") {
        const std::string s = to_str(v);
        return s == case_map(s, name == "upper");
    }
    if (name == "in") {
        const Value seq = p.get(0, "seq", Value::undefined());
        return compare("in", v, seq);
    }
    static const char* const kCompare[][2] = {
        {"eq", "=="}, {"equalto", "=="},    {"==", "=="}, {"ne", "!="}, {"!=", "!="},
        {"lt", "<"},  {"lessthan", "<"},    {"<", "<"},   {"le", "<="}, {"<=", "<="},
        {"gt", ">"},  {"greaterthan", ">"}, {">", ">"},   {"ge", ">="}, {">=", ">="}};
    for (const auto& c : kCompare) {
        if (name == c[0]) return compare(c[1], v, p.get(0, "other", Value::undefined()));
    }
    if (name == "filter" || name == "test") {
        static const char* const kFilters[] = {
            "default",   "d",          "length",     "count",      "trim",    "upper",   "lower",
            "title",     "capitalize", "string",     "safe",       "escape",  "e",       "forceescape",
            "replace",   "join",       "first",      "last",       "list",    "reverse", "items",
            "dictsort",  "sort",       "unique",     "min",        "max",     "sum",     "map",
            "select",    "reject",     "selectattr", "rejectattr", "tojson",  "indent",  "int",
            "float",     "abs",        "round",      "attr",       "format",  "center",  "wordcount",
            "striptags", "truncate",   "batch",      "slice",      "groupby", "pprint",  "urlencode"};
        static const char* const kTests[] = {
            "defined", "undefined",   "none",    "boolean", "true",        "false",    "integer",
            "float",   "number",      "string",  "mapping", "iterable",    "sequence", "callable",
            "escaped", "sameas",      "odd",     "even",    "divisibleby", "lower",    "upper",
            "in",      "eq",          "equalto", "ne",      "lt",          "lessthan", "le",
            "gt",      "greaterthan", "ge",      "filter",  "test"};
        const std::string s = to_str(v);
        if (name == "filter")
            return std::any_of(std::begin(kFilters), std::end(kFilters),
                               [&](const char* f) { return s == f; });
        return std::any_of(std::begin(kTests), std::end(kTests), [&](const char* f) { return s == f; });
    }
    fail("no test named '" + name + "'");
}

Value global_function(const std::string& name) {
    if (name == "range")
        return Value::function(name, [](Interpreter& in, std::vector<Value>& pos, Kwargs&) {
            int64_t start = 0, stop = 0, stride = 1;
            const auto integer = [&](const Value& v) {
                if (v.kind() == Value::Kind::Bool) return static_cast<int64_t>(v.as_bool());
                if (v.kind() != Value::Kind::Int)
                    in.fail("range(): '" + repr(v) + "' object cannot be interpreted as an integer");
                return v.as_int();
            };
            if (pos.size() == 1) {
                stop = integer(pos[0]);
            } else if (pos.size() == 2 || pos.size() == 3) {
                start = integer(pos[0]);
                stop = integer(pos[1]);
                if (pos.size() == 3) stride = integer(pos[2]);
            } else {
                in.fail("range expected 1 to 3 arguments, got " + std::to_string(pos.size()));
            }
            if (stride == 0) in.fail("range() arg 3 must not be zero");
            uint64_t count = 0;
            if (stride > 0 && stop > start) {
                const uint64_t span = static_cast<uint64_t>(stop) - static_cast<uint64_t>(start);
                count = span / static_cast<uint64_t>(stride) + (span % static_cast<uint64_t>(stride) != 0);
            } else if (stride < 0 && start > stop) {
                const uint64_t span = static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
                const uint64_t step_abs =
                    stride == INT64_MIN ? (uint64_t{1} << 63) : static_cast<uint64_t>(-stride);
                count = span / step_abs + (span % step_abs != 0);
            }
            if (count > static_cast<uint64_t>(kMaxRange))
                in.fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
            List out;
            for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
                out.push_back(Value(start + i * stride));
            return Value::list(std::move(out));
        });
    if (name == "dict" || name == "namespace")
        return Value::function(
            name, [ns = name == "namespace"](Interpreter& in, std::vector<Value>& pos, Kwargs& kw) {
                Value d = ns ? Value::namespace_object() : Value::dict();
                for (const Value& m : pos) {
                    if (!m.is_dict())
                        in.fail(std::string(ns ? "namespace" : "dict") +
                                "() takes mappings and keyword arguments");
                    for (const auto& [k, v] : m.entries().entries) d.entries().set(k, v);
                }
                for (auto& [k, v] : kw) d.set(k, v);
                in.check_depth(d);
                return d;
            });
    if (name == "raise_exception")
        return Value::function(name, [](Interpreter& in, std::vector<Value>& pos, Kwargs&) -> Value {
            in.fail(pos.empty() ? std::string("raise_exception() called") : to_str(pos[0]));
        });
    if (name == "strftime_now")
        return Value::function(name, [](Interpreter& in, std::vector<Value>& pos, Kwargs&) {
            if (pos.empty() || !pos[0].is_string()) in.fail("strftime_now() takes a format string");
            const std::string& format = pos[0].text();
            if (in.options().strftime_now) return Value(in.options().strftime_now(format), kTrusted);
            const std::time_t now = std::time(nullptr);
            std::tm tm{};
            localtime_r(&now, &tm);
            char buf[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
            const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &tm);
#pragma GCC diagnostic pop
            return Value(std::string(buf, n), kTrusted);
        });
    if (name == "joiner")
        return Value::function(name, [](Interpreter&, std::vector<Value>& pos, Kwargs& kw) {
            Value sep = pos.empty() ? Value(", ", kTrusted) : pos[0];
            for (auto& [k, v] : kw) {
                if (k == "sep") sep = v;
            }
            auto used = std::make_shared<bool>(false);
            return Value::function("joiner", [sep, used](Interpreter&, std::vector<Value>&, Kwargs&) {
                if (!*used) {
                    *used = true;
                    return Value(std::string(), kTrusted);
                }
                return sep;
            });
        });
    return Value::undefined("'" + name + "' is undefined");
}

}  // namespace lantern::jinja
