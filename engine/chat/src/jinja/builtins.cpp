// Attribute and item lookup, and the Python methods of strings, lists and dicts a template can
// call (the sandbox refuses those that modify a value, as jinja2's ImmutableSandboxedEnvironment
// does). Strings keep their tags through every operation that keeps their bytes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>

#include "interpreter.h"

namespace lantern::jinja {

bool is_space_byte(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '\x1c' ||
           c == '\x1d' || c == '\x1e' || c == '\x1f';
}

// Python's str.strip family: with no chars, whitespace; else any of the chars' code points.
TaggedText strip(const TaggedText& s, const Value& chars, bool left, bool right) {
    size_t b = 0, e = s.text.size();
    if (chars.is_none() || chars.is_undefined()) {
        if (left)
            while (b < e && is_space_byte(s.text[b])) ++b;
        if (right)
            while (e > b && is_space_byte(s.text[e - 1])) --e;
    } else {
        const std::string& set = chars.text();
        // Compare by code point: collect the set's code points as strings.
        std::vector<std::string> cps;
        const auto offsets = codepoint_offsets(set);
        for (size_t i = 0; i < offsets.size(); ++i)
            cps.push_back(
                set.substr(offsets[i], (i + 1 < offsets.size() ? offsets[i + 1] : set.size()) - offsets[i]));
        const auto match_at = [&](size_t pos) -> size_t {
            for (const auto& cp : cps) {
                if (s.text.compare(pos, cp.size(), cp) == 0) return cp.size();
            }
            return 0;
        };
        const auto match_before = [&](size_t pos) -> size_t {
            for (const auto& cp : cps) {
                if (pos >= cp.size() && s.text.compare(pos - cp.size(), cp.size(), cp) == 0) return cp.size();
            }
            return 0;
        };
        if (left) {
            while (b < e) {
                const size_t n = match_at(b);
                if (!n) break;
                b += n;
            }
        }
        if (right) {
            while (e > b) {
                const size_t n = match_before(e);
                if (!n) break;
                e -= n;
            }
        }
    }
    return s.substr(b, e - b);
}

std::string case_map(std::string s, int mode) {  // 0 lower, 1 upper
    for (char& c : s)
        c = static_cast<char>(mode ? std::toupper(static_cast<unsigned char>(c))
                                   : std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Keeps the tags of `s` over a same-length transformation of its text.
Value retext(const TaggedText& s, std::string text) {
    TaggedText out = s;
    out.text = std::move(text);
    return Value(std::move(out));
}

std::string title_case(const std::string& s) {
    std::string out = s;
    bool prev_cased = false;
    for (char& c : out) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (std::isalpha(u)) {
            c = static_cast<char>(prev_cased ? std::tolower(u) : std::toupper(u));
            prev_cased = true;
        } else {
            prev_cased = u >= 0x80 && prev_cased;
        }
    }
    return out;
}

TaggedText replace_all(Interpreter& in, const TaggedText& s, const TaggedText& old, const TaggedText& with,
                       int64_t count) {
    TaggedText out;
    size_t pos = 0;
    int64_t done = 0;
    if (old.text.empty()) {
        // Python inserts `with` between every character, and at both ends.
        const auto offsets = codepoint_offsets(s.text);
        for (size_t i = 0; i <= offsets.size(); ++i) {
            if (count >= 0 && done >= count) {
                out.append(s.substr(i < offsets.size() ? offsets[i] : s.text.size(), std::string::npos));
                return out;
            }
            out.append(with);
            ++done;
            if (i < offsets.size()) {
                const size_t end = i + 1 < offsets.size() ? offsets[i + 1] : s.text.size();
                out.append(s.substr(offsets[i], end - offsets[i]));
            }
            in.check_string(out.text.size());
        }
        return out;
    }
    while (count < 0 || done < count) {
        const size_t hit = s.text.find(old.text, pos);
        if (hit == std::string::npos) break;
        out.append(s.substr(pos, hit - pos));
        out.append(with);
        in.check_string(out.text.size());
        pos = hit + old.text.size();
        ++done;
    }
    out.append(s.substr(pos, std::string::npos));
    return out;
}

std::vector<TaggedText> split(const TaggedText& s, const Value& sep, int64_t maxsplit) {
    std::vector<TaggedText> parts;
    if (sep.is_none() || sep.is_undefined()) {
        size_t i = 0;
        const size_t n = s.text.size();
        while (true) {
            while (i < n && is_space_byte(s.text[i])) ++i;
            if (i >= n) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
                size_t e = n;
                while (e > i && is_space_byte(s.text[e - 1])) --e;
                parts.push_back(s.substr(i, e - i));
                break;
            }
            size_t j = i;
            while (j < n && !is_space_byte(s.text[j])) ++j;
            parts.push_back(s.substr(i, j - i));
            i = j;
        }
        return parts;
    }
    const std::string& d = sep.text();
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        const size_t hit = s.text.find(d, pos);
        if (hit == std::string::npos) break;
        parts.push_back(s.substr(pos, hit - pos));
        pos = hit + d.size();
    }
    parts.push_back(s.substr(pos, std::string::npos));
    return parts;
}

