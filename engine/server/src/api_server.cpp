// ApiServer (lantern/server.h): one poll() loop that owns the sockets and the Scheduler. Between
// engine steps it accepts connections, reads requests and writes what the last step produced; the
// Scheduler's callbacks (run inside step()) turn tokens into text and queue it on the reply's
// connection. No locks: everything but stop() runs on the thread that called run().
#include "lantern/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <optional>

#include "http.h"
#include "json.h"
#include "json_mode.h"
#include "lantern/chat_template.h"
#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/scheduler.h"
#include "lantern/tokenizer.h"
#include "openai.h"

namespace lantern {

using server::ApiError;
using server::Json;
using Clock = std::chrono::steady_clock;

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

void set_nonblocking(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
}

// The model's name as clients see it in "model": general.name, else the file name.
std::string model_id(const Engine& engine) {
    const ModelInfo& m = engine.model();
    if (!m.name.empty()) return m.name;
    const size_t slash = m.path.find_last_of('/');
    return slash == std::string::npos ? m.path : m.path.substr(slash + 1);
}

}  // namespace

struct ApiServer::Impl {
    struct Connection {
        int fd = -1;
        std::string in, out;
        bool busy = false;         // a reply is being generated for it
        bool close_after = false;  // close once `out` is written
        // Refused before its request was read whole (413 from the head, 400, 408): once the answer
        // is written the server stops sending and reads what still comes, throwing it away, until
        // the client closes or kLingerMs pass. Closing at once with unread bytes would reset the
        // connection, and the client would lose the answer that says why.
        bool linger = false, draining = false;
        Clock::time_point draining_since;
        RequestId request = 0;
        size_t need = 0;     // `in` parses again once it holds this many bytes (HttpParse::needed)
        std::string origin;  // the request's Origin when it is let in (CORS headers echo it)
        Clock::time_point request_start;  // the first byte of the request under way in `in`
        Clock::time_point active;         // last time it had anything to do (idle timeout)
        Clock::time_point out_since;      // `out` waiting since then without a byte sent (write timeout)
    };

    // One reply being generated.
    struct Reply {
        uint64_t connection = 0;
        server::CompletionJob job;
        bool keep_alive = true;
        std::string id;
        int64_t created = 0;
        std::optional<StreamingDetokenizer> detokenizer;
        std::optional<StopStringMatcher> stops;
        std::optional<server::ReasoningSplitter> splitter;  // chat: reasoning apart from the answer
        std::optional<server::JsonMode> json_mode;          // response_format json_object
        std::string text;                                   // whole responses: the reply (the answer) so far
        std::string reasoning;                              // whole responses: the reasoning so far
        std::vector<Sample> samples;  // logprobs requested: every token's sample (whole responses)
        std::vector<Sample> pending;  // streamed: the samples since the last chunk
        size_t text_offset = 0;       // completions' logprobs: where the next token's text starts
        uint32_t cached_tokens = 0, completion_tokens = 0;
        uint32_t preemptions = 0;  // times it gave its KV blocks back and waited for room
        Clock::time_point submitted, first_token, last_token;
        bool finished = false;
    };

    Engine& engine;
    ServerOptions options;
    Scheduler scheduler;
    server::HttpLimits limits;
    int listen_fd = -1;
    int wake[2] = {-1, -1};  // stop() writes to wake[1]
    std::atomic<bool> stopping{false};
    uint16_t bound_port = 0;
    int deadline_check_ms = 1000;  // poll() waits at most this long while connections are open
    bool input_pending = false;    // serve_input left requests for the next pass
    uint64_t next_connection = 1;
    uint64_t next_reply_number = 1;
    std::map<uint64_t, Connection> connections;
    std::map<RequestId, Reply> replies;

    // Totals since start, for GET /metrics.
    struct Counters {
        uint64_t requests = 0, errors = 0, replies = 0, client_left = 0, timed_out = 0, refused = 0;
        uint64_t prompt_tokens = 0, cached_tokens = 0, generated_tokens = 0;
        uint64_t steps = 0, step_decode_tokens = 0, step_prefill_tokens = 0;
        double step_seconds = 0;
    } counters;

