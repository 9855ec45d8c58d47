// The syntax tree of a parsed Jinja template (private to the interpreter). One node type with a
// kind; the fields each kind uses are listed beside it.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lantern/jinja.h"

namespace lantern::jinja {

using NodeP = std::shared_ptr<const Template::Node>;
using Body = std::vector<NodeP>;

struct Template::Node {
    enum class Kind {
        // expressions
        Literal,   // value
        Name,      // name
        ListLit,   // a: elements
        TupleLit,  // a: elements
        DictLit,   // a: key, value, key, value, ...
        GetAttr,   // a[0] object, name (attribute)
        GetItem,   // a[0] object, a[1] key
        Slice,     // a[0] object, a[1] start, a[2] stop, a[3] step (each may be null)
        Call,      // a[0] callee, a[1..] positional, kw keyword arguments
        Filter,    // a[0] subject (null inside filter blocks and `set x | f`), name, a[1..], kw
        Test,      // a[0] subject, name, a[1..], kw, flag: negated ("is not")
        Unary,     // name: "not", "-", "+"; a[0]
        Binary,    // name: operator ("or", "and", "+", "~", "in", "not in", ...); a[0], a[1]
        Compare,   // a[0], a[1], ... compared by names[i] between a[i] and a[i+1] (chained)
        Cond,      // a[0] value if a[1] else a[2] (a[2] may be null: undefined)
        // statements
        Data,         // value: text of the template
        Print,        // a[0]
        If,           // a: conditions; bodies: one per condition, then the else body if flag
        For,          // names: targets; a[0] iterable, a[1] filter condition (nullable);
                      // bodies[0] body, bodies[1] else body
        Set,          // names: targets, or name.attr for a namespace (attr non-empty); a[0] value
        SetBlock,     // names[0] target; a: filters (subject null); bodies[0]
        Macro,        // name; names: parameters; a: their defaults (null where none); bodies[0]
        CallBlock,    // a[0] the Call; names: caller's parameters, a[1..] their defaults; bodies[0]
        FilterBlock,  // a: filters (subject null); bodies[0]
        Break,
        Continue,
        Scope,  // bodies[0]: {% generation %} and the root
    };
    Kind kind;
    int line = 0;
    int column = 0;
    std::string name;
    std::string attr;
    Value value;
    bool flag = false;
    std::vector<NodeP> a;
    std::vector<std::pair<std::string, NodeP>> kw;
    std::vector<std::string> names;
    std::vector<Body> bodies;
};

// Parses a whole template into its root node (Kind::Scope). Throws TemplateError.
NodeP parse_template(std::string_view source);

}  // namespace lantern::jinja