std::vector<TaggedText> rsplit(const TaggedText& s, const Value& sep, int64_t maxsplit) {
    if (maxsplit < 0) return split(s, sep, -1);
    std::vector<TaggedText> parts;
    if (sep.is_none() || sep.is_undefined()) {
        int64_t e = static_cast<int64_t>(s.text.size());
        while (true) {
            while (e > 0 && is_space_byte(s.text[static_cast<size_t>(e - 1)])) --e;
            if (e <= 0) break;
            if (static_cast<int64_t>(parts.size()) >= maxsplit) {
                size_t b = 0;
                while (b < static_cast<size_t>(e) && is_space_byte(s.text[b])) ++b;
                parts.push_back(s.substr(b, static_cast<size_t>(e) - b));
                break;
            }
            int64_t b = e;
            while (b > 0 && !is_space_byte(s.text[static_cast<size_t>(b - 1)])) --b;
            parts.push_back(s.substr(static_cast<size_t>(b), static_cast<size_t>(e - b)));
            e = b;
        }
        std::reverse(parts.begin(), parts.end());
        return parts;
    }
    const std::string& d = sep.text();
    size_t end = s.text.size();
    while (static_cast<int64_t>(parts.size()) < maxsplit) {
        if (end < d.size()) break;
        const size_t hit = s.text.rfind(d, end - d.size());
        if (hit == std::string::npos) break;
        parts.push_back(s.substr(hit + d.size(), end - hit - d.size()));
        end = hit;
    }
    parts.push_back(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
}

namespace {

Value strings_to_list(std::vector<TaggedText> parts) {
    List items;
    for (auto& p : parts) items.emplace_back(std::move(p));
    return Value::list(std::move(items));
}

Value unsafe(const std::string& name, const char* type) {
    return Value::function(name, [name, type](Interpreter& in, std::vector<Value>&, Kwargs&) -> Value {
        in.fail("access to attribute '" + name + "' of '" + type + "' object is unsafe.");
    });
}

bool starts_or_ends(Interpreter& in, const std::string& s, const Value& affix, bool start) {
    const auto one = [&](const Value& a) {
        if (!a.is_string())
            in.fail(std::string(start ? "startswith" : "endswith") +
                    " first arg must be str or a tuple of str");
        const std::string& t = a.text();
        if (t.size() > s.size()) return false;
        return start ? s.compare(0, t.size(), t) == 0 : s.compare(s.size() - t.size(), t.size(), t) == 0;
    };
    if (affix.is_list()) {
        for (const Value& a : affix.items()) {
            if (one(a)) return true;
        }
        return false;
    }
    return one(affix);
}

// Python's str.format with {} {0} {name} and {name.attr} / {name[key]} fields (no format specs
// beyond what str() gives).
Value str_format(Interpreter& in, const TaggedText& fmt, std::vector<Value>& args, Kwargs& kw) {
    TaggedText out;
    size_t auto_index = 0;
    const std::string& f = fmt.text;
    size_t literal_start = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
            out.append(fmt.substr(literal_start, i + 1 - literal_start));
            literal_start = i + 2;
            ++i;
            continue;
        }
        if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
            out.append(fmt.substr(literal_start, i + 1 - literal_start));
            literal_start = i + 2;
            ++i;
            continue;
        }
        if (f[i] != '{') continue;
        out.append(fmt.substr(literal_start, i - literal_start));
        const size_t close = f.find('}', i);
        if (close == std::string::npos) in.fail("Single '{' encountered in format string");
        std::string field = f.substr(i + 1, close - i - 1);
        const size_t colon = field.find(':');
        if (colon != std::string::npos) {
            if (colon + 1 != field.size()) in.fail("format specs in str.format are not supported");
            field.resize(colon);
        }
        size_t name_end = field.find_first_of(".[");
        const std::string head = field.substr(0, name_end);
        Value v;
        if (head.empty()) {
            if (auto_index >= args.size())
                in.fail("Replacement index " + std::to_string(auto_index) +
                        " out of range for positional args tuple");
            v = args[auto_index++];
        } else if (std::all_of(head.begin(), head.end(),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
            const size_t idx = std::stoul(head);
            if (idx >= args.size())
                in.fail("Replacement index " + head + " out of range for positional args tuple");
            v = args[idx];
        } else {
            bool found = false;
            for (auto& [k, e] : kw) {
                if (k == head) {
                    v = e;
                    found = true;
                }
            }
            if (!found) in.fail("KeyError: '" + head + "'");
        }
        while (name_end != std::string::npos && name_end < field.size()) {
            if (field[name_end] == '.') {
                const size_t e = field.find_first_of(".[", name_end + 1);
                v = in.get_attr(v, field.substr(name_end + 1, e == std::string::npos ? std::string::npos
                                                                                     : e - name_end - 1));
                name_end = e;
            } else {
                const size_t e = field.find(']', name_end);
                if (e == std::string::npos) in.fail("Missing ']' in format string");
                const std::string key = field.substr(name_end + 1, e - name_end - 1);
                v = in.get_item(
                    v, std::all_of(key.begin(), key.end(),
                                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) &&
                               !key.empty()
                           ? Value(static_cast<int64_t>(std::stoll(key)))
                           : Value(key, kTrusted));
                name_end = e + 1 < field.size() ? e + 1 : std::string::npos;
            }
        }
        out.append(to_tagged_str(v));
        in.check_string(out.text.size());
        i = close;
        literal_start = close + 1;
    }
    out.append(fmt.substr(literal_start, std::string::npos));
    return Value(std::move(out));
}

