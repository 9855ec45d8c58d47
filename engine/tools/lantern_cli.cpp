// lantern-cli: the engine from a terminal. Generates text (streamed to stdout, timings to stderr),
// holds a multi-turn chat on stdin/stdout, shows model and device information, and tokenizes.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apply_template_cli.h"
#include "lantern/chat.h"
#include "lantern/chat_template.h"
#include "lantern/device.h"
#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/perplexity.h"
#include "lantern/sampling.h"
#include "lantern/tokenizer.h"
#include "pull_cli.h"
#include "tokenize_cli.h"

using namespace lantern;

namespace {

const char* kUsage = R"(usage: lantern-cli --model FILE [options]
  --prompt TEXT        text to continue (completion; BOS is added)
  --tokens 1,2,3       start from these token ids instead of a prompt
  -n N                 tokens to generate (default 128)
  --temp T --top-k K --top-p P --min-p P --repeat-penalty R --seed S
                       sampling (temperature 0 = greedy; defaults as llama.cpp)
  --chat               multi-turn chat on stdin/stdout, one user turn per line;
                       per-turn statistics on stderr; a line "/continue" writes more of
                       the last reply, "/regenerate" replaces it
  --system TEXT        system prompt for --chat
  --drop-oldest        in --chat, drop the oldest turns when the context is full
  --ctx N              context length per sequence (default: model's, at most 4096)
  --kv-f32             keep K/V in f32 instead of f16
  --device SEL         Vulkan device index or name substring (env LANTERN_DEVICE)
  --list-devices       list Vulkan devices and exit
  --info               print model and device information and exit
  --profile            per-op GPU timing of the last decode step on stderr
  --perplexity FILE    perplexity of the model on the text in FILE, measured as llama.cpp's
                       llama-perplexity does (chunks of --ctx tokens, default 512, second halves
                       scored); --chunks N stops after N chunks
  --compare-to BASE    with --perplexity: also run BASE (e.g. the F16 model this one was
                       quantized from) and report how far --model is from it: KL divergence per
                       token (mean, 99th percentile, max) and how often their top tokens agree
  --tokenize TEXT      print the ids (no BOS) and pieces of TEXT and exit
  --detokenize IDS     print the text of comma-separated ids and exit
  --apply-template FILE
                       print the prompt the model's chat template renders for the conversation in
                       FILE (an OpenAI-style messages array, or {"messages", "tools",
                       "chat_template_kwargs"}) and exit; --no-generation-prompt leaves out the
                       assistant header at its end
  --pull OWNER/REPO[:QUANT]
                       download a GGUF model from the Hugging Face Hub (HF_ENDPOINT, HF_TOKEN) into
                       the app's models folder (--models-dir DIR elsewhere); no --model needed
)";

struct Args {
    std::string model, prompt, tokens, system, device, tokenize, detokenize, perplexity, compare_to,
        apply_template;
    bool generation_prompt = true;
    std::string pull, models_dir;
    bool has_prompt = false, has_tokenize = false, has_detokenize = false;
    int n = 128;
    uint32_t ctx = 0, chunks = 0;
    bool chat = false, list = false, info = false, kv_f32 = false, profile = false, drop_oldest = false;
    SamplingSettings sampling;
};

// Engine steps of a perplexity run (all their logits are read back).
constexpr uint32_t kPerplexityStep = 256;

[[noreturn]] void usage_error(const std::string& msg) {
    std::cerr << "lantern-cli: " << msg << "\n" << kUsage;
    std::exit(2);
}

template <typename T>
T number(const std::string& flag, const std::string& s) {
    T v{};
    if constexpr (std::is_floating_point_v<T>) {
        char* end = nullptr;
        v = static_cast<T>(std::strtod(s.c_str(), &end));
        if (s.empty() || *end) usage_error(flag + " needs a number, got \"" + s + "\"");
    } else {
        auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size())
            usage_error(flag + " needs an integer, got \"" + s + "\"");
    }
    return v;
}

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string f = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error(f + " needs a value");
            return argv[++i];
        };
        if (f == "--model" || f == "-m")
            a.model = value();
        else if (f == "--prompt" || f == "-p") {
            a.prompt = value();
            a.has_prompt = true;
        } else if (f == "--tokens")
            a.tokens = value();
        else if (f == "-n")
            a.n = number<int>(f, value());
        else if (f == "--temp")
            a.sampling.temperature = number<float>(f, value());
        else if (f == "--top-k")
            a.sampling.top_k = number<int>(f, value());
        else if (f == "--top-p")
            a.sampling.top_p = number<float>(f, value());
        else if (f == "--min-p")
            a.sampling.min_p = number<float>(f, value());
        else if (f == "--repeat-penalty")
            a.sampling.repeat_penalty = number<float>(f, value());
        else if (f == "--seed")
            a.sampling.seed = number<uint64_t>(f, value());
        else if (f == "--chat")
            a.chat = true;
        else if (f == "--system")
            a.system = value();
        else if (f == "--drop-oldest")
            a.drop_oldest = true;
        else if (f == "--ctx")
            a.ctx = number<uint32_t>(f, value());
        else if (f == "--kv-f32")
            a.kv_f32 = true;
        else if (f == "--device")
            a.device = value();
        else if (f == "--list-devices")
            a.list = true;
        else if (f == "--info")
            a.info = true;
        else if (f == "--profile")
            a.profile = true;
        else if (f == "--perplexity")
            a.perplexity = value();
        else if (f == "--chunks")
            a.chunks = number<uint32_t>(f, value());
        else if (f == "--compare-to")
            a.compare_to = value();
        else if (f == "--tokenize") {
            a.tokenize = value();
            a.has_tokenize = true;
        } else if (f == "--detokenize") {
            a.detokenize = value();
            a.has_detokenize = true;
        } else if (f == "--apply-template")
            a.apply_template = value();
        else if (f == "--no-generation-prompt")
            a.generation_prompt = false;
        else if (f == "--pull")
            a.pull = value();
        else if (f == "--models-dir")
            a.models_dir = value();
        else if (f == "--help" || f == "-h") {
            std::cout << kUsage;
            std::exit(0);
        } else
            usage_error("unknown option " + f);
    }
    return a;
}

