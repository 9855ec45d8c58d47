// Runs a parsed Jinja template: statements, scopes (a for loop's body is a scope of its own, as in
// jinja2; `if` is not), expressions with Python's semantics, macros and call blocks.
#include "interpreter.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>

namespace lantern::jinja {

using Kind = Template::Node::Kind;

std::vector<size_t> codepoint_offsets(const std::string& s) {
    std::vector<size_t> offsets;
    offsets.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offsets.push_back(i);
    }
    return offsets;
}

size_t codepoint_count(const std::string& s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

namespace {

const char* type_name(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return "Undefined";
        case Value::Kind::None:
            return "NoneType";
        case Value::Kind::Bool:
            return "bool";
        case Value::Kind::Int:
            return "int";
        case Value::Kind::Float:
            return "float";
        case Value::Kind::String:
            return "str";
        case Value::Kind::List:
            return v.is_generator() ? "generator" : v.is_tuple() ? "tuple" : "list";
        case Value::Kind::Dict:
            return v.is_namespace() ? "Namespace" : "dict";
        case Value::Kind::Callable:
            return "function";
    }
    return "object";
}

bool is_int_like(const Value& v) {
    return v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Bool;
}
int64_t int_of(const Value& v) {
    return v.kind() == Value::Kind::Bool ? static_cast<int64_t>(v.as_bool()) : v.as_int();
}
double float_of(const Value& v) {
    return v.kind() == Value::Kind::Bool ? static_cast<double>(v.as_bool()) : v.as_float();
}
bool numeric(const Value& v) {
    return v.is_number() || v.kind() == Value::Kind::Bool;
}

// One %-conversion: flags (-+ 0#), width, precision, then s r d i x X o f F e E g G.
std::string format_one(Interpreter& in, const std::string& spec, char conv, const Value& v) {
    bool left = false, plus = false, space = false, zero = false;
    size_t i = 0;
    for (; i < spec.size() && std::strchr("-+ #0", spec[i]); ++i) {
        left = left || spec[i] == '-';
        plus = plus || spec[i] == '+';
        space = space || spec[i] == ' ';
        zero = zero || spec[i] == '0';
    }
    size_t width = 0;
    for (; i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])); ++i)
        width = std::min<size_t>(width * 10 + static_cast<size_t>(spec[i] - '0'), 4096);
    int precision = -1;
    if (i < spec.size() && spec[i] == '.') {
        precision = 0;
        for (++i; i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])); ++i)
            precision = std::min(precision * 10 + (spec[i] - '0'), 100);
    }
    std::string body;
    bool is_number = false;
    switch (conv) {
        case 's':
            body = to_str(v);
            break;
        case 'r':
            body = repr(v);
            break;
        case 'd':
        case 'i':
        case 'x':
        case 'X':
        case 'o': {
            if (!numeric(v))
                in.fail(std::string("%") + conv + " format: a real number is required, not " + type_name(v));
            const double f = v.kind() == Value::Kind::Float ? v.as_float() : 0;
            if (v.kind() == Value::Kind::Float && !(std::fabs(f) < 9.2e18))
                in.fail("cannot convert float to integer");
            const int64_t x = v.kind() == Value::Kind::Float ? static_cast<int64_t>(f) : int_of(v);
            char buf[32];
            const uint64_t mag = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
            auto res = std::to_chars(buf, buf + sizeof buf, mag,
                                     conv == 'o'                    ? 8
                                     : (conv == 'x' || conv == 'X') ? 16
                                                                    : 10);
            body.assign(buf, res.ptr);
            if (conv == 'X')
                for (char& c : body) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            if (x < 0) body.insert(0, "-");
            is_number = true;
            break;
        }
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G': {
            if (!numeric(v)) in.fail(std::string("must be real number, not ") + type_name(v));
            const double f = float_of(v);
            char buf[512];
            const int p = precision < 0 ? 6 : precision;
            const auto fmt = conv == 'f' || conv == 'F'   ? std::chars_format::fixed
                             : conv == 'e' || conv == 'E' ? std::chars_format::scientific
                                                          : std::chars_format::general;
            auto res =
                std::to_chars(buf, buf + sizeof buf, f, fmt, conv == 'g' || conv == 'G' ? std::max(p, 1) : p);
            if (res.ec != std::errc()) in.fail("number too large to format");
            body.assign(buf, res.ptr);
            if (conv == 'E' || conv == 'G')
                for (char& c : body) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
            is_number = true;
            break;
        }
        default:
            in.fail(std::string("unsupported format character '") + conv + "'");
    }
    if (conv == 's' || conv == 'r') {
        if (precision >= 0) {
            const auto offsets = codepoint_offsets(body);
            if (static_cast<size_t>(precision) < offsets.size())
                body.resize(offsets[static_cast<size_t>(precision)]);
        }
    }
    if (is_number && body[0] != '-' && (plus || space)) body.insert(0, plus ? "+" : " ");
    const size_t len = codepoint_count(body);
    if (len < width) {
        const size_t pad = width - len;
        if (left) {
            body.append(pad, ' ');
        } else if (zero && is_number) {
            const size_t sign = body[0] == '-' || body[0] == '+' || body[0] == ' ';
            body.insert(sign, pad, '0');
        } else {
            body.insert(0, pad, ' ');
        }
    }
    return body;
}

