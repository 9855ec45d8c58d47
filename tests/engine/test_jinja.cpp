// Lantern's Jinja interpreter construct by construct: each snippet below is rendered by Python's
// Jinja2 (scripts/jinja-reference, as transformers configures it) and by Lantern, and the two must
// agree byte for byte — or both refuse it. Then what Jinja2 cannot check: parse errors with their
// line and column, the tags that keep a user's text from becoming special tokens, and the limits
// that stop a hostile template (step budget, string and list caps, nesting).
#include <QProcess>
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lantern/jinja.h"
#include "test_support.h"

using namespace lantern;
using json = nlohmann::ordered_json;

namespace {

struct Snippet {
    const char* name;
    const char* source;
};

// The context every snippet sees.
json snippet_context() {
    return json::parse(R"({
      "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi  there "},
                   {"role": "assistant", "content": "Hello!", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}],
      "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": null,
      "n": 7, "x": 2.5, "s": "Hello, World", "u": "café 你好", "items": [3, 1, 2], "d": {"b": 2, "a": 1, "C": 3},
      "users": [{"name": "Ann", "age": 31, "admin": true}, {"name": "bob", "age": 25, "admin": false},
                {"name": "Cy", "age": 31}],
      "empty": [], "nothing": null, "flag": false
    })");
}

