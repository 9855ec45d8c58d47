// lantern-server's API end to end on stories260K, over real sockets: the reference story through
// /v1/completions, streamed replies equal to whole ones, stop strings, several clients at once
// (continuous batching) getting the replies each gets alone, the prefix cache across a resent
// conversation, a host's own sequence decoding in the replies' steps, errors in OpenAI's shape,
// API keys, and a client leaving mid-stream.
#include <sys/socket.h>
#include <unistd.h>

#include <QFile>
#include <QJsonArray>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "json.h"
#include "json_mode.h"
#include "lantern/chat_template.h"
#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/kv_cache.h"
#include "lantern/server.h"
#include "lantern/synthetic.h"
#include "lantern/tokenizer.h"
#include "openai.h"
#include "test_support.h"

using namespace lantern;
using server::Json;
using server::json_find;
using server::json_integer;
using server::json_string;
using server::parse_json;

namespace {

// The server on its own thread for one test; stopped and joined when it goes out of scope, after
// which the engine may be inspected again.
class RunningServer {
public:
    RunningServer(Engine& engine, ServerOptions o = {}) {
        o.port = 0;
        o.step_tokens = 64;
        server_ = std::make_unique<ApiServer>(engine, o);
        thread_ = std::thread([this] { server_->run(); });
    }
    ~RunningServer() {
        server_->stop();
        thread_.join();
    }
    uint16_t port() const { return server_->port(); }

private:
    std::unique_ptr<ApiServer> server_;
    std::thread thread_;
};

// The test's HTTP client (tests/common), with OpenAI's bodies read.
struct Response : test::HttpReply {
    Response(test::HttpReply r) : test::HttpReply(std::move(r)) {}
    Json json() const { return parse_json(body); }
    // Server-sent events: the data of each event, in order.
    std::vector<std::string> events() const {
        std::vector<std::string> out;
        for (const auto& block : test::split(body, "\n\n"))
            if (block.rfind("data: ", 0) == 0) out.push_back(block.substr(6));
        return out;
    }
};

int connect_to(uint16_t port) {
    return test::http_connect(port);
}
void send_all(int fd, const std::string& data) {
    test::http_send(fd, data);
}
std::string read_to_end(int fd) {
    return test::http_read_to_end(fd);
}
Response parse_response(const std::string& raw) {
    return test::http_parse(raw);
}
Response call(uint16_t port, const std::string& raw) {
    return test::http_call(port, raw);
}
std::string request(const std::string& method, const std::string& path, const std::string& body = {},
                    const std::string& extra_headers = {}) {
    return test::http_request(method, path, body, extra_headers);
}

Response post(uint16_t port, const std::string& path, const std::string& body,
              const std::string& headers = {}) {
    return call(port, request("POST", path, body, headers));
}

// std::string compared as QString, so that a failure prints both texts.
QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

std::string error_message(const Response& r) {
    return json_string(r.json().at("error").at("message"));
}

// The text of a streamed reply: its deltas (chat) or pieces (completions) joined.
std::string streamed_text(const Response& r, bool chat) {
    std::string text;
    for (const auto& e : r.events()) {
        if (e == "[DONE]") break;
        const Json j = parse_json(e);
        if (j.at("choices").empty()) continue;  // the usage chunk
        const Json& c = j.at("choices").at(0);
        const Json* piece = chat ? json_find(c.at("delta"), "content") : json_find(c, "text");
        if (piece && piece->is_string()) text += json_string(*piece);
    }
    return text;
}

std::string chat_body(const std::string& user, int max_tokens, const std::string& extra = {}) {
    return R"({"messages": [{"role": "user", "content": )" + server::json_quote(user) +
           R"(}], "temperature": 0, "max_tokens": )" + std::to_string(max_tokens) + extra + "}";
}

}  // namespace

class ApiServerTest : public QObject {
    Q_OBJECT
    std::unique_ptr<Engine> engine_;

    std::string reply_text(const Response& r) {
        const Json body = r.json();
        const Json& c = body.at("choices").at(0);
        const Json* m = json_find(c, "message");
        return m ? json_string(m->at("content")) : json_string(c.at("text"));
    }

private slots:
    void initTestCase() {
        EngineOptions o = test::validated_engine_options();
        o.context_length = 512;
        o.max_sequences = 4;
        o.max_step_tokens = 64;
        o.kv_f16 = false;  // f32 K/V: logits within 1e-5 of the float64 reference (logprobs are checked)
        engine_ = Engine::load(test::shared_path("models/stories260K.gguf"), o);
    }

    void completion_from_bos_is_the_reference_story() {
        RunningServer s(*engine_);
        // BOS alone, greedy, 199 tokens: the float64 reference's story, character for character.
        const Response r =
            post(s.port(), "/v1/completions", R"({"prompt": [1], "max_tokens": 199, "temperature": 0})");
        QCOMPARE(r.status, 200);
        const Json j = r.json();
        QCOMPARE(json_string(j.at("object")), std::string("text_completion"));
        QCOMPARE(json_string(j.at("model")), std::string("stories260K"));
        const std::string want = test::stories_reference()["greedy_from_bos_text"].toString().toStdString();
        QCOMPARE(qs(reply_text(r)), qs(want));
        const Json& choice = j.at("choices").at(0);
        QCOMPARE(json_string(choice.at("finish_reason")), std::string("length"));
        QCOMPARE(*json_integer(j.at("usage").at("prompt_tokens")), int64_t(1));
        QCOMPARE(*json_integer(j.at("usage").at("completion_tokens")), int64_t(199));
        QCOMPARE(*json_integer(j.at("usage").at("total_tokens")), int64_t(200));
    }

    void streamed_reply_equals_the_whole_reply() {
        RunningServer s(*engine_);
        for (const bool chat : {true, false}) {
            const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
            const std::string body =
                chat ? chat_body("Lily saw a dog", 40)
                     : R"({"prompt": "Lily saw a dog", "max_tokens": 40, "temperature": 0)";
            const Response whole = post(s.port(), path, chat ? body : body + "}");
            QCOMPARE(whole.status, 200);
            const std::string stream_body = (chat ? body.substr(0, body.size() - 1) : body) +
                                            R"(, "stream": true, "stream_options": {"include_usage": true}})";
            const Response streamed = post(s.port(), path, stream_body);
            QCOMPARE(streamed.status, 200);
            QVERIFY(streamed.head.find("Content-Type: text/event-stream") != std::string::npos);
            const auto events = streamed.events();
            QVERIFY(events.size() > 5);
            QCOMPARE(events.back(), std::string("[DONE]"));
            QVERIFY(!reply_text(whole).empty());
            QCOMPARE(qs(streamed_text(streamed, chat)), qs(reply_text(whole)));
            if (chat)  // OpenAI's first chunk names the role
                QCOMPARE(json_string(parse_json(events[0]).at("choices").at(0).at("delta").at("role")),
                         std::string("assistant"));
            // The last content chunk says why it ended; the usage chunk follows with no choices.
            const Json last = parse_json(events[events.size() - 3]);
            QCOMPARE(json_string(last.at("choices").at(0).at("finish_reason")), std::string("length"));
            const Json usage = parse_json(events[events.size() - 2]);
            QVERIFY(usage.at("choices").empty());
            QCOMPARE(*json_integer(usage.at("usage").at("completion_tokens")), int64_t(40));
        }
    }

