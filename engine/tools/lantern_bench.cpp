// lantern-bench: reproducible speed figures. Prefill (pp) and decode (tg) like llama-bench, several
// sequences per step, a sustained steady-state mode, per-op GPU timing, and the device's own
// rooflines measured in the same run so every figure can be read as a fraction of what the device
// can do. Output: a table on stdout and, with --json, one JSON object per line.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/memory_plan.h"
#include "lantern/rooflines.h"
#include "lantern/sampling.h"
#include "lantern/scheduler.h"
#include "lantern/steady_state.h"
#include "lantern/synthetic.h"

using namespace lantern;
using Clock = std::chrono::steady_clock;

namespace {

const char* kUsage = R"(usage: lantern-bench [--model FILE]... [--synthetic SHAPE:TYPE]... [options]
  --synthetic S:T   random-weight model, S = tiny | 110m | tinyllama | llama3-1b | 7b | qwen2.5-0.5b |
                    qwen2.5-1.5b | qwen3-0.6b | qwen3-1.7b or any shape written DIM/LAYERS/HEADS/KV_HEADS/FFN/VOCAB
                    (e.g. 768/12/12/12/2048/32000), each optionally followed by ,layers=N ,vocab=N ,untied=1
                    ,output_std=F ,embed_std=F; T = f32 | f16 | bf16 | q8_0
                    | q4_0 | q4_1 | q5_0 | q5_1 | q3_k | q4_k | q5_k | q6_k | iq4_nl | iq4_xs | q4_k_m (llama.cpp's
                    Q4_K_M mix of Q4_K and Q6_K; block types need rows of whole blocks: tiny, whose FFN is
                    172 wide as stories260K's, takes f32, f16 and bf16; K-quants and iq4_xs need 256-element rows)
  -p LIST           prompt lengths, e.g. 512,2048 (default 128; 0 = skip): each prompt is prefilled as the app
                    does it, in steps of at most 512 tokens, and its rate is also given (arith %) as a
                    fraction of the device's multiply-add roofline: every token's multiply-adds over every
                    matmul weight and every key it attends to, at the rate registers-only lanes reach
  -n N              decode tokens (default 128; 0 = skip)
  -r N              repetitions (default 3, after one warm-up)
  -b LIST           sequences decoding together, e.g. 1,4 (default 1)
  -d LIST           context depths for the decode test, e.g. 0,1024,2048 (default 0): tg N @ dD decodes N
                    tokens after a D-token prefix (prefilled once, untimed; each repetition decodes in a
                    fresh fork of it), so the table shows how decode slows as attention reads more keys
  --beside N        a host sequence (the app's chat) decodes -n tokens while N replies (32-token prompts, -n
                    tokens each, greedy) are written by the Scheduler: in shared steps (Scheduler::step_with,
                    16 tokens a step at most, as the app shares them) and taking turns (the host alone, then
                    the replies), alternating; reports the host's rate both ways and the rate of all tokens
  --steady N        sustained decode of N tokens: transient, steady-state rate, degradation
  --steady-seconds S  the same for S seconds (or until the context is full; the context is the model's,
                    up to 8192 tokens)
  --profile         per-op GPU time of one decode step
  --profile-at N    position of the profiled step (default 34: after a 32-token prefill and one step)
  --rooflines       measure read bandwidth, each weight layout's arithmetic roofline and dispatch/submit
                    overhead (on by default; --no-rooflines)
  --startup         cold vs warm start to the first tokens: two fresh processes sharing one empty cache
                    directory (XDG_CACHE_HOME: Lantern's pipeline cache and the driver's shader cache)
  --no-fused-decode one-token steps run the separate kernels even on lavapipe (for comparisons)
  --json            also print JSON lines
  --device SEL      Vulkan device
  --write-synthetic S:T FILE   write a synthetic model to FILE and exit (for peers)
)";

// --beside: the prompt of the host and of each reply, and the most tokens of a shared step (the
// app's InferenceWorker::kSharedStepTokens).
constexpr int kBesidePrompt = 32;
constexpr int kBesideShareTokens = 16;

struct Options {
    std::vector<std::string> models;
    std::vector<std::pair<std::string, std::string>> synthetic;
    std::vector<int> pps{128};  // -p: prompt lengths of the prefill test (0 = none)
    int tg = 128, reps = 3, steady = 0, beside = 0;
    double steady_seconds = 0;
    std::vector<int> batches{1};
    std::vector<int> depths{0};
    int profile_at = 34;
    bool profile = false, rooflines = true, json = false, startup = false, fused_decode = true;
    bool startup_probe = false, startup_probe_warm_up = false;  // the children of --startup (startup_probe)
    std::string device;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}
double stdev(const std::vector<double>& v) {
    if (v.size() < 2) return 0;
    double m = std::accumulate(v.begin(), v.end(), 0.0) / v.size(), s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / (v.size() - 1));
}
double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A weight type by its lower-case GGUF name (q4_k, iq4_xs, ...), or the q4_k_m mix. Types the
// engine cannot run are refused when the synthetic model is written, naming what it supports.
uint32_t type_id(const std::string& t) {
    if (t == "q4_k_m") return kSyntheticQ4KM;
    for (uint32_t id = 0; id < 64; ++id) {
        std::string name = ggml_type_name(id);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        if (name == t) return id;
    }
    throw Error(ErrorCode::InvalidArgument, "unknown weight type " + t +
                                                " (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q3_k, q4_k, "
                                                "q5_k, q6_k, iq4_nl, iq4_xs, q4_k_m)");
}