// Python's printf-style `str % args`.
std::string percent_format(Interpreter& in, const std::string& fmt, const Value& args) {
    List values = args.is_tuple() ? args.items() : List{args};
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) in.fail("incomplete format");
        std::string spec = "%";
        while (i < fmt.size() && std::strchr("-+ #0123456789.", fmt[i])) spec += fmt[i++];
        if (i >= fmt.size()) in.fail("incomplete format");
        const char conv = fmt[i];
        if (conv == '%') {
            out += '%';
            continue;
        }
        if (next >= values.size()) in.fail("not enough arguments for format string");
        const Value& v = values[next++];
        out += format_one(in, spec.substr(1), conv, v);
    }
    if (next < values.size() && args.is_tuple())
        in.fail("not all arguments converted during string formatting");
    return out;
}

}  // namespace

struct CallDepth {
    explicit CallDepth(Interpreter& in) : in_(in) {
        if (++in_.depth_ > in_.options_.limits.max_depth)
            in_.fail("calls nest deeper than " + std::to_string(in_.options_.limits.max_depth) + " levels");
    }
    ~CallDepth() { --in_.depth_; }
    Interpreter& in_;
};

Interpreter::Interpreter(const RenderOptions& options, const Value& context) : options_(options) {
    globals_ = std::make_shared<Scope>();
    for (const char* name : {"range", "dict", "namespace", "raise_exception", "strftime_now", "joiner"})
        globals_->vars[name] = global_function(name);
    if (context.is_dict()) {
        for (const auto& [k, v] : context.entries().entries) globals_->vars[to_str(k)] = v;
    }
}

TaggedText Interpreter::run(const Template::Node& root) {
    TaggedText out;
    auto top = std::make_shared<Scope>();
    top->parent = globals_;
    exec(root.bodies.at(0), top, out);
    return out;
}

void Interpreter::fail(const std::string& message) const {
    throw TemplateError(message, line_, 0);
}

void Interpreter::step() {
    if (++steps_ > options_.limits.max_steps)
        fail("the template ran longer than its budget of " + std::to_string(options_.limits.max_steps) +
             " steps");
}

void Interpreter::check_string(size_t bytes) const {
    if (bytes > options_.limits.max_string_bytes)
        fail("a string grew past the limit of " + std::to_string(options_.limits.max_string_bytes) +
             " bytes");
}

void Interpreter::check_list(size_t items) const {
    if (items > options_.limits.max_list_items)
        fail("a list grew past the limit of " + std::to_string(options_.limits.max_list_items) + " items");
}

void Interpreter::check_depth(const Value& v) const {
    if (v.depth() > kMaxValueDepth)
        fail("values nest deeper than " + std::to_string(kMaxValueDepth) + " levels");
}

void Interpreter::emit(TaggedText& out, const TaggedText& text) const {
    check_string(out.text.size() + text.text.size());
    out.append(text);
}

