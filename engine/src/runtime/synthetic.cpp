#include "lantern/synthetic.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/sampling.h"
#include "ops/weight_format.h"

namespace lantern {

SyntheticShape synthetic_shape(const std::string& name) {
    SyntheticShape s;
    s.name = name;
    if (name == "tiny") return s;
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
    // Any other shape, written as the issue tracker and papers write them: DIM/LAYERS/HEADS/KV_HEADS/FFN/VOCAB
    // (an untied LM head; e.g. 768/12/12/12/2048/32000 is the 110M shape), so the effect of one
    // dimension on speed can be measured without a model of that shape.
    uint32_t v[6];
    char end = 0;
    if (std::sscanf(name.c_str(), "%u/%u/%u/%u/%u/%u%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &end) == 6) {
        s.dim = v[0], s.n_layers = v[1], s.n_heads = v[2], s.n_kv_heads = v[3], s.ffn_dim = v[4], s.vocab = v[5];
        s.tied_output = false;
        if (s.n_layers == 0 || s.n_heads == 0 || s.n_kv_heads == 0 || s.n_heads % s.n_kv_heads != 0 ||
            s.dim % s.n_heads != 0 || (s.dim / s.n_heads) % 2 != 0 || s.ffn_dim == 0)
            throw Error(ErrorCode::InvalidArgument,
                        "synthetic shape \"" + name +
                            "\": the heads must divide the width into even head dimensions, the KV heads the heads, "
                            "and layers and FFN width be positive");
        return s;
    }
    throw Error(ErrorCode::InvalidArgument, "unknown synthetic shape \"" + name +
                                                "\" (tiny, 110m, tinyllama, llama3-1b, 7b, or DIM/LAYERS/HEADS/KV_HEADS/FFN/VOCAB)");
}

void add_synthetic_vocabulary(GgufWriter& w, uint32_t vocab) {
    if (vocab < 286) throw Error(ErrorCode::InvalidArgument, "a synthetic vocabulary needs at least 286 pieces");
    const std::string space = "\xe2\x96\x81";  // "▁", sentencepiece's word-start marker
    std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types{2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        types.push_back(6);
    }
    tokens.push_back(space);
    types.push_back(1);
    for (char c = 'a'; c <= 'z'; ++c) {
        tokens.push_back(std::string(1, c));
        types.push_back(1);
    }
    for (uint32_t i = static_cast<uint32_t>(tokens.size()); i < vocab; ++i) {
        tokens.push_back(space + "w" + std::to_string(i));  // unique whole-word pieces
        types.push_back(1);
    }
    // Byte and control pieces score 0; ordinary pieces prefer earlier ones.
    std::vector<float> scores(vocab, 0.0f);
    for (uint32_t i = 259; i < vocab; ++i) scores[i] = -static_cast<float>(i - 259);
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
}

void write_synthetic_model(const SyntheticShape& s, uint32_t type, const std::string& path, uint64_t seed) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", "synthetic-" + s.name);
    w.set_u32("llama.embedding_length", s.dim);
    w.set_u32("llama.block_count", s.n_layers);
    w.set_u32("llama.feed_forward_length", s.ffn_dim);
    w.set_u32("llama.attention.head_count", s.n_heads);
    w.set_u32("llama.attention.head_count_kv", s.n_kv_heads);
    w.set_u32("llama.context_length", s.context_length);
    w.set_u32("llama.rope.dimension_count", s.dim / s.n_heads);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);

    add_synthetic_vocabulary(w, s.vocab);

    struct Tensor {
        std::string name;
        uint32_t rows, cols;  // cols == 0: a norm vector of `rows` ones
        uint32_t type;
        std::vector<uint8_t> data;
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
    auto norm = [&](const std::string& name, uint32_t n) { tensors.push_back({name, n, 0, 0, {}}); };
    const uint32_t kv = s.dim / s.n_heads * s.n_kv_heads;
    matrix("token_embd.weight", s.vocab, s.dim);
    norm("output_norm.weight", s.dim);
    if (!s.tied_output) matrix("output.weight", s.vocab, s.dim, true);
    for (uint32_t l = 0; l < s.n_layers; ++l) {
        std::string p = "blk." + std::to_string(l) + ".";
        norm(p + "attn_norm.weight", s.dim);
        norm(p + "ffn_norm.weight", s.dim);
        matrix(p + "attn_q.weight", s.dim, s.dim);
        matrix(p + "attn_k.weight", kv, s.dim);
        matrix(p + "attn_v.weight", kv, s.dim, more_bits(l));
        matrix(p + "attn_output.weight", s.dim, s.dim);
        matrix(p + "ffn_gate.weight", s.ffn_dim, s.dim);
        matrix(p + "ffn_up.weight", s.ffn_dim, s.dim);
        matrix(p + "ffn_down.weight", s.dim, s.ffn_dim, more_bits(l));
    }

    // Each tensor draws from its own stream (seed, index), so tensors are made in parallel and the
    // file is still the same on every machine and for any thread count (a 7B shape is 7e9 samples).
    auto fill = [&](size_t i) {
        Tensor& t = tensors[i];
        if (t.cols == 0) {
            t.data = ops::quantize(0, std::vector<float>(t.rows, 1.0f), t.rows);
            return;
        }
        Rng rng(seed * 0x9E3779B97F4A7C15ull + i);
        std::vector<float> v(static_cast<size_t>(t.rows) * t.cols);
        // Box-Muller from our own PRNG; both outputs of each pair are used.
        for (size_t k = 0; k < v.size(); k += 2) {
            double u1 = std::max(rng.next_double(), 1e-300), u2 = rng.next_double();
            double r = 0.02 * std::sqrt(-2.0 * std::log(u1)), a = 6.283185307179586 * u2;
            v[k] = static_cast<float>(r * std::cos(a));
            if (k + 1 < v.size()) v[k + 1] = static_cast<float>(r * std::sin(a));
        }
        t.data = ops::quantize(t.type, v, t.cols);
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