std::vector<int32_t> random_tokens(Rng& rng, uint32_t vocab, int n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(3 + rng.next() % (vocab - 3));
    return t;
}

struct Result {
    std::string model, test;
    int tokens = 0, batch = 1;
    int depth = 0;  // decode: tokens of context before the test's first token (-d)
    double tok_s = 0, spread = 0, ms_per_token = 0;
    double read_fraction = -1;  // of the read roofline (decode only)
    // Decode: of the weights' arithmetic roofline (Rooflines::dot_gb_per_s); prefill: of the
    // multiply-add roofline (Rooflines::fma_gflop_s, prefill_flop_per_token).
    double arith_fraction = -1;
};

void print_result(const Result& r, bool json) {
    std::printf("| %-28s | %-20s | %5d | %3d | %10.2f ± %-7.2f | %9.3f |", r.model.c_str(), r.test.c_str(),
                r.tokens, r.batch, r.tok_s, r.spread, r.ms_per_token);
    for (double f : {r.read_fraction, r.arith_fraction}) {
        if (f >= 0)
            std::printf(" %5.1f %% |", 100 * f);
        else
            std::printf("         |");
    }
    std::printf("\n");
    if (json)
        std::printf(
            "{\"model\":\"%s\",\"test\":\"%s\",\"tokens\":%d,\"batch\":%d,\"depth\":%d,\"tok_s\":%.3f,"
            "\"stdev\":%.3f,\"ms_per_token\":%.4f,\"read_roofline_fraction\":%.4f,"
            "\"arithmetic_roofline_fraction\":%.4f}\n",
            r.model.c_str(), r.test.c_str(), r.tokens, r.batch, r.depth, r.tok_s, r.spread, r.ms_per_token,
            r.read_fraction, r.arith_fraction);
    std::fflush(stdout);
}

// A start from nothing to the first tokens, as a user's first message sees it: load, a prompt of
// kStartupPrompt tokens (its last logits give the first token), one decode step (the second).
// Drivers that compile lazily (lavapipe compiles each pipeline's machine code at its first
// dispatch, caching it on disk) pay most of a cold start in those steps, not in the load.
constexpr int kStartupPrompt = 32;
struct StartupTimes {
    double load_ms = 0, warm_up_ms = 0, first_ms = 0, second_ms = 0;
    double total() const { return load_ms + warm_up_ms + first_ms + second_ms; }
};

// The child process of --startup: prints one line "startup-probe LOAD WARMUP FIRST SECOND" (ms);
// with warm_up, Engine::warm_up() runs between the load and the prompt, as the app does.
int startup_probe(const std::string& path, const Options& o, bool warm_up) {
    EngineOptions eo;
    eo.device_selector = o.device;
    eo.max_step_tokens = kStartupPrompt;
    eo.context_length = kStartupPrompt + 8;
    eo.kv_budget_bytes = 0;
    eo.fused_decode = o.fused_decode;
    auto t = Clock::now();
    auto engine = Engine::load(path, eo);
    StartupTimes st;
    st.load_ms = ms_since(t);
    if (warm_up) st.warm_up_ms = engine->warm_up();
    Rng rng(7);
    auto seq = engine->create_sequence();
    StepItem item{seq, random_tokens(rng, engine->model().vocab, kStartupPrompt), true, false};
    t = Clock::now();
    engine->step(std::span<const StepItem>(&item, 1));
    st.first_ms = ms_since(t);
    item.tokens = random_tokens(rng, engine->model().vocab, 1);
    t = Clock::now();
    engine->step(std::span<const StepItem>(&item, 1));
    st.second_ms = ms_since(t);
    std::printf("startup-probe %.3f %.3f %.3f %.3f\n", st.load_ms, st.warm_up_ms, st.first_ms, st.second_ms);
    return 0;
}

std::string shell_quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Runs this program as a --startup-probe child with XDG_CACHE_HOME=cache_dir.
StartupTimes run_startup_probe(const std::string& path, const Options& o, const std::string& cache_dir,
                               bool warm_up) {
    std::string cmd = "XDG_CACHE_HOME=" + shell_quoted(cache_dir) + " " +
                      shell_quoted(std::filesystem::read_symlink("/proc/self/exe").string()) +
                      (warm_up ? " --startup-probe-warm-up" : " --startup-probe") +
                      " --no-rooflines --model " + shell_quoted(path);
    if (!o.device.empty()) cmd += " --device " + shell_quoted(o.device);
    if (!o.fused_decode) cmd += " --no-fused-decode";
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) throw Error(ErrorCode::Internal, "--startup: cannot start " + cmd);
    StartupTimes st;
    char line[256];
    bool found = false;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "startup-probe %lf %lf %lf %lf", &st.load_ms, &st.warm_up_ms, &st.first_ms,
                        &st.second_ms) == 4)
            found = true;
    const int rc = pclose(f);
    if (!found || rc != 0) throw Error(ErrorCode::Internal, "--startup: the probe process failed: " + cmd);
    return st;
}