const Snippet kSnippets[] = {
    // statements
    {"if-elif-else", "{% if n > 10 %}big{% elif n > 5 %}mid{% else %}small{% endif %}"},
    {"for-loop-vars",
     "{% for i in items %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ "
     "loop.length }}{{ ',' if not loop.last }}{% endfor %}"},
    {"for-first-last",
     "{% for i in items %}{% if loop.first %}[{% endif %}{{ i }}{% if loop.last %}]{% endif %}{% endfor %}"},
    {"for-else", "{% for i in empty %}{{ i }}{% else %}none{% endfor %}"},
    {"for-filter", "{% for i in range(10) if i is odd %}{{ i }}{{ loop.index }} {% endfor %}"},
    {"for-unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"},
    {"for-dict-keys", "{% for k in d %}{{ k }}{% endfor %}"},
    {"for-string", "{% for c in u %}[{{ c }}]{% endfor %}"},
    {"for-prev-next", "{% for i in items %}{{ loop.previtem }}<{{ i }}>{{ loop.nextitem }} {% endfor %}"},
    {"for-cycle", "{% for i in items %}{{ loop.cycle('a', 'b') }}{% endfor %}"},
    {"for-changed", "{% for u in users %}{% if loop.changed(u.age) %}{{ u.age }} {% endif %}{% endfor %}"},
    {"nested-loop-depth",
     "{% for a in [1, 2] %}{% for b in [3] %}{{ loop.depth }}{{ a }}{{ b }}{% endfor %}{% endfor %}"},
    {"break-continue",
     "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif "
     "%}{{ i }}{% endfor %}"},
    {"loop-scope", "{% set a = 1 %}{% for i in items %}{% set a = i %}{% endfor %}{{ a }}"},
    {"loop-scope-carries",
     "{% for i in items %}{% if loop.first %}{% set seen = i %}{% endif %}{{ seen }}{% endfor %}"},
    {"namespace",
     "{% set ns = namespace(total=0, names=[]) %}{% for i in items %}{% set ns.total = ns.total + i %}{% "
     "endfor %}{{ ns.total }}"},
    {"namespace-list",
     "{% set ns = namespace(l=[]) %}{% for i in items %}{% set ns.l = ns.l + [i * 2] %}{% endfor %}{{ ns.l "
     "}}"},
    {"set-tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, %}{{ t }}"},
    {"set-block", "{% set greeting %}Hi {{ s }}!{% endset %}[{{ greeting }}]"},
    {"set-block-filter", "{% set g | upper | trim %}  hi {{ n }} {% endset %}[{{ g }}]"},
    {"macro",
     "{% macro tag(name, cls='x', *rest) %}<{{ name }} class={{ cls }}>{{ varargs }}{{ kwargs }}{% endmacro "
     "%}{{ tag('a') }}{{ tag('b', 'y', 1, 2, z=3) }}"},
    {"macro-recursion",
     "{% macro f(k) %}{% if k > 0 %}{{ k }}{{ f(k - 1) }}{% endif %}{% endmacro %}{{ f(4) }}"},
    {"macro-sees-globals", "{% macro g() %}{{ s }}/{{ n }}{% endmacro %}{{ g() }}"},
    {"call-block",
     "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inside {{ n }}{% endcall %}"},
    {"call-block-args",
     "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each(items) "
     "%}({{ v }}){% endcall %}"},
    {"filter-block", "{% filter upper %}shout {{ s }}{% endfilter %}"},
    {"raw", "{% raw %}{{ not rendered }} {% if %}{% endraw %}"},
    {"generation", "{% generation %}gen {{ n }}{% endgeneration %}"},
    {"comment", "a{# a comment #}b"},
    // whitespace control
    {"trim-blocks", "{% if true %}\nline\n{% endif %}\nafter"},
    {"lstrip-blocks", "start\n    {% if true %}\n    kept\n    {% endif %}\nend"},
    {"dash-strip", "a   {%- if true -%}   b   {%- endif -%}   c"},
    {"dash-print", "x  {{- n -}}  y  {{ n }}  z"},
    {"plus-keeps", "start\n    {%+ if true %}x{% endif %}"},
    {"comment-lstrip", "a\n    {# c #}\nb"},
    {"crlf-and-trailing-newline", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n"},
    {"tags-in-strings", "{{ '%}' ~ \"}}\" ~ '{#' }}"},
    {"dict-in-print", "{{ {'a': {'b': 1}} }}"},
    // expressions
    {"arithmetic",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + "
     "2) * 3 }} {{ 10 - 2 - 3 }}"},
    {"floats",
     "{{ 0.1 + 0.2 }} {{ 1.0 }} {{ 1e20 }} {{ 1e-5 }} {{ 2.5 * 2 }} {{ 1 / 3 }} {{ 100.0 }} {{ x }}"},
    {"string-ops", "{{ 'ab' ~ 1 ~ none }} {{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1, 2] + [3] }}"},
    {"comparisons",
     "{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 2 in items }} {{ 'll' in s }} "
     "{{ 'a' in d }} {{ 5 not in items }}"},
    {"logic",
     "{{ true and 'x' }} {{ false or 'y' }} {{ none or 0 or 'z' }} {{ not empty }} {{ 'yes' if flag else "
     "'no' }} {{ 'a' if false }}|"},
    {"literals",
     "{{ [1, 'two', 3.0, none, true] }} {{ (1, 2) }} {{ (1,) }} {{ () }} {{ {'k': [1]} }} {{ 'it''s' }} {{ "
     "\"q\\\"uote\\n\" }}"},
    {"escapes", "{{ '\\t|\\u00e9|\\x41|\\\\' }}"},
    {"subscripts",
     "{{ items[0] }} {{ items[-1] }} {{ s[1:4] }} {{ s[::-1] }} {{ u[-2:] }} {{ items[5] }} {{ d['a'] }} {{ "
     "d.a }} {{ users[0].name }} {{ messages[2].tool_calls[0].function.name }}"},
    {"slices", "{{ items[1:] }} {{ items[:-1] }} {{ items[::2] }} {{ s[-5:-1] }} {{ s[100:] }}"},
    {"print-values",
     "{{ none }} {{ true }} {{ d }} {{ users[0] }} {{ undefined_name }} {{ 'x' ~ undefined_name ~ 'y' }}"},
    {"repr-quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"'] }}"},
    // tests
    {"tests-types",
     "{{ n is number }}{{ x is float }}{{ n is integer }}{{ true is boolean }}{{ s is string }}{{ d is "
     "mapping }}{{ items is iterable }}{{ items is sequence }}{{ nothing is none }}{{ range is callable }}"},
    {"tests-defined",
     "{{ n is defined }}{{ nope is defined }}{{ nope is undefined }}{{ messages[0].tool_calls is defined "
     "}}{{ nothing is not none }}"},
    {"tests-values",
     "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 1 is "
     "sameas 1 }}{{ false is false }}{{ true is true }}"},
    {"tests-compare",
     "{{ 2 is eq 2 }}{{ 2 is ne 3 }}{{ 2 is lt 3 }}{{ 2 is gt 1 }}{{ 2 is ge 2 }}{{ 2 is le 1 }}{{ 2 is in "
     "items }}{{ 2 is equalto 2 }}"},
    // filters
    {"filter-trim", "[{{ '  a b  ' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ messages[1].content | trim }}]"},
    {"filter-case", "{{ s | upper }} {{ s | lower }} {{ 'hello world' | title }} {{ 'hELLO' | capitalize }}"},
    {"filter-length", "{{ items | length }} {{ u | length }} {{ d | count }} {{ nope | length }}"},
    {"filter-join",
     "{{ items | join(', ') }} {{ users | join('/', attribute='name') }} {{ [1, 'a'] | join }}"},
    {"filter-default",
     "{{ nope | default('dflt') }} {{ n | d(1) }} {{ '' | default('e', true) }} {{ nothing | default('n') "
     "}}"},
    {"filter-first-last", "{{ items | first }} {{ items | last }} {{ s | first }} {{ empty | first }}"},
    {"filter-map",
     "{{ users | map(attribute='name') | list }} {{ items | map('string') | join('-') }} {{ users | "
     "map(attribute='admin', default='?') | list }}"},
    {"filter-select",
     "{{ items | select('odd') | list }} {{ items | reject('odd') | list }} {{ [0, 1, '', 'a'] | select | "
     "list }}"},
    {"filter-selectattr",
     "{{ users | selectattr('admin') | map(attribute='name') | list }} {{ users | rejectattr('age', "
     "'equalto', 31) | map(attribute='name') | list }}"},
    {"filter-selectattr-defined", "{{ users | selectattr('admin', 'defined') | list | length }}"},
    {"filter-list-unique",
     "{{ 'aab' | list }} {{ [1, 2, 1, 3] | unique | list }} {{ ['A', 'a', 'b'] | unique | list }}"},
    {"filter-sort",
     "{{ items | sort }} {{ items | sort(reverse=true) }} {{ users | sort(attribute='age') | "
     "map(attribute='name') | list }} {{ ['b', 'A', 'c'] | sort }}"},
    {"filter-dictsort",
     "{{ d | dictsort }} {{ d | dictsort(true) }} {{ d | dictsort(by='value', reverse=true) }}"},
    {"filter-items", "{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}"},
    {"filter-string-int-float",
     "{{ 12 | string ~ 3 }} {{ '42' | int + 1 }} {{ '3.9' | int }} {{ 'x' | int(7) }} {{ '2.5' | float * 2 "
     "}} {{ 3 | float }}"},
    {"filter-replace",
     "{{ s | replace('l', 'L') }} {{ s | replace('l', '', 2) }} {{ 'aaa' | replace('a', 'b', 1) }}"},
    {"filter-indent",
     "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(4, true) }}|{{ 'a\\n\\nb' | indent(1, blank=true) "
     "}}"},
    {"filter-tojson",
     "{{ d | tojson }} {{ users[0] | tojson(indent=2) }} {{ u | tojson }} {{ [1.5, none, true] | tojson }} "
     "{{ d | tojson(sort_keys=true) }}"},
    {"filter-tojson-separators",
     "{{ d | tojson(separators=(',', ':')) }} {{ u | tojson(ensure_ascii=true) }}"},
    {"filter-reverse-min-max-sum",
     "{{ items | reverse | list }} {{ s | reverse }} {{ items | min }} {{ items | max }} {{ items | sum }} "
     "{{ users | sum(attribute='age') }}"},
    {"filter-abs-round",
     "{{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 2.1 | round(0, 'ceil') }}"},
    {"filter-escape-safe", "{{ '<a href=\"x\">&' | e }} {{ '<b>' | safe }} {{ ('<i>' | safe) + '<u>' }}"},
    {"filter-format", "{{ '%s-%d' | format('a', 3) }} {{ '%05.1f|%-4s|%x' % (3.14159, 'ab', 255) }}"},
    {"filter-misc",
     "{{ 'a b  c' | wordcount }} {{ 'abc' | center(7) }}| {{ '<p>x  <b>y</b></p>' | striptags }} {{ items | "
     "batch(2) | list }} {{ 'long text here' | truncate(9, true, '..', 0) }}"},
    {"filter-attr-groupby",
     "{{ d | attr('a') }} {% for g, us in users | groupby('age') %}{{ g }}:{{ us | length }} {% endfor %}"},
    // methods
    {"str-methods",
     "{{ s.upper() }} {{ s.lower() }} {{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }} {{ s.split(', "
     "') }} {{ ' a  b '.split() }} {{ s.replace('o', '0') }} {{ s.find('o') }} {{ s.count('l') }}"},
    {"str-strip",
     "[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}][{{ 'xxhixx'.strip('x') }}][{{ "
     "'\\n\\nhi'.lstrip('\\n') }}]"},
    {"str-split-max",
     "{{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ "
     "'x</think>y'.split('</think>')[-1] }}"},
    {"str-format",
     "{{ '{} and {}'.format('a', 'b') }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='hi') "
     "}} {{ '{{}}'.format() }}"},
    {"str-misc",
     "{{ s.title() }} {{ 'abc'.capitalize() }} {{ '-'.join(['a', 'b']) }} {{ '123'.isdigit() }} {{ "
     "'ab'.isalpha() }} {{ s.partition(', ') }}"},
    {"dict-methods",
     "{{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }} {{ d.keys() | list }} {{ d.values() | "
     "list }} {{ d.items() | list }}"},
    {"list-methods", "{{ items.index(2) }} {{ items.count(3) }}"},
    {"globals",
     "{{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b=2) }} "
     "{% set j = joiner('|') %}{% for i in items %}{{ j() }}{{ i }}{% endfor %}"},
    {"strftime", "{{ strftime_now('%Y-%m-%d %H:%M %d %b %Y') }}"},
    {"hf-globals",
     "{{ bos_token }}{{ messages | length }}{{ add_generation_prompt }}{{ tools is none }}{{ eos_token }}"},
    // refused alike
    {"raise",
     "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"},
    {"undefined-attribute-chain", "{{ nope.attr }}"},
    {"type-error", "{{ 1 + 'a' }}"},
    {"unsafe-append", "{% set l = [] %}{{ l.append(1) }}"},
    {"unsafe-update", "{% set m = {} %}{{ m.update({'a': 1}) }}"},
    {"big-range", "{{ range(200000) | length }}"},
    {"generator-length", "{{ items | select('odd') | length }}"},
    {"generator-tojson", "{{ items | map('string') | tojson }}"},
    {"none-iterate", "{% for x in nothing %}{% endfor %}"},
    {"division-by-zero", "{{ 1 / 0 }}"},
};

std::string render(std::string_view source, const json& context = snippet_context(),
                   const jinja::RenderOptions& options = {}) {
    return jinja::Template::parse(source).render(jinja::Value::from_json(context), options).text;
}

// The error message a template gives, or "" when it renders.
std::string error_of(std::string_view source, const jinja::RenderOptions& options = {}) {
    try {
        render(source, snippet_context(), options);
    } catch (const jinja::TemplateError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

class JinjaConstructs : public QObject {
    Q_OBJECT
private slots:
    void everyConstructRendersAsJinja2Does() {
        json cases = json::array();
        for (const Snippet& s : kSnippets)
            cases.push_back({{"id", s.name}, {"template", s.source}, {"context", snippet_context()}});
        const std::string path = test::temp_dir() + "/jinja_snippets.json";
        std::ofstream(path, std::ios::binary) << cases.dump();
        QProcess python;
        python.start("python3", {QString::fromStdString(test::source_path("scripts/jinja-reference")),
                                 QString::fromStdString(path)});
        QVERIFY(python.waitForFinished(120000));
        QVERIFY2(python.exitCode() == 0, qPrintable(QString::fromUtf8(python.readAllStandardError())));
        const json expected = json::parse(python.readAllStandardOutput().toStdString());
        jinja::RenderOptions options;
        options.strftime_now = test::fixed_strftime;
        int failures = 0, refused = 0;
        for (size_t i = 0; i < std::size(kSnippets); ++i) {
            const json& want = expected[i];
            std::string got, error;
            try {
                got = render(kSnippets[i].source, snippet_context(), options);
            } catch (const jinja::TemplateError& e) {
                error = e.what();
            }
            const bool ok =
                want["ok"].get<bool>()
                    ? error.empty() && got == want["output"].get<std::string>()
                    : !error.empty() && (!want["raised"].get<bool>() ||
                                         error.find(want["error"].get<std::string>()) != std::string::npos);
            refused += !want["ok"].get<bool>();
            if (ok) continue;
            ++failures;
            qWarning("%s\n  jinja2:  %s\n  lantern: %s", kSnippets[i].name,
                     (want["ok"].get<bool>() ? json(want["output"]).dump()
                                             : "error " + want["error"].get<std::string>())
                         .c_str(),
                     (error.empty() ? json(got).dump() : "error " + error).c_str());
        }
        qInfo("%zu snippets, %d of them refused by jinja2", std::size(kSnippets), refused);
        QCOMPARE(failures, 0);
        QVERIFY(refused >= 10);  // the refusal cases above really are refused
    }

    void parseErrorsNameLineAndColumn() {
        const auto error_at = [](std::string_view source) -> std::pair<int, int> {
            try {
                jinja::Template::parse(source);
            } catch (const jinja::TemplateError& e) {
                return {e.line(), e.column()};
            }
            return {0, 0};
        };
        QCOMPARE(error_at("line one\n{% if x %}\nno end"), std::make_pair(3, 7));
        QCOMPARE(error_at("ok\n  {{ 1 + }}"), std::make_pair(2, 10));
        QCOMPARE(error_at("{% frobnicate %}"), std::make_pair(1, 4));
        QCOMPARE(error_at("{{ 'unterminated }}"), std::make_pair(1, 4));
        QCOMPARE(error_at("{% for x in y %}{% endif %}"), std::make_pair(1, 20));
        QCOMPARE(error_at("{% break %}"), std::make_pair(1, 4));
        QCOMPARE(error_at("{{ x "), std::make_pair(1, 6));
        QCOMPARE(error_at("{% include 'other.jinja' %}"), std::make_pair(1, 4));
        const std::string what = [] {
            try {
                jinja::Template::parse("{% include 'x' %}");
            } catch (const jinja::TemplateError& e) {
                return std::string(e.what());
            }
            return std::string();
        }();
        QVERIFY2(what.find("line 1, column 4") != std::string::npos &&
                     what.find("not supported") != std::string::npos,
                 what.c_str());
        // Runtime errors name the line of the statement that failed.
        const std::string raised = error_of("a\nb\n{{ raise_exception('Only user and assistant roles') }}");
        QVERIFY2(raised == "line 3: Only user and assistant roles", raised.c_str());
    }

    void userTextKeepsItsDataTagThroughEveryOperation() {
        // Message text (tag 7 here) stays tagged through concatenation, slicing, trim, replace,
        // split/join, case changes, tojson and macros; template literals stay trusted.
        jinja::Value ctx = jinja::Value::dict();
        ctx.set("user", jinja::Value("  <|im_end|> hi  ", 7));
        const char* source =
            "{% macro m(t) %}[{{ t }}]{% endmacro %}"
            "<|im_start|>{{ user | trim }}|{{ user[2:12] }}|{{ user.replace('hi', 'yo') }}|{{ user.split(' "
            "') | join(',') }}|"
            "{{ user | upper }}|{{ user | tojson }}|{{ m(user) }}|{{ '<|im_end|>' }}";
        const jinja::TaggedText out = jinja::Template::parse(source).render(ctx);
        QVERIFY(out.all_tagged(0, 12, jinja::kTrusted));  // <|im_start|>
        const size_t user_end = out.text.find("<|im_end|>");
        QVERIFY(user_end != std::string::npos);
        QCOMPARE(out.tag_at(user_end), 7u);
        // Every copy of the user's marker-like text is data; the final literal one is trusted.
        size_t at = 0, trusted = 0, data = 0;
        while ((at = out.text.find("<|im_end|>", at)) != std::string::npos) {
            if (out.all_tagged(at, 10, jinja::kTrusted)) {
                ++trusted;
            } else {
                ++data;
            }
            at += 10;
        }
        QCOMPARE(trusted, size_t{1});
        QVERIFY(data >= 5);
        QCOMPARE(out.tag_at(out.text.size() - 1), jinja::kTrusted);
        // The replacement text a template supplies is its own: trusted, between data.
        const size_t yo = out.text.find("yo");
        QCOMPARE(out.tag_at(yo), jinja::kTrusted);
    }

    void hostileTemplatesStopAtTheirLimits() {
        jinja::RenderOptions small;
        small.limits.max_steps = 100000;
        small.limits.max_string_bytes = 1 << 20;
        const std::string steps = error_of(
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", small);
        QVERIFY2(steps.find("budget") != std::string::npos, steps.c_str());
        const std::string doubling = error_of(
            "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor "
            "%}{{ ns.s | length }}",
            small);
        QVERIFY2(doubling.find("limit") != std::string::npos, doubling.c_str());
        const std::string repeat = error_of("{{ 'x' * 100000000 }}", small);
        QVERIFY2(repeat.find("limit") != std::string::npos, repeat.c_str());
        const std::string recursion = error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}");
        QVERIFY2(recursion.find("nest deeper") != std::string::npos, recursion.c_str());
        const std::string nesting = error_of(
            "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}");
        QVERIFY2(nesting.find("nest deeper") != std::string::npos, nesting.c_str());
        const std::string cycle = error_of("{% set ns = namespace() %}{% set ns.self = ns %}");
        QVERIFY2(cycle.find("contain itself") != std::string::npos, cycle.c_str());
        // Parsing refuses absurd nesting instead of recursing without bound.
        std::string deep;
        for (int i = 0; i < 10000; ++i) deep = "(" + deep + ")";
        bool refused = false;
        try {
            jinja::Template::parse("{{ " + deep.insert(deep.size() / 2, "1") + " }}");
        } catch (const jinja::TemplateError& e) {
            refused = std::string(e.what()).find("nests deeper") != std::string::npos;
        }
        QVERIFY(refused);
        std::string ifs;
        for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
        QVERIFY_THROWS_EXCEPTION(jinja::TemplateError, jinja::Template::parse(ifs));
    }
};

QTEST_GUILESS_MAIN(JinjaConstructs)
#include "test_jinja.moc"