std::vector<int32_t> parse_ids(const std::string& csv) {
    std::vector<int32_t> ids;
    std::stringstream ss(csv);
    std::string item;
    while (std::getline(ss, item, ',')) {
        auto b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
        if (b == std::string::npos) continue;
        ids.push_back(number<int32_t>("--tokens", item.substr(b, e - b + 1)));
    }
    return ids;
}

int list_devices_command() {
    auto devices = list_devices();
    uint32_t chosen = choose_device(devices, "");
    for (const auto& d : devices) {
        std::printf("%s[%u] %s — %s, driver %s, %.0f MiB, subgroup %u, max binding %.0f MiB\n",
                    d.index == chosen ? "*" : " ", d.index, d.name.c_str(), device_type_name(d.type),
                    d.driver.c_str(), d.device_local_bytes / 1048576.0, d.subgroup_size,
                    d.max_storage_buffer_range / 1048576.0);
    }
    std::printf("(* = chosen by default; override with --device or LANTERN_DEVICE)\n");
    return 0;
}

void print_info(const Engine& e) {
    const auto& m = e.model();
    const auto& d = e.device();
    std::printf("model        %s (%s)\n", m.path.c_str(), m.name.c_str());
    std::printf("architecture %s: %u layers, dim %u, %u heads / %u KV heads (head dim %u), FFN %u\n",
                m.architecture.c_str(), m.n_layers, m.dim, m.n_heads, m.n_kv_heads, m.head_dim, m.ffn_dim);
    std::printf("vocab        %u, trained context %u, RoPE base %g (%u dims", m.vocab, m.context_length,
                m.rope_freq_base, m.n_rot);
    if (m.rope_scaling.type == RopeScaling::Type::Linear)
        std::printf(", positions / %g", m.rope_scaling.factor);
    if (m.rope_scaling.type == RopeScaling::Type::Yarn)
        std::printf(", YaRN x%g over %u", m.rope_scaling.factor, m.rope_scaling.original_context);
    if (!m.rope_scaling.frequency_factors_long.empty())
        std::printf(", LongRoPE from %u (long factors past it), magnitude %g",
                    m.rope_scaling.original_context, m.rope_scaling.attn_factor);
    else if (!m.rope_scaling.frequency_factors.empty())
        std::printf(", frequency factors per pair (rope_freqs.weight)");
    std::printf("), RMS eps %g, %s output\n", m.rms_eps, m.tied_output ? "tied" : "separate");
    std::printf("tokenizer    %s\nchat         %s\n", e.tokenizer().kind().c_str(),
                ChatTemplate::from_gguf(*GgufFile::open(m.path)).description().c_str());
    std::printf("weights      %s; %.2f M parameters; %.1f MiB in file, %.1f MiB on device\n",
                m.weight_types.c_str(), m.parameters / 1e6, m.file_bytes / 1048576.0,
                m.weight_bytes / 1048576.0);
    auto kv = e.kv_stats();
    std::printf(
        "KV cache     %u blocks x %u tokens = %llu tokens, %.1f MiB (%llu bytes/token = 2 x %u layers x %u "
        "KV heads x %u dims x %u bytes)\n",
        kv.total_blocks, kv.block_tokens, static_cast<unsigned long long>(kv.capacity_tokens),
        kv.capacity_bytes / 1048576.0, static_cast<unsigned long long>(kv.bytes_per_token),
        kv.layers - kv.local_layers, kv.kv_heads, kv.head_dim, kv.element_bytes);
    if (kv.local_layers > 0)
        std::printf(
            "local layers %u with a window of %u tokens: their own %u blocks, %.1f MiB (each "
            "sequence's window and one step)\n",
            kv.local_layers, kv.window, kv.local_total_blocks, kv.local_capacity_bytes / 1048576.0);
    std::printf("device       %s (%s), %s\n", d.name.c_str(), device_type_name(d.type), d.driver.c_str());
    std::printf("load         %.1f ms (pipelines + upload %.1f ms, pipeline cache %s)\n", e.load_ms(),
                e.pipelines_ms(), e.pipeline_cache_was_warm() ? "warm" : "cold");
}