// A fresh cache directory, removed again by the destructor.
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/lantern-startup-XXXXXX";
        if (!mkdtemp(tmpl)) throw Error(ErrorCode::Internal, "--startup: cannot make a temporary directory");
        path = tmpl;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

void bench_startup(const std::string& path, const std::string& label, const Options& o) {
    // Three starts share one fresh cache directory: the first finds it empty (cold), the later
    // ones find what the earlier left. Three, not two: lavapipe's disk cache is not complete after
    // one start (110M Q8_0: the second start's prompt took 0.7 s, the third's 0.3 s). A fourth
    // start, cold in a directory of its own, runs Engine::warm_up() after the load, as the app
    // does while the user types. The user's own caches are not touched.
    StartupTimes runs[3], app;
    {
        TempDir dir;
        for (auto& r : runs) r = run_startup_probe(path, o, dir.path, false);
    }
    {
        TempDir dir;
        app = run_startup_probe(path, o, dir.path, true);
    }
    auto show = [](const StartupTimes& t) {
        char b[200];
        if (t.warm_up_ms > 0)
            std::snprintf(b, sizeof b,
                          "%.0f ms (load %.0f, warm-up %.0f, then first token %.0f, second %.0f)", t.total(),
                          t.load_ms, t.warm_up_ms, t.first_ms, t.second_ms);
        else
            std::snprintf(b, sizeof b, "%.0f ms (load %.0f, first token %.0f, second %.0f)", t.total(),
                          t.load_ms, t.first_ms, t.second_ms);
        return std::string(b);
    };
    std::printf(
        "startup %s, to the second token after a %d-token prompt: cold %s; second start %s; warm (third) "
        "%s — caches save %.0f ms; cold with warm-up %s\n",
        label.c_str(), kStartupPrompt, show(runs[0]).c_str(), show(runs[1]).c_str(), show(runs[2]).c_str(),
        runs[0].total() - runs[2].total(), show(app).c_str());
    if (o.json) {
        std::printf("{\"model\":\"%s\",\"test\":\"startup\",\"prompt_tokens\":%d", label.c_str(),
                    kStartupPrompt);
        const char* names[] = {"cold", "second", "warm", "cold_warm_up"};
        const StartupTimes* all[] = {&runs[0], &runs[1], &runs[2], &app};
        for (int i = 0; i < 4; ++i)
            std::printf(
                ",\"%s_ms\":%.1f,\"%s_load_ms\":%.1f,\"%s_warm_up_ms\":%.1f,\"%s_first_token_ms\":%.1f,"
                "\"%s_second_token_ms\":%.1f",
                names[i], all[i]->total(), names[i], all[i]->load_ms, names[i], all[i]->warm_up_ms, names[i],
                all[i]->first_ms, names[i], all[i]->second_ms);
        std::printf("}\n");
    }
    std::fflush(stdout);
}

// Float operations (a multiply and an add count two) per token of a `pp`-token prompt: every
// matmul of every layer over its weights (Q, K, V, O; a gated FFN's gate, up and down; the LM head
// runs for the last token only and is left out) and attention's two products (scores, values) over
// every key a token sees, its sliding window's where a layer has one.
double prefill_flop_per_token(const ModelInfo& m, int pp) {
    const double kv_dim = double(m.n_kv_heads) * m.head_dim;
    const double matmul =
        double(m.dim) * (m.q_dim() + 2 * kv_dim) + double(m.q_dim()) * m.dim + 3.0 * m.dim * m.ffn_dim;
    double keys = 0;  // keys seen, summed over the prompt's tokens and the layers
    for (uint32_t l = 0; l < m.n_layers; ++l)
        for (int p = 0; p < pp; ++p)
            keys += m.local_layer(l) && m.sliding_window ? std::min<double>(p + 1, m.sliding_window) : p + 1;
    return 2.0 * (m.n_layers * matmul + 2.0 * m.q_dim() * keys / pp);
}

// Seconds one decode step needs at least if each layout's weights stream at that layout's
// arithmetic roofline (Rooflines::dot_gb_per_s); -1 when a layout was not measured.
double arithmetic_bound_s(const ModelInfo& m, const Rooflines& roof) {
    double s = 0;
    for (const auto& [layout, bytes] : m.decode_read_bytes_by_layout) {
        const double gb_s = roof.dot_gb_per_s_of(layout);
        if (gb_s <= 0) return -1;
        s += bytes / (gb_s * 1e9);
    }
    return m.decode_read_bytes_by_layout.empty() ? -1 : s;
}