Value string_method(const Value& self, const std::string& name) {
    const auto method = [&](auto fn) {
        return Value::function(name, [self, name, fn](Interpreter& in, std::vector<Value>& pos, Kwargs& kw) {
            Arguments args{in, name, pos, kw};
            return fn(in, self.as_string(), args);
        });
    };
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const bool left = name != "rstrip", right = name != "lstrip";
        return method([left, right](Interpreter&, const TaggedText& s, Arguments& a) {
            return Value(strip(s, a.get(0, "chars"), left, right));
        });
    }
    if (name == "upper" || name == "lower")
        return method([up = name == "upper"](Interpreter&, const TaggedText& s, Arguments&) {
            return retext(s, case_map(s.text, up));
        });
    if (name == "title")
        return method(
            [](Interpreter&, const TaggedText& s, Arguments&) { return retext(s, title_case(s.text)); });
    if (name == "capitalize")
        return method([](Interpreter&, const TaggedText& s, Arguments&) {
            std::string t = case_map(s.text, 0);
            if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
            return retext(s, t);
        });
    if (name == "swapcase")
        return method([](Interpreter&, const TaggedText& s, Arguments&) {
            std::string t = s.text;
            for (char& c : t) {
                const unsigned char u = static_cast<unsigned char>(c);
                c = static_cast<char>(std::isupper(u) ? std::tolower(u) : std::toupper(u));
            }
            return retext(s, t);
        });
    if (name == "split" || name == "rsplit")
        return method([r = name == "rsplit"](Interpreter&, const TaggedText& s, Arguments& a) {
            const Value sep = a.get(0, "sep");
            if (sep.is_string() && sep.text().empty()) a.in.fail("empty separator");
            if (!sep.is_none() && !sep.is_string()) a.in.fail("must be str or None, not " + repr(sep));
            const int64_t maxsplit = a.integer(1, "maxsplit", -1);
            return strings_to_list(r ? rsplit(s, sep, maxsplit) : split(s, sep, maxsplit));
        });
    if (name == "splitlines")
        return method([](Interpreter&, const TaggedText& s, Arguments& a) {
            const bool keep = a.get(0, "keepends", Value(false)).truthy();
            std::vector<TaggedText> lines;
            size_t start = 0;
            for (size_t i = 0; i < s.text.size(); ++i) {
                const char c = s.text[i];
                if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' ||
                    c == '\x1e') {
                    size_t end = i + 1;
                    if (c == '\r' && i + 1 < s.text.size() && s.text[i + 1] == '\n') end = i + 2;
                    lines.push_back(s.substr(start, (keep ? end : i) - start));
                    start = end;
                    i = end - 1;
                }
            }
            if (start < s.text.size()) lines.push_back(s.substr(start, std::string::npos));
            return strings_to_list(std::move(lines));
        });
    if (name == "startswith" || name == "endswith")
        return method([start = name == "startswith"](Interpreter& in, const TaggedText& s, Arguments& a) {
            return Value(starts_or_ends(in, s.text, a.get(0, "prefix", Value::undefined()), start));
        });
    if (name == "replace")
        return method([](Interpreter& in, const TaggedText& s, Arguments& a) {
            const TaggedText old = a.string(0, "old");
            const TaggedText with = a.string(1, "new");
            return Value(replace_all(in, s, old, with, a.integer(2, "count", -1)));
        });
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count")
        return method([name](Interpreter& in, const TaggedText& s, Arguments& a) {
            const std::string sub = a.string(0, "sub").text;
            if (name == "count") {
                if (sub.empty()) return Value(static_cast<int64_t>(codepoint_count(s.text) + 1));
                int64_t n = 0;
                for (size_t p = s.text.find(sub); p != std::string::npos;
                     p = s.text.find(sub, p + sub.size()))
                    ++n;
                return Value(n);
            }
            const size_t hit = name[0] == 'r' ? s.text.rfind(sub) : s.text.find(sub);
            if (hit == std::string::npos) {
                if (name == "index" || name == "rindex") in.fail("substring not found");
                return Value(int64_t{-1});
            }
            return Value(static_cast<int64_t>(codepoint_count(s.text.substr(0, hit))));
        });
    if (name == "join")
        return method([](Interpreter& in, const TaggedText& s, Arguments& a) {
            TaggedText out;
            bool first = true;
            for (const Value& item : in.iterate(a.get(0, "iterable", Value::undefined()))) {
                if (!item.is_string())
                    in.fail("sequence item: expected str instance, " + repr(item) + " found");
                if (!first) out.append(s);
                first = false;
                out.append(item.as_string());
                in.check_string(out.text.size());
            }
            return Value(std::move(out));
        });
    if (name == "format")
        return Value::function(name, [self](Interpreter& in, std::vector<Value>& pos, Kwargs& kw) {
            return str_format(in, self.as_string(), pos, kw);
        });
    if (name == "removeprefix" || name == "removesuffix")
        return method([prefix = name == "removeprefix"](Interpreter&, const TaggedText& s, Arguments& a) {
            const std::string& t = a.string(0, prefix ? "prefix" : "suffix").text;
            if (prefix && s.text.compare(0, t.size(), t) == 0)
                return Value(s.substr(t.size(), std::string::npos));
            if (!prefix && t.size() <= s.text.size() &&
                s.text.compare(s.text.size() - t.size(), t.size(), t) == 0)
                return Value(s.substr(0, s.text.size() - t.size()));
            return Value(s);
        });
    if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
        name == "isupper" || name == "islower" || name == "isnumeric" || name == "isdecimal")
        return method([name](Interpreter&, const TaggedText& s, Arguments&) {
            const std::string& t = s.text;
            if (t.empty()) return Value(false);
            const auto all = [&](auto pred) {
                return std::all_of(t.begin(), t.end(),
                                   [&](char c) { return pred(static_cast<unsigned char>(c)); });
            };
            if (name == "isdigit" || name == "isnumeric" || name == "isdecimal")
                return Value(all([](unsigned char c) { return std::isdigit(c) != 0; }));
            if (name == "isalpha")
                return Value(all([](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; }));
            if (name == "isalnum")
                return Value(all([](unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; }));
            if (name == "isspace")
                return Value(all([](unsigned char c) { return is_space_byte(static_cast<char>(c)); }));
            bool cased = false;
            for (unsigned char c : t) {
                if (std::isalpha(c)) {
                    cased = true;
                    if (name == "isupper" ? std::islower(c) : std::isupper(c)) return Value(false);
                }
            }
            return Value(cased);
        });
    if (name == "partition" || name == "rpartition")
        return method([r = name == "rpartition"](Interpreter&, const TaggedText& s, Arguments& a) {
            const std::string& sep = a.string(0, "sep").text;
            const size_t hit = r ? s.text.rfind(sep) : s.text.find(sep);
            if (hit == std::string::npos) {
                return r ? Value::list(
                               {Value(std::string(), kTrusted), Value(std::string(), kTrusted), Value(s)},
                               true)
                         : Value::list(
                               {Value(s), Value(std::string(), kTrusted), Value(std::string(), kTrusted)},
                               true);
            }
            return Value::list({Value(s.substr(0, hit)), Value(s.substr(hit, sep.size())),
                                Value(s.substr(hit + sep.size(), std::string::npos))},
                               true);
        });
    return Value::undefined("'str object' has no attribute '" + name + "'");
}