int generate(Engine& e, const Args& a) {
    const Tokenizer& tok = e.tokenizer();
    std::vector<int32_t> prompt = a.tokens.empty() ? tok.encode(a.prompt, true) : parse_ids(a.tokens);
    if (prompt.empty()) prompt.push_back(tok.bos_id() >= 0 ? tok.bos_id() : 0);
    SamplingSettings s = a.sampling;
    validate(s);
    uint64_t seed = s.seed ? *s.seed : Sampler::random_seed();
    Sampler sampler(seed);
    std::vector<int32_t> eos;
    if (tok.eos_id() >= 0) eos.push_back(tok.eos_id());
    sampler.set_eos_tokens(eos);
    StreamingDetokenizer detok(tok);

    using Clock = std::chrono::steady_clock;
    auto t0 = Clock::now();
    auto seq = e.create_sequence();
    auto logits = e.prefill(seq, prompt);
    auto t1 = Clock::now();
    double ttft = 0;
    int produced = 0;
    std::vector<int32_t> history = prompt;
    auto t_decode = Clock::now();
    for (; produced < a.n; ++produced) {
        Sample smp = sampler.sample(logits, s, history);
        if (produced == 0) {
            ttft = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            t_decode = Clock::now();
        }
        if (std::find(eos.begin(), eos.end(), smp.token) != eos.end()) break;
        history.push_back(smp.token);
        std::cout << detok.push(smp.token) << std::flush;
        if (produced + 1 == a.n || e.sequence_length(seq) + 1 > e.context_length()) {
            ++produced;
            break;
        }
        StepItem item{seq, {smp.token}, true, false};
        logits = std::move(e.step(std::span<const StepItem>(&item, 1))[0]);
    }
    std::cout << detok.flush() << "\n";
    auto t2 = Clock::now();
    double prefill_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    double decode_ms = std::chrono::duration<double, std::milli>(t2 - t_decode).count();
    std::fprintf(
        stderr,
        "\n[lantern] load %.0f ms | prompt %zu tokens: prefill %.1f ms (%.1f tok/s) | TTFT %.1f ms | "
        "%d tokens decoded in %.1f ms (%.1f tok/s) | seed %llu | %s\n",
        e.load_ms(), prompt.size(), prefill_ms, prompt.size() / (prefill_ms / 1e3), ttft, produced, decode_ms,
        produced > 1 ? (produced - 1) / (decode_ms / 1e3) : 0.0, static_cast<unsigned long long>(seed),
        e.device().name.c_str());
    if (a.profile) {
        const auto& p = e.last_step_profile();
        std::fprintf(stderr, "[lantern] last step: %.2f ms wall, %.2f ms GPU, %u dispatches\n", p.total_ms,
                     p.gpu_ms, p.dispatches);
        for (const auto& op : p.ops) {
            std::fprintf(stderr, "  %-14s %8.3f ms\n", op.op.c_str(), op.ms);
            if (op.op == "fused_layer")
                for (const auto& f : p.fused_ops)
                    std::fprintf(stderr, "    %-12s %8.3f ms\n", f.op.c_str(), f.ms);
        }
    }
    return 0;
}