// --beside: what the desktop app's chat and its API server cost each other. A host sequence (the
// chat, prefilled with kBesidePrompt tokens, untimed) decodes o.tg tokens while o.beside greedy
// replies of o.tg tokens after kBesidePrompt-token prompts are written by a Scheduler, two ways,
// alternating in each repetition so that the machine's drift hits both alike:
//  * shared: every host step is Scheduler::step_with, carrying the replies' tokens (decodes and
//    prompt chunks, kBesideShareTokens tokens in all at most, as InferenceWorker shares them); once
//    the host is done the replies finish alone;
//  * turns: the host decodes alone, then the replies are written (how the app worked before).
// The host's rate shows what its user sees; the rate of all tokens (the host's and the replies'
// generated tokens over the whole time) shows what sharing saves.
void bench_beside(Engine& engine, uint32_t token_budget, const std::string& label, const Options& o,
                  Rng& rng) {
    const auto& m = engine.model();
    std::vector<double> host_shared, host_alone, all_shared, all_turns;
    const int all_tokens = o.tg * (1 + o.beside);
    for (int r = 0; r <= o.reps; ++r) {
        for (const bool shared : {false, true}) {
            const SequenceId host = engine.create_sequence();
            engine.prefill(host, random_tokens(rng, m.vocab, kBesidePrompt));
            Scheduler scheduler(engine, token_budget, static_cast<uint32_t>(o.beside));
            int generated = 0;
            const auto submit_all = [&] {
                for (int i = 0; i < o.beside; ++i) {
                    GenerationRequest req;
                    req.prompt = random_tokens(rng, m.vocab, kBesidePrompt);
                    req.settings.temperature = 0;
                    req.settings.max_new_tokens = o.tg;
                    req.on_token = [&generated](RequestId, int32_t) { ++generated; };
                    scheduler.submit(std::move(req));
                }
            };
            StepItem item{host, {1}, true, false};
            std::vector<float> logits;
            const auto t = Clock::now();
            if (shared) submit_all();
            for (int k = 0; k < o.tg; ++k) {
                item.tokens[0] = static_cast<int32_t>(3 + rng.next() % (m.vocab - 3));
                if (shared)
                    scheduler.step_with(item, logits, kBesideShareTokens);
                else
                    engine.step(std::span<const StepItem>(&item, 1));
            }
            const double host_ms = ms_since(t);
            if (!shared) submit_all();
            scheduler.run();
            const double all_ms = ms_since(t);
            engine.free_sequence(host);
            if (generated != o.tg * o.beside)
                throw Error(ErrorCode::Internal, "--beside: the replies wrote " + std::to_string(generated) +
                                                     " tokens, not " + std::to_string(o.tg * o.beside));
            if (r == 0) continue;  // warm-up: the first multi-token shapes compile here on lavapipe
            (shared ? host_shared : host_alone).push_back(o.tg / (host_ms / 1e3));
            (shared ? all_shared : all_turns).push_back(all_tokens / (all_ms / 1e3));
        }
    }
    const std::string tg = "tg" + std::to_string(o.tg), plus = " +" + std::to_string(o.beside);
    const auto row = [&](const std::string& test, int tokens, int seqs, const std::vector<double>& rates) {
        const double rate = median(rates);
        print_result(Result{label, test, tokens, seqs, 0, rate, stdev(rates), 1e3 / rate}, o.json);
    };
    row("host " + tg, o.tg, 1, host_alone);
    row("host " + tg + plus, o.tg, 1 + o.beside, host_shared);
    row("all " + tg + plus + " shared", all_tokens, 1 + o.beside, all_shared);
    row("all " + tg + plus + " turns", all_tokens, 1 + o.beside, all_turns);
}