Value dict_method(const Value& self, const std::string& name) {
    if (name == "get")
        return Value::function(name, [self](Interpreter& in, std::vector<Value>& pos, Kwargs& kw) {
            Arguments a{in, "get", pos, kw};
            const Value* v = self.entries().find(a.get(0, "key", Value::undefined()));
            return v ? *v : a.get(1, "default");
        });
    if (name == "items" || name == "keys" || name == "values")
        return Value::function(name, [self, name](Interpreter&, std::vector<Value>&, Kwargs&) {
            List out;
            for (const auto& [k, v] : self.entries().entries) {
                if (name == "items") {
                    out.push_back(Value::list({k, v}, true));
                } else {
                    out.push_back(name == "keys" ? k : v);
                }
            }
            return Value::list(std::move(out));
        });
    if (name == "copy")
        return Value::function(name, [self](Interpreter&, std::vector<Value>&, Kwargs&) {
            Value d = Value::dict();
            d.entries().entries = self.entries().entries;
            return d;
        });
    if (name == "update" || name == "pop" || name == "popitem" || name == "setdefault" || name == "clear")
        return unsafe(name, "dict");
    return Value();
}

Value list_method(const Value& self, const std::string& name) {
    if (name == "index" || name == "count")
        return Value::function(name, [self, name](Interpreter& in, std::vector<Value>& pos, Kwargs&) {
            if (pos.empty()) in.fail(name + "() takes exactly one argument");
            int64_t n = 0;
            const List& items = self.items();
            for (size_t i = 0; i < items.size(); ++i) {
                if (!equals(items[i], pos[0])) continue;
                if (name == "index") return Value(static_cast<int64_t>(i));
                ++n;
            }
            if (name == "index") in.fail(repr(pos[0]) + " is not in list");
            return Value(n);
        });
    if (!self.is_tuple() && (name == "append" || name == "pop" || name == "extend" || name == "insert" ||
                             name == "remove" || name == "sort" || name == "reverse" || name == "clear"))
        return unsafe(name, "list");
    return Value();
}