    void a_stop_string_ends_the_reply_without_it() {
        RunningServer s(*engine_);
        // Greedy from "Once upon a time" follows the reference story: ", there was a little girl
        // named Lily." — the reply stops before the first ".".
        const std::string story = test::stories_reference()["greedy_from_bos_text"].toString().toStdString();
        const std::string prefix = "Once upon a time";
        QVERIFY(story.rfind(prefix, 0) == 0);
        const std::string want = story.substr(prefix.size(), story.find('.') - prefix.size());
        const Response r =
            post(s.port(), "/v1/completions",
                 R"({"prompt": "Once upon a time", "max_tokens": 100, "temperature": 0, "stop": ["."]})");
        QCOMPARE(r.status, 200);
        QCOMPARE(qs(reply_text(r)), qs(want));
        QCOMPARE(json_string(r.json().at("choices").at(0).at("finish_reason")), std::string("stop"));
        // Streamed, the held-back text never leaks the stop string either.
        const Response st = post(
            s.port(), "/v1/completions",
            R"({"prompt": "Once upon a time", "max_tokens": 100, "temperature": 0, "stop": ". ", "stream": true})");
        QCOMPARE(qs(streamed_text(st, false)), qs(want));
    }

    void clients_served_together_get_the_replies_they_get_alone() {
        RunningServer s(*engine_);
        const std::vector<std::string> prompts = {"Tom had a red ball", "The cat was sleepy",
                                                  "Once there was a big tree", "Sue and Ben went to the park",
                                                  "A little bird sang"};
        std::vector<std::string> alone;
        for (const auto& p : prompts)
            alone.push_back(reply_text(post(s.port(), "/v1/chat/completions", chat_body(p, 48))));
        // Five clients at once (one more than the server generates together, so one waits for a
        // free slot), some streamed: every request is sent before any reply is read.
        std::vector<int> fds;
        for (size_t i = 0; i < prompts.size(); ++i) {
            const std::string body = chat_body(prompts[i], 48, i % 2 ? R"(, "stream": true)" : "");
            fds.push_back(connect_to(s.port()));
            send_all(fds.back(), request("POST", "/v1/chat/completions", body));
        }
        for (size_t i = 0; i < prompts.size(); ++i) {
            const Response r = parse_response(read_to_end(fds[i]));
            ::close(fds[i]);
            QCOMPARE(r.status, 200);
            QCOMPARE(qs(i % 2 ? streamed_text(r, true) : reply_text(r)), qs(alone[i]));
        }
    }

    // A host serving its own sequence on the same engine (the desktop app's chat) decodes in the
    // replies' steps (serve_once_beside): the replies end while the host still writes, and the
    // host's tokens and the clients' texts are what each gets alone.
    void a_host_sequence_shares_its_steps_with_the_replies() {
        const std::vector<std::string> prompts = {"Tom had a red ball", "The cat was sleepy"};
        std::vector<std::string> alone;
        {
            RunningServer s(*engine_);
            for (const auto& p : prompts)
                alone.push_back(reply_text(post(s.port(), "/v1/chat/completions", chat_body(p, 40))));
        }
        const auto greedy = [](const std::vector<float>& logits) {
            return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        };
        const std::vector<int32_t> host_prompt =
            engine_->tokenizer().encode("Once upon a time there was a little girl", true);
        constexpr int kHostNew = 150;
        std::vector<int32_t> host_alone;
        {
            const SequenceId seq = engine_->create_sequence();
            int32_t t = greedy(engine_->prefill(seq, host_prompt));
            for (int i = 0; i < kHostNew; ++i) {
                host_alone.push_back(t);
                StepItem item{seq, {t}, true, false};
                t = greedy(engine_->step(std::span<const StepItem>(&item, 1))[0]);
            }
            engine_->free_sequence(seq);
        }

        ServerOptions o;
        o.port = 0;
        o.parallel = 2;  // the engine's 4 sequences: the host's, and room to spare
        o.step_tokens = 64;
        o.kv_blocks = engine_->kv_stats().total_blocks / 2;
        ApiServer server(*engine_, o);
        const uint16_t port = server.port();
        std::vector<std::string> got(prompts.size());
        std::atomic<bool> done{false};
        std::thread clients([&] {
            try {
                std::vector<int> fds;
                for (size_t i = 0; i < prompts.size(); ++i) {
                    fds.push_back(connect_to(port));
                    send_all(fds.back(), request("POST", "/v1/chat/completions",
                                                 chat_body(prompts[i], 40, i ? R"(, "stream": true)" : "")));
                }
                for (size_t i = 0; i < prompts.size(); ++i) {
                    const Response r = parse_response(read_to_end(fds[i]));
                    ::close(fds[i]);
                    got[i] = r.status != 200 ? "HTTP " + std::to_string(r.status) + ": " + r.body
                             : i             ? streamed_text(r, true)
                                             : reply_text(r);
                }
            } catch (const std::exception& e) {
                got[0] = std::string("client failed: ") + e.what();
            }
            done = true;
        });
        // Both requests read (between the host's turns, as the app's event loop does) before the
        // host starts writing.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (server.activity().replies_in_progress < prompts.size() &&
               std::chrono::steady_clock::now() < deadline)
            server.serve_once(10);
        QCOMPARE(server.activity().replies_in_progress, uint32_t(prompts.size()));