// The model's trained context (2048 when the file does not say, as the engine assumes).
uint32_t context_of(const std::string& path) {
    auto g = GgufFile::open(path);
    const auto arch = g->get_string("general.architecture").value_or("llama");
    const auto n = g->get_int(arch + ".context_length");
    return n && *n > 0 && *n < (int64_t(1) << 31) ? static_cast<uint32_t>(*n) : 2048u;
}

// --perplexity: chunks of --ctx tokens (512 by default, the model's context if smaller); the
// running value per chunk on stderr as llama-perplexity prints it, the result on stdout.
int perplexity(Engine& e, const Args& a, Engine* base) {
    std::ifstream f(a.perplexity, std::ios::binary);
    if (!f) throw Error(ErrorCode::Io, "cannot open " + a.perplexity);
    const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    const auto tokens = e.tokenizer().encode(text, e.tokenizer().add_bos());
    PerplexityOptions o;
    o.context = e.context_length();
    o.max_chunks = a.chunks;
    o.step_tokens = kPerplexityStep;
    std::fprintf(stderr, "[lantern] perplexity: %zu tokens, chunks of %u (second halves scored)\n",
                 tokens.size(), o.context);
    if (base) {
        const auto r = compare_models(*base, e, tokens, o, [](uint32_t chunk, double kld) {
            std::fprintf(stderr, "[%u]%.6f,", chunk + 1, kld);
            std::fflush(stderr);
        });
        std::fprintf(stderr, "\n");
        std::printf("perplexity %.4f +/- %.4f (base %.4f +/- %.4f) over %u chunks of %u tokens (%u scored)\n",
                    r.test.perplexity, r.test.std_error, r.base.perplexity, r.base.std_error, r.test.chunks,
                    o.context, r.scored_tokens);
        std::printf(
            "KL divergence from the base: mean %.6f, 99th percentile %.6f, max %.6f nats; same top token "
            "%.2f %%\n",
            r.mean_kld, r.kld_p99, r.max_kld, 100.0 * r.top1_agreement);
        return 0;
    }
    const auto r = measure_perplexity(e, tokens, o, [](uint32_t chunk, double running) {
        std::fprintf(stderr, "[%u]%.4f,", chunk + 1, running);
        std::fflush(stderr);
    });
    std::fprintf(stderr, "\n");
    std::printf("perplexity %.4f +/- %.4f over %u chunks of %u tokens (%u scored), %.1f tok/s\n",
                r.perplexity, r.std_error, r.chunks, o.context, r.scored_tokens, r.tokens_per_second);
    return 0;
}