    Impl(Engine& e, ServerOptions o)
        : engine(e),
          options(std::move(o)),
          scheduler(e, std::max<uint32_t>(1, options.step_tokens), std::max<uint32_t>(1, options.parallel),
                    options.kv_blocks) {
        limits.max_body_bytes = options.max_body_bytes;
        // A body longer than the request could use is refused from its head, unread: reading and
        // parsing 7 MiB takes the engine's thread ~150 ms (decision 0044).
        limits.body_limit = [this](const server::HttpRequest& head) {
            return server::useful_body_bytes(head.path(), engine);
        };
        for (const uint32_t t :
             {options.request_timeout_ms, options.idle_timeout_ms, options.write_timeout_ms})
            if (t > 0) deadline_check_ms = std::clamp(static_cast<int>(t / 4), 10, deadline_check_ms);
        in_addr addr{};
        if (inet_pton(AF_INET, options.host.c_str(), &addr) != 1)
            throw Error(ErrorCode::Io, "cannot serve on host \"" + options.host +
                                           "\": give an IPv4 address such as 127.0.0.1");
        listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0)
            throw Error(ErrorCode::Io, std::string("cannot create a socket: ") + std::strerror(errno));
        const int one = 1;
        setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(options.port);
        sa.sin_addr = addr;
        if (bind(listen_fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(listen_fd, 64) != 0) {
            const std::string why = std::strerror(errno);
            close(listen_fd);
            throw Error(ErrorCode::Io,
                        "cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " + why);
        }
        socklen_t len = sizeof sa;
        getsockname(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len);
        bound_port = ntohs(sa.sin_port);
        set_nonblocking(listen_fd);
        if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
            close(listen_fd);
            throw Error(ErrorCode::Io, std::string("cannot create a pipe: ") + std::strerror(errno));
        }
    }

    ~Impl() {
        for (auto& [id, c] : connections) close(c.fd);
        close(listen_fd);
        close(wake[0]);
        close(wake[1]);
    }

    void log(const std::string& line) const {
        if (options.log) options.log(line);
    }

    // CORS: every origin with --cors, else the request's own origin when it was let in.
    server::HttpHeaders common_headers(const Connection& c) const {
        server::HttpHeaders h;
        if (options.cors || !c.origin.empty()) {
            h.emplace_back("Access-Control-Allow-Origin", options.cors ? std::string("*") : c.origin);
            h.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
            h.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            if (!options.cors) h.emplace_back("Vary", "Origin");
        }
        return h;
    }

    // A web page's origin that may call the API: this server's own, one the options name, or any
    // with --cors.
    bool origin_allowed(std::string_view origin) const {
        if (options.cors) return true;
        while (!origin.empty() && origin.back() == '/') origin.remove_suffix(1);
        const std::string port = ":" + std::to_string(bound_port);
        for (const char* self : {"http://127.0.0.1", "http://localhost", "http://[::1]"})
            if (origin == self + port) return true;
        for (const std::string& o : options.allowed_origins) {
            std::string_view allowed = o;
            while (!allowed.empty() && allowed.back() == '/') allowed.remove_suffix(1);
            if (allowed == origin) return true;
        }
        return false;
    }

    void send_json(Connection& c, int status, const Json& body, bool keep_alive) {
        c.out += server::http_response(status, "application/json", server::dump_json(body), common_headers(c),
                                       keep_alive);
        if (!keep_alive) c.close_after = true;
    }
    void send_error(Connection& c, const ApiError& e, bool keep_alive) {
        ++counters.errors;
        send_json(c, e.status, server::error_body(e), keep_alive);
    }

    Json model_object() const {
        return Json{{"id", model_id(engine)},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "lantern"},
                    {"context_length", engine.context_length()}};
    }

    // --- requests ---------------------------------------------------------------------------

    void handle(uint64_t conn_id, Connection& c, const server::HttpRequest& req) {
        const bool keep_alive = req.keep_alive();
        const std::string path = req.path();
        log(server::printable(req.method, 16) + " " + server::printable(req.target));
        c.origin.clear();
        // Who may ask at all: a Host that names this machine (DNS rebinding: a page's name that
        // now resolves here does not), and no web page of another origin.
        if (!server::host_allowed(req.header("Host"), options.allowed_hosts)) {
            ++counters.refused;
            return send_error(c,
                              ApiError(403,
                                       "the Host header \"" + server::printable(req.header("Host"), 64) +
                                           "\" does not name this machine; a name other machines reach it "
                                           "by must be allowed (lantern-server --allow-host NAME)",
                                       {}, "host_not_allowed"),
                              false);
        }
        if (const std::string origin = req.header("Origin"); !origin.empty()) {
            if (!origin_allowed(origin)) {
                ++counters.refused;
                return send_error(c,
                                  ApiError(403,
                                           "requests from web pages of " + server::printable(origin, 64) +
                                               " are refused (lantern-server --cors-origin ORIGIN, or --cors "
                                               "for every origin)",
                                           {}, "origin_not_allowed"),
                                  keep_alive);
            }
            c.origin = origin;
        }
        if (req.method == "OPTIONS") {
            c.out += server::http_response(204, "", "", common_headers(c), keep_alive);
            if (!keep_alive) c.close_after = true;
            return;
        }
        ++counters.requests;
        // The key first: without it a client learns nothing, not even which paths exist.
        if (path != "/health" && !options.api_key.empty() &&
            !server::bearer_token_matches(req.header("Authorization"), options.api_key))
            return send_error(c,
                              ApiError(401, "a valid API key is needed (Authorization: Bearer <key>)", {},
                                       "invalid_api_key"),
                              keep_alive);
        const bool known = path == "/health" || path == "/metrics" || path == "/v1/models" ||
                           path.rfind("/v1/models/", 0) == 0 || path == "/v1/chat/completions" ||
                           path == "/v1/completions" || path == "/tokenize" || path == "/detokenize" ||
                           path == "/apply-template";
        if (!known)
            return send_error(c,
                              ApiError(404, "no such endpoint: " + server::printable(path), {}, "not_found"),
                              keep_alive);
        const bool post = path == "/v1/chat/completions" || path == "/v1/completions" ||
                          path == "/tokenize" || path == "/detokenize" || path == "/apply-template";
        if (req.method != (post ? "POST" : "GET")) {
            c.out += server::http_response(
                405, "application/json",
                server::dump_json(server::error_body(
                    ApiError(405, server::printable(req.method, 16) + " is not allowed on " + path +
                                      " (use " + (post ? "POST" : "GET") + ")"))),
                [&] {
                    auto h = common_headers(c);
                    h.emplace_back("Allow", post ? "POST" : "GET");
                    return h;
                }(),
                keep_alive);
            if (!keep_alive) c.close_after = true;
            return;
        }
        // A page can send text/plain across origins without the browser asking first; JSON it cannot.
        if (post && !server::is_json_content_type(req.header("Content-Type")))
            return send_error(c,
                              ApiError(415, "the request body must be sent as Content-Type: application/json",
                                       {}, "unsupported_media_type"),
                              keep_alive);
        if (path == "/health")
            return send_json(c, 200, Json{{"status", "ok"}, {"model", model_id(engine)}}, keep_alive);
        if (path == "/metrics") {
            c.out += server::http_response(200, "text/plain; version=0.0.4", metrics(), common_headers(c),
                                           keep_alive);
            if (!keep_alive) c.close_after = true;
            return;
        }
        if (path == "/v1/models")
            return send_json(c, 200, Json{{"object", "list"}, {"data", Json::array({model_object()})}},
                             keep_alive);
        if (path.rfind("/v1/models/", 0) == 0) {
            const std::string name = server::percent_decode(path.substr(11));  // "Llama%203.2%201B"
            if (name != model_id(engine))
                return send_error(
                    c, ApiError(404, "no model named \"" + name + "\" is loaded", "model", "model_not_found"),
                    keep_alive);
            return send_json(c, 200, model_object(), keep_alive);
        }
        try {
            Json body;
            try {
                body = server::parse_json(req.body);
            } catch (const server::JsonError& e) {
                throw ApiError(400, std::string("the request body is ") + e.what());  // "invalid JSON: ..."
            }
            if (path == "/apply-template")
                return send_json(c, 200, server::apply_template(body, engine), keep_alive);
            if (path == "/tokenize" || path == "/detokenize") {
                return send_json(
                    c, 200,
                    path == "/tokenize" ? server::tokenize(body, engine) : server::detokenize(body, engine),
                    keep_alive);
            }
            server::CompletionJob job = path == "/v1/chat/completions" ? server::chat_job(body, engine)
                                                                       : server::completion_job(body, engine);
            start_reply(conn_id, c, std::move(job), keep_alive);
        } catch (const ApiError& e) {
            send_error(c, e, keep_alive);
        } catch (const Error& e) {
            send_error(c, ApiError(e.code() == ErrorCode::Internal ? 500 : 400, e.what()), keep_alive);
        } catch (
            const std::exception& e) {  // out of memory and the like: this request fails, the server goes on
            send_error(c,
                       ApiError(500, std::string("the request failed: ") + e.what(), {}, {}, "server_error"),
                       keep_alive);
        }
    }

    void start_reply(uint64_t conn_id, Connection& c, server::CompletionJob job, bool keep_alive) {
        Reply r;
        r.connection = conn_id;
        r.keep_alive = keep_alive;
        r.id = std::string(job.chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_reply_number++);
        r.created = static_cast<int64_t>(std::time(nullptr));
        r.submitted = Clock::now();
        r.detokenizer.emplace(engine.tokenizer(), job.text_start);
        r.stops.emplace(job.settings.stop);
        if (job.chat && job.split_reasoning && !job.json_mode) r.splitter.emplace(job.opens_in_reasoning);
        if (job.json_mode) r.json_mode.emplace(engine.tokenizer());

        GenerationRequest g;
        g.prompt = job.prompt;
        g.settings = job.settings;
        g.settings.stop.clear();  // matched here, on the text
        g.stop_tokens = job.stop_tokens;
        g.on_token = [this](RequestId id, int32_t token) { on_token(id, token); };
        g.on_finish = [this](RequestId id, StopReason reason) { on_finish(id, reason); };
        if (job.logprobs)
            g.on_sample = [this](RequestId id, const Sample& sample) {
                auto it = replies.find(id);
                if (it == replies.end() || it->second.finished) return;
                (it->second.job.stream ? it->second.pending : it->second.samples).push_back(sample);
            };
        if (job.json_mode || !job.logit_bias.empty())
            g.constrain_logits = [this](RequestId id, std::vector<float>& logits) {
                auto it = replies.find(id);
                if (it == replies.end()) return;
                for (const auto& [token, bias] : it->second.job.logit_bias)
                    logits[static_cast<size_t>(token)] = bias <= -100
                                                             ? -std::numeric_limits<float>::infinity()
                                                             : logits[static_cast<size_t>(token)] + bias;
                if (it->second.json_mode) it->second.json_mode->constrain(logits);
            };
        g.on_preempted = [this](RequestId id) {
            if (auto it = replies.find(id); it != replies.end()) ++it->second.preemptions;
        };
        g.on_admitted = [this](RequestId id, uint32_t cached) {
            if (auto it = replies.find(id); it != replies.end()) it->second.cached_tokens = cached;
        };
        r.job = std::move(job);
        const RequestId id = scheduler.submit(std::move(g));
        c.busy = true;
        c.request = id;
        if (r.job.stream) {
            auto h = common_headers(c);
            h.emplace_back("Cache-Control", "no-cache");
            c.out += server::http_stream_head(200, "text/event-stream", h, keep_alive);
            // OpenAI's first chat chunk carries the role alone.
            if (r.job.chat) send_event(c, chunk(r, Json{{"role", "assistant"}}, Json()));
        }
        replies.emplace(id, std::move(r));
    }

    // Prometheus' text format: totals since start and the state now (replies, KV cache blocks).
    std::string metrics() const {
        std::string out;
        const auto metric = [&out](const char* name, const char* type, const char* help, double value) {
            // to_chars: the shortest form that reads back exactly, with a '.' whatever the locale
            // (printf's %g writes "0,5" under de_DE, which Prometheus cannot read).
            char num[32];
            const auto [end, ec] = std::to_chars(num, num + sizeof num, value);
            out += std::string("# HELP lantern_") + name + " " + help + "\n# TYPE lantern_" + name + " " +
                   type + "\nlantern_" + name + " " + std::string(num, ec == std::errc() ? end : num) + "\n";
        };
        const Counters& c = counters;
        metric("http_requests_total", "counter", "HTTP requests answered.", double(c.requests));
        metric("http_errors_total", "counter", "Requests answered with an error status.", double(c.errors));
        metric("replies_total", "counter", "Completions finished (a stop, the token limit or the context).",
               double(c.replies));
        metric("replies_abandoned_total", "counter", "Replies stopped because their client left.",
               double(c.client_left));
        metric("prompt_tokens_total", "counter", "Prompt tokens of finished replies.",
               double(c.prompt_tokens));
        metric("prompt_tokens_cached_total", "counter", "Of those, tokens taken from the KV prefix cache.",
               double(c.cached_tokens));
        metric("generated_tokens_total", "counter", "Tokens generated.", double(c.generated_tokens));
        metric("engine_steps_total", "counter", "Engine steps (one command buffer each).", double(c.steps));
        metric("engine_step_decode_tokens_total", "counter", "Decode tokens run in engine steps.",
               double(c.step_decode_tokens));
        metric("engine_step_prefill_tokens_total", "counter", "Prompt tokens run in engine steps.",
               double(c.step_prefill_tokens));
        metric("engine_step_seconds_total", "counter", "Wall time spent in engine steps.", c.step_seconds);
        metric("http_refused_total", "counter", "Requests refused for their Host or Origin.",
               double(c.refused));
        metric("connections_timed_out_total", "counter",
               "Connections closed or answered 408 for a limit: request time, idle time, not reading.",
               double(c.timed_out));
        size_t received = 0, unsent = 0;
        for (const auto& [id, conn] : connections) received += conn.in.size(), unsent += conn.out.size();
        metric("connections_open", "gauge", "Open client connections.", double(connections.size()));
        metric("connection_input_bytes", "gauge", "Bytes received from clients and not yet answered.",
               double(received));
        metric("connection_output_bytes", "gauge", "Bytes of answers waiting for clients to read them.",
               double(unsent));
        size_t running = 0;
        for (const auto& [id, r] : replies) running += r.finished ? 0 : 1;
        metric("replies_in_progress", "gauge", "Replies being generated or waiting for a slot.",
               double(running));
        const KvStats kv = engine.kv_stats();
        metric("replies_waiting", "gauge",
               "Of those, replies waiting for a slot or for room in the KV cache.",
               double(scheduler.waiting()));
        metric("replies_preempted_total", "counter",
               "Times a reply gave its KV blocks back for want of room and waited to resume.",
               double(scheduler.preemptions()));
        metric("kv_blocks_total", "gauge", "KV cache blocks.", kv.total_blocks);
        metric("kv_blocks_used", "gauge", "KV cache blocks held by replies in progress.", kv.used_blocks);
        metric("kv_blocks_cached", "gauge", "KV cache blocks kept for reuse by later prompts.",
               kv.cached_blocks);
        return out;
    }

    // --- replies ----------------------------------------------------------------------------

    void send_event(Connection& c, const Json& data) {
        c.out += server::http_chunk("data: " + server::dump_json(data) + "\n\n");
    }

    // A stream chunk: a chat delta, or a completion's text piece.
    Json chunk(const Reply& r, Json delta_or_text, Json finish, Json logprobs = Json()) const {
        Json choice = {{"index", 0},
                       {r.job.chat ? "delta" : "text", std::move(delta_or_text)},
                       {"logprobs", std::move(logprobs)},
                       {"finish_reason", std::move(finish)}};
        return Json{{"id", r.id},
                    {"object", r.job.chat ? "chat.completion.chunk" : "text_completion"},
                    {"created", r.created},
                    {"model", model_id(engine)},
                    {"choices", Json::array({std::move(choice)})}};
    }

    // Log-probabilities in OpenAI's shapes: chat {"content": [{token, logprob, bytes,
    // top_logprobs}]}, completions {tokens, token_logprobs, top_logprobs: [{token: logprob}],
    // text_offset}. A probability that underflowed to 0 is reported as -9999 (JSON has no -inf).
    static double log_of(float p) { return p > 0 ? std::log(static_cast<double>(p)) : -9999.0; }
    Json token_entry(int32_t id, float p) const {
        const std::string& text = engine.tokenizer().token_text(id);
        Json bytes = Json::array();
        for (const unsigned char b : text) bytes.push_back(static_cast<int>(b));
        return Json{{"token", text}, {"logprob", log_of(p)}, {"bytes", std::move(bytes)}};
    }
    Json logprobs_of(Reply& r, const std::vector<Sample>& samples) const {
        if (!r.job.logprobs) return Json();
        if (r.job.chat) {
            Json content = Json::array();
            for (const Sample& s : samples) {
                Json top = Json::array();
                for (const auto& c : s.candidates) top.push_back(token_entry(c.id, c.probability));
                Json entry = token_entry(s.token, s.probability);
                entry["top_logprobs"] = std::move(top);
                content.push_back(std::move(entry));
            }
            return Json{{"content", std::move(content)}};
        }
        Json tokens = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
        for (const Sample& s : samples) {
            const std::string& text = engine.tokenizer().token_text(s.token);
            tokens.push_back(text);
            lps.push_back(log_of(s.probability));
            Json top = Json::object();
            for (const auto& c : s.candidates)
                top[engine.tokenizer().token_text(c.id)] = log_of(c.probability);
            tops.push_back(std::move(top));
            offsets.push_back(static_cast<int64_t>(r.text_offset));
            r.text_offset += text.size();
        }
        return Json{{"tokens", std::move(tokens)},
                    {"token_logprobs", std::move(lps)},
                    {"top_logprobs", std::move(tops)},
                    {"text_offset", std::move(offsets)}};
    }

    Json usage(const Reply& r) const {
        const auto prompt = static_cast<int64_t>(r.job.prompt.size());
        return Json{{"prompt_tokens", prompt},
                    {"completion_tokens", r.completion_tokens},
                    {"total_tokens", prompt + r.completion_tokens},
                    {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
    }

    // Lantern's speed figures for this reply (llama-server reports similar "timings").
    Json timings(const Reply& r) const {
        Json t = {{"prompt_tokens_computed", static_cast<int64_t>(r.job.prompt.size() - r.cached_tokens)}};
        if (r.completion_tokens == 0) return t;
        const double ttft = ms_between(r.submitted, r.first_token),
                     decode = ms_between(r.first_token, r.last_token);
        t["time_to_first_token_ms"] = ttft;
        t["decode_ms"] = decode;
        if (r.completion_tokens > 1 && decode > 0)
            t["decode_tokens_per_s"] = (r.completion_tokens - 1) * 1000.0 / decode;
        if (r.preemptions) t["kv_preemptions"] = static_cast<int64_t>(r.preemptions);  // why it was slower
        return t;
    }

    // Text that became final: through the reasoning splitter (chat), then into the whole reply or
    // out as a chunk. `last`: the reply ended, so the splitter lets go of what it held.
    void emit_text(Reply& r, const std::string& text, bool last = false) {
        server::ReasoningSplitter::Parts parts;
        if (r.splitter) {
            parts = r.splitter->feed(text);
            if (last) {
                auto rest = r.splitter->flush();
                parts.reasoning += rest.reasoning;
                parts.answer += rest.answer;
            }
        } else {
            parts.answer = text;
        }
        if (parts.reasoning.empty() && parts.answer.empty()) return;
        if (!r.job.stream) {
            r.reasoning += parts.reasoning;
            r.text += parts.answer;
            return;
        }
        auto it = connections.find(r.connection);
        if (it == connections.end()) return;
        Json logprobs = logprobs_of(r, r.pending);
        r.pending.clear();
        Json piece;
        if (r.job.chat) {
            piece = Json::object();
            if (!parts.reasoning.empty()) piece["reasoning_content"] = parts.reasoning;
            if (!parts.answer.empty()) piece["content"] = parts.answer;
        } else {
            piece = Json(parts.answer);
        }
        send_event(it->second, chunk(r, std::move(piece), Json(), std::move(logprobs)));
    }

    void on_token(RequestId id, int32_t token) {
        auto it = replies.find(id);
        if (it == replies.end() || it->second.finished) return;
        Reply& r = it->second;
        const auto now = Clock::now();
        if (r.completion_tokens == 0) r.first_token = now;
        r.last_token = now;
        ++r.completion_tokens;
        const bool object_closed = r.json_mode && r.json_mode->accept(token);
        auto result = r.stops->feed(r.detokenizer->push(token));
        if (object_closed && !result.stopped) {  // JSON mode: the object is whole, so is the reply
            const auto tail = r.stops->feed(r.detokenizer->flush());
            result.text += tail.stopped ? tail.text : tail.text + r.stops->flush();
            result.stopped = true;
        }
        emit_text(r, result.text, result.stopped);  // a stop ends the reply: nothing stays held
        if (result.stopped) {
            complete(id, r, "stop");
            scheduler.cancel(id);  // frees its sequence before the next step
        }
    }

    void on_finish(RequestId id, StopReason reason) {
        auto it = replies.find(id);
        if (it == replies.end()) return;
        Reply& r = it->second;
        if (!r.finished) {
            auto tail = r.stops->feed(r.detokenizer->flush());
            emit_text(r, tail.stopped ? tail.text : tail.text + r.stops->flush(), true);
            complete(id, r, tail.stopped ? "stop" : server::finish_reason(reason));
        }
        replies.erase(it);
    }

    void complete(RequestId id, Reply& r, const char* finish) {
        r.finished = true;
        auto it = connections.find(r.connection);
        if (it == connections.end()) return;
        Connection& c = it->second;
        if (r.job.stream) {
            Json logprobs =
                r.pending.empty() ? Json() : logprobs_of(r, r.pending);  // tokens whose text never showed
            r.pending.clear();
            send_event(c, chunk(r, r.job.chat ? Json::object() : Json(""), finish, std::move(logprobs)));
            if (r.job.include_usage) {
                Json u = chunk(r, Json(), Json());
                u["choices"] = Json::array();
                u["usage"] = usage(r);
                u["timings"] = timings(r);
                send_event(c, u);
            }
            c.out += server::http_chunk("data: [DONE]\n\n");
            c.out += server::http_last_chunk();
            if (!r.keep_alive) c.close_after = true;
        } else {
            Json choice = {{"index", 0}};
            if (r.job.chat) {
                Json message = {{"role", "assistant"}, {"content", r.text}};
                if (!r.reasoning.empty()) message["reasoning_content"] = r.reasoning;
                choice["message"] = std::move(message);
            } else {
                choice["text"] = r.text;
            }
            choice["logprobs"] = logprobs_of(r, r.samples);
            choice["finish_reason"] = finish;
            const Json body = {{"id", r.id},
                               {"object", r.job.chat ? "chat.completion" : "text_completion"},
                               {"created", r.created},
                               {"model", model_id(engine)},
                               {"choices", Json::array({std::move(choice)})},
                               {"usage", usage(r)},
                               {"timings", timings(r)}};
            send_json(c, 200, body, r.keep_alive);
        }
        ++counters.replies;
        counters.prompt_tokens += r.job.prompt.size();
        counters.cached_tokens += r.cached_tokens;
        counters.generated_tokens += r.completion_tokens;
        log("  " + r.id + ": " + std::to_string(r.job.prompt.size()) + " prompt tokens (" +
            std::to_string(r.cached_tokens) + " cached), " + std::to_string(r.completion_tokens) +
            " generated, " + finish +
            (r.preemptions ? ", waited " + std::to_string(r.preemptions) + "x for KV room" : std::string()));
        if (c.request == id) {
            c.busy = false;
            c.request_start = Clock::now();  // bytes that came meanwhile count from now
            c.request = 0;
        }
    }

    // A step failed (the device was lost, the KV cache could not hold every reply): every reply in
    // progress ends with an error, sent the way its client can read it.
    void fail_all(const std::string& message) {
        for (auto& [id, r] : replies) {
            if (r.finished) continue;
            r.finished = true;
            scheduler.cancel(id);
            auto it = connections.find(r.connection);
            if (it == connections.end()) continue;
            Connection& c = it->second;
            const ApiError e(500, "generation failed: " + message, {}, "engine_error", "server_error");
            if (r.job.stream) {
                send_event(c, server::error_body(e));
                c.out += server::http_last_chunk();
                c.close_after = true;
            } else {
                send_error(c, e, false);
            }
            c.busy = false;
            c.request_start = Clock::now();  // bytes that came meanwhile count from now
        }
    }

    // --- network ----------------------------------------------------------------------------

    void drop_connection(uint64_t conn_id) {
        auto it = connections.find(conn_id);
        if (it == connections.end()) return;
        // A client that went away mid-reply: stop generating for it.
        if (it->second.busy) {
            scheduler.cancel(it->second.request);
            if (auto r = replies.find(it->second.request); r != replies.end()) {
                r->second.finished = true;
                ++counters.client_left;
                counters.generated_tokens += r->second.completion_tokens;
                log("  " + r->second.id + ": the client left after " +
                    std::to_string(r->second.completion_tokens) + " tokens; generation stopped");
            }
        }
        close(it->second.fd);
        connections.erase(it);
    }

    // A pipelined request is answered only once the client has read all but this much of the
    // answers before it, so one that never reads holds at most one answer more.
    static constexpr size_t kPipelinedOutBytes = 64 * 1024;
    static constexpr int kRequestsPerPass = 4;
    static constexpr size_t kReadBytesPerPass = 256 * 1024;
    // Requests read ahead of a connection that cannot take them yet (wants_input).
    static constexpr size_t kReadAheadBytes = 64 * 1024;
    // How long a refused connection is read and let go before it closes (Connection::linger).
    static constexpr uint32_t kLingerMs = 2000;
    // The kernel's send buffer per client (Linux grows it to megabytes otherwise): a client that
    // reads nothing stops taking answers after this much, and its write timeout starts.
    static constexpr int kSendBufferBytes = 256 * 1024;

    // Requests waiting in connections that are free to take one (pipelined or just arrived).
    void serve_input() {
        input_pending = false;
        for (auto& [id, c] : connections) {
            size_t used = 0;  // bytes of c.in served in this pass: erased once, after the loop
            // A few requests per connection per pass: one client's pipeline cannot fill a pass.
            for (int served = 0;
                 served < kRequestsPerPass && !c.busy && !c.close_after && c.in.size() > used &&
                 c.out.size() < kPipelinedOutBytes && c.in.size() - used >= c.need;
                 ++served) {
                server::HttpParse p = server::parse_http_request(std::string_view(c.in).substr(used), limits);
                if (p.state == server::HttpParse::State::Incomplete) {
                    c.need = p.needed;  // a body still arriving is not scanned again until it is whole
                    break;
                }
                c.need = 0;
                if (p.state == server::HttpParse::State::Bad) {
                    send_error(c, ApiError(p.status, p.message), false);
                    c.in.clear();
                    used = 0;
                    c.linger = true;
                    break;
                }
                used += p.consumed;
                c.request_start = Clock::now();  // a pipelined request's bytes count from here
                handle(id, c, p.request);
                // More may wait: the next pass comes at once rather than at the next socket event.
                if (served + 1 == kRequestsPerPass && c.in.size() > used) input_pending = true;
            }
            c.in.erase(0, used);
        }
    }

    // Whether to read from c now: while it holds less than kReadAheadBytes, or the request at its
    // head announced more bytes than have come (a body is always read whole). A client that sends
    // requests faster than they are answered finds the rest left in the kernel: TCP makes it wait,
    // and the server neither holds nor moves a pipeline it cannot serve yet.
    bool wants_input(const Connection& c) const {
        return c.draining || c.in.size() < kReadAheadBytes || c.need > c.in.size();
    }

    // Closes the connections past a limit (ServerOptions): a request that takes too long to arrive
    // (408), a connection idle too long, a client that reads nothing while its answer waits or
    // lets too many bytes pile up for it (its reply, if any, stops).
    void expire(Clock::time_point now) {
        const auto past = [&](Clock::time_point since, uint32_t limit_ms) {
            return limit_ms > 0 && ms_between(since, now) > limit_ms;
        };
        std::vector<uint64_t> gone;
        for (auto& [id, c] : connections) {
            if (c.draining) {
                if (past(c.draining_since, kLingerMs)) gone.push_back(id);
                continue;
            }
            if (c.busy || !c.in.empty() || !c.out.empty()) c.active = now;
            if (c.out.empty()) c.out_since = now;
            if (c.out.size() > options.max_output_bytes || past(c.out_since, options.write_timeout_ms)) {
                log("  a client that reads nothing closed (" + std::to_string(c.out.size()) +
                    " bytes waiting)");
                gone.push_back(id);
            } else if (!c.busy && !c.close_after && !c.in.empty() &&
                       past(c.request_start, options.request_timeout_ms)) {
                send_error(c,
                           ApiError(408,
                                    "the request did not arrive within " +
                                        std::to_string(options.request_timeout_ms) + " ms",
                                    {}, "request_timeout"),
                           false);
                c.in.clear();
                c.need = 0;
                c.linger = true;
            } else if (!c.busy && c.in.empty() && c.out.empty() && past(c.active, options.idle_timeout_ms)) {
                gone.push_back(id);
            } else {
                continue;
            }
            ++counters.timed_out;
        }
        for (uint64_t id : gone) drop_connection(id);
    }

    void write_out() {
        std::vector<uint64_t> done;
        for (auto& [id, c] : connections) {
            while (!c.out.empty()) {
                const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
                if (n > 0) {
                    c.out.erase(0, static_cast<size_t>(n));
                    c.out_since = Clock::now();
                } else {
                    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                    if (n < 0 && errno == EINTR) continue;
                    done.push_back(id);
                    break;
                }
            }
            if (!c.out.empty() || !c.close_after || c.draining) continue;
            if (!c.linger) {
                done.push_back(id);
            } else {
                shutdown(c.fd, SHUT_WR);  // the answer is whole; the client sees the end of it
                c.draining = true;
                c.draining_since = Clock::now();
            }
        }
        for (uint64_t id : done) drop_connection(id);
    }

    void run() {
        while (!stopping.load()) serve_once(-1);
    }

    // One pass: wait for the network (up to timeout_ms, not at all while replies are in progress),
    // accept, read and answer requests, run one engine step, write what it produced. With
    // `beside` (serve_once_beside), the step carries the host's item too, and its logits go to
    // *beside_logits.
    bool serve_once(int timeout_ms, const StepItem* beside = nullptr,
                    std::vector<float>* beside_logits = nullptr, uint32_t step_tokens = 0) {
        std::vector<pollfd> fds{{wake[0], POLLIN, 0}, {listen_fd, POLLIN, 0}};
        std::vector<uint64_t> ids;
        for (auto& [id, c] : connections) {
            fds.push_back(
                {c.fd, static_cast<short>((wants_input(c) ? POLLIN : 0) | (c.out.empty() ? 0 : POLLOUT)), 0});
            ids.push_back(id);
        }
        int timeout = scheduler.pending() || beside || input_pending ? 0 : timeout_ms;
        // Connections' deadlines are checked at least this often.
        if (!connections.empty() && (timeout < 0 || timeout > deadline_check_ms)) timeout = deadline_check_ms;
        if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR)
            throw Error(ErrorCode::Io, std::string("poll failed: ") + std::strerror(errno));
        if (stopping.load() && !beside) return false;
        if (fds[1].revents & POLLIN) accept_all();
        for (size_t i = 0; i < ids.size(); ++i) {
            if (!(fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            if (!read_from(ids[i])) drop_connection(ids[i]);
        }
        serve_input();
        write_out();
        expire(Clock::now());
        if (scheduler.pending() || beside) {
            try {
                SchedulerStepStats st;
                const bool ran = beside ? scheduler.step_with(*beside, *beside_logits, step_tokens, &st)
                                        : scheduler.step(&st);
                if (ran && st.decode_tokens + st.prefill_tokens > 0) {
                    ++counters.steps;
                    counters.step_decode_tokens += st.decode_tokens;
                    counters.step_prefill_tokens += st.prefill_tokens;
                    counters.step_seconds += st.ms / 1000.0;
                }
            } catch (const std::exception& e) {  // lantern::Error (a lost device, a full KV cache) or worse
                if (beside && beside_logits->empty()) {
                    // The shared step failed before anything ran (a failed engine step changes no
                    // sequence): the host's item again, alone, tells whose failure it was. If it
                    // fails too, the host hears of it and the replies go on if they can (a lost
                    // device fails them at their next step).
                    *beside_logits = std::move(engine.step(std::span<const StepItem>(beside, 1))[0]);
                }
                log(std::string("engine step failed: ") + e.what());
                fail_all(e.what());
                while (scheduler.pending()) {
                    try {
                        scheduler.step();  // lets the cancellations finish the requests
                    } catch (const std::exception&) {
                        break;
                    }
                }
            }
            serve_input();  // replies that ended free their connections for the next request
            write_out();
        }
        return scheduler.pending() > 0;
    }

    void accept_all() {
        while (true) {
            const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) return;
            if (connections.size() >= options.max_connections) {
                // Every slot taken (idle keep-alive clients, or a flood): say so and hang up, rather
                // than run out of file descriptors.
                const std::string busy =
                    server::http_response(503, "application/json",
                                          server::dump_json(server::error_body(ApiError(
                                              503,
                                              "the server has " + std::to_string(options.max_connections) +
                                                  " open connections; try again later",
                                              {}, "too_many_connections", "server_error"))),
                                          {}, false);
                [[maybe_unused]] const ssize_t n = send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
                close(fd);
                ++counters.errors;
                continue;
            }
            const int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // stream tokens as they come
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSendBufferBytes, sizeof kSendBufferBytes);
            Connection c;
            c.fd = fd;
            c.active = c.out_since = c.request_start = Clock::now();
            connections.emplace(next_connection++, std::move(c));
        }
    }

    // False when the peer closed or the connection failed.
    bool read_from(uint64_t conn_id) {
        Connection& c = connections.at(conn_id);
        char buf[16384];
        // At most kReadBytesPerPass a pass: one client's upload cannot hold the engine's steps back
        // (what is left is read in the next pass; poll() reports it at once).
        for (size_t read = 0; read < kReadBytesPerPass && wants_input(c);) {
            const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
            if (n > 0 && c.draining) {
                read += static_cast<size_t>(n);  // after a refusal: read and let go
                continue;
            }
            if (n > 0) {
                if (c.in.empty()) c.request_start = Clock::now();
                c.in.append(buf, static_cast<size_t>(n));
                read += static_cast<size_t>(n);
                // Bytes beyond one largest request while busy: a client that floods; drop it.
                if (c.in.size() > limits.max_header_bytes + limits.max_body_bytes + 4) return false;
                continue;
            }
            if (n == 0) return false;
            if (errno == EINTR) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        return true;
    }
};

ApiServer::ApiServer(Engine& engine, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {}
ApiServer::~ApiServer() = default;
uint16_t ApiServer::port() const {
    return impl_->bound_port;
}
void ApiServer::run() {
    impl_->run();
}
bool ApiServer::serve_once(int timeout_ms) {
    return impl_->serve_once(timeout_ms);
}
std::vector<float> ApiServer::serve_once_beside(const StepItem& item, uint32_t step_tokens) {
    std::vector<float> logits;
    impl_->serve_once(0, &item, &logits, step_tokens);
    return logits;
}
ApiServer::Activity ApiServer::activity() const {
    Activity a;
    for (const auto& [id, r] : impl_->replies) a.replies_in_progress += r.finished ? 0 : 1;
    a.replies_waiting =
        static_cast<uint32_t>(std::min<size_t>(impl_->scheduler.waiting(), a.replies_in_progress));
    a.replies_served = impl_->counters.replies;
    a.generated_tokens = impl_->counters.generated_tokens;
    return a;
}
std::vector<SequenceId> ApiServer::sequences() const {
    return impl_->scheduler.sequences();
}
void ApiServer::stop() {
    impl_->stopping.store(true);
    const char b = 1;
    [[maybe_unused]] const ssize_t n = write(impl_->wake[1], &b, 1);
}

}  // namespace lantern