List Interpreter::iterate(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return {};
        case Value::Kind::List:
            return v.items();
        case Value::Kind::Dict: {
            if (v.is_namespace()) fail("'Namespace' object is not iterable");
            List keys;
            for (const auto& [k, e] : v.entries().entries) keys.push_back(k);
            return keys;
        }
        case Value::Kind::String: {
            const TaggedText& s = v.as_string();
            const auto offsets = codepoint_offsets(s.text);
            List chars;
            chars.reserve(offsets.size());
            for (size_t i = 0; i < offsets.size(); ++i) {
                const size_t end = i + 1 < offsets.size() ? offsets[i + 1] : s.text.size();
                chars.emplace_back(s.substr(offsets[i], end - offsets[i]));
            }
            return chars;
        }
        default:
            fail(std::string("'") + type_name(v) + "' object is not iterable");
    }
}

void Interpreter::assign(const ScopeP& scope, const std::vector<std::string>& names, const Value& value) {
    check_depth(value);
    if (names.size() == 1) {
        scope->vars[names[0]] = value;
        return;
    }
    List items = iterate(value);
    if (items.size() != names.size())
        fail(items.size() < names.size()
                 ? "not enough values to unpack (expected " + std::to_string(names.size()) + ", got " +
                       std::to_string(items.size()) + ")"
                 : "too many values to unpack (expected " + std::to_string(names.size()) + ")");
    for (size_t i = 0; i < names.size(); ++i) scope->vars[names[i]] = items[i];
}

Value Interpreter::make_macro(const Template::Node& macro, const ScopeP& defined_in) {
    const Template::Node* node = &macro;
    std::weak_ptr<Scope> weak = defined_in;
    ScopeP fallback = globals_;
    return Value::function(
        macro.name, [node, weak, fallback](Interpreter& in, std::vector<Value>& args, Kwargs& kwargs) {
            CallDepth depth(in);
            auto scope = std::make_shared<Scope>();
            scope->parent = weak.lock();
            if (!scope->parent) scope->parent = fallback;
            const auto& params = node->names;
            List varargs;
            for (size_t i = 0; i < args.size(); ++i) {
                if (i < params.size()) {
                    scope->vars[params[i]] = args[i];
                } else {
                    varargs.push_back(args[i]);
                }
            }
            Value extra = Value::dict();
            for (auto& [k, v] : kwargs) {
                bool is_param = false;
                for (const auto& p : params) is_param = is_param || p == k;
                if (is_param || k == "caller") {
                    scope->vars[k] = v;
                } else {
                    extra.set(k, v);
                }
            }
            for (size_t i = 0; i < params.size(); ++i) {
                if (scope->vars.count(params[i])) continue;
                scope->vars[params[i]] = node->a[i] ? in.eval(*node->a[i], scope)
                                                    : Value::undefined("'" + params[i] + "' is undefined");
            }
            scope->vars["varargs"] = Value::list(std::move(varargs));
            scope->vars["kwargs"] = extra;
            TaggedText out;
            const int line = in.line();
            in.exec(node->bodies[0], scope, out);
            in.set_line(line);
            return Value(std::move(out));
        });
}

