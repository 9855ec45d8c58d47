#include "lantern/synthetic.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/sampling.h"
#include "ops/weight_format.h"

namespace lantern {

namespace {
SyntheticShape named_shape(const std::string& name);

// "NAME,key=value,..." -> the named shape with the modifiers applied.
SyntheticShape with_modifiers(const std::string& full) {
    const size_t comma = full.find(',');
    SyntheticShape s = named_shape(full.substr(0, comma));
    s.name = full;
    for (size_t at = comma; at != std::string::npos;) {
        const size_t next = full.find(',', at + 1);
        const std::string item =
            full.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
        at = next;
        const size_t eq = item.find('=');
        const std::string key = item.substr(0, eq),
                          value = eq == std::string::npos ? "" : item.substr(eq + 1);
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        const bool number = !value.empty() && end && *end == 0 && v > 0 && v < 1e7;
        if (number && key == "layers" && v == std::floor(v))
            s.n_layers = static_cast<uint32_t>(v);
        else if (number && key == "vocab" && v == std::floor(v) && v >= 286)
            s.vocab = static_cast<uint32_t>(v);
        else if (number && key == "output_std")
            s.output_std = static_cast<float>(v);
        else if (number && key == "embed_std")
            s.embed_std = static_cast<float>(v);
        else if (number && key == "orig" && v == std::floor(v) && s.original_context > 0)
            s.original_context = static_cast<uint32_t>(v);
        else if (key == "untied" && value == "1" && s.architecture != "gemma2")
            s.tied_output = false;
        else if (number && key == "window" && v == std::floor(v) && s.gemma())
            s.sliding_window = static_cast<uint32_t>(v);
        else if (number && key == "swa_pattern" && v == std::floor(v) && s.gemma())
            s.swa_pattern = static_cast<uint32_t>(v);
        else
            throw Error(
                ErrorCode::InvalidArgument,
                "synthetic shape \"" + full + "\": unknown modifier \"" + item +
                    "\" (layers=N, vocab=N of at least 286, untied=1 (not gemma2: its head is tied), "
                    "output_std=F, embed_std=F, orig=N for a LongRoPE shape, window=N and swa_pattern=N "
                    "for a Gemma shape)");
    }
    if (s.output_std > 0 && s.tied_output)
        throw Error(ErrorCode::InvalidArgument,
                    "synthetic shape \"" + full + "\": output_std needs untied=1");
    return s;
}

SyntheticShape qwen_shape(const std::string& name, const char* arch, uint32_t dim, uint32_t layers,
                          uint32_t heads, uint32_t kv, uint32_t head_dim, uint32_t ffn) {
    SyntheticShape s;
    s.name = name;
    s.architecture = arch;
    s.dim = dim, s.n_layers = layers, s.n_heads = heads, s.n_kv_heads = kv, s.head_dim = head_dim,
    s.ffn_dim = ffn;
    s.vocab = 151936;
    s.rope_base = 1000000.0f;
    s.qkv_bias = s.architecture == "qwen2";
    s.qk_norm = s.architecture == "qwen3";
    return s;
}

SyntheticShape gemma_shape(const std::string& name, const char* arch, uint32_t dim, uint32_t layers,
                           uint32_t heads, uint32_t kv, uint32_t ffn, uint32_t vocab, uint32_t window) {
    SyntheticShape s;
    s.name = name;
    s.architecture = arch;
    s.dim = dim, s.n_layers = layers, s.n_heads = heads, s.n_kv_heads = kv, s.head_dim = 256, s.ffn_dim = ffn;
    s.vocab = vocab;
    s.sliding_window = window;
    s.qk_norm = s.architecture == "gemma3";
    s.special_tokens = {};
    return s;
}

SyntheticShape phi_shape(const std::string& name, uint32_t heads, uint32_t kv, uint32_t head_dim,
                         uint32_t vocab) {
    SyntheticShape s;
    s.name = name;
    s.architecture = "phi3";
    s.dim = 3072, s.n_layers = 32, s.n_heads = heads, s.n_kv_heads = kv, s.head_dim = head_dim,
    s.ffn_dim = 8192;
    s.vocab = vocab;
    s.fused_matrices = true;
    s.special_tokens = {"<|endoftext|>", "<|assistant|>", "<|system|>", "<|end|>", "<|user|>"};
    return s;
}
}  // namespace

SyntheticShape synthetic_shape(const std::string& name) {
    return name.find(',') == std::string::npos ? named_shape(name) : with_modifiers(name);
}

namespace {
SyntheticShape named_shape(const std::string& name) {
    SyntheticShape s;
    s.name = name;
    if (name == "tiny") return s;
    if (name == "qwen2.5-0.5b") return qwen_shape(name, "qwen2", 896, 24, 14, 2, 0, 4864);
    if (name == "qwen2.5-1.5b") return qwen_shape(name, "qwen2", 1536, 28, 12, 2, 0, 8960);
    if (name == "qwen3-0.6b") return qwen_shape(name, "qwen3", 1024, 28, 16, 8, 128, 3072);
    if (name == "qwen3-1.7b") return qwen_shape(name, "qwen3", 2048, 28, 16, 8, 128, 6144);
    if (name == "phi3-mini") {  // Phi-3-mini-4k-instruct
        SyntheticShape p = phi_shape(name, 32, 32, 0, 32064);
        p.tied_output = false;
        p.context_length = 4096;
        p.sliding_window = 2047;
        return p;
    }
    if (name == "phi3.5-mini") {  // Phi-3.5-mini-instruct: Phi-3-mini with LongRoPE to 128k
        SyntheticShape p = phi_shape(name, 32, 32, 0, 32064);
        p.tied_output = false;
        p.context_length = 131072, p.original_context = 4096;
        p.sliding_window = 262144;
        return p;
    }
    if (name == "phi4-mini") {  // Phi-4-mini-instruct: GQA, a tied 200k vocabulary, partial RoPE
        SyntheticShape p = phi_shape(name, 24, 8, 128, 200064);
        p.rope_dims = 96;
        p.context_length = 131072, p.original_context = 4096;
        p.sliding_window = 262144;
        return p;
    }
    if (name ==
        "gemma2-2b") {  // Gemma 2 2B: soft-capped attention and logits, a window on every second layer
        SyntheticShape g = gemma_shape(name, "gemma2", 2304, 26, 8, 4, 9216, 256000, 4096);
        g.context_length = 8192;
        g.attn_softcap = 50.0f, g.final_softcap = 30.0f;
        return g;
    }
    if (name == "gemma3-1b") {  // Gemma 3 1B: 5 local layers (window 512, RoPE 1e4) to 1 global (RoPE 1e6)
        SyntheticShape g = gemma_shape(name, "gemma3", 1152, 26, 4, 1, 6912, 262144, 512);
        g.context_length = 32768;
        g.rope_base = 1000000.0f;
        return g;
    }
    if (name == "gemma3-4b") {  // Gemma 3 4B (text): window 1024, linear RoPE scaling 8 on global layers
        SyntheticShape g = gemma_shape(name, "gemma3", 2560, 34, 8, 4, 10240, 262208, 1024);
        g.context_length = 131072;
        g.rope_base = 1000000.0f;
        g.rope_linear = 8.0f;
        return g;
    }
    if (name == "110m") {
        s.dim = 768, s.n_layers = 12, s.n_heads = 12, s.n_kv_heads = 12, s.ffn_dim = 2048, s.vocab = 32000;
        return s;
    }
    if (name == "tinyllama") {
        s.dim = 2048, s.n_layers = 22, s.n_heads = 32, s.n_kv_heads = 4, s.ffn_dim = 5632, s.vocab = 32000;
        s.tied_output = false;
        return s;
    }
    if (name == "llama3-1b") {  // Llama 3.2 1B: a 128k vocabulary, its tied LM head a fifth of the weights
        s.dim = 2048, s.n_layers = 16, s.n_heads = 32, s.n_kv_heads = 8, s.ffn_dim = 8192, s.vocab = 128256;
        return s;
    }
    if (name == "7b") {  // Llama 2 7B: the size where a GPU's decode is bound by memory, not launches
        s.dim = 4096, s.n_layers = 32, s.n_heads = 32, s.n_kv_heads = 32, s.ffn_dim = 11008, s.vocab = 32000;
        s.tied_output = false;
        return s;
    }
    // Any other shape, written as the issue tracker and papers write them:
    // DIM/LAYERS/HEADS/KV_HEADS/FFN/VOCAB (an untied LM head; e.g. 768/12/12/12/2048/32000 is the 110M
    // shape), so the effect of one dimension on speed can be measured without a model of that shape.
    uint32_t v[6];
    char end = 0;
    if (std::sscanf(name.c_str(), "%u/%u/%u/%u/%u/%u%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &end) ==
        6) {
        s.dim = v[0], s.n_layers = v[1], s.n_heads = v[2], s.n_kv_heads = v[3], s.ffn_dim = v[4],
        s.vocab = v[5];
        s.tied_output = false;
        if (s.n_layers == 0 || s.n_heads == 0 || s.n_kv_heads == 0 || s.n_heads % s.n_kv_heads != 0 ||
            s.dim % s.n_heads != 0 || (s.dim / s.n_heads) % 2 != 0 || s.ffn_dim == 0)
            throw Error(
                ErrorCode::InvalidArgument,
                "synthetic shape \"" + name +
                    "\": the heads must divide the width into even head dimensions, the KV heads the heads, "
                    "and layers and FFN width be positive");
        return s;
    }
    throw Error(ErrorCode::InvalidArgument,
                "unknown synthetic shape \"" + name +
                    "\" (tiny, 110m, tinyllama, llama3-1b, 7b, qwen2.5-0.5b, qwen2.5-1.5b, "
                    "qwen3-0.6b, qwen3-1.7b, phi3-mini, phi3.5-mini, phi4-mini, gemma2-2b, gemma3-1b, "
                    "gemma3-4b, or "
                    "DIM/LAYERS/HEADS/KV_HEADS/FFN/VOCAB)");
}
}  // namespace

void add_synthetic_vocabulary(GgufWriter& w, uint32_t vocab, const std::vector<std::string>& specials,
                              bool gemma) {
    if (vocab < (gemma ? 400 : 286) + specials.size())
        throw Error(ErrorCode::InvalidArgument,
                    "a synthetic vocabulary needs at least 286 pieces (Gemma's 400)");
    const std::string space = "\xe2\x96\x81";  // "▁", sentencepiece's word-start marker
    // Types: 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte.
    std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types{2, 3, 3};
    if (gemma) {
        tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"};
        types = {3, 3, 3, 2, 4, 3, 3};
    }
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        types.push_back(6);
    }
    const size_t first_piece = tokens.size();
    if (gemma)  // user-defined pieces match as whole text (Gemma has runs of spaces, HTML tags, ...)
        for (const std::string& piece : {space + space, space + space + space, std::string("<table>"),
                                         std::string("<tr>"), std::string("\t\t")}) {
            tokens.push_back(piece);
            types.push_back(4);
        }
    tokens.push_back(space);
    types.push_back(1);
    for (char c = 'a'; c <= 'z'; ++c) {
        tokens.push_back(std::string(1, c));
        types.push_back(1);
    }
    if (gemma) {  // capitals, digits, punctuation and merged pieces: what SentencePiece's merges reach
        std::vector<std::string> more;
        for (char c = 'A'; c <= 'Z'; ++c) more.emplace_back(1, c);
        for (char c = '0'; c <= '9'; ++c) more.emplace_back(1, c);
        for (const char* p : {"\n", "\n\n", ".", ",", "!", "?", "'", "-", "\t"}) more.emplace_back(p);
        for (const char* p :
             {"th",           "he",           "the",
              "in",           "ing",          "er",
              "an",           "or",           "ll",
              "lo",           "ld",           "Hel",
              "Hello",        "wor",          "world",
              "lan",          "tern",         "lantern",
              "\xe4\xbd\xa0", "\xe5\xa5\xbd", "\xe4\xbd\xa0\xe5\xa5\xbd"})  // ... "你", "好", "你好"
            more.emplace_back(p);
        for (const char* p : {"the", "The", "a", "an", "in", "is", "lit", "Hello", "world", "lantern", "12"})
            more.push_back(space + p);
        for (auto& p : more) {
            tokens.push_back(std::move(p));
            types.push_back(1);
        }
    }
    for (uint32_t i = static_cast<uint32_t>(tokens.size()); i < vocab - specials.size(); ++i) {
        tokens.push_back(space + "w" + std::to_string(i));  // unique whole-word pieces
        types.push_back(1);
    }
    for (const std::string& special : specials) {
        tokens.push_back(special);
        types.push_back(3);
    }
    // Byte and control pieces score 0; ordinary pieces prefer earlier ones.
    std::vector<float> scores(vocab, 0.0f);
    for (uint32_t i = static_cast<uint32_t>(first_piece); i < vocab - specials.size(); ++i)
        scores[i] = -static_cast<float>(i - first_piece);
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", gemma ? 2 : 1);
    w.set_u32("tokenizer.ggml.eos_token_id", gemma ? 1 : 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", gemma ? 3 : 0);
    if (gemma) {
        w.set_u32("tokenizer.ggml.padding_token_id", 0);
        w.set_bool("tokenizer.ggml.add_space_prefix", false);
        w.set_bool("tokenizer.ggml.add_bos_token", true);
    }
}

void write_synthetic_model(const SyntheticShape& s, uint32_t type, const std::string& path, uint64_t seed) {
    GgufWriter w;
    const std::string key = s.architecture + ".";
    const uint32_t hd = s.head_size();
    w.set_string("general.architecture", s.architecture);
    w.set_string("general.name", "synthetic-" + s.name);
    w.set_u32(key + "embedding_length", s.dim);
    w.set_u32(key + "block_count", s.n_layers);
    w.set_u32(key + "feed_forward_length", s.ffn_dim);
    w.set_u32(key + "attention.head_count", s.n_heads);
    w.set_u32(key + "attention.head_count_kv", s.n_kv_heads);
    if (s.head_dim) {
        w.set_u32(key + "attention.key_length", hd);
        w.set_u32(key + "attention.value_length", hd);
    }
    w.set_u32(key + "context_length", s.context_length);
    w.set_u32(key + "rope.dimension_count", s.rope_dims ? s.rope_dims : hd);
    if (s.sliding_window) w.set_u32(key + "attention.sliding_window", s.sliding_window);
    if (s.original_context) {  // LongRoPE, as llama.cpp's converter writes it
        w.set_u32(key + "rope.scaling.original_context_length", s.original_context);
        const double scale = double(s.context_length) / s.original_context;
        w.set_f32(key + "rope.scaling.attn_factor",
                  scale > 1 ? static_cast<float>(
                                  std::sqrt(1 + std::log(scale) / std::log(double(s.original_context))))
                            : 1.0f);
    }
    w.set_f32(key + "rope.freq_base", s.rope_base);
    w.set_f32(key + "attention.layer_norm_rms_epsilon",
              s.architecture == "llama" || s.architecture == "phi3" ? 1e-5f : 1e-6f);
    if (s.swa_pattern) w.set_u32(key + "attention.sliding_window_pattern", s.swa_pattern);
    if (s.rope_linear > 0) {
        w.set_string(key + "rope.scaling.type", "linear");
        w.set_f32(key + "rope.scaling.factor", s.rope_linear);
    }
    if (s.rope_base_local > 0) w.set_f32(key + "rope.freq_base_swa", s.rope_base_local);
    if (s.attn_softcap > 0) w.set_f32(key + "attn_logit_softcapping", s.attn_softcap);
    if (s.final_softcap > 0) w.set_f32(key + "final_logit_softcapping", s.final_softcap);

    add_synthetic_vocabulary(w, s.vocab, s.special_tokens, s.gemma());
    if (!s.chat_template.empty()) w.set_string("tokenizer.chat_template", s.chat_template);

    enum class Fill { Matrix, Ones, Bias, NearOne };
    struct Tensor {
        std::string name;
        uint32_t rows, cols;  // cols == 0: a vector of `rows` (norm, bias)
        uint32_t type;
        std::vector<uint8_t> data;
        Fill fill = Fill::Matrix;
        double stddev = 0.02;
    };
    std::vector<Tensor> tensors;
    const bool mix = type == kSyntheticQ4KM;
    // The Q4_K_M mix's "more bits" layers (see synthetic.h).
    auto more_bits = [&](uint32_t l) {
        const uint32_t n = s.n_layers;
        return l < n / 8 || l >= 7 * n / 8 || (l - n / 8) % 3 == 2;
    };
    auto matrix = [&](const std::string& name, uint32_t rows, uint32_t cols, bool more = false) {
        tensors.push_back({name, rows, cols, mix ? (more ? 14u : 12u) : type, {}});
    };
    auto vector = [&](const std::string& name, uint32_t n, Fill fill) {
        tensors.push_back({name, n, 0, 0, {}, fill, fill == Fill::Bias ? 0.5 : 0.1});
    };
    auto norm = [&](const std::string& name, uint32_t n) { vector(name, n, Fill::Ones); };
    const uint32_t q = s.n_heads * hd, kv = s.n_kv_heads * hd;
    matrix("token_embd.weight", s.vocab, s.dim);
    if (s.embed_std > 0) tensors.back().stddev = s.embed_std;
    norm("output_norm.weight", s.dim);
    if (!s.tied_output) {
        matrix("output.weight", s.vocab, s.dim, true);
        if (s.output_std > 0) tensors.back().stddev = s.output_std;
    }
    for (uint32_t l = 0; l < s.n_layers; ++l) {
        std::string p = "blk." + std::to_string(l) + ".";
        norm(p + "attn_norm.weight", s.dim);
        norm(p + "ffn_norm.weight", s.dim);
        if (s.gemma()) {  // drawn around 1, so that a wrong norm weight shows in the text
            vector(p + "post_attention_norm.weight", s.dim, Fill::NearOne);
            vector(p + "post_ffw_norm.weight", s.dim, Fill::NearOne);
        }
        if (s.qkv_bias)
            for (const auto& [piece, n] :
                 {std::pair{"attn_q.bias", q}, std::pair{"attn_k.bias", kv}, std::pair{"attn_v.bias", kv}})
                vector(p + piece, n, Fill::Bias);
        if (s.qk_norm) {
            vector(p + "attn_q_norm.weight", hd, Fill::NearOne);
            vector(p + "attn_k_norm.weight", hd, Fill::NearOne);
        }
        if (s.fused_matrices) {
            matrix(p + "attn_qkv.weight", q + 2 * kv, s.dim, more_bits(l));
        } else {
            matrix(p + "attn_q.weight", q, s.dim);
            matrix(p + "attn_k.weight", kv, s.dim);
            matrix(p + "attn_v.weight", kv, s.dim, more_bits(l));
        }
        matrix(p + "attn_output.weight", s.dim, q);
        if (s.fused_matrices) {
            matrix(p + "ffn_up.weight", 2 * s.ffn_dim, s.dim);
        } else {
            matrix(p + "ffn_gate.weight", s.ffn_dim, s.dim);
            matrix(p + "ffn_up.weight", s.ffn_dim, s.dim);
        }
        matrix(p + "ffn_down.weight", s.dim, s.ffn_dim, more_bits(l));
    }
    if (s.original_context) {  // per rotated pair: short near 1, long growing to ~30 for slow pairs
        const uint32_t pairs = (s.rope_dims ? s.rope_dims : hd) / 2;
        std::vector<float> short_f(pairs), long_f(pairs);
        for (uint32_t i = 0; i < pairs; ++i) {
            const double x = double(i) / pairs;
            short_f[i] = static_cast<float>(1.0 + 0.05 * x);
            long_f[i] = static_cast<float>(1.0 + 29.0 * x * x);
        }
        w.add_tensor("rope_factors_short.weight", {pairs}, 0, ops::quantize(0, short_f, pairs));
        w.add_tensor("rope_factors_long.weight", {pairs}, 0, ops::quantize(0, long_f, pairs));
    }

    // Each tensor draws from its own stream (seed, index), so tensors are made in parallel and the
    // file is still the same on every machine and for any thread count (a 7B shape is 7e9 samples).
    auto fill = [&](size_t i) {
        Tensor& t = tensors[i];
        if (t.fill == Fill::Ones) {
            t.data = ops::quantize(0, std::vector<float>(t.rows, 1.0f), t.rows);
            return;
        }
        Rng rng(seed * 0x9E3779B97F4A7C15ull + i);
        std::vector<float> v(static_cast<size_t>(t.rows) * std::max(t.cols, 1u));
        // Box-Muller from our own PRNG; both outputs of each pair are used.
        for (size_t k = 0; k < v.size(); k += 2) {
            double u1 = std::max(rng.next_double(), 1e-300), u2 = rng.next_double();
            double r = t.stddev * std::sqrt(-2.0 * std::log(u1)), a = 6.283185307179586 * u2;
            v[k] = static_cast<float>(r * std::cos(a));
            if (k + 1 < v.size()) v[k + 1] = static_cast<float>(r * std::sin(a));
        }
        if (t.fill == Fill::NearOne)
            for (auto& x : v) x += 1.0f;
        t.data = ops::quantize(t.cols ? t.type : 0, v, t.cols ? t.cols : t.rows);
    };
    std::atomic<size_t> next{0};
    std::mutex failed_mutex;
    std::exception_ptr failed;
    auto worker = [&]() {
        for (size_t i; (i = next.fetch_add(1)) < tensors.size();) {
            try {
                fill(i);
            } catch (...) {
                std::lock_guard lock(failed_mutex);
                if (!failed) failed = std::current_exception();
                next = tensors.size();
            }
        }
    };
    const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < n_threads; ++t) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
    if (failed) std::rethrow_exception(failed);

    for (auto& t : tensors) {
        if (t.cols == 0)
            w.add_tensor(t.name, {t.rows}, 0, std::move(t.data));
        else
            w.add_tensor(t.name, {t.cols, t.rows}, t.type, std::move(t.data));
    }
    w.write(path);
}

}  // namespace lantern
