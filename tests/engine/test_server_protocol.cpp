// The API server's protocol layers without a model: the JSON parser and writer (what a request
// body may and may not be), the HTTP request parser (limits, pipelining, malformed input) and the
// OpenAI error shape.
#include <QTest>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

#include "http.h"
#include "json.h"
#include "json_mode.h"
#include "openai.h"

using namespace lantern::server;

class ServerProtocolTest : public QObject {
    Q_OBJECT

    static QString parse_error(const std::string& text) {
        try {
            parse_json(text);
        } catch (const JsonError& e) {
            return QString::fromStdString(e.what());
        }
        return "(parsed)";
    }

private slots:
    // Numbers are read and written with a '.' whatever the process's locale: the app runs under
    // the user's, and in de_DE strtod read "0.7" as 0 and printf wrote "0,5". (The test needs the
    // de_DE.UTF-8 locale, which scripts/setup-deps generates; without it the test fails, it does
    // not skip.)
    void json_numbers_do_not_follow_the_locale() {
        const std::string before = std::setlocale(LC_ALL, nullptr);
        QVERIFY2(std::setlocale(LC_ALL, "de_DE.UTF-8"),
                 "the de_DE.UTF-8 locale is missing (scripts/setup-deps makes it)");
        char probe[16];
        std::snprintf(probe, sizeof probe, "%.1f", 0.5);
        const bool comma = std::string(probe) == "0,5";
        const Json j = parse_json(R"({"temperature": 0.7, "top_p": 1e-1, "tiny": 1e-400, "n": 12.5e1})");
        const double temperature = j.at("temperature").get<double>(), top_p = j.at("top_p").get<double>(),
                     tiny = j.at("tiny").get<double>(), n = j.at("n").get<double>();
        const std::string written = dump_json(Json{{"x", 0.5}});
        const QString too_large = parse_error("[1e400]");
        std::setlocale(LC_ALL, before.c_str());
        QVERIFY2(comma, "the locale writes numbers with a comma (else this test proves nothing)");
        QCOMPARE(temperature, 0.7);
        QCOMPARE(top_p, 0.1);
        QCOMPARE(tiny, 0.0);  // underflow rounds to zero
        QCOMPARE(n, 125.0);
        QCOMPARE(written, std::string(R"({"x":0.5})"));
        QVERIFY2(too_large.contains("number overflow"), qPrintable(too_large));
    }

    // The API key check: scheme in any case, then the key exactly (a prefix, an extension, another
    // scheme or no space do not pass).
    void bearer_tokens_match_exactly() {
        QVERIFY(bearer_token_matches("Bearer sesame", "sesame"));
        QVERIFY(bearer_token_matches("BEARER   sesame", "sesame"));
        for (const char* bad : {"Bearer sesam", "Bearer sesame ", "Bearer sesamf", "Bearer ", "Bearer",
                                "Basic sesame", "Bearersesame", "", "Bearer \xffsesame"})
            QVERIFY2(!bearer_token_matches(bad, "sesame"), bad);
    }

    void json_values_read_back_as_written() {
        const Json j = parse_json(R"( {"a": [1, -2.5e3, true, false, null, "x"], "b": {"c": "d"}, "n": 0} )");
        QVERIFY(j.is_object());
        const Json* a = json_find(j, "a");
        QVERIFY(a && a->is_array());
        QCOMPARE(a->size(), size_t(6));
        QCOMPARE(*json_integer(a->at(0)), int64_t(1));
        QCOMPARE(a->at(1).get<double>(), -2500.0);
        QVERIFY(!json_integer(a->at(1)));  // written with an exponent: not an integer
        QVERIFY(a->at(2).get<bool>());
        QVERIFY(a->at(4).is_null());
        QCOMPARE(json_string(a->at(5)), std::string("x"));
        QCOMPARE(json_string(*json_find(*json_find(j, "b"), "c")), std::string("d"));
        QVERIFY(json_find(j, "missing") == nullptr);
        // A number that is not an integer is written with a fraction (-2.5e3 as -2500.0).
        QCOMPARE(dump_json(j), std::string(R"({"a":[1,-2500.0,true,false,null,"x"],"b":{"c":"d"},"n":0})"));
        // Negative zero keeps its sign through a round trip (fuzz_server_request found "-0.0" -> "-0" ->
        // "0").
        QCOMPARE(dump_json(parse_json("-0.0")), std::string("-0.0"));
        QCOMPARE(dump_json(parse_json(dump_json(parse_json("-0.0")))), std::string("-0.0"));
        // 64-bit integers survive (seeds), and the last of repeated keys wins, as in JavaScript.
        QCOMPARE(*json_integer(parse_json("9007199254740993")), int64_t(9007199254740993));
        QCOMPARE(*json_integer(*json_find(parse_json(R"({"k": 1, "k": 2})"), "k")), int64_t(2));
    }