std::string type_label(const Value& v) {
    return v.is_dict()     ? "dict object"
           : v.is_list()   ? (v.is_tuple() ? "tuple object" : "list object")
           : v.is_string() ? "str object"
                           : repr(v);
}

}  // namespace

Value Interpreter::get_attr(const Value& object, const std::string& name) {
    switch (object.kind()) {
        case Value::Kind::Undefined:
            fail(object.undefined_name().empty() ? "'" + name + "' of an undefined value"
                                                 : object.undefined_name());
        case Value::Kind::String:
            return string_method(object, name);
        case Value::Kind::Dict: {
            if (object.is_namespace()) {
                if (const Value* v = object.entries().find_string(name)) return *v;
                return Value::undefined("'Namespace' object has no attribute '" + name + "'");
            }
            Value m = dict_method(object, name);
            if (!m.is_undefined()) return m;
            if (const Value* v = object.entries().find_string(name)) return *v;
            return Value::undefined("'dict object' has no attribute '" + name + "'");
        }
        case Value::Kind::List: {
            Value m = list_method(object, name);
            if (!m.is_undefined()) return m;
            return Value::undefined("'" + type_label(object) + "' has no attribute '" + name + "'");
        }
        default:
            return Value::undefined("'" + repr(object) + "' has no attribute '" + name + "'");
    }
}