void bench_model(const std::string& path, const std::string& label, const Options& o, const Rooflines& roof) {
    EngineOptions eo;
    eo.device_selector = o.device;
    int max_batch = *std::max_element(o.batches.begin(), o.batches.end());
    const int max_pp = *std::max_element(o.pps.begin(), o.pps.end());
    // Prompts are prefilled in steps of at most this many tokens, as llama.cpp's default micro-batch.
    constexpr int kPrefillStep = 512;
    const int max_depth = *std::max_element(o.depths.begin(), o.depths.end());
    // A deep decode test holds its prefix in one more sequence, which its forks share.
    eo.max_sequences =
        static_cast<uint32_t>(std::max({1, max_batch + (max_depth > 0 ? 1 : 0), o.beside + 1}));
    eo.max_step_tokens =
        static_cast<uint32_t>(std::max({std::min(max_pp, kPrefillStep), max_batch, std::min(max_depth, 256),
                                        o.beside > 0 ? kBesideShareTokens : 1, 1}));
    eo.context_length = static_cast<uint32_t>(std::max(
        {max_pp + 8, std::max(max_depth + o.tg, o.steady) + 8, o.beside > 0 ? kBesidePrompt + o.tg + 8 : 0}));
    // A sustained run by time takes as much of the model's context as it can, up to 8192 tokens
    // (the KV cache of a long context would not fit lavapipe's heap for every model).
    if (o.steady_seconds > 0) eo.context_length = std::max(eo.context_length, 8192u);
    eo.kv_budget_bytes = 0;
    eo.fused_decode = o.fused_decode;
    if (o.startup) bench_startup(path, label, o);
    auto engine = Engine::load(path, eo);
    const auto& m = engine->model();
    if (o.tg > 0 && static_cast<uint64_t>(max_depth) + o.tg + 1 > engine->context_length())
        throw Error(ErrorCode::InvalidArgument,
                    "-d " + std::to_string(max_depth) + " and -n " + std::to_string(o.tg) + " need " +
                        std::to_string(max_depth + o.tg + 1) + " tokens of context; " + label + " has " +
                        std::to_string(engine->context_length()));
    Rng rng(42);
    const double roof_bytes_per_s = roof.read_gb_per_s * 1e9;

    // Prefill: each prompt length as the app prefills it (Engine::prefill: steps of at most
    // kPrefillStep tokens, attention over everything before), fresh random tokens every repetition.
    for (int pp : o.pps) {
        if (pp <= 0) continue;
        std::vector<double> rates;
        for (int r = 0; r <= o.reps; ++r) {
            auto toks = random_tokens(rng, m.vocab, pp);
            auto seq = engine->create_sequence();
            auto t = Clock::now();
            engine->prefill(seq, toks);
            double ms = ms_since(t);
            engine->free_sequence(seq);
            if (r > 0) rates.push_back(pp / (ms / 1e3));
        }
        Result res{label,        "pp" + std::to_string(pp), pp, 1, 0, median(rates),
                   stdev(rates), 1e3 / median(rates)};
        if (o.rooflines && roof.fma_gflop_s > 0)
            res.arith_fraction = prefill_flop_per_token(m, pp) * median(rates) / (roof.fma_gflop_s * 1e9);
        print_result(res, o.json);
    }
    for (int depth : o.depths) {
        if (o.tg <= 0) break;
        // The prefix, prefilled once: forks share its full KV blocks and recompute its partial last
        // block, in their untimed first step.
        SequenceId prefix = 0;
        if (depth > 0) {
            prefix = engine->create_sequence();
            engine->prefill(prefix, random_tokens(rng, m.vocab, depth));
        }
        for (int b : o.batches) {
            std::vector<double> rates;
            for (int r = 0; r <= o.reps; ++r) {
                std::vector<SequenceId> seqs;
                std::vector<StepItem> items;
                for (int i = 0; i < b; ++i) {
                    seqs.push_back(depth > 0 ? engine->fork_sequence(prefix) : engine->create_sequence());
                    items.push_back({seqs.back(), random_tokens(rng, m.vocab, 1), true, false});
                }
                engine->step(items);  // position `depth` (not timed; a fork's recomputed block is in it)
                auto t = Clock::now();
                for (int k = 0; k < o.tg; ++k) {
                    for (auto& it : items)
                        it.tokens[0] = static_cast<int32_t>(3 + rng.next() % (m.vocab - 3));
                    engine->step(items);
                }
                double ms = ms_since(t);
                for (auto s : seqs) engine->free_sequence(s);
                if (r > 0) rates.push_back(o.tg * b / (ms / 1e3));
            }
            double rate = median(rates);
            const std::string test =
                "tg" + std::to_string(o.tg) + (depth > 0 ? "@d" + std::to_string(depth) : "");
            Result res{label, test, o.tg, b, depth, rate, stdev(rates), 1e3 / rate * b};
            // Each step reads every weight once, whatever the batch.
            double steps_per_s = rate / b;
            res.read_fraction =
                roof_bytes_per_s > 0 ? m.decode_read_bytes * steps_per_s / roof_bytes_per_s : -1;
            const double bound_s = arithmetic_bound_s(m, roof);
            res.arith_fraction = bound_s > 0 ? bound_s * steps_per_s : -1;
            print_result(res, o.json);
        }
        if (depth > 0) engine->free_sequence(prefix);
    }
    if (o.beside > 0 && o.tg > 0) bench_beside(*engine, eo.max_step_tokens, label, o, rng);
    if (o.steady > 0 || o.steady_seconds > 0) {
        // One sequence decoding token after token: o.steady tokens, or (--steady-seconds) until the
        // time is up or the context is full, whichever comes first.
        // Position 0 is not timed, as in the tg test: a driver that compiles kernels at their first
        // dispatch (lavapipe) would otherwise put seconds of compiling into the "transient"
        // (start-up is --startup's measure).
        auto seq = engine->create_sequence();
        StepItem item{seq, {1}, true, false};
        engine->step(std::span<const StepItem>(&item, 1));
        std::vector<double> lat;
        const auto t_begin = Clock::now();
        const int limit = o.steady > 0 ? o.steady : static_cast<int>(engine->context_length()) - 2;
        bool context_full = false;
        for (int k = 0; k < limit; ++k) {
            if (o.steady_seconds > 0 && ms_since(t_begin) >= o.steady_seconds * 1e3) break;
            item.tokens[0] = static_cast<int32_t>(3 + rng.next() % (m.vocab - 3));
            auto t = Clock::now();
            engine->step(std::span<const StepItem>(&item, 1));
            lat.push_back(ms_since(t));
            context_full = o.steady == 0 && k + 1 == limit;
        }
        engine->free_sequence(seq);
        const double run_s = ms_since(t_begin) / 1e3;
        if (o.steady_seconds > 0)
            std::printf("steady %s: %.1f s, %zu tokens%s\n", label.c_str(), run_s, lat.size(),
                        context_full ? " (stopped: the context is full)" : "");
        // The transient's end, the steady rate and the slowdown, as the app's Performance panel
        // reports them (lantern/steady_state.h: the first 32-token window varying by < 5 % or by < 0.05 ms).
        const SteadyState st = steady_state(lat);
        char of_roofline[64] = "";
        if (roof_bytes_per_s > 0 && st.reached)
            std::snprintf(of_roofline, sizeof of_roofline, " (%.1f %% of read roofline)",
                          100 * m.decode_read_bytes * st.steady_tok_s / roof_bytes_per_s);
        if (st.reached)
            std::printf(
                "steady %s: %zu tokens; transient %zu tokens; burst %.1f tok/s; steady %.1f tok/s%s; "
                "latency slope %+.3f ms/100 tok; last quarter %+.1f %% slower than the first\n",
                label.c_str(), st.tokens, st.transient_tokens, st.burst_tok_s, st.steady_tok_s, of_roofline,
                st.slope_ms_per_100, 100 * st.slowdown);
        else
            std::printf(
                "steady %s: %zu tokens; no steady state (no 32-token window varied by less than 5 %% or 0.05 "
                "ms); "
                "burst %.1f tok/s\n",
                label.c_str(), st.tokens, st.burst_tok_s);
        if (o.json)
            std::printf(
                "{\"model\":\"%s\",\"test\":\"steady\",\"tokens\":%zu,\"seconds\":%.3f,\"context_full\":%s,"
                "\"reached\":%s,\"transient_tokens\":%zu,\"burst_tok_s\":%.3f,\"steady_tok_s\":%.3f,"
                "\"latency_slope_ms_per_100\":%.4f,\"slowdown\":%.4f}\n",
                label.c_str(), st.tokens, run_s, context_full ? "true" : "false",
                st.reached ? "true" : "false", st.transient_tokens, st.burst_tok_s, st.steady_tok_s,
                st.slope_ms_per_100, st.slowdown);
    }
    if (o.profile) {
        EngineOptions po = eo;
        po.profile = true;
        // Prefill profile_at - 2 tokens, one step (warm), then the profiled step at profile_at.
        po.context_length = std::max<uint32_t>(po.context_length, uint32_t(o.profile_at) + 2u);
        auto pe = Engine::load(path, po);
        if (pe->context_length() < uint32_t(o.profile_at) + 1u)
            throw Error(ErrorCode::InvalidArgument, "--profile-at " + std::to_string(o.profile_at) +
                                                        " is past the model's context of " +
                                                        std::to_string(pe->context_length()) + " tokens");
        auto seq = pe->create_sequence();
        auto toks = random_tokens(rng, m.vocab, size_t(o.profile_at - 2));
        pe->prefill(seq, toks);
        StepItem item{seq, {5}, true, false};
        pe->step(std::span<const StepItem>(&item, 1));
        pe->step(std::span<const StepItem>(&item, 1));
        const auto& p = pe->last_step_profile();
        std::printf("profile %s (decode step at position %d): wall %.3f ms, GPU %.3f ms, %u dispatches%s\n",
                    label.c_str(), o.profile_at, p.total_ms, p.gpu_ms, p.dispatches,
                    p.fused_layers ? " (fused layers: one dispatch per run of layers)" : "");
        for (const auto& op : p.ops) {
            std::printf("  %-14s %8.3f ms  %5.1f %%  %3u dispatches  %8.2f MiB  %6.2f GB/s\n", op.op.c_str(),
                        op.ms, p.gpu_ms > 0 ? 100 * op.ms / p.gpu_ms : 0.0, op.dispatches,
                        op.bytes / 1048576.0, op.ms > 0 ? op.bytes / (op.ms * 1e6) : 0.0);
            if (op.op != "fused_layer") continue;
            // Inside the fused layers (clocks in the kernel): each op family, and the share of the
            // threads' time in it spent waiting for another thread's last item.
            for (const auto& f : p.fused_ops) {
                if (f.idle_fraction < 0)
                    std::printf(
                        "    %-12s %8.3f ms  %5.1f %%  (the driver starting and ending the dispatches)\n",
                        f.op.c_str(), f.ms, p.gpu_ms > 0 ? 100 * f.ms / p.gpu_ms : 0.0);
                else
                    std::printf(
                        "    %-12s %8.3f ms  %5.1f %%  %8.2f MiB  %6.2f GB/s  threads idle %4.1f %%\n",
                        f.op.c_str(), f.ms, p.gpu_ms > 0 ? 100 * f.ms / p.gpu_ms : 0.0, f.bytes / 1048576.0,
                        f.ms > 0 ? f.bytes / (f.ms * 1e6) : 0.0, 100 * f.idle_fraction);
            }
        }
        std::printf("  weights read per token: %.1f MiB\n", m.decode_read_bytes / 1048576.0);
    }

    // What the model takes on the device, as Engine::load planned it before allocating
    // (lantern/memory_plan.h): the weights as stored in the file, the KV cache this run asked for,
    // the largest step's work.
    const MemoryPlan plan = plan_memory(m, engine->device(), eo);
    const uint64_t heap = engine->device().device_local_bytes;
    std::printf(
        "memory %s: weights %.1f MiB + KV cache %.2f MiB (%u tokens x %u sequence%s) + work %.2f MiB = "
        "%.1f MiB, %.1f %% of the device's %.0f MiB\n",
        label.c_str(), plan.weight_bytes / 1048576.0, plan.kv_bytes / 1048576.0, plan.context_length,
        plan.sequences, plan.sequences == 1 ? "" : "s", plan.work_bytes / 1048576.0,
        plan.total_bytes() / 1048576.0, heap ? 100.0 * plan.total_bytes() / heap : 0.0, heap / 1048576.0);
    if (plan.kv_local_blocks)
        std::printf(
            "  KV cache with sliding windows given back: %.2f MiB, every layer keeping every position: %.2f "
            "MiB\n",
            plan.kv_bytes / 1048576.0, plan.kv_flat_bytes / 1048576.0);
    if (o.json)
        std::printf(
            "{\"model\":\"%s\",\"test\":\"memory\",\"weight_bytes\":%llu,\"kv_bytes\":%llu,\"work_bytes\":%"
            "llu,"
            "\"context_tokens\":%u,\"sequences\":%u,\"device_bytes\":%llu}\n",
            label.c_str(), static_cast<unsigned long long>(plan.weight_bytes),
            static_cast<unsigned long long>(plan.kv_bytes), static_cast<unsigned long long>(plan.work_bytes),
            plan.context_length, plan.sequences, static_cast<unsigned long long>(heap));
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string f = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n%s", f.c_str(), kUsage);
                std::exit(2);
            }
            return argv[++i];
        };
        // A number for the flag, read whole (std::stoi aborted the program on "x" and took "12x"
        // as 12): anything else ends the run with the flag named.
        const auto number_of = [&](const std::string& text) -> double {
            double v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
                std::fprintf(stderr, "%s needs a number, not \"%s\"\n%s", f.c_str(), text.c_str(), kUsage);
                std::exit(2);
            }
            return v;
        };
        const auto whole = [&](const std::string& text) -> int {
            const double v = number_of(text);
            if (v != std::floor(v) || v < -1e9 || v > 1e9) {
                std::fprintf(stderr, "%s needs a whole number, not \"%s\"\n%s", f.c_str(), text.c_str(),
                             kUsage);
                std::exit(2);
            }
            return static_cast<int>(v);
        };
        if (f == "--model" || f == "-m")
            o.models.push_back(value());
        else if (f == "--synthetic") {
            std::string v = value();
            auto c = v.find(':');
            o.synthetic.emplace_back(v.substr(0, c), c == std::string::npos ? "q8_0" : v.substr(c + 1));
        } else if (f == "-n") {
            o.tg = whole(value());
        } else if (f == "-r") {
            o.reps = std::max(1, whole(value()));
        } else if (f == "-p" || f == "-b" || f == "-d") {
            auto& list = f == "-p" ? o.pps : f == "-b" ? o.batches : o.depths;
            list.clear();
            std::string v = value();
            for (size_t s = 0; s < v.size();) {
                size_t e = v.find(',', s);
                list.push_back(whole(v.substr(s, e == std::string::npos ? std::string::npos : e - s)));
                s = e == std::string::npos ? v.size() : e + 1;
            }
            if (list.empty() || *std::min_element(list.begin(), list.end()) < (f == "-b" ? 1 : 0)) {
                std::fprintf(stderr, "%s needs a list of %s numbers\n%s", f.c_str(),
                             f == "-b" ? "positive" : "non-negative", kUsage);
                return 2;
            }
        } else if (f == "--beside") {
            o.beside = whole(value());
            if (o.beside < 1 || o.beside > 64) {
                std::fprintf(stderr, "--beside needs 1 to 64 replies\n%s", kUsage);
                return 2;
            }
        } else if (f == "--steady")
            o.steady = whole(value());
        else if (f == "--steady-seconds")
            o.steady_seconds = number_of(value());
        else if (f == "--profile")
            o.profile = true;
        else if (f == "--profile-at") {
            o.profile = true;
            o.profile_at = whole(value());
            if (o.profile_at < 3) {
                std::fprintf(stderr, "--profile-at needs a position of at least 3\n%s", kUsage);
                return 2;
            }
        } else if (f == "--rooflines")
            o.rooflines = true;
        else if (f == "--no-rooflines")
            o.rooflines = false;
        else if (f == "--startup")
            o.startup = true;
        else if (f == "--startup-probe")
            o.startup_probe = true;
        else if (f == "--startup-probe-warm-up")
            o.startup_probe = o.startup_probe_warm_up = true;
        else if (f == "--no-fused-decode")
            o.fused_decode = false;
        else if (f == "--json")
            o.json = true;
        else if (f == "--device")
            o.device = value();
        else if (f == "--write-synthetic") {
            std::string v = value(), file = value();
            auto c = v.find(':');
            try {
                write_synthetic_model(synthetic_shape(v.substr(0, c)),
                                      type_id(c == std::string::npos ? "q8_0" : v.substr(c + 1)), file);
            } catch (const Error& e) {
                std::fprintf(stderr, "lantern-bench: %s\n", e.what());
                return 1;
            }
            return 0;
        } else {
            std::fprintf(stderr, "unknown option %s\n%s", f.c_str(), kUsage);
            return 2;
        }
    }
    if (o.models.empty() && o.synthetic.empty()) {
        std::fprintf(stderr, "%s", kUsage);
        return 2;
    }
    if (o.startup_probe) {
        try {
            return startup_probe(o.models.at(0), o, o.startup_probe_warm_up);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lantern-bench --startup-probe: %s\n", e.what());
            return 1;
        }
    }
    try {
        Rooflines roof;
        if (o.rooflines) {
            roof = measure_rooflines(o.device);
            std::printf("device %s: read roofline %.2f GB/s (", roof.device.c_str(), roof.read_gb_per_s);
            for (int i = 0; i < Rooflines::kReadPatterns; ++i)
                std::printf("%s%s %.2f", i ? ", " : "", Rooflines::kReadPatternNames[i],
                            roof.read_gb_per_s_by_pattern[i]);
            std::printf("); arithmetic roofline (");
            for (int i = 0; i < Rooflines::kDotTypes; ++i)
                std::printf("%s%s %.2f", i ? ", " : "", Rooflines::kDotTypeNames[i], roof.dot_gb_per_s[i]);
            std::printf(
                " GB/s); multiply-add roofline %.1f GFLOP/s; dispatch %.1f us (%.1f us without barrier); "
                "submit+wait %.1f us",
                roof.fma_gflop_s, roof.dispatch_us, roof.dispatch_no_barrier_us, roof.submit_wait_us);
            if (roof.host_clock_ghz_max > 0)
                std::printf("; host core clock %.2f-%.2f GHz (dependent multiplies)", roof.host_clock_ghz_min,
                            roof.host_clock_ghz_max);
            std::printf("\n");
            if (o.json) {
                std::printf(
                    "{\"test\":\"rooflines\",\"device\":\"%s\",\"read_gb_s\":%.3f,\"dispatch_us\":%.2f,"
                    "\"dispatch_no_barrier_us\":%.2f,\"submit_wait_us\":%.2f",
                    roof.device.c_str(), roof.read_gb_per_s, roof.dispatch_us, roof.dispatch_no_barrier_us,
                    roof.submit_wait_us);
                for (int i = 0; i < Rooflines::kDotTypes; ++i)
                    std::printf(",\"arithmetic_%s_gb_s\":%.3f", Rooflines::kDotTypeNames[i],
                                roof.dot_gb_per_s[i]);
                std::printf(
                    ",\"fma_gflop_s\":%.2f,\"host_clock_ghz_min\":%.3f,\"host_clock_ghz_max\":%.3f}\n",
                    roof.fma_gflop_s, roof.host_clock_ghz_min, roof.host_clock_ghz_max);
            }
        }
        std::printf("| %-28s | %-20s | %5s | %3s | %20s | %9s | %7s | %7s |\n", "model", "test", "tok", "seq",
                    "tok/s", "ms/tok", "read %", "arith %");
        for (const auto& m : o.models) bench_model(m, std::filesystem::path(m).filename().string(), o, roof);
        for (const auto& [shape, type] : o.synthetic) {
            std::string file = shape;  // a written-out shape's slashes are not a path
            std::replace(file.begin(), file.end(), '/', 'x');
            auto path =
                std::filesystem::temp_directory_path() / ("lantern-synthetic-" + file + "-" + type + ".gguf");
            if (!std::filesystem::exists(path))
                write_synthetic_model(synthetic_shape(shape), type_id(type), path.string());
            bench_model(path.string(), "synthetic-" + shape + ":" + type, o, roof);
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "lantern-bench: %s: %s\n", error_code_name(e.code()), e.what());
        return 1;
    }
    return 0;
}
