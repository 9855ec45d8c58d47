// lantern/server.h — an OpenAI-compatible HTTP server over a loaded model, so that editors,
// scripts and other chat front ends can use the model Lantern runs.
//
//   auto engine = lantern::Engine::load("model.gguf", options);
//   lantern::ApiServer server(*engine, {.port = 8080});
//   server.run();  // until server.stop()
//
// Endpoints: POST /v1/chat/completions and /v1/completions (whole or streamed as server-sent
// events), GET /v1/models, GET /health, GET /metrics (Prometheus: requests, tokens, prefix-cache
// hits, engine steps, KV cache blocks), and llama-server's POST /tokenize and /detokenize. The
// request and response shapes are OpenAI's (see engine/server/src/openai.h for the fields honoured
// and those refused).
//
// Requests are served together: every reply in progress advances in each engine step (continuous
// batching, lantern/scheduler.h), a new request's prompt is fed in chunks between the others'
// tokens, and a prompt whose start was computed before (a client resending a conversation with one
// more message) takes those tokens from the KV prefix cache; the response's
// usage.prompt_tokens_details.cached_tokens says how many. The replies share the KV cache by its
// blocks, not by a full context each: the cache may be smaller than `parallel` contexts, and a
// reply the cache has no room for waits (or, admitted last, is preempted and resumes unchanged).
//
// One thread does everything (network and engine steps), the one that calls run() or serve_once().
// stop() may be called from any thread or a signal handler. A client cannot hold more than its
// limits (ServerOptions): time to send a request, idle time, time not reading, bytes waiting to be
// sent to it; pipelined requests are answered only as it reads the answers before them. Why one
// thread and not a library's thread per connection: docs/decisions/0044-server-loop-keeps-its-limits.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lantern/engine.h"

namespace lantern {

struct ServerOptions {
    std::string host = "127.0.0.1";  // an IPv4 address; 0.0.0.0 serves other machines too
    uint16_t port = 8080;            // 0 = any free port (ApiServer::port says which)
    std::string api_key;             // non-empty: requests need "Authorization: Bearer <key>"
    bool cors = false;               // let web pages of any origin call the API
    uint32_t parallel = 4;           // replies generated at once (at most the engine's max_sequences)
    uint32_t step_tokens = 256;      // tokens per engine step (at most the engine's max_step_tokens)
    // Most KV blocks the replies hold together; the rest of the cache stays free for the engine's
    // other user (the desktop app's chat). 0 = the whole cache. Replies that do not fit at once
    // wait, or are preempted and resume (lantern/scheduler.h); /metrics counts both.
    uint32_t kv_blocks = 0;
    size_t max_body_bytes = 8u << 20;
    size_t max_connections = 256;                 // open at once; more are answered 503 and closed
    std::function<void(const std::string&)> log;  // one line per request served; empty = quiet

    // Web pages. The browser sends every page's requests with an Origin header: one that is not
    // this server's own origin nor in `allowed_origins` (e.g. "http://localhost:3000") is refused
    // with 403 unless `cors` lets every origin in. A POST must say Content-Type: application/json
    // (415 otherwise), which no page can send across origins without the browser asking first.
    std::vector<std::string> allowed_origins;
    // DNS rebinding: the Host header must name this machine — localhost or an IP literal — or one
    // of `allowed_hosts` (names other machines reach this one by); 403 otherwise.
    std::vector<std::string> allowed_hosts;
    // What a client may hold (each past it is closed; 408 when a request was under way):
    uint32_t request_timeout_ms = 10'000;  // from a request's first byte to its last (slowloris)
    uint32_t idle_timeout_ms = 60'000;     // a keep-alive connection with nothing to do
    uint32_t write_timeout_ms = 30'000;    // a reply waiting for a client that reads nothing
    size_t max_output_bytes = 4u << 20;    // bytes waiting to be sent to one client
};

class ApiServer {
public:
    // Binds and listens. Throws Error(Io) when the address cannot be used (port taken, bad host).
    ApiServer(Engine& engine, ServerOptions options);
    ~ApiServer();
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    uint16_t port() const;
    // Serves until stop(); replies in progress are cut (streams end without [DONE]).
    void run();
    void stop();
    // For a host with its own event loop (the desktop app's inference worker, which shares the
    // engine with its chat): one pass — waits up to timeout_ms for the network (not at all while
    // replies are in progress), answers requests, runs one engine step. Returns true while replies
    // are in progress: call again soon.
    bool serve_once(int timeout_ms);
    // The same pass (without waiting for the network), its engine step carrying `item`, one step
    // of a sequence the server does not own: the desktop app's chat decoding its reply, which so
    // shares each step with the replies in progress instead of making them wait until it ends
    // (Scheduler::step_with). Returns the item's logits. `step_tokens`: most tokens of the step,
    // the item's included (0: ServerOptions::step_tokens); a few keep a client's long prompt from
    // slowing the host's reply, the prompt then read a few tokens a step. The item's KV blocks
    // must be the host's own room (ServerOptions::kv_blocks leaves it). A step that fails because
    // of the replies fails them and the item runs alone; one that fails alone too throws.
    std::vector<float> serve_once_beside(const StepItem& item, uint32_t step_tokens = 0);

    struct Activity {
        uint32_t replies_in_progress = 0;  // being generated or waiting for a slot
        uint32_t replies_waiting = 0;      // of those, waiting: for a slot, or for room in the KV cache
        uint64_t replies_served = 0, generated_tokens = 0;  // since start
    };
    // Cheap (no allocation): the app reads it after every shared step.
    Activity activity() const;
    // The KV cache sequences its replies hold now (Scheduler::sequences), for a KV cache view.
    std::vector<SequenceId> sequences() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lantern