Interpreter::Flow Interpreter::exec(const Body& body, const ScopeP& scope, TaggedText& out) {
    for (const NodeP& np : body) {
        const Template::Node& n = *np;
        step();
        line_ = n.line;
        switch (n.kind) {
            case Kind::Data:
                emit(out, n.value.as_string());
                break;
            case Kind::Print:
                emit(out, to_tagged_str(eval(*n.a[0], scope)));
                break;
            case Kind::If: {
                size_t taken = SIZE_MAX;
                for (size_t i = 0; i < n.a.size(); ++i) {
                    line_ = n.a[i]->line;
                    if (eval(*n.a[i], scope).truthy()) {
                        taken = i;
                        break;
                    }
                }
                if (taken == SIZE_MAX && n.flag) taken = n.a.size();
                if (taken != SIZE_MAX) {
                    const Flow f = exec(n.bodies[taken], scope, out);
                    if (f != Flow::Normal) return f;
                }
                break;
            }
            case Kind::For: {
                const Flow f = for_loop(n, scope, out);
                if (f != Flow::Normal) return f;
                break;
            }
            case Kind::Set: {
                Value v = eval(*n.a[0], scope);
                if (!n.attr.empty()) {
                    const Value* target = scope->find(n.names[0]);
                    if (!target || !target->is_namespace())
                        fail("cannot assign attribute on non-namespace object");
                    if (v.contains(target->entries())) fail("a namespace cannot contain itself");
                    check_depth(v);
                    target->entries().set(Value(n.attr, kTrusted), std::move(v));
                } else {
                    assign(scope, n.names, v);
                }
                break;
            }
            case Kind::SetBlock: {
                const Value v = render_filtered(n, scope);
                scope->vars[n.names[0]] = v;
                break;
            }
            case Kind::Macro:
                scope->vars[n.name] = make_macro(n, scope);
                break;
            case Kind::CallBlock: {
                const Template::Node& call_node = *n.a[0];
                Value callee = eval(*call_node.a[0], scope);
                std::vector<Value> args;
                Kwargs kw;
                eval_arguments(call_node, scope, args, kw);
                const Template::Node* block = &n;
                std::weak_ptr<Scope> weak = scope;
                kw.emplace_back("caller", Value::function("caller", [block, weak](Interpreter& in,
                                                                                  std::vector<Value>& cargs,
                                                                                  Kwargs& ckw) {
                                    CallDepth depth(in);
                                    auto inner = std::make_shared<Scope>();
                                    inner->parent = weak.lock();
                                    for (size_t i = 0; i < block->names.size(); ++i) {
                                        Value v;
                                        if (i < cargs.size()) {
                                            v = cargs[i];
                                        } else {
                                            bool found = false;
                                            for (auto& [k, e] : ckw) {
                                                if (k == block->names[i]) {
                                                    v = e;
                                                    found = true;
                                                }
                                            }
                                            if (!found && block->a[i + 1])
                                                v = in.eval(*block->a[i + 1], inner);
                                        }
                                        inner->vars[block->names[i]] = v;
                                    }
                                    TaggedText rendered;
                                    in.exec(block->bodies[0], inner, rendered);
                                    return Value(std::move(rendered));
                                }));
                emit(out, to_tagged_str(call(callee, args, kw)));
                break;
            }
            case Kind::FilterBlock: {
                const Value v = render_filtered(n, scope);
                emit(out, to_tagged_str(v));
                break;
            }
            case Kind::Break:
                return Flow::Break;
            case Kind::Continue:
                return Flow::Continue;
            case Kind::Scope: {
                const Flow f = exec(n.bodies[0], scope, out);
                if (f != Flow::Normal) return f;
                break;
            }
            default:
                fail("internal error: an expression where a statement belongs");
        }
    }
    return Flow::Normal;
}

void Interpreter::eval_arguments(const Template::Node& n, const ScopeP& scope, std::vector<Value>& args,
                                 Kwargs& kw) {
    for (size_t i = 1; i < n.a.size(); ++i) args.push_back(eval(*n.a[i], scope));
    for (const auto& [k, e] : n.kw) kw.emplace_back(k, eval(*e, scope));
}

Value Interpreter::render_filtered(const Template::Node& n, const ScopeP& scope) {
    TaggedText captured;
    exec(n.bodies[0], scope, captured);
    Value v(std::move(captured));
    for (const NodeP& f : n.a) {
        std::vector<Value> args;
        Kwargs kw;
        eval_arguments(*f, scope, args, kw);
        v = filter(f->name, v, args, kw);
    }
    return v;
}