Value Interpreter::get_item(const Value& object, const Value& key) {
    switch (object.kind()) {
        case Value::Kind::Undefined:
            fail(object.undefined_name().empty() ? "indexing an undefined value" : object.undefined_name());
        case Value::Kind::Dict: {
            if (object.is_namespace()) break;
            if (const Value* v = object.entries().find(key)) return *v;
            if (key.is_string()) {
                Value m = dict_method(object, key.text());
                if (!m.is_undefined()) return m;
            }
            return Value::undefined("'dict object' has no attribute " + repr(key));
        }
        case Value::Kind::List:
        case Value::Kind::String: {
            if (object.is_generator())
                return Value::undefined("'generator object' has no element " + repr(key));
            if (key.kind() == Value::Kind::Int || key.kind() == Value::Kind::Bool) {
                int64_t i = key.kind() == Value::Kind::Bool ? key.as_bool() : key.as_int();
                if (object.is_list()) {
                    const int64_t n = static_cast<int64_t>(object.items().size());
                    if (i < 0) i += n;
                    if (i < 0 || i >= n)
                        return Value::undefined(std::string("'") + type_label(object) + "' has no element " +
                                                std::to_string(key.as_int()));
                    return object.items()[static_cast<size_t>(i)];
                }
                const auto offsets = codepoint_offsets(object.text());
                const int64_t n = static_cast<int64_t>(offsets.size());
                if (i < 0) i += n;
                if (i < 0 || i >= n)
                    return Value::undefined("'str object' has no element " + std::to_string(key.as_int()));
                const size_t from = offsets[static_cast<size_t>(i)];
                const size_t to = static_cast<size_t>(i) + 1 < offsets.size()
                                      ? offsets[static_cast<size_t>(i) + 1]
                                      : object.text().size();
                return Value(object.as_string().substr(from, to - from));
            }
            if (key.is_string()) return get_attr(object, key.text());
            return Value::undefined(type_label(object) + " has no element " + repr(key));
        }
        default:
            break;
    }
    if (key.is_string()) return get_attr(object, key.text());
    return Value::undefined("'" + repr(object) + "' has no element " + repr(key));
}

Value Arguments::get(size_t index, const char* name, Value dflt) const {
    for (const auto& [k, v] : kw) {
        if (k == name) return v;
    }
    return index < pos.size() ? pos[index] : dflt;
}

bool Arguments::flag(size_t index, const char* name, bool dflt) const {
    return get(index, name, Value(dflt)).truthy();
}

int64_t Arguments::integer(size_t index, const char* name, int64_t dflt) const {
    const Value v = get(index, name, Value(dflt));
    if (v.kind() == Value::Kind::Bool) return v.as_bool();
    if (v.kind() != Value::Kind::Int) in.fail(fn + "(): '" + name + "' must be an integer, not " + repr(v));
    return v.as_int();
}

TaggedText Arguments::string(size_t index, const char* name) const {
    const Value v = get(index, name, Value::undefined());
    if (!v.is_string())
        in.fail(fn + "() argument '" + name + "' must be str, not " +
                (v.is_undefined() ? "missing" : repr(v)));
    return v.as_string();
}

}  // namespace lantern::jinja