int chat(Engine& e, const Args& a) {
    ChatSession session(e);
    session.set_system_prompt(a.system);
    session.set_context_policy(a.drop_oldest ? ContextPolicy::DropOldestTurns : ContextPolicy::Stop);
    SamplingSettings s = a.sampling;
    s.max_new_tokens = a.n;
    SettingsSlot slot(s);
    std::fprintf(
        stderr,
        "[lantern] chat template: %s. One user turn per line (/continue, /regenerate); end with Ctrl-D.\n",
        session.chat_template().description().c_str());
    const auto print = [](const TokenEvent& ev) {
        std::cout << ev.text << std::flush;
        return true;
    };
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        const bool more = line == "/continue", again = line == "/regenerate";
        if ((more && (session.history().empty() || session.history().back().role != "assistant")) ||
            (again && session.history().empty())) {
            std::fprintf(stderr, "[turn] there is no reply to %s yet\n", more ? "continue" : "regenerate");
            continue;
        }
        auto st = more    ? session.continue_reply(slot, print)
                  : again ? session.regenerate(slot, print)
                          : session.respond(line, slot, print);
        std::cout << "\n" << std::flush;
        auto kv = e.kv_stats();
        std::fprintf(
            stderr,
            "[turn] prompt %u tokens: %u reused from the prefix cache, %u computed | generated %u (%s) | "
            "KV blocks %u used / %u cached / %u total | TTFT %.1f ms | prefill %.1f tok/s | decode %.1f "
            "tok/s\n",
            st.prompt_tokens, st.reused_tokens, st.computed_tokens, st.generated_tokens,
            std::string(stop_reason_name(st.stop_reason)).c_str(), kv.used_blocks, kv.cached_blocks,
            kv.total_blocks, st.ttft_ms, st.prefill_tokens_per_s, st.decode_tokens_per_s);
        if (st.dropped_turns)
            std::fprintf(stderr, "[turn] dropped %u oldest turns to fit the context\n", st.dropped_turns);
        if (st.template_broke_prefix)
            std::fprintf(stderr,
                         "[turn] the chat template rendered the earlier conversation differently (it drops "
                         "earlier reasoning, or re-renders replies): the KV kept its first %u tokens and "
                         "computed the rest again\n",
                         st.prefix_break_at);
        if (st.stop_reason == StopReason::ContextFull && st.changed_nothing)
            std::fprintf(stderr,
                         "[turn] no room: the prompt would take %u of the context's %u tokens; nothing was "
                         "kept (%s)\n",
                         st.prompt_tokens, e.context_length(),
                         st.would_fit_dropping ? "--drop-oldest would make room"
                                               : "shorten it, or use a larger --ctx");
        else if (st.stop_reason == StopReason::ContextFull)
            std::fprintf(stderr, "[turn] the context is full (%u tokens); %s\n", e.context_length(),
                         a.drop_oldest ? "the next turn drops the oldest turns"
                                       : "use --drop-oldest or a larger --ctx");
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Args a = parse(argc, argv);
    try {
        if (a.list) return list_devices_command();
        if (!a.pull.empty())
            return run_pull_command(a.pull, a.models_dir.empty() ? default_models_dir() : a.models_dir);
        if (a.model.empty()) usage_error("--model is required");
        if (a.has_tokenize) return run_tokenize_command(a.model, a.tokenize);
        if (a.has_detokenize) return run_detokenize_command(a.model, a.detokenize);
        if (!a.apply_template.empty())
            return run_apply_template_command(a.model, a.apply_template, a.generation_prompt);
        EngineOptions o;
        o.device_selector = a.device;
        o.context_length = a.ctx;
        o.kv_f16 = !a.kv_f32;
        o.profile = a.profile;
        o.max_sequences = 1;  // one conversation at a time: KV room for it alone
        if (!a.perplexity.empty()) {
            // One sequence whose steps return every token's logits; the chunk is the context.
            o.context_length = a.ctx ? a.ctx : std::min<uint32_t>(512, context_of(a.model));
            o.max_step_tokens = o.max_logit_rows = kPerplexityStep;
        }
        auto engine = Engine::load(a.model, o);
        if (!a.compare_to.empty() && a.perplexity.empty()) usage_error("--compare-to needs --perplexity");
        if (!a.perplexity.empty()) {
            auto base = a.compare_to.empty() ? nullptr : Engine::load(a.compare_to, o);
            return perplexity(*engine, a, base.get());
        }
        if (a.info) {
            print_info(*engine);
            return 0;
        }
        if (engine->device().type == DeviceType::Cpu)
            std::fprintf(stderr, "[lantern] running on %s, a CPU Vulkan driver (no GPU found)\n",
                         engine->device().name.c_str());
        return a.chat ? chat(*engine, a) : generate(*engine, a);
    } catch (const Error& e) {
        std::fprintf(stderr, "lantern-cli: %s: %s\n", error_code_name(e.code()), e.what());
        return 1;
    }
}