Interpreter::Flow Interpreter::for_loop(const Template::Node& n, const ScopeP& scope, TaggedText& out) {
    List items = iterate(eval(*n.a[0], scope));
    auto loop_scope = std::make_shared<Scope>();
    loop_scope->parent = scope;
    if (n.a[1]) {
        List kept;
        for (const Value& item : items) {
            step();
            assign(loop_scope, n.names, item);
            if (eval(*n.a[1], loop_scope).truthy()) kept.push_back(item);
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        exec(n.bodies[1], loop_scope, out);
        return Flow::Normal;
    }
    const int64_t length = static_cast<int64_t>(items.size());
    auto last_changed = std::make_shared<Value>();
    for (int64_t i = 0; i < length; ++i) {
        step();
        // Each iteration starts from a fresh scope: what one iteration sets, the next does not see.
        auto iteration = std::make_shared<Scope>();
        iteration->parent = scope;
        assign(iteration, n.names, items[static_cast<size_t>(i)]);
        Value loop = Value::dict();
        loop.set("index", Value(i + 1));
        loop.set("index0", Value(i));
        loop.set("revindex", Value(length - i));
        loop.set("revindex0", Value(length - i - 1));
        loop.set("first", Value(i == 0));
        loop.set("last", Value(i == length - 1));
        loop.set("length", Value(length));
        loop.set("depth", Value(int64_t{1}));  // recursive loops (the only deeper ones) are refused
        loop.set("depth0", Value(int64_t{0}));
        loop.set("previtem",
                 i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
        loop.set("nextitem", i + 1 < length ? items[static_cast<size_t>(i + 1)]
                                            : Value::undefined("there is no next item"));
        loop.set("cycle", Value::function("cycle", [i](Interpreter& in, std::vector<Value>& args, Kwargs&) {
                     if (args.empty()) in.fail("no items for cycling given");
                     return args[static_cast<size_t>(i) % args.size()];
                 }));
        loop.set("changed",
                 Value::function("changed", [last_changed](Interpreter&, std::vector<Value>& args, Kwargs&) {
                     Value now = Value::list(args);
                     if (!last_changed->is_undefined() && equals(*last_changed, now)) return Value(false);
                     *last_changed = now;
                     return Value(true);
                 }));
        iteration->vars["loop"] = loop;
        const Flow f = exec(n.bodies[0], iteration, out);
        if (f == Flow::Break) break;
    }
    return Flow::Normal;
}

Value Interpreter::call(const Value& callee, std::vector<Value>& args, Kwargs& kwargs) {
    if (callee.kind() == Value::Kind::Callable) return callee.callable().fn(*this, args, kwargs);
    if (callee.is_undefined())
        fail(callee.undefined_name().empty() ? "calling an undefined value" : callee.undefined_name());
    fail(std::string("'") + type_name(callee) + "' object is not callable");
}

Value Interpreter::eval(const Template::Node& e, const ScopeP& scope) {
    step();
    switch (e.kind) {
        case Kind::Literal:
            return e.value;
        case Kind::Name: {
            if (const Value* v = scope->find(e.name)) return *v;
            return Value::undefined("'" + e.name + "' is undefined");
        }
        case Kind::ListLit:
        case Kind::TupleLit: {
            List items;
            for (const NodeP& a : e.a) items.push_back(eval(*a, scope));
            Value out = Value::list(std::move(items), e.kind == Kind::TupleLit);
            check_depth(out);
            return out;
        }
        case Kind::DictLit: {
            Value d = Value::dict();
            for (size_t i = 0; i + 1 < e.a.size(); i += 2)
                d.entries().set(eval(*e.a[i], scope), eval(*e.a[i + 1], scope));
            check_depth(d);
            return d;
        }
        case Kind::GetAttr:
            return get_attr(eval(*e.a[0], scope), e.name);
        case Kind::GetItem: {
            Value object = eval(*e.a[0], scope);
            return get_item(object, eval(*e.a[1], scope));
        }
        case Kind::Slice: {
            Value object = eval(*e.a[0], scope);
            const auto part = [&](int i) {
                return e.a[static_cast<size_t>(i)] ? eval(*e.a[static_cast<size_t>(i)], scope)
                                                   : Value::none();
            };
            Value start = part(1), stop = part(2), stride = part(3);
            return slice(object, start, stop, stride);
        }
        case Kind::Call: {
            Value callee = eval(*e.a[0], scope);
            std::vector<Value> args;
            Kwargs kw;
            eval_arguments(e, scope, args, kw);
            line_ = e.line;
            return call(callee, args, kw);
        }
        case Kind::Filter: {
            Value subject = eval(*e.a[0], scope);
            std::vector<Value> args;
            Kwargs kw;
            eval_arguments(e, scope, args, kw);
            line_ = e.line;
            return filter(e.name, subject, args, kw);
        }
        case Kind::Test: {
            Value subject = eval(*e.a[0], scope);
            std::vector<Value> args;
            Kwargs kw;
            eval_arguments(e, scope, args, kw);
            line_ = e.line;
            return Value(test(e.name, subject, args, kw) != e.flag);
        }
        case Kind::Unary: {
            Value v = eval(*e.a[0], scope);
            if (e.name == "not") return Value(!v.truthy());
            line_ = e.line;
            if (v.kind() == Value::Kind::Int || v.kind() == Value::Kind::Bool) {
                const int64_t x = int_of(v);
                if (e.name == "+") return Value(x);
                if (x == INT64_MIN) fail("integer overflow");
                return Value(-x);
            }
            if (v.kind() == Value::Kind::Float) return Value(e.name == "-" ? -v.as_float() : v.as_float());
            if (v.is_undefined()) fail(v.undefined_name());
            fail(std::string("bad operand type for unary ") + e.name + ": '" + type_name(v) + "'");
        }
        case Kind::Binary: {
            Value l = eval(*e.a[0], scope);
            if (e.name == "and") return l.truthy() ? eval(*e.a[1], scope) : l;
            if (e.name == "or") return l.truthy() ? l : eval(*e.a[1], scope);
            Value r = eval(*e.a[1], scope);
            line_ = e.line;
            return binary(e.name, l, r);
        }
        case Kind::Compare: {
            Value l = eval(*e.a[0], scope);
            for (size_t i = 0; i < e.names.size(); ++i) {
                Value r = eval(*e.a[i + 1], scope);
                line_ = e.line;
                if (!compare(e.names[i], l, r)) return Value(false);
                l = r;
            }
            return Value(true);
        }
        case Kind::Cond: {
            if (eval(*e.a[1], scope).truthy()) return eval(*e.a[0], scope);
            return e.a[2] ? eval(*e.a[2], scope)
                          : Value::undefined("the condition was false and there is no else");
        }
        default:
            fail("internal error: a statement where an expression belongs");
    }
}

Value Interpreter::binary(const std::string& op, const Value& l, const Value& r) {
    if (op == "~") {
        TaggedText s = to_tagged_str(l);
        const TaggedText rs = to_tagged_str(r);
        check_string(s.text.size() + rs.text.size());
        s.append(rs);
        return Value(std::move(s));
    }
    if (l.is_undefined()) fail(l.undefined_name());
    if (r.is_undefined()) fail(r.undefined_name());
    const auto unsupported = [&]() -> Value {
        fail("unsupported operand type(s) for " + op + ": '" + type_name(l) + "' and '" + type_name(r) + "'");
    };
    const bool ints = is_int_like(l) && is_int_like(r);
    const bool nums = numeric(l) && numeric(r);
    if (op == "+") {
        if (ints) {
            int64_t out;
            if (__builtin_add_overflow(int_of(l), int_of(r), &out)) fail("integer overflow");
            return Value(out);
        }
        if (nums) return Value(float_of(l) + float_of(r));
        if (l.is_string() && r.is_string()) {
            // markupsafe: Markup + str escapes the str, and the result is Markup.
            const auto escaped = [](const Value& v) {
                TaggedText e = v.as_string();
                std::string text = html_escape(e.text);
                if (text.size() == e.text.size()) return e;
                return TaggedText(std::move(text),
                                  e.all_tagged(0, e.text.size(), kTrusted) ? kTrusted : kData);
            };
            const bool markup = l.is_markup() || r.is_markup();
            TaggedText s = markup && !l.is_markup() ? escaped(l) : l.as_string();
            const TaggedText rs = markup && !r.is_markup() ? escaped(r) : r.as_string();
            check_string(s.text.size() + rs.text.size());
            s.append(rs);
            Value out(std::move(s));
            return markup ? out.markup() : out;
        }
        if (l.is_list() && r.is_list() && l.is_tuple() == r.is_tuple() && !l.is_generator() &&
            !r.is_generator()) {
            check_list(l.items().size() + r.items().size());
            List items = l.items();
            items.insert(items.end(), r.items().begin(), r.items().end());
            return Value::list(std::move(items), l.is_tuple());
        }
        return unsupported();
    }
    if (op == "-") {
        if (ints) {
            int64_t out;
            if (__builtin_sub_overflow(int_of(l), int_of(r), &out)) fail("integer overflow");
            return Value(out);
        }
        if (nums) return Value(float_of(l) - float_of(r));
        return unsupported();
    }
    if (op == "*") {
        if (ints) {
            int64_t out;
            if (__builtin_mul_overflow(int_of(l), int_of(r), &out)) fail("integer overflow");
            return Value(out);
        }
        if (nums) return Value(float_of(l) * float_of(r));
        const Value* seq = l.is_string() || l.is_list() ? &l : r.is_string() || r.is_list() ? &r : nullptr;
        const Value* count = seq == &l ? &r : &l;
        if (!seq || !is_int_like(*count)) return unsupported();
        const int64_t n = std::max<int64_t>(0, int_of(*count));
        if (seq->is_string()) {
            if (n > 0) check_string(seq->text().size() * static_cast<size_t>(n));
            if (n > 0 &&
                seq->text().size() * static_cast<size_t>(n) / static_cast<size_t>(n) != seq->text().size())
                fail("string too long");
            TaggedText s;
            for (int64_t i = 0; i < n; ++i) s.append(seq->as_string());
            return Value(std::move(s));
        }
        if (n > 0) check_list(seq->items().size() * static_cast<size_t>(n));
        List items;
        for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->items().begin(), seq->items().end());
        return Value::list(std::move(items), seq->is_tuple());
    }
    if (op == "/") {
        if (!nums) return unsupported();
        if (float_of(r) == 0) fail("division by zero");
        return Value(float_of(l) / float_of(r));
    }
    if (op == "//") {
        if (!nums) return unsupported();
        if (ints) {
            const int64_t a = int_of(l), b = int_of(r);
            if (b == 0) fail("integer division or modulo by zero");
            if (a == INT64_MIN && b == -1) fail("integer overflow");
            int64_t q = a / b;
            if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
            return Value(q);
        }
        if (float_of(r) == 0) fail("float floor division by zero");
        return Value(std::floor(float_of(l) / float_of(r)));
    }
    if (op == "%") {
        if (l.is_string()) {
            std::string s = percent_format(*this, l.text(), r);
            check_string(s.size());
            return Value(
                std::move(s),
                l.as_string().all_tagged(0, l.text().size(), kTrusted) && !r.is_string() ? kTrusted : kData);
        }
        if (!nums) return unsupported();
        if (ints) {
            const int64_t a = int_of(l), b = int_of(r);
            if (b == 0) fail("integer division or modulo by zero");
            if (b == -1) return Value(int64_t{0});
            int64_t m = a % b;
            if (m != 0 && ((m < 0) != (b < 0))) m += b;
            return Value(m);
        }
        const double b = float_of(r);
        if (b == 0) fail("float modulo");
        double m = std::fmod(float_of(l), b);
        if (m != 0 && ((m < 0) != (b < 0))) m += b;
        return Value(m);
    }
    if (op == "**") {
        if (!nums) return unsupported();
        if (ints && int_of(r) >= 0) {
            int64_t base = int_of(l), exp = int_of(r), out = 1;
            while (exp > 0) {
                if (exp & 1) {
                    if (__builtin_mul_overflow(out, base, &out)) fail("integer overflow");
                }
                exp >>= 1;
                if (exp > 0 && __builtin_mul_overflow(base, base, &base)) fail("integer overflow");
            }
            return Value(out);
        }
        return Value(std::pow(float_of(l), float_of(r)));
    }
    fail("unknown operator " + op);
}

bool Interpreter::compare(const std::string& op, const Value& l, const Value& r) {
    if (op == "==") return equals(l, r);
    if (op == "!=") return !equals(l, r);
    if (op == "in" || op == "not in") {
        bool found = false;
        if (r.is_string()) {
            if (!l.is_string())
                fail(std::string("'in <string>' requires string as left operand, not ") + type_name(l));
            found = r.text().find(l.text()) != std::string::npos;
        } else if (r.is_dict()) {
            found = r.entries().find(l) != nullptr;
        } else if (r.is_list()) {
            for (const Value& item : r.items()) {
                if (equals(item, l)) {
                    found = true;
                    break;
                }
            }
        } else if (!r.is_undefined()) {
            fail(std::string("argument of type '") + type_name(r) + "' is not iterable");
        }
        return op == "in" ? found : !found;
    }
    const int c = python_compare(*this, l, r, true);
    if (op == "<") return c < 0;
    if (op == ">") return c > 0;
    if (op == "<=") return c <= 0;
    return c >= 0;
}

int python_compare(Interpreter& in, const Value& a, const Value& b, bool case_sensitive) {
    if (numeric(a) && numeric(b)) {
        if (is_int_like(a) && is_int_like(b)) return int_of(a) < int_of(b) ? -1 : int_of(a) > int_of(b);
        const double x = float_of(a), y = float_of(b);
        return x < y ? -1 : x > y;
    }
    if (a.is_string() && b.is_string()) {
        if (case_sensitive) return a.text().compare(b.text()) < 0 ? -1 : a.text() != b.text();
        const std::string x = ascii_lower(a.text()), y = ascii_lower(b.text());
        return x.compare(y) < 0 ? -1 : x != y;
    }
    if (a.is_list() && b.is_list()) {
        const List& x = a.items();
        const List& y = b.items();
        for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
            if (equals(x[i], y[i])) continue;
            return python_compare(in, x[i], y[i], case_sensitive);
        }
        return x.size() < y.size() ? -1 : x.size() > y.size();
    }
    if (a.is_undefined()) in.fail(a.undefined_name());
    if (b.is_undefined()) in.fail(b.undefined_name());
    in.fail(std::string("'<' not supported between instances of '") + type_name(a) + "' and '" +
            type_name(b) + "'");
}

