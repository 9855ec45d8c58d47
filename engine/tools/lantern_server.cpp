// lantern-server: a loaded model behind an OpenAI-compatible HTTP API (lantern/server.h), so any
// OpenAI client — editors, scripts, other chat front ends — can use it:
//
//   lantern-server --model M.gguf --port 8080
//   curl http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json'
//        -d '{"messages": [{"role": "user", "content": "Hello"}], "stream": true}'
#include <arpa/inet.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "lantern/chat_template.h"
#include "lantern/device.h"
#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/server.h"

using namespace lantern;

namespace {

const char* kUsage = R"(usage: lantern-server --model FILE [options]
  --host ADDR          IPv4 address to listen on (default 127.0.0.1: this machine only;
                       0.0.0.0 lets other machines in — set --api-key then)
  --port N             TCP port (default 8080; 0 = any free port, printed at start)
  --api-key KEY        require "Authorization: Bearer KEY" (also env LANTERN_API_KEY)
  --cors               allow web pages of any origin to call the API
  --cors-origin ORIGIN allow web pages of this origin (e.g. http://localhost:3000; repeatable);
                       requests of other pages are refused
  --allow-host NAME    a host name other machines reach this one by (repeatable); requests whose
                       Host header names another host are refused (localhost and IP addresses
                       always pass)
  --timeout-ms N       a request must arrive within N ms, and a client not reading its reply is
                       closed after N ms (default 10000 and 30000); idle connections close after
                       60 s
  --parallel N         replies generated at once, batched into each step (default 4)
  --ctx N              context length per reply (default: model's, at most 4096)
  --kv-tokens N        KV cache size in tokens, shared by the replies (default: --ctx x
                       --parallel). Less lets more replies run at once than fit at full length:
                       a reply the cache has no room for waits, or is preempted and resumes.
  --device SEL         Vulkan device index or name substring (env LANTERN_DEVICE)
  --quiet              no log line per request
Endpoints: POST /v1/chat/completions, POST /v1/completions (add "stream": true for
server-sent events), GET /v1/models, GET /health, GET /metrics (Prometheus),
POST /tokenize, POST /detokenize.
)";

[[noreturn]] void usage_error(const std::string& msg) {
    std::cerr << "lantern-server: " << msg << "\n" << kUsage;
    std::exit(2);
}

template <typename T>
T integer(const std::string& flag, const std::string& s) {
    T v{};
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
        usage_error(flag + " needs an integer, got \"" + s + "\"");
    return v;
}

ApiServer* g_server = nullptr;
extern "C" void on_signal(int) {
    if (g_server) g_server->stop();
}

}  // namespace

int main(int argc, char** argv) {
    std::string model, device;
    uint32_t ctx = 0, kv_tokens = 0;
    bool quiet = false;
    ServerOptions so;
    if (const char* key = std::getenv("LANTERN_API_KEY")) so.api_key = key;
    for (int i = 1; i < argc; ++i) {
        const std::string f = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error(f + " needs a value");
            return argv[++i];
        };
        if (f == "--model" || f == "-m")
            model = value();
        else if (f == "--host")
            so.host = value();
        else if (f == "--port")
            so.port = integer<uint16_t>(f, value());
        else if (f == "--api-key")
            so.api_key = value();
        else if (f == "--cors")
            so.cors = true;
        else if (f == "--cors-origin")
            so.allowed_origins.push_back(value());
        else if (f == "--allow-host")
            so.allowed_hosts.push_back(value());
        else if (f == "--timeout-ms")
            so.request_timeout_ms = so.write_timeout_ms = integer<uint32_t>(f, value());
        else if (f == "--parallel")
            so.parallel = integer<uint32_t>(f, value());
        else if (f == "--ctx")
            ctx = integer<uint32_t>(f, value());
        else if (f == "--kv-tokens")
            kv_tokens = integer<uint32_t>(f, value());
        else if (f == "--device")
            device = value();
        else if (f == "--quiet")
            quiet = true;
        else if (f == "--help" || f == "-h") {
            std::cout << kUsage;
            return 0;
        } else
            usage_error("unknown option " + f);
    }
    if (model.empty()) usage_error("--model is required");
    if (so.parallel == 0 || so.parallel > 64) usage_error("--parallel must be between 1 and 64");
    in_addr probe{};
    if (inet_pton(AF_INET, so.host.c_str(), &probe) != 1)  // before the model loads, not after
        usage_error("--host needs an IPv4 address such as 127.0.0.1, got \"" + so.host + "\"");
    try {
        EngineOptions eo;
        eo.device_selector = device;
        eo.context_length = ctx;
        eo.max_sequences = so.parallel;
        eo.kv_tokens = kv_tokens;
        eo.max_step_tokens = so.step_tokens;
        auto engine = Engine::load(model, eo);
        // Compile every kernel shape now, not inside the first client's request.
        double warm_ms = engine->warm_up();
        for (uint32_t n = 2; n <= so.parallel; ++n) warm_ms += engine->warm_up_batched_decode(n);
        if (!quiet) so.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
        ApiServer server(*engine, so);
        std::fprintf(stderr,
                     "[lantern-server] %s (chat template: %s; context %u, %u replies at once, KV cache of "
                     "%llu tokens) on %s (%s); ready in %.1f s\n"
                     "[lantern-server] listening on http://%s:%u/v1\n",
                     engine->model().name.c_str(),
                     lantern::ChatTemplate::for_engine(*engine).description().c_str(),
                     engine->context_length(), so.parallel,
                     static_cast<unsigned long long>(engine->kv_stats().capacity_tokens),
                     engine->device().name.c_str(), device_type_name(engine->device().type),
                     (engine->load_ms() + warm_ms) / 1000.0, so.host.c_str(), server.port());
        if (so.host != "127.0.0.1" && so.api_key.empty())
            std::fprintf(
                stderr,
                "[lantern-server] warning: other machines can reach this server and no --api-key is set\n");
        g_server = &server;
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        server.run();
        g_server = nullptr;
        std::fprintf(stderr, "[lantern-server] stopped\n");
        return 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "lantern-server: %s: %s\n", error_code_name(e.code()), e.what());
        return 1;
    }
}