    void json_strings_unescape_and_escape() {
        // (An ordinary literal: Qt 6.4's moc misreads a raw string holding \".)
        const Json s = parse_json("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u4e2d \\ud83d\\ude00\"");
        QCOMPARE(json_string(s), std::string("q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80"));
        // Written back: control characters escaped, UTF-8 kept as is, and read again unchanged.
        QCOMPARE(json_string(parse_json(dump_json(s))), json_string(s));
        QCOMPARE(json_quote(std::string("a\x01z", 3)), std::string("\"a\\u0001z\""));
        // A byte that is not UTF-8 (a model can emit anything) is written as U+FFFD, so the
        // response stays valid JSON.
        QCOMPARE(json_quote("\xFF"), std::string("\"\xEF\xBF\xBD\""));
    }

    void json_rejects_what_is_not_json_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("empty") << ""
                               << "syntax error while parsing value - unexpected end of input; expected '[', "
                                  "'{', or a literal at byte 0";
        QTest::newRow("trailing")
            << "{} x"
            << "syntax error while parsing value - invalid literal; expected end of input at byte 3";
        QTest::newRow("trailing comma")
            << "[1,]"
            << "syntax error while parsing value - unexpected ']'; expected '[', '{', or a literal at byte 3";
        QTest::newRow("single quotes")
            << "{'a':1}"
            << "syntax error while parsing object key - invalid literal; expected string literal at byte 1";
        QTest::newRow("leading zero") << "01"
                                      << "syntax error while parsing value - unexpected number literal; "
                                         "expected end of input at byte 1";
        QTest::newRow("bare minus")
            << "-"
            << "syntax error while parsing value - invalid number; expected digit after '-' at byte 1";
        QTest::newRow("huge number") << "1e999"
                                     << "number overflow parsing '1e999'";  // the number named, no byte
        QTest::newRow("unterminated")
            << "\"abc"
            << "syntax error while parsing value - invalid string: missing closing quote at byte 4";
        QTest::newRow("raw newline") << "\"a\nb\""
                                     << "syntax error while parsing value - invalid string: control "
                                        "character U+000A (LF) must be escaped to \\u000A or \\n at byte 2";
        QTest::newRow("bad escape") << R"("\x")"
                                    << "syntax error while parsing value - invalid string: forbidden "
                                       "character after backslash at byte 2";
        QTest::newRow("lone high surrogate")
            << R"("\ud83d")"
            << "syntax error while parsing value - invalid string: surrogate U+D800..U+DBFF must be followed "
               "by U+DC00..U+DFFF at byte 7";
        QTest::newRow("lone low surrogate") << R"("\ude00")"
                                            << "syntax error while parsing value - invalid string: surrogate "
                                               "U+DC00..U+DFFF must follow U+D800..U+DBFF at byte 6";
        QTest::newRow("bad hex") << R"("\u12G4")"
                                 << "syntax error while parsing value - invalid string: '\\u' must be "
                                    "followed by 4 hex digits at byte 5";
        QTest::newRow("invalid UTF-8")
            << QString::fromLatin1("\"\xC3\x28\"")
            << "syntax error while parsing value - invalid string: ill-formed UTF-8 byte at byte 2";
        QTest::newRow("literal") << "nul"
                                 << "syntax error while parsing value - invalid literal at byte 3";
        QTest::newRow("missing colon") << R"({"a" 1})"
                                       << "syntax error while parsing object separator - unexpected number "
                                          "literal; expected ':' at byte 5";
        QTest::newRow("comment") << "/*c*/1"  // comments are not JSON
                                 << "syntax error while parsing value - invalid literal at byte 0";
    }
    void json_rejects_what_is_not_json() {
        QFETCH(QString, text);
        QFETCH(QString, message);
        // Latin-1 rows carry raw bytes (the invalid UTF-8 case).
        const std::string bytes = QTest::currentDataTag() == QByteArray("invalid UTF-8")
                                      ? text.toLatin1().toStdString()
                                      : text.toStdString();
        QCOMPARE(parse_error(bytes), "invalid JSON: " + message);
    }

    void json_nesting_is_bounded() {
        // A hostile body of nested arrays must not exhaust the stack.
        const std::string deep(100000, '[');
        QCOMPARE(parse_error(deep), QString("invalid JSON: nesting deeper than 64 levels"));
        const std::string ok = std::string(kJsonMaxDepth, '[') + std::string(kJsonMaxDepth, ']');
        QVERIFY(parse_json(ok).is_array());
    }

    void json_errors_do_not_echo_the_body() {
        // The message says what was wrong and where, but does not carry the body's bytes back to the
        // client: a 1 MiB string that ends in a bad escape gets a line, not a megabyte.
        const std::string body = "\"" + std::string(1 << 20, 'a') + "\\x\"";
        try {
            parse_json(body);
        } catch (const JsonError& e) {
            const std::string what = e.what();
            QVERIFY2(what.size() < 300, qPrintable(QString::fromStdString(what.substr(0, 300))));
            QVERIFY2(what.rfind("invalid JSON: ", 0) == 0, what.c_str());
            QVERIFY2(what.find("at byte " + std::to_string((1 << 20) + 2)) != std::string::npos,
                     what.c_str());
            return;
        }
        QFAIL("an invalid escape was parsed");
    }

    void json_values_are_bounded() {
        // Every parsed value costs memory: a body of millions of tiny values is refused.
        const auto zeros = [](size_t n) {
            std::string text = "[";
            for (size_t i = 0; i < n; ++i) text += i ? ",0" : "0";
            return text + "]";
        };
        QCOMPARE(parse_json(zeros(kJsonMaxValues - 1)).size(), kJsonMaxValues - 1);  // + the array
        QVERIFY(parse_error(zeros(kJsonMaxValues)).contains("more than 262144 values"));
    }

    void http_request_is_read_once_complete() {
        const std::string req =
            "POST /v1/completions?x=1 HTTP/1.1\r\nHost: h\r\ncontent-length: 5\r\n\r\nhello";
        // Every strict prefix is incomplete; the whole is one request.
        for (size_t n = 0; n < req.size(); ++n)
            QVERIFY2(parse_http_request(req.substr(0, n)).state == HttpParse::State::Incomplete,
                     qPrintable(QString::number(n)));
        HttpParse p = parse_http_request(req + "GET /health HTTP/1.1\r\n\r\n");
        QCOMPARE(int(p.state), int(HttpParse::State::Complete));
        QCOMPARE(p.request.method, std::string("POST"));
        QCOMPARE(p.request.path(), std::string("/v1/completions"));
        QCOMPARE(p.request.header("Content-Length"), std::string("5"));  // names are case-insensitive
        QCOMPARE(p.request.body, std::string("hello"));
        QCOMPARE(p.consumed, req.size());  // the pipelined GET stays for the next parse
        QVERIFY(p.request.keep_alive());
        HttpParse next = parse_http_request("GET /health HTTP/1.1\nConnection: close\n\n");  // bare LFs
        QCOMPARE(int(next.state), int(HttpParse::State::Complete));
        QVERIFY(!next.request.keep_alive());
        QVERIFY(!parse_http_request("GET / HTTP/1.0\r\n\r\n").request.keep_alive());
    }

    void http_bad_requests_get_the_status_that_says_why_data() {
        QTest::addColumn<QString>("request");
        QTest::addColumn<int>("status");
        QTest::newRow("no length") << "POST /v1/completions HTTP/1.1\r\n\r\n" << 411;
        QTest::newRow("chunked body") << "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" << 501;
        QTest::newRow("bad length") << "POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n" << 400;
        QTest::newRow("two lengths") << "POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
                                     << 400;
        QTest::newRow("too large") << "POST /x HTTP/1.1\r\nContent-Length: 2000\r\n\r\n" << 413;
        QTest::newRow("HTTP/2") << "GET / HTTP/2.0\r\n\r\n" << 505;
        QTest::newRow("no version") << "GET /\r\n\r\n" << 400;
        QTest::newRow("bad header") << "GET / HTTP/1.1\r\nno colon here\r\n\r\n" << 400;
        QTest::newRow("folded header") << "GET / HTTP/1.1\r\nA: b\r\n  c\r\n\r\n" << 400;
        QTest::newRow("headers too large") << "GET / HTTP/1.1\r\nA: " + QString(300, 'x') + "\r\n\r\n" << 431;
        QTest::newRow("endless headers") << "GET / HTTP/1.1\r\nA: " + QString(300, 'x') << 431;
    }
    void http_bad_requests_get_the_status_that_says_why() {
        QFETCH(QString, request);
        QFETCH(int, status);
        HttpLimits limits;
        limits.max_header_bytes = 256;
        limits.max_body_bytes = 1000;
        const HttpParse p = parse_http_request(request.toStdString(), limits);
        QCOMPARE(int(p.state), int(HttpParse::State::Bad));
        QCOMPARE(p.status, status);
        QVERIFY(!p.message.empty());
    }

    // The per-request limit is asked once the head is whole: a longer Content-Length is refused
    // before the body arrives, naming the path; within it the request waits for its body.
    void http_body_limit_follows_the_head() {
        HttpLimits limits;
        limits.body_limit = [](const HttpRequest& head) { return head.path() == "/small" ? 10 : 1000; };
        const HttpParse refused =
            parse_http_request("POST /small?x=1 HTTP/1.1\r\nContent-Length: 11\r\n\r\n", limits);
        QCOMPARE(int(refused.state), int(HttpParse::State::Bad));
        QCOMPARE(refused.status, 413);
        QCOMPARE(
            refused.message,
            std::string("the request body (11 bytes) exceeds the 10 bytes a POST to /small can use here"));
        const HttpParse waits =
            parse_http_request("POST /large HTTP/1.1\r\nContent-Length: 11\r\n\r\n", limits);
        QCOMPARE(int(waits.state), int(HttpParse::State::Incomplete));
        QCOMPARE(waits.needed, size_t(44 + 11));  // head + body
    }

    void url_escapes_are_decoded() {
        QCOMPARE(percent_decode("Llama%203.2%201B"), std::string("Llama 3.2 1B"));
        QCOMPARE(percent_decode("%e4%B8%ad"), std::string("\xE4\xB8\xAD"));
        QCOMPARE(percent_decode("100%"), std::string("100%"));  // a malformed escape stays
        QCOMPARE(percent_decode("%zz%4"), std::string("%zz%4"));
    }

    void http_responses_are_framed() {
        const std::string r = http_response(404, "application/json", "{}", {{"X-A", "b"}}, false);
        QCOMPARE(
            r, std::string(
                   "HTTP/1.1 404 Not Found\r\nServer: lantern\r\nContent-Type: application/json\r\nX-A: b\r\n"
                   "Connection: close\r\nContent-Length: 2\r\n\r\n{}"));
        QCOMPARE(http_chunk("data: x\n\n"), std::string("9\r\ndata: x\n\n\r\n"));
        QCOMPARE(http_chunk(""), std::string());  // an empty chunk would end the stream early
        QCOMPARE(http_last_chunk(), std::string("0\r\n\r\n"));
    }

    void reasoning_is_split_from_the_answer_however_the_text_streams_data() {
        QTest::addColumn<bool>("opens");
        QTest::addColumn<QString>("reply");
        QTest::addColumn<QString>("reasoning");
        QTest::addColumn<QString>("answer");
        QTest::newRow("R1 prompt") << true << "Two and two.\n</think>\n\nThe answer is 4."
                                   << "Two and two.\n"
                                   << "The answer is 4.";
        QTest::newRow("reply opens it") << false << "\n<think>hmm</think>ok"
                                        << "hmm"
                                        << "ok";
        QTest::newRow("no reasoning") << false << "Hello <think> world"
                                      << ""
                                      << "Hello <think> world";
        QTest::newRow("almost a tag") << false << "<thinking aloud"
                                      << ""
                                      << "<thinking aloud";
        QTest::newRow("cut while reasoning") << true << "still thinking </thi"
                                             << "still thinking </thi"
                                             << "";
        QTest::newRow("empty answer") << true << "done</think>\n\n"
                                      << "done"
                                      << "";
        QTest::newRow("a second tag is text") << true << "a</think>b</think>c"
                                              << "a"
                                              << "b</think>c";
    }
    void reasoning_is_split_from_the_answer_however_the_text_streams() {
        QFETCH(bool, opens);
        QFETCH(QString, reply);
        QFETCH(QString, reasoning);
        QFETCH(QString, answer);
        const std::string text = reply.toStdString();
        // Whole, in two pieces at every point, and one byte at a time: the same parts.
        std::vector<std::vector<std::string>> ways{{text}};
        for (size_t cut = 0; cut <= text.size(); ++cut)
            ways.push_back({text.substr(0, cut), text.substr(cut)});
        std::vector<std::string> bytes;
        for (char c : text) bytes.emplace_back(1, c);
        ways.push_back(bytes);
        for (const auto& pieces : ways) {
            ReasoningSplitter split(opens);
            std::string r, a;
            for (const auto& piece : pieces) {
                const auto parts = split.feed(piece);
                r += parts.reasoning;
                a += parts.answer;
            }
            const auto rest = split.flush();
            r += rest.reasoning;
            a += rest.answer;
            QCOMPARE(QString::fromStdString(r), reasoning);
            QCOMPARE(QString::fromStdString(a), answer);
        }
    }

    void json_mode_accepts_exactly_the_prefixes_of_objects_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("object");  // a whole JSON object (with up to one space around)
        QTest::newRow("empty object") << "{}" << true;
        QTest::newRow("nested") << R"({"a": [1, -2.5e+3, 0, true, null, {"b": "x\n\u00e9"}], "c": {}})"
                                << true;
        QTest::newRow("pretty") << "{\n  \"k\": [\n    1,\n    2\n  ]\n}" << true;
        QTest::newRow("leading space") << " {\"a\":false}" << true;
        QTest::newRow("array at top") << "[1]" << false;
        QTest::newRow("number at top") << "12" << false;
        QTest::newRow("leading zero") << R"({"a": 01})" << false;
        QTest::newRow("bare key") << "{a: 1}" << false;
        QTest::newRow("trailing comma") << R"({"a": 1,})" << false;
        QTest::newRow("missing colon") << R"({"a" 1})" << false;
        QTest::newRow("bad escape") << R"({"a": "\x"})" << false;
        QTest::newRow("short unicode escape") << R"({"a": "\u12"})" << false;
        QTest::newRow("control character") << "{\"a\": \"\t\"}" << false;
        QTest::newRow("two objects") << "{}{}" << false;
        QTest::newRow("blank lines") << "{\n\n}" << false;  // rationed whitespace
        QTest::newRow("wide indent") << "{\n" + QString(21, ' ') + "\"a\": 1}" << false;
        QTest::newRow("literal typo") << R"({"a": nul})" << false;
        QTest::newRow("exponent without digits") << R"({"a": 1e})" << false;
    }
    void json_mode_accepts_exactly_the_prefixes_of_objects() {
        QFETCH(QString, text);
        QFETCH(bool, object);
        const std::string t = text.toStdString();
        // The strict parser agrees on whole texts (where rationed whitespace is not the point).
        const QString tag = QString::fromLatin1(QTest::currentDataTag());
        if (tag != "blank lines" && tag != "wide indent") {
            bool parses = false;
            try {
                parses = parse_json(t).is_object();
            } catch (const JsonError&) {
            }
            QCOMPARE(parses, object);
        }
        // An object's every prefix is accepted, byte by byte, and only the whole is complete.
        JsonPrefix p;
        bool ok = true;
        for (size_t i = 0; i < t.size() && ok; ++i) {
            QVERIFY(!p.complete() || object == false);
            ok = p.feed(t.substr(i, 1));
        }
        QCOMPARE(ok && p.complete(), object);
        if (object) QVERIFY(ok);
    }

    void json_mode_agrees_with_the_parser_on_random_text() {
        // Short texts over JSON's own characters: complete exactly when the strict parser reads an
        // object (no whitespace in the alphabet, so the rationing plays no part).
        const std::string alphabet = "{}[]:,\"a10-.e+tfnul\\";
        std::mt19937 rng(7);
        int objects = 0;
        for (int n = 0; n < 200000; ++n) {
            std::string t;
            const size_t len = 2 + rng() % 11;
            for (size_t i = 0; i < len; ++i) t += alphabet[rng() % alphabet.size()];
            if (n % 3 == 0) t = "{\"" + t;  // many more texts that start like an object
            JsonPrefix p;
            const bool complete = p.feed(t) && p.complete();
            bool parses = false;
            try {
                parses = parse_json(t).is_object();
            } catch (const JsonError&) {
            }
            if (complete != parses) QFAIL(qPrintable(QString::fromStdString("disagree on " + t)));
            objects += parses ? 1 : 0;
        }
        QVERIFY2(objects > 10, qPrintable(QString::number(objects)));

        // Random objects written by the JSON writer, half of them with one character changed.
        std::function<Json(int)> value = [&](int depth) -> Json {
            switch (rng() % (depth > 2 ? 4 : 6)) {
                case 0:
                    return Json(static_cast<int64_t>(rng() % 2000) - 1000);
                case 1:
                    return Json(
                        std::ldexp(static_cast<double>(rng() % 100000), -static_cast<int>(rng() % 40)));
                case 2:
                    return Json(std::string(rng() % 4, "ab\"\\\n"[rng() % 5]));
                case 3:
                    return rng() % 2 ? Json(rng() % 2 == 0) : Json();
                case 4: {
                    Json a = Json::array();
                    for (int i = static_cast<int>(rng() % 4); i > 0; --i) a.push_back(value(depth + 1));
                    return a;
                }
                default: {
                    Json o = Json::object();
                    for (int i = static_cast<int>(rng() % 4); i > 0; --i)
                        o[std::string(1, 'a' + rng() % 3)] = value(depth + 1);
                    return o;
                }
            }
        };
        int whole = 0;
        for (int n = 0; n < 20000; ++n) {
            Json o = Json::object();
            for (int i = static_cast<int>(rng() % 4); i > 0; --i)
                o[std::string(1, 'k' + rng() % 3)] = value(1);
            std::string t = dump_json(o);
            if (n % 2) t[rng() % t.size()] = alphabet[rng() % alphabet.size()];
            JsonPrefix p;
            const bool complete = p.feed(t) && p.complete();
            bool parses = false;
            try {
                parses = parse_json(t).is_object();
            } catch (const JsonError& e) {
                // Grammatical, but past a double's range (1e400): a range check, not a grammar one.
                parses = std::string(e.what()).find("number overflow") != std::string::npos && complete;
            }
            if (complete != parses) QFAIL(qPrintable(QString::fromStdString("disagree on " + t)));
            whole += parses ? 1 : 0;
        }
        QVERIFY2(whole > 10000, qPrintable(QString::number(whole)));
    }

    void errors_have_openais_shape() {
        const Json e = error_body(ApiError(400, "stop must be a string", "stop"));
        QCOMPARE(
            dump_json(e),
            std::string(
                R"({"error":{"message":"stop must be a string","type":"invalid_request_error","param":"stop","code":null}})"));
        QCOMPARE(std::string(finish_reason(lantern::StopReason::EndOfText)), std::string("stop"));
        QCOMPARE(std::string(finish_reason(lantern::StopReason::MaxTokens)), std::string("length"));
        QCOMPARE(std::string(finish_reason(lantern::StopReason::ContextFull)), std::string("length"));
    }
};

QTEST_APPLESS_MAIN(ServerProtocolTest)
#include "test_server_protocol.moc"