Value Interpreter::slice(const Value& object, const Value& start, const Value& stop, const Value& stride) {
    if (object.is_undefined()) fail(object.undefined_name());
    if (!object.is_string() && !object.is_list())
        fail(std::string("'") + type_name(object) + "' object is not subscriptable");
    const auto index = [&](const Value& v) -> std::optional<int64_t> {
        if (v.is_none() || v.is_undefined()) return std::nullopt;
        if (!is_int_like(v)) fail("slice indices must be integers or None");
        return int_of(v);
    };
    std::vector<size_t> offsets;
    int64_t len;
    if (object.is_string()) {
        offsets = codepoint_offsets(object.text());
        len = static_cast<int64_t>(offsets.size());
    } else {
        len = static_cast<int64_t>(object.items().size());
    }
    const int64_t step_v = index(stride).value_or(1);
    if (step_v == 0) fail("slice step cannot be zero");
    const auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
        if (!v) return dflt;
        int64_t x = *v;
        if (x < 0) x += len;
        if (step_v > 0) return std::clamp<int64_t>(x, 0, len);
        return std::clamp<int64_t>(x, -1, len - 1);
    };
    const int64_t lo = clamp(index(start), step_v > 0 ? 0 : len - 1);
    const int64_t hi = clamp(index(stop), step_v > 0 ? len : -1);
    std::vector<int64_t> picks;
    for (int64_t i = lo; step_v > 0 ? i < hi : i > hi; i += step_v) picks.push_back(i);
    if (object.is_list()) {
        List items;
        for (int64_t i : picks) items.push_back(object.items()[static_cast<size_t>(i)]);
        return Value::list(std::move(items), object.is_tuple());
    }
    const TaggedText& s = object.as_string();
    TaggedText out;
    if (step_v == 1 && !picks.empty()) {
        const size_t from = offsets[static_cast<size_t>(picks.front())];
        const size_t to = static_cast<size_t>(picks.back()) + 1 < offsets.size()
                              ? offsets[static_cast<size_t>(picks.back()) + 1]
                              : s.text.size();
        return Value(s.substr(from, to - from));
    }
    for (int64_t i : picks) {
        const size_t from = offsets[static_cast<size_t>(i)];
        const size_t to =
            static_cast<size_t>(i) + 1 < offsets.size() ? offsets[static_cast<size_t>(i) + 1] : s.text.size();
        out.append(s.substr(from, to - from));
    }
    return Value(std::move(out));
}

TaggedText Template::render(const Value& context, const RenderOptions& options) const {
    if (!root_) throw TemplateError("the template was not parsed", 0, 0);
    Interpreter in(options, context);
    return in.run(*root_);
}

}  // namespace lantern::jinja