        const SequenceId seq = engine_->create_sequence();
        int32_t t = greedy(engine_->prefill(seq, host_prompt));
        std::vector<int32_t> host_got;
        int served_at = -1;  // the host's step at which both replies had been served
        constexpr uint32_t kStepTokens = 8;
        for (int i = 0; i < kHostNew; ++i) {
            host_got.push_back(t);
            const std::vector<float> logits =
                server.serve_once_beside(StepItem{seq, {t}, true, false}, kStepTokens);
            QCOMPARE(logits.size(), size_t(engine_->model().vocab));
            // The replies' sequences, as the app's KV cache panel names them: never the host's,
            // each holding what the engine says it does.
            const std::vector<SequenceId> held = server.sequences();
            QVERIFY(held.size() <= prompts.size());
            for (const SequenceId s : held) {
                QVERIFY(s != seq);
                QVERIFY(engine_->sequence_length(s) > 0);
            }
            if (i == 0) QVERIFY2(!held.empty(), "no reply held a sequence after the first shared step");
            if (served_at < 0 && server.activity().replies_served == prompts.size()) served_at = i;
            t = greedy(logits);
        }
        while (!done && std::chrono::steady_clock::now() < deadline) server.serve_once(10);
        clients.join();
        QVERIFY(server.sequences().empty());  // every reply's sequence given back
        QCOMPARE(host_got, host_alone);
        for (size_t i = 0; i < prompts.size(); ++i) QCOMPARE(qs(got[i]), qs(alone[i]));
        QVERIFY2(served_at >= 0, "the replies were not served while the host wrote its own");
        QCOMPARE(engine_->sequence_length(seq), uint32_t(host_prompt.size() + kHostNew));
        engine_->free_sequence(seq);
    }

    void clients_share_a_cache_smaller_than_their_contexts() {
        // Four clients whose replies need 5-6 blocks each at the end, in a cache of 9 blocks: they
        // are admitted as room allows, the last admitted gives its blocks back when a step does
        // not fit, and every reply is still the one it is alone.
        EngineOptions o = test::validated_engine_options();
        o.context_length = 512;
        o.max_sequences = 4;
        o.max_step_tokens = 64;
        o.kv_f16 = false;  // as engine_'s, whose replies are the reference
        o.kv_tokens = 9 * 16;
        auto small = Engine::load(test::shared_path("models/stories260K.gguf"), o);
        const std::vector<std::string> prompts = {"Tom had a red ball", "The cat was sleepy",
                                                  "Once there was a big tree",
                                                  "Sue and Ben went to the park"};
        std::vector<std::string> alone;
        {
            RunningServer roomy(*engine_);
            for (const auto& p : prompts)
                alone.push_back(reply_text(post(
                    roomy.port(), "/v1/completions",
                    R"({"prompt": )" + server::json_quote(p) + R"(, "max_tokens": 60, "temperature": 0})")));
        }
        RunningServer s(*small);
        std::vector<int> fds;
        for (size_t i = 0; i < prompts.size(); ++i) {
            const std::string body =
                R"({"prompt": )" + server::json_quote(prompts[i]) +
                R"(, "max_tokens": 60, "temperature": 0)" +
                (i % 2 ? R"(, "stream": true, "stream_options": {"include_usage": true}})" : "}");
            fds.push_back(connect_to(s.port()));
            send_all(fds.back(), request("POST", "/v1/completions", body));
        }
        int64_t told = 0;  // preemptions the replies' timings report
        for (size_t i = 0; i < prompts.size(); ++i) {
            const Response r = parse_response(read_to_end(fds[i]));
            ::close(fds[i]);
            QCOMPARE(r.status, 200);
            QCOMPARE(qs(i % 2 ? streamed_text(r, false) : reply_text(r)), qs(alone[i]));
            Json last = i % 2 ? parse_json(r.events()[r.events().size() - 2]) : r.json();  // before [DONE]
            if (const Json* n = json_find(last.at("timings"), "kv_preemptions")) told += *json_integer(*n);
        }
        const Response m = call(s.port(), request("GET", "/metrics"));
        const auto value = [&](const std::string& name) {
            const size_t at = m.body.find("\nlantern_" + name + " ");
            if (at == std::string::npos) throw std::runtime_error("no metric " + name + " in:\n" + m.body);
            return std::stod(m.body.substr(at + name.size() + 10));
        };
        QVERIFY2(value("replies_preempted_total") > 0, m.body.c_str());
        QCOMPARE(double(told), value("replies_preempted_total"));
        QCOMPARE(value("replies_waiting"), 0.0);
        QCOMPARE(value("kv_blocks_total"), 9.0);
        QCOMPARE(value("generated_tokens_total"), 4 * 60.0);
        // A prompt longer than the whole cache is refused at once, saying so.
        std::string longer;
        for (int i = 0; i < 40; ++i) longer += "the dog and the cat ";
        const Response refused =
            post(s.port(), "/v1/completions", R"({"prompt": )" + server::json_quote(longer) + "}");
        QCOMPARE(refused.status, 400);
        QVERIFY2(error_message(refused).find("does not fit the KV cache the replies share (144 tokens)") !=
                     std::string::npos,
                 error_message(refused).c_str());
    }

    void a_resent_conversation_reuses_its_cached_prompt() {
        RunningServer s(*engine_);
        const std::string first =
            R"({"messages": [{"role": "system", "content": "Lily and Ben were best friends. They liked to play in the garden every day after lunch."}, {"role": "user", "content": "One day they found a small box under a tree."}], "temperature": 0, "max_tokens": 24})";
        const Response a = post(s.port(), "/v1/chat/completions", first);
        QCOMPARE(a.status, 200);
        const int64_t prompt = *json_integer(a.json().at("usage").at("prompt_tokens"));
        QVERIFY2(prompt >= 32, "the prompt should span whole KV blocks");
        // The same conversation again: every whole block of it comes from the prefix cache, and
        // the reply is the same.
        const Response b = post(s.port(), "/v1/chat/completions", first);
        const int64_t cached =
            *json_integer(b.json().at("usage").at("prompt_tokens_details").at("cached_tokens"));
        QCOMPARE(cached, (prompt - 1) / 16 * 16);
        QCOMPARE(qs(reply_text(b)), qs(reply_text(a)));
        QCOMPARE(*json_integer(b.json().at("timings").at("prompt_tokens_computed")), prompt - cached);
    }

    void bad_requests_get_openai_errors_data() {
        QTest::addColumn<QString>("raw");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("message");
        const auto post_raw = [](const std::string& path, const std::string& body) {
            return QString::fromStdString(request("POST", path, body));
        };
        QTest::newRow("not JSON") << post_raw("/v1/chat/completions", "{oops") << 400
                                  << "the request body is invalid JSON: syntax error while parsing object "
                                     "key - invalid literal; expected "
                                     "string literal at byte 1";
        QTest::newRow("no messages") << post_raw("/v1/chat/completions", "{}") << 400
                                     << "messages must be a non-empty array";
        QTest::newRow("bad role")
            << post_raw("/v1/chat/completions", R"({"messages": [{"role": "tool", "content": "x"}]})") << 400
            << R"(messages[0].role "tool" is not supported (system, developer, user, assistant))";
        QTest::newRow("image")
            << post_raw("/v1/chat/completions",
                        R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})")
            << 400 << R"(messages[0].content: only text parts are supported (got "image_url"))";
        QTest::newRow("n = 2") << post_raw("/v1/completions", R"({"prompt": "a", "n": 2})") << 400
                               << "n must be 1: this server writes one choice per request";
        QTest::newRow("temperature") << post_raw("/v1/completions",
                                                 R"({"prompt": "a", "temperature": "hot"})")
                                     << 400 << "temperature must be a number";
        QTest::newRow("top_p") << post_raw("/v1/completions", R"({"prompt": "a", "top_p": 2})") << 400
                               << "top_p must be between 0 and 1";
        QTest::newRow("max_tokens") << post_raw("/v1/completions", R"({"prompt": "a", "max_tokens": 0})")
                                    << 400 << "max_tokens must be between 1 and 2147483647";
        QTest::newRow("empty stop") << post_raw("/v1/completions", R"({"prompt": "a", "stop": [""]})") << 400
                                    << "stop strings must not be empty";
        QTest::newRow("tools") << post_raw(
                                      "/v1/chat/completions",
                                      R"({"messages": [{"role": "user", "content": "x"}], "tools": [{}]})")
                               << 400 << "tools: tool calling is not supported by this server";
        QTest::newRow("top_logprobs alone")
            << post_raw("/v1/chat/completions",
                        R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})")
            << 400 << "top_logprobs needs logprobs: true";
        QTest::newRow("reasoning_format")
            << post_raw("/v1/chat/completions",
                        R"({"messages": [{"role": "user", "content": "x"}], "reasoning_format": "hidden"})")
            << 400 << R"(reasoning_format must be "deepseek" (reasoning_content apart) or "none")";
        QTest::newRow("chat_template_kwargs key")
            << post_raw(
                   "/v1/chat/completions",
                   R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"tools_in_user_message": true}})")
            << 400 << "chat_template_kwargs.tools_in_user_message is not supported (enable_thinking is)";
        QTest::newRow("enable_thinking")
            << post_raw(
                   "/v1/chat/completions",
                   R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"enable_thinking": "no"}})")
            << 400 << "chat_template_kwargs.enable_thinking must be true or false";
        QTest::newRow("logit_bias id")
            << post_raw("/v1/completions", R"({"prompt": "a", "logit_bias": {"512": 5}})") << 400
            << R"(logit_bias: "512" is not a token id of this model (0 to 511))";
        QTest::newRow("long stop") << post_raw("/v1/completions", R"({"prompt": "a", "stop": [")" +
                                                                      std::string(257, 'x') + R"("]})")
                                   << 400 << "stop strings are at most 256 bytes";
        QTest::newRow("logit_bias twice")
            << post_raw("/v1/completions", R"({"prompt": "a", "logit_bias": {"5": 60, "05": 60}})") << 400
            << "logit_bias names token 5 more than once";
        QTest::newRow("logit_bias value")
            << post_raw("/v1/completions", R"({"prompt": "a", "logit_bias": {"5": 101}})") << 400
            << "logit_bias values must be numbers from -100 to 100";
        QTest::newRow("logprobs > 20") << post_raw("/v1/completions", R"({"prompt": "a", "logprobs": 21})")
                                       << 400 << "logprobs must be between 0 and 20";
        QTest::newRow("token id") << post_raw("/v1/completions", R"({"prompt": [1, 99999]})") << 400
                                  << "prompt token ids must be integers in [0, 512)";
        QTest::newRow("unknown path")
            << QString::fromStdString(request("GET", "/v2/things")) << 404 << "no such endpoint: /v2/things";
        QTest::newRow("wrong method") << QString::fromStdString(request("GET", "/v1/chat/completions")) << 405
                                      << "GET is not allowed on /v1/chat/completions (use POST)";
        QTest::newRow("no length") << "POST /v1/completions HTTP/1.1\r\nConnection: close\r\n\r\n"
                                   << 411 << "a POST request needs a Content-Length";
        QTest::newRow("unknown model") << QString::fromStdString(request("GET", "/v1/models/gpt-4")) << 404
                                       << R"(no model named "gpt-4" is loaded)";
    }
    void bad_requests_get_openai_errors() {
        QFETCH(QString, raw);
        QFETCH(int, status);
        QFETCH(QString, message);
        RunningServer s(*engine_);
        const Response r = call(s.port(), raw.toStdString());
        QCOMPARE(r.status, status);
        QCOMPARE(QString::fromStdString(error_message(r)), message);
        QCOMPARE(json_string(r.json().at("error").at("type")), std::string("invalid_request_error"));
    }

    void logprobs_are_the_models_own_probabilities() {
        RunningServer s(*engine_);
        // Greedy from BOS: each token's logprob is log softmax of the model's logits at the
        // position before it — checked against the float64 reference logits of those 63 positions.
        const Response r = post(s.port(), "/v1/completions",
                                R"({"prompt": [1], "max_tokens": 63, "temperature": 0, "logprobs": 3})");
        QCOMPARE(r.status, 200);
        const Json body = r.json();
        const Json& lp = body.at("choices").at(0).at("logprobs");
        const Json& tokens = lp.at("tokens");
        const Json& values = lp.at("token_logprobs");
        const Json& tops = lp.at("top_logprobs");
        QCOMPARE(tokens.size(), size_t(63));
        QCOMPARE(values.size(), size_t(63));
        QFile f(QString::fromStdString(test::shared_path("reference/stories260K_logits_64x512.f32")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray raw = f.readAll();
        QCOMPARE(raw.size(), qsizetype(64 * 512 * 4));
        const auto* ref = reinterpret_cast<const float*>(raw.constData());
        const auto want_ids = test::token_ids(test::stories_reference()["greedy_from_bos_tokens"].toArray());
        double worst = 0;
        for (size_t i = 0; i < 63; ++i) {
            const float* row = ref + i * 512;
            double m = row[0], sum = 0;
            for (int v = 0; v < 512; ++v) m = std::max(m, double(row[v]));
            for (int v = 0; v < 512; ++v) sum += std::exp(double(row[v]) - m);
            const int32_t id = want_ids[i + 1];
            const double want = double(row[id]) - m - std::log(sum);
            QCOMPARE(json_string(tokens.at(i)), engine_->tokenizer().token_text(id));
            worst = std::max(worst, std::abs(values.at(i).get<double>() - want));
            // Three alternatives, most likely first; greedy picked the first.
            QVERIFY(tops.at(i).is_object());
            std::vector<std::pair<std::string, double>> top;  // in the order written
            for (const auto& [text, logprob] : tops.at(i).items())
                top.emplace_back(text, logprob.get<double>());
            QCOMPARE(top.size(), size_t(3));
            QCOMPARE(top[0].first, json_string(tokens.at(i)));
            QCOMPARE(top[0].second, values.at(i).get<double>());
            QVERIFY(top[0].second >= top[1].second);
            QVERIFY(top[1].second >= top[2].second);
        }
        qInfo("largest |logprob - reference| over 63 tokens: %.2e", worst);
        QVERIFY2(worst < 1e-4, qPrintable(QString::number(worst)));
        // The offsets locate each token's text in the reply's.
        const Json& offsets = lp.at("text_offset");
        QCOMPARE(*json_integer(offsets.at(1)), int64_t(json_string(tokens.at(0)).size()));

        // Chat, streamed: every token's entry arrives with its chunks, with top_logprobs of its own,
        // and their texts make the reply.
        const Response st =
            post(s.port(), "/v1/chat/completions",
                 chat_body("Lily had a cat", 30, R"(, "logprobs": true, "top_logprobs": 2, "stream": true)"));
        QCOMPARE(st.status, 200);
        std::string joined;
        size_t entries = 0;
        for (const auto& e : st.events()) {
            if (e == "[DONE]") break;
            const Json j = parse_json(e);
            const Json* l = json_find(j.at("choices").at(0), "logprobs");
            if (!l || l->is_null()) continue;
            for (const Json& entry : l->at("content")) {
                ++entries;
                joined += json_string(entry.at("token"));
                QCOMPARE(entry.at("top_logprobs").size(), size_t(2));
                QVERIFY(entry.at("logprob").get<double>() <= 0);
                QCOMPARE(entry.at("bytes").size(), json_string(entry.at("token")).size());
            }
        }
        QCOMPARE(entries, size_t(30));
        QCOMPARE(qs(joined), qs(streamed_text(st, true)));
    }

    void the_context_bounds_prompts_and_replies() {
        RunningServer s(*engine_);
        // 600 token ids do not fit a 512-token context: refused before anything runs.
        std::string ids = "1";
        for (int i = 1; i < 600; ++i) ids += ",300";
        const Response r = post(s.port(), "/v1/completions", R"({"prompt": [)" + ids + "]}");
        QCOMPARE(r.status, 400);
        QCOMPARE(json_string(r.json().at("error").at("code")), std::string("context_length_exceeded"));
        // Without max_tokens a reply runs until the context is full and says "length".
        const Response full =
            post(s.port(), "/v1/completions", R"({"prompt": [1], "temperature": 0, "ignore_eos": true})");
        QCOMPARE(full.status, 200);
        QCOMPARE(json_string(full.json().at("choices").at(0).at("finish_reason")), std::string("length"));
        // All 512 positions are used: the last token is predicted from position 511 and never
        // needs a position of its own, so prompt + reply = 513 tokens.
        QCOMPARE(*json_integer(full.json().at("usage").at("total_tokens")), int64_t(513));
    }

    void an_api_key_is_required_when_set() {
        ServerOptions o;
        o.api_key = "sesame";
        RunningServer s(*engine_, o);
        QCOMPARE(call(s.port(), request("GET", "/v1/models")).status, 401);
        QCOMPARE(call(s.port(), request("GET", "/v1/models", {}, "Authorization: Bearer wrong\r\n")).status,
                 401);
        // The scheme in any letter case (RFC 7235); the key exactly, no prefix or extension of it.
        QCOMPARE(call(s.port(), request("GET", "/v1/models", {}, "Authorization: bearer sesame\r\n")).status,
                 200);
        for (const char* bad : {"Authorization: Bearer sesam\r\n", "Authorization: Bearer sesame2\r\n",
                                "Authorization: Basic sesame\r\n", "Authorization: Bearersesame\r\n"})
            QCOMPARE(call(s.port(), request("GET", "/v1/models", {}, bad)).status, 401);
        const Response ok =
            call(s.port(), request("GET", "/v1/models", {}, "Authorization: Bearer sesame\r\n"));
        QCOMPARE(ok.status, 200);
        QCOMPARE(json_string(ok.json().at("data").at(0).at("id")), std::string("stories260K"));
        QCOMPARE(call(s.port(), request("GET", "/health")).status, 200);  // health checks need no key
    }

    void a_client_leaving_mid_stream_frees_its_sequence() {
        std::vector<std::string> log;
        {
            ServerOptions o;
            o.log = [&log](const std::string& line) { log.push_back(line); };
            RunningServer s(*engine_, o);
            const int fd = connect_to(s.port());
            send_all(fd, request("POST", "/v1/completions",
                                 R"({"prompt": [1], "temperature": 0, "ignore_eos": true, "stream": true})"));
            char buf[256];
            QVERIFY(::recv(fd, buf, sizeof buf, 0) > 0);  // the stream has begun
            ::close(fd);
            // The server notices between steps; a later request is served normally.
            const Response r = post(s.port(), "/v1/completions", R"({"prompt": "Tom", "max_tokens": 4})");
            QCOMPARE(r.status, 200);
        }
        bool left = false;
        for (const auto& line : log) left = left || line.find("the client left after") != std::string::npos;
        QVERIFY2(left, "the server did not notice the client leaving mid-reply");
        // Stopped: no sequence is left holding KV blocks.
        const KvStats kv = engine_->kv_stats();
        QCOMPARE(kv.used_blocks, 0u);
        QVERIFY(kv.sequences.empty());
    }

    void json_mode_lets_every_object_through() {
        // Valid JSON objects, tokenized as the model would write them: JSON mode allows each of their
        // tokens in turn, and the reply is whole exactly at the end.
        const Tokenizer& tok = engine_->tokenizer();
        for (const char* doc :
             {R"({"name": "Lily", "age": 3, "toys": ["ball", "doll"], "happy": true})",
              "{\n  \"a\": {\"b\": [1.5e-3, -0, null]},\n  \"c\": \"\\u00e9\\n\"\n}", "{}"}) {
            server::JsonMode mode(tok);
            const auto ids = tok.encode(doc, false);
            for (size_t i = 0; i < ids.size(); ++i) {
                QVERIFY(!mode.complete());
                std::vector<float> logits(static_cast<size_t>(tok.vocab_size()), 0.0f);
                mode.constrain(logits);
                QVERIFY2(std::isfinite(logits[static_cast<size_t>(ids[i])]),
                         qPrintable(QString("token %1 (%2) of %3 was blocked")
                                        .arg(i)
                                        .arg(QString::fromStdString(tok.display_piece(ids[i])),
                                             QString::fromUtf8(doc))));
                mode.accept(ids[i]);
            }
            QVERIFY(mode.complete());
        }
    }

    void json_mode_replies_are_json_objects() {
        RunningServer s(*engine_);
        // stories260K writes stories, not JSON; constrained, its replies are objects (it rarely
        // closes one within 60 tokens, so each reply is checked as the start of one), the same
        // whether streamed or not.
        for (int seed : {1, 2, 3}) {
            const std::string fixed =
                R"({"messages": [{"role": "user", "content": "Lily has a red ball"}], "max_tokens": 60, )"
                R"("response_format": {"type": "json_object"}, "temperature": 0.9, "seed": )" +
                std::to_string(seed) + "}";
            const Response r = post(s.port(), "/v1/chat/completions", fixed);
            QCOMPARE(r.status, 200);
            const std::string text = reply_text(r);
            const size_t first = text.find_first_not_of(" \n");
            QVERIFY2(first != std::string::npos && text[first] == '{', text.c_str());
            server::JsonPrefix prefix;
            QVERIFY2(prefix.feed(text), text.c_str());
            const std::string finish = json_string(r.json().at("choices").at(0).at("finish_reason"));
            if (finish == "stop")
                QVERIFY(parse_json(text).is_object());
            else
                QCOMPARE(finish, std::string("length"));
            const Response st = post(s.port(), "/v1/chat/completions",
                                     fixed.substr(0, fixed.size() - 1) + R"(, "stream": true})");
            QCOMPARE(qs(streamed_text(st, true)), qs(text));
        }
        // With "}" pushed up by logit_bias the object closes at once: the reply ends there, "stop",
        // a whole object, and nothing after it.
        const auto close = engine_->tokenizer().encode_fragment("}", false);
        QCOMPARE(close.size(), size_t(1));
        const Response closed =
            post(s.port(), "/v1/chat/completions",
                 R"({"messages": [{"role": "user", "content": "Lily"}], "max_tokens": 50, )"
                 R"("response_format": {"type": "json_object"}, "logit_bias": {")" +
                     std::to_string(close[0]) + R"(": 100}})");
        QCOMPARE(closed.status, 200);
        QCOMPARE(json_string(closed.json().at("choices").at(0).at("finish_reason")), std::string("stop"));
        const std::string object = reply_text(closed);
        QVERIFY2(parse_json(object).is_object() && object.back() == '}', object.c_str());
        QVERIFY(*json_integer(closed.json().at("usage").at("completion_tokens")) <= 3);
        // JSON schemas are refused by name, not ignored.
        QCOMPARE(
            post(
                s.port(), "/v1/chat/completions",
                R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}})")
                .status,
            400);
    }

    void logit_bias_bans_and_favours_tokens() {
        RunningServer s(*engine_);
        const auto first = [&](const std::string& extra) {
            const Response r =
                post(s.port(), "/v1/completions",
                     R"({"prompt": [1], "max_tokens": 1, "temperature": 0, "logprobs": 0)" + extra + "}");
            return json_string(r.json().at("choices").at(0).at("logprobs").at("tokens").at(0));
        };
        const Tokenizer& tok = engine_->tokenizer();
        QCOMPARE(first(""), tok.token_text(403));  // the reference story's first token, "Once"
        QVERIFY(first(R"(, "logit_bias": {"403": -100})") != tok.token_text(403));  // banned
        QCOMPARE(first(R"(, "logit_bias": {"300": 100})"), tok.token_text(300));    // favoured
    }

    void tokens_can_be_counted_and_read_back() {
        RunningServer s(*engine_);
        const Tokenizer& tok = engine_->tokenizer();
        const Response t =
            post(s.port(), "/tokenize", R"({"content": "Once upon a time", "add_special": true})");
        QCOMPARE(t.status, 200);
        std::vector<int32_t> ids;
        const Json tj = t.json();
        for (const Json& id : tj.at("tokens")) ids.push_back(static_cast<int32_t>(*json_integer(id)));
        QCOMPARE(ids, tok.encode("Once upon a time", true));
        // The reference's own tokens for the prompt: BOS, then the story's first four.
        const auto ref = test::token_ids(test::stories_reference()["greedy_from_bos_tokens"].toArray());
        QCOMPARE(ids, std::vector<int32_t>(ref.begin(), ref.begin() + 5));
        const Response pieces = post(s.port(), "/tokenize", R"({"content": "Once", "with_pieces": true})");
        const Json pj = pieces.json();
        const Json& first = pj.at("tokens").at(0);
        QCOMPARE(json_string(first.at("piece")),
                 tok.display_piece(static_cast<int32_t>(*json_integer(first.at("id")))));
        const Response d = post(s.port(), "/detokenize", R"({"tokens": [1, 403, 407, 261, 378]})");
        QCOMPARE(d.status, 200);
        QCOMPARE(qs(json_string(d.json().at("content"))), QStringLiteral("Once upon a time"));
        QCOMPARE(post(s.port(), "/detokenize", R"({"tokens": [600]})").status, 400);
        QCOMPARE(post(s.port(), "/tokenize", R"({"text": "x"})").status, 400);
    }

    // llama-server's /apply-template: the model's own template over the request's messages and
    // tools, as ChatTemplate::apply renders them (checked against Jinja2 by the corpus tests).
    void a_reply_goes_on_from_the_last_assistant_message() {
        RunningServer s(*engine_);
        // vLLM's continue_final_message: the last message, the assistant's, rendered open — the
        // same prompt ids as the template's open reply, so the same greedy text as a completion
        // of those ids.
        std::vector<ChatMessage> messages(2);
        messages[0].role = ChatRole::User;
        messages[0].content = "Tell me a story.";
        messages[1].role = ChatRole::Assistant;
        messages[1].content = "Once upon a time, there was a little";
        const RenderedPrompt open =
            ChatTemplate::for_engine(*engine_).render_open_reply(engine_->tokenizer(), messages);
        Json ids = Json::array();
        for (const int32_t id : open.tokens) ids.push_back(id);
        const Response completion =
            post(s.port(), "/v1/completions",
                 R"({"max_tokens": 24, "temperature": 0, "prompt": )" + server::dump_json(ids) + "}");
        QCOMPARE(completion.status, 200);
        const std::string body =
            R"({"messages": [{"role": "user", "content": "Tell me a story."}, {"role": "assistant", "content": "Once upon a time, there was a little"}], "temperature": 0, "max_tokens": 24, "continue_final_message": true, "add_generation_prompt": false})";
        const Response continued = post(s.port(), "/v1/chat/completions", body);
        QCOMPARE(continued.status, 200);
        QCOMPARE(qs(reply_text(continued)), qs(reply_text(completion)));
        QVERIFY(!reply_text(continued).empty());
        QCOMPARE(*json_integer(continued.json().at("usage").at("prompt_tokens")),
                 static_cast<int64_t>(open.tokens.size()));
        // Refused by name: a last message that is not a reply, a generation prompt asked for too.
        const Response notReply = post(
            s.port(), "/v1/chat/completions",
            R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true, "add_generation_prompt": false})");
        QCOMPARE(notReply.status, 400);
        QCOMPARE(qs(error_message(notReply)),
                 QStringLiteral("continue_final_message needs the last message to be the assistant's"));
        const Response both = post(
            s.port(), "/v1/chat/completions",
            R"({"messages": [{"role": "assistant", "content": "x"}], "continue_final_message": true, "add_generation_prompt": true})");
        QCOMPARE(both.status, 400);
        QCOMPARE(qs(error_message(both)),
                 QStringLiteral("continue_final_message needs add_generation_prompt false"));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void apply_template_renders_the_models_template() {
        SyntheticShape shape = synthetic_shape("tiny");
        shape.chat_template = test::corpus_template("Qwen3.5-4B.jinja");
        const std::string path = test::temp_dir() + "/qwen3.5-template-server.gguf";
        write_synthetic_model(shape, static_cast<uint32_t>(GgmlType::F32), path);
        EngineOptions o = test::validated_engine_options();
        o.context_length = 256;
        auto engine = Engine::load(path, o);
        RunningServer s(*engine);
        const std::string body =
            R"({"messages": [{"role": "user", "content": "Weather?"}], "tools": [{"type": "function", "function": {"name": "get_weather"}}], "chat_template_kwargs": {"enable_thinking": false}})";
        const Response r = post(s.port(), "/apply-template", body);
        QCOMPARE(r.status, 200);
        const std::string prompt = json_string(r.json().at("prompt"));
        ChatTemplate tmpl = ChatTemplate::for_engine(*engine);
        tmpl.set_thinking(false);
        const Json parsed = server::parse_json(body);
        QCOMPARE(prompt, tmpl.apply(engine->tokenizer(), parsed.at("messages"), parsed.at("tools"), true));
        QVERIFY(prompt.find("get_weather") != std::string::npos);
        QVERIFY(prompt.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        const Response closed =
            post(s.port(), "/apply-template",
                 R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false})");
        QCOMPARE(json_string(closed.json().at("prompt")), std::string("<|im_start|>user\nHi<|im_end|>\n"));
        // Refusals: the template's own error (Qwen3.5 needs a user message), wrong types.
        const Response refused =
            post(s.port(), "/apply-template", R"({"messages": [{"role": "system", "content": "x"}]})");
        QCOMPARE(refused.status, 400);
        QVERIFY2(refused.body.find("No user query found in messages.") != std::string::npos,
                 refused.body.c_str());
        QCOMPARE(post(s.port(), "/apply-template", R"({"messages": "hi"})").status, 400);
        QCOMPARE(post(s.port(), "/apply-template", R"({"messages": [], "add_generation_prompt": 1})").status,
                 400);
        QCOMPARE(call(s.port(), request("GET", "/apply-template")).status, 405);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void metrics_count_what_was_served() {
        RunningServer s(*engine_);
        const auto value = [](const std::string& text, const std::string& name) {
            const size_t at = text.find("\nlantern_" + name + " ");
            if (at == std::string::npos) throw std::runtime_error("no metric " + name + " in:\n" + text);
            return std::stod(text.substr(at + name.size() + 10));
        };
        const Response r = post(s.port(), "/v1/completions",
                                R"({"prompt": "Tom saw a cat", "max_tokens": 7, "temperature": 0})");
        QCOMPARE(r.status, 200);
        QCOMPARE(post(s.port(), "/v1/completions", R"({"prompt": 5})").status, 400);
        const Response m = call(s.port(), request("GET", "/metrics"));
        QCOMPARE(m.status, 200);
        QVERIFY(m.head.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
        QCOMPARE(value(m.body, "replies_total"), 1.0);
        QCOMPARE(value(m.body, "generated_tokens_total"), 7.0);
        QCOMPARE(value(m.body, "prompt_tokens_total"),
                 double(*json_integer(r.json().at("usage").at("prompt_tokens"))));
        QCOMPARE(value(m.body, "http_errors_total"), 1.0);
        QCOMPARE(value(m.body, "http_requests_total"), 3.0);  // this one included
        // One step for the prompt and one per further token (the last token is not fed).
        QCOMPARE(value(m.body, "engine_steps_total"), 7.0);
        QCOMPARE(value(m.body, "engine_step_decode_tokens_total"), 6.0);
        QCOMPARE(value(m.body, "kv_blocks_used"), 0.0);
        QCOMPARE(value(m.body, "kv_blocks_total"), double(engine_->kv_stats().total_blocks));
    }

    void connections_past_the_limit_are_turned_away() {
        ServerOptions o;
        o.max_connections = 2;
        RunningServer s(*engine_, o);
        // Two idle connections take the slots; a third is answered 503 and closed.
        const int a = connect_to(s.port()), b = connect_to(s.port());
        const Response third = call(s.port(), request("GET", "/health"));
        QCOMPARE(third.status, 503);
        QCOMPARE(json_string(third.json().at("error").at("code")), std::string("too_many_connections"));
        ::close(a);
        ::close(b);
        // Once they leave, requests are served again.
        QTRY_COMPARE_WITH_TIMEOUT(call(s.port(), request("GET", "/health")).status, 200, 5000);
    }

    // DNS rebinding and web pages: a Host that names another machine is refused, as is a page of
    // another origin, unless the options let it in; a POST that is not JSON (a page's text/plain
    // form needs no CORS preflight) is refused too.
    void foreign_hosts_origins_and_content_types_are_refused() {
        ServerOptions o;
        o.allowed_hosts = {"lantern.lan"};
        o.allowed_origins = {"http://localhost:3000"};
        RunningServer s(*engine_, o);
        const auto get = [&](const std::string& headers) {
            const std::string raw = "GET /v1/models HTTP/1.1\r\n" + headers + "Connection: close\r\n\r\n";
            return call(s.port(), raw);
        };
        QCOMPARE(get("Host: evil.example\r\n").status, 403);
        QCOMPARE(get("Host: evil.example:" + std::to_string(s.port()) + "\r\n").status, 403);
        QCOMPARE(get("").status, 403);  // HTTP/1.1 without a Host
        const Response refused = get("Host: evil.example\r\n");
        QCOMPARE(json_string(refused.json().at("error").at("code")), std::string("host_not_allowed"));
        const std::vector<std::string> hosts{"localhost", "127.0.0.1:" + std::to_string(s.port()),
                                             "[::1]:8080", "10.0.0.7", "LANTERN.lan:80"};
        for (const std::string& host : hosts)
            QVERIFY2(get("Host: " + host + "\r\n").status == 200, host.c_str());

        const Response page = get("Host: localhost\r\nOrigin: http://evil.example\r\n");
        QCOMPARE(page.status, 403);
        QCOMPARE(json_string(page.json().at("error").at("code")), std::string("origin_not_allowed"));
        const Response allowed = get("Host: localhost\r\nOrigin: http://localhost:3000\r\n");
        QCOMPARE(allowed.status, 200);
        QCOMPARE(allowed.header("Access-Control-Allow-Origin"), std::string("http://localhost:3000"));
        const Response own =
            get("Host: localhost\r\nOrigin: http://127.0.0.1:" + std::to_string(s.port()) + "\r\n");
        QCOMPARE(own.status, 200);

        const std::string body = R"({"prompt": [1], "max_tokens": 1})";
        const std::string form =
            "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            "Content-Type: text/plain\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body;
        QCOMPARE(call(s.port(), form).status, 415);
        QCOMPARE(post(s.port(), "/v1/completions", body).status, 200);

        ServerOptions open;
        open.cors = true;  // --cors: every origin
        RunningServer any(*engine_, open);
        const Response cors = call(any.port(),
                                   "GET /v1/models HTTP/1.1\r\nHost: localhost\r\n"
                                   "Origin: http://evil.example\r\nConnection: close\r\n\r\n");
        QCOMPARE(cors.status, 200);
        QCOMPARE(cors.header("Access-Control-Allow-Origin"), std::string("*"));
    }

    // Without the key a client learns nothing, not even which paths exist.
    void the_key_is_asked_before_anything_else() {
        ServerOptions o;
        o.api_key = "sesame";
        RunningServer s(*engine_, o);
        QCOMPARE(call(s.port(), request("GET", "/no/such/path")).status, 401);
        QCOMPARE(call(s.port(), request("DELETE", "/v1/models")).status, 401);
        QCOMPARE(
            call(s.port(), request("GET", "/no/such/path", {}, "Authorization: Bearer sesame\r\n")).status,
            404);
    }

    // A request that never finishes arriving is answered 408 and closed; a connection with nothing
    // to do is closed: idle sockets cannot take every slot for good.
    void slow_and_idle_clients_time_out() {
        ServerOptions o;
        o.request_timeout_ms = 300;
        o.idle_timeout_ms = 300;
        o.max_connections = 4;
        RunningServer s(*engine_, o);
        const int slow = connect_to(s.port());
        send_all(slow, "GET /health HTTP/1.1\r\nHost: localhost\r\n");  // the blank line never comes
        const Response timed_out = parse_response(read_to_end(slow));
        ::close(slow);
        QCOMPARE(timed_out.status, 408);
        // The refused connection lingers until the server reads the client's close: then its slot
        // is free (the /metrics call itself is the one open connection).
        QTRY_VERIFY_WITH_TIMEOUT(
            call(s.port(), request("GET", "/metrics")).body.find("lantern_connections_open 1\n") !=
                std::string::npos,
            5000);
        std::vector<int> idle;
        for (int i = 0; i < 4; ++i) idle.push_back(connect_to(s.port()));
        QCOMPARE(call(s.port(), request("GET", "/health")).status, 503);     // every slot taken...
        for (const int fd : idle) QCOMPARE(read_to_end(fd), std::string());  // ...until they are closed
        for (const int fd : idle) ::close(fd);
        QTRY_COMPARE_WITH_TIMEOUT(call(s.port(), request("GET", "/health")).status, 200, 5000);
        const std::string metrics = call(s.port(), request("GET", "/metrics")).body;
        QVERIFY2(metrics.find("lantern_connections_timed_out_total 5") != std::string::npos, metrics.c_str());
    }

    // A client that pipelines requests and never reads the answers: the server answers the next
    // only once the last is read, so what waits for it stays small, and it is closed once it has
    // read nothing for the write timeout.
    void a_client_that_never_reads_is_cut_off_with_memory_bounded() {
        ServerOptions o;
        o.write_timeout_ms = 1500;
        RunningServer s(*engine_, o);
        const int fd = connect_to(s.port());
        const int small = 4096;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        std::string burst;
        const std::string one = "GET /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n";
        while (burst.size() < (2u << 20)) burst += one;  // ~45 000 requests, ~10 MiB of answers
        send_all(fd, burst);
        size_t most = 0, most_in = 0;
        const auto field = [](const std::string& text, const std::string& name) {
            const size_t at = text.find("\nlantern_" + name + " ");
            return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 10));
        };
        bool closed = false;
        for (int i = 0; i < 100 && !closed; ++i) {
            const std::string m = call(s.port(), request("GET", "/metrics")).body;
            most = std::max(most, static_cast<size_t>(field(m, "connection_output_bytes")));
            most_in = std::max(most_in, static_cast<size_t>(field(m, "connection_input_bytes")));
            closed = field(m, "connections_timed_out_total") >= 1;
            if (!closed) QTest::qWait(100);
        }
        ::close(fd);
        QVERIFY2(closed, "the client that reads nothing was not closed");
        QVERIFY2(most <= 64 * 1024 + 4096, qPrintable(QString("%1 bytes waited for it").arg(most)));
        // Nor does the server read the 2 MiB pipeline it cannot answer: it holds at most its 64 KiB
        // read-ahead plus one recv() (16 KiB); the rest waits in the kernel.
        QVERIFY2(most_in <= 80 * 1024, qPrintable(QString("%1 bytes read ahead").arg(most_in)));
    }

    // Empty lines before a request line count against the header limit, and control characters in
    // a request target reach the log escaped.
    void crlf_floods_and_control_characters_are_bounded() {
        std::vector<std::string> lines;
        std::mutex lock;
        ServerOptions o;
        o.log = [&](const std::string& line) {
            std::lock_guard<std::mutex> guard(lock);
            lines.push_back(line);
        };
        RunningServer s(*engine_, o);
        QCOMPARE(call(s.port(), std::string(40 * 1024, '\n')).status, 431);
        QCOMPARE(
            call(s.port(), "GET /a\x1b[2Jb HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").status,
            404);
        std::lock_guard<std::mutex> guard(lock);
        const bool escaped = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
            return l.find("/a\\x1b[2Jb") != std::string::npos;
        });
        for (const std::string& l : lines)
            QVERIFY2(std::none_of(l.begin(), l.end(), [](char c) { return c == '\x1b'; }), l.c_str());
        QVERIFY(escaped);
    }

    // A prompt longer than the context could hold even at the longest token is refused unread,
    // and /tokenize takes at most 1 MiB.
    void huge_texts_are_refused_before_they_are_tokenized() {
        RunningServer s(*engine_);
        const size_t holds = engine_->context_length() * engine_->tokenizer().longest_piece_bytes();
        const std::string word(2 * holds, 'a');
        QVERIFY(word.size() + 1024 < server::useful_body_bytes("/v1/completions", *engine_));
        const Response r =
            post(s.port(), "/v1/completions", R"({"prompt": ")" + word + R"(", "max_tokens": 1})");
        QCOMPARE(r.status, 400);
        QCOMPARE(json_string(r.json().at("error").at("code")), std::string("context_length_exceeded"));
        const Response chat = post(s.port(), "/v1/chat/completions", chat_body(word, 1));
        QCOMPARE(chat.status, 400);
        QCOMPARE(json_string(chat.json().at("error").at("code")), std::string("context_length_exceeded"));
        const std::string mib(1u << 20, 'a');
        QCOMPARE(post(s.port(), "/tokenize", R"({"content": ")" + mib + R"(a"})").status, 413);
        const Response counted =
            post(s.port(), "/tokenize", R"({"content": ")" + word.substr(0, 64 * 1024) + R"("})");
        QCOMPARE(counted.status, 200);
        QVERIFY(!counted.json().at("tokens").empty());
    }

    // A body longer than the request could use is answered 413 from its head: the server reads
    // none of it (a client that waits for the answer gets it at once) or, from a client that
    // sends it all anyway, reads it only to throw it away, so the answer is not lost to a reset.
    void bodies_larger_than_a_request_can_use_are_refused_unread() {
        RunningServer s(*engine_);
        const size_t useful = server::useful_body_bytes("/v1/completions", *engine_);
        QVERIFY(useful < (1u << 20));  // a 512-token context with 512 tokens of at most a few bytes
        const std::string head =
            "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
            "application/json\r\nContent-Length: " +
            std::to_string(7u << 20) + "\r\n\r\n";
        const int fd = test::http_connect(s.port());
        test::http_send(fd, head);
        const Response early = parse_response(test::http_read_to_end(fd));  // no body sent
        ::close(fd);
        QCOMPARE(early.status, 413);
        QVERIFY2(error_message(early).find("can use here") != std::string::npos,
                 error_message(early).c_str());
        const std::string text((7u << 20) - 32, 'a');
        const std::string body = R"({"prompt": )" + server::json_quote(text) + R"(, "max_tokens": 1})";
        const Response sent = post(s.port(), "/v1/completions", body);  // throws on a reset
        QCOMPARE(sent.status, 413);
        // The limit follows the path: /tokenize takes its 1 MiB text escaped, any other path 64 KiB.
        QVERIFY(server::useful_body_bytes("/tokenize", *engine_) > 6 * server::kMaxTokenizeBytes);
        QCOMPARE(post(s.port(), "/health", std::string(65 * 1024, ' ')).status, 413);
        QCOMPARE(call(s.port(), request("GET", "/health")).status, 200);
    }

    void the_lantern_server_tool_serves_until_told_to_stop() {
        QProcess p;
        p.start(LANTERN_SERVER_PATH,
                {"--model", QString::fromStdString(test::shared_path("models/stories260K.gguf")), "--port",
                 "0", "--ctx", "256", "--parallel", "2", "--kv-tokens", "300"});
        QVERIFY(p.waitForStarted());
        // It says where it listens once the model is loaded and its kernels are compiled.
        QString err;
        const QRegularExpression listening(QStringLiteral("listening on http://127\\.0\\.0\\.1:(\\d+)/v1"));
        QRegularExpressionMatch m;
        QVERIFY(QTest::qWaitFor(
            [&] {
                p.waitForReadyRead(100);
                err += QString::fromUtf8(p.readAllStandardError());
                m = listening.match(err);
                return m.hasMatch() || p.state() == QProcess::NotRunning;
            },
            120000));
        QVERIFY2(m.hasMatch(), qPrintable(err));
        // 300 tokens of KV cache are 19 blocks of 16.
        QVERIFY2(err.contains(QStringLiteral("context 256, 2 replies at once, KV cache of 304 tokens")),
                 qPrintable(err));
        const auto port = static_cast<uint16_t>(m.captured(1).toUInt());
        const Response r =
            post(port, "/v1/completions", R"({"prompt": [1], "max_tokens": 10, "temperature": 0})");
        QCOMPARE(r.status, 200);
        QVERIFY(test::stories_reference()["greedy_from_bos_text"].toString().startsWith(qs(reply_text(r))));
        // SIGTERM (Ctrl+C is SIGINT, the same handler): it stops cleanly.
        p.terminate();
        QVERIFY(p.waitForFinished(30000));
        err += QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(err.contains(QStringLiteral("[lantern-server] stopped")), qPrintable(err));
        // A request line per request in its log, and (run under ctest's LANTERN_VALIDATION=1) no
        // validation message.
        QVERIFY2(err.contains(QStringLiteral("POST /v1/completions")), qPrintable(err));
        QVERIFY2(!err.contains(QStringLiteral("vulkan: ")), qPrintable(err));
    }

    void the_lantern_server_tool_explains_bad_starts() {
        const auto run = [](const QStringList& args) {
            QProcess p;
            p.start(LANTERN_SERVER_PATH, args);
            p.waitForFinished(60000);
            return std::make_pair(p.exitCode(), QString::fromUtf8(p.readAllStandardError()));
        };
        auto [code, err] = run({"--parallel", "0", "--model", "x.gguf"});
        QCOMPARE(code, 2);
        QVERIFY2(err.contains(QStringLiteral("--parallel must be between 1 and 64")), qPrintable(err));
        std::tie(code, err) = run({"--model", "/nonexistent/model.gguf"});
        QCOMPARE(code, 1);
        QVERIFY2(err.contains(QStringLiteral("cannot open /nonexistent/model.gguf")), qPrintable(err));
        std::tie(code, err) =
            run({"--model", QString::fromStdString(test::shared_path("models/stories260K.gguf")), "--host",
                 "localhost"});
        QCOMPARE(code, 2);
        QVERIFY2(err.contains(QStringLiteral("--host needs an IPv4 address such as 127.0.0.1")),
                 qPrintable(err));
    }

    void a_busy_port_is_a_clear_error() {
        RunningServer s(*engine_);
        ServerOptions o;
        o.port = s.port();
        try {
            ApiServer second(*engine_, o);
            QFAIL("a second server on the same port should not start");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::Io);
            QVERIFY2(
                std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(s.port())) == 0,
                e.what());
        }
    }
};

QTEST_APPLESS_MAIN(ApiServerTest)
#include "test_api_server.moc"
