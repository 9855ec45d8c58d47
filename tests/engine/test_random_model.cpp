// A random-weight Llama model with GQA, written with lantern::GgufWriter in every supported weight
// type (tied and untied LM head), run by the Engine and by a CPU forward pass composed here from the
// op references (ops::reference_*) on the *dequantized* weights. Logits of a 40-token prefill and
// 10 decode steps must agree, and greedy decoding must pick the same 20 tokens.
//
// Because both sides use the same dequantized weights, the weight type does not widen the gap: what
// differs is float accumulation on the device versus double in the reference. Measured on lavapipe
// (validation on, f32 KV): NMSE ~2e-13 and max |diff| ~1e-5 for every type; the bound is kLogitNmse.
// Decode steps over quantized weights on CPU drivers take their input in 16-bit fixed point
// (ops::fixed_point_input), and the reference rounds it the same way; the two sides' float
// differences upstream then flip a rounding now and then: NMSE ~1.5e-9, max |diff| ~1.5-1.8e-4 of the
// logits' RMS. The K-quants run a wider model (rows of whole 256-element blocks, config_for).
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/synthetic.h"
#include "lantern/tokenizer.h"
#include "ops/attention.h"
#include "ops/embed.h"
#include "ops/matmul.h"
#include "ops/qk_norm_rope.h"
#include "ops/weight_format.h"
#include "runtime/engine_test_hooks.h"
#include "test_support.h"

using namespace lantern;

namespace {

constexpr double kLogitNmse = 1e-8;
// Max |diff| per unit of the reference logits' RMS (at least 1): tied-output models, whose LM head
// is the embedding (values up to 1), have logits ~6-11x larger, and the fixed-point flips with them.
constexpr double kLogitMaxAbs = 5e-4;

struct Config {
    uint32_t dim = 96, layers = 3, heads = 6, kv_heads = 2, ffn = 160, vocab = 300, context = 128;
    float eps = 1e-5f, rope_base = 10000.0f;
    RopeScaling rope;            // written as llama.cpp's converters write it
    std::string arch = "llama";  // general.architecture, and the prefix of its keys
    bool qkv_bias = false;       // attn_{q,k,v}.bias in every layer (qwen2 always has them)
    uint32_t head_size = 0;      // 0: dim / heads; else written as attention.key_length (Qwen3)
    bool qk_norm = false;        // attn_{q,k}_norm.weight per head (qwen3 always has them)
    uint32_t head_dim() const { return head_size ? head_size : dim / heads; }
    uint32_t q_dim() const { return heads * head_dim(); }
    uint32_t kv_dim() const { return kv_heads * head_dim(); }
    uint32_t qkv_width() const { return q_dim() + 2 * kv_dim(); }
};

// The CPU model: dequantized weights, a float KV cache with the engine's paged layout (one
// sequence, identity block table), and forward() built only from the op references.
class ReferenceModel {
public:
    ReferenceModel(const Config& c, bool tied) : c_(c), tied_(tied) {}
    // The engine runs on a CPU driver: its short steps over quantized weights take the input in
    // fixed point (ops::fixed_point_input), and so must the reference.
    void set_cpu_driver(bool cpu) { cpu_driver_ = cpu; }
    // Norm weights: values rounded to `value_type`'s precision (F32: as drawn), stored as
    // `storage_type` (F32 by default; the engine converts others on load).
    void set_norms(uint32_t value_type, uint32_t storage_type) {
        norm_value_type_ = value_type;
        norm_storage_type_ = storage_type;
    }

    // Writes the GGUF (2-D weights in `type`, 1-D norms in F32) and keeps the dequantized weights.
    // `other_type` (if not `type`) goes to the tensors `mix` names. KAndUp: attn_k and ffn_up, so
    // Q/K/V and gate/up cannot be stacked, and the engine runs them as separate matmuls (the RoPE
    // epilogue on each, SwiGLU in the down matmul's prologue instead of the gate/up epilogue).
    // VAndDown: attn_v and ffn_down, as llama.cpp's Q4_K_M files do in some layers: Q and K stack,
    // V stands alone, and the fused decode layer runs the layer all the same.
    enum class Mix { KAndUp, VAndDown };
    // `split_parts` > 1: written as a split model (GgufWriter::write_split), `path` then being the
    // prefix of its files.
    void write(const std::string& path, uint32_t type, uint32_t seed, uint32_t other_type = ~0u,
               Mix mix = Mix::KAndUp, uint32_t split_parts = 1) {
        if (other_type == ~0u) other_type = type;
        type_ = type;
        const bool k_up = mix == Mix::KAndUp;
        k_type_ = up_type_ = k_up ? other_type : type;
        v_type_ = down_type_ = k_up ? type : other_type;
        std::mt19937 rng(seed);
        GgufWriter w;
        w.set_string("general.architecture", c_.arch);
        const std::string a = c_.arch + ".";
        w.set_string("general.name", "random-gqa");
        w.set_u32(a + "embedding_length", c_.dim);
        w.set_u32(a + "block_count", c_.layers);
        w.set_u32(a + "feed_forward_length", c_.ffn);
        w.set_u32(a + "attention.head_count", c_.heads);
        w.set_u32(a + "attention.head_count_kv", c_.kv_heads);
        w.set_u32(a + "context_length", c_.context);
        w.set_u32(a + "rope.dimension_count", c_.head_dim());
        if (c_.head_size) {
            w.set_u32(a + "attention.key_length", c_.head_size);
            w.set_u32(a + "attention.value_length", c_.head_size);
        }
        w.set_f32(a + "rope.freq_base", c_.rope_base);
        if (c_.rope.type != RopeScaling::Type::None) {
            w.set_string(a + "rope.scaling.type", rope_scaling_name(c_.rope.type));
            w.set_f32(a + "rope.scaling.factor", c_.rope.factor);
            if (c_.rope.original_context)
                w.set_u32(a + "rope.scaling.original_context_length", c_.rope.original_context);
        }
        if (!c_.rope.frequency_factors.empty()) {  // as Llama 3.1+ files carry them
            const auto& ff = c_.rope.frequency_factors;
            w.add_tensor("rope_freqs.weight", {ff.size()}, uint32_t(GgmlType::F32),
                         ops::quantize(uint32_t(GgmlType::F32), ff, uint32_t(ff.size())));
        }
        w.set_f32(a + "attention.layer_norm_rms_epsilon", c_.eps);
        add_synthetic_vocabulary(w, c_.vocab);

        // rows x cols matrix, uniform with variance ~1/cols (activations keep their scale).
        auto matrix = [&](const std::string& name, uint32_t rows, uint32_t cols, float scale,
                          uint32_t t = ~0u) {
            if (t == ~0u) t = type;
            std::uniform_real_distribution<float> u(-scale, scale);
            std::vector<float> v(static_cast<size_t>(rows) * cols);
            for (auto& x : v) x = u(rng);
            auto enc = ops::quantize(t, v, cols);
            auto deq = ops::dequantize(t, enc, v.size());
            w.add_tensor(name, {cols, rows}, t, std::move(enc));
            return deq;
        };
        auto vector = [&](const std::string& name, uint32_t n) {
            std::uniform_real_distribution<float> u(0.8f, 1.2f);
            std::vector<float> v(n);
            for (auto& x : v) x = u(rng);
            v = ops::dequantize(norm_value_type_, ops::quantize(norm_value_type_, v, n), n);
            w.add_tensor(name, {n}, norm_storage_type_, ops::quantize(norm_storage_type_, v, n));
            return v;
        };
        auto lin = [](uint32_t cols) { return std::sqrt(3.0f / static_cast<float>(cols)); };
        embd_ = matrix("token_embd.weight", c_.vocab, c_.dim, 1.0f);
        out_norm_ = vector("output_norm.weight", c_.dim);
        lm_head_ = tied_ ? embd_ : matrix("output.weight", c_.vocab, c_.dim, lin(c_.dim));
        layers_.resize(c_.layers);
        for (uint32_t l = 0; l < c_.layers; ++l) {
            auto& L = layers_[l];
            const std::string p = "blk." + std::to_string(l) + ".";
            L.attn_norm = vector(p + "attn_norm.weight", c_.dim);
            L.ffn_norm = vector(p + "ffn_norm.weight", c_.dim);
            if (c_.qkv_bias) {
                // Large next to the products (as Qwen2's K biases are): a bias lost or misplaced
                // moves every logit.
                std::uniform_real_distribution<float> u(-1.0f, 1.0f);
                L.bqkv.clear();
                for (const auto& [piece, n] :
                     {std::pair{"attn_q.bias", c_.q_dim()}, std::pair{"attn_k.bias", c_.kv_dim()},
                      std::pair{"attn_v.bias", c_.kv_dim()}}) {
                    std::vector<float> b(n);
                    for (auto& x : b) x = u(rng);
                    w.add_tensor(p + piece, {n}, uint32_t(GgmlType::F32),
                                 ops::quantize(uint32_t(GgmlType::F32), b, n));
                    L.bqkv.insert(L.bqkv.end(), b.begin(), b.end());
                }
            }
            if (c_.qk_norm) {
                L.q_norm = vector(p + "attn_q_norm.weight", c_.head_dim());
                L.k_norm = vector(p + "attn_k_norm.weight", c_.head_dim());
            }
            auto q = matrix(p + "attn_q.weight", c_.q_dim(), c_.dim, lin(c_.dim));
            auto k = matrix(p + "attn_k.weight", c_.kv_dim(), c_.dim, lin(c_.dim), k_type_);
            auto v = matrix(p + "attn_v.weight", c_.kv_dim(), c_.dim, lin(c_.dim), v_type_);
            L.wqkv = q;
            L.wqkv.insert(L.wqkv.end(), k.begin(), k.end());
            L.wqkv.insert(L.wqkv.end(), v.begin(), v.end());
            L.wo = matrix(p + "attn_output.weight", c_.dim, c_.q_dim(), lin(c_.q_dim()));
            auto g = matrix(p + "ffn_gate.weight", c_.ffn, c_.dim, lin(c_.dim));
            auto u = matrix(p + "ffn_up.weight", c_.ffn, c_.dim, lin(c_.dim), up_type_);
            L.wgu = g;
            L.wgu.insert(L.wgu.end(), u.begin(), u.end());
            L.wd = matrix(p + "ffn_down.weight", c_.dim, c_.ffn, lin(c_.ffn), down_type_);
        }
        if (split_parts > 1)
            w.write_split(path, split_parts);
        else
            w.write(path);
        reset();
    }

    void reset() {
        const uint32_t blocks = (c_.context + kBlock - 1) / kBlock;
        kv_.assign(c_.layers, ops::ReferenceKv{c_.kv_heads, c_.head_dim(), kBlock, {}, {}});
        for (auto& kv : kv_) {
            kv.k.assign(static_cast<size_t>(blocks) * kBlock * c_.kv_dim(), 0.0f);
            kv.v = kv.k;
        }
        tables_.resize(blocks);
        for (uint32_t b = 0; b < blocks; ++b) tables_[b] = b;
        RopeScaling rope =
            c_.rope;  // without the key, the original context is the trained one (as the engine reads it)
        if (!rope.original_context) rope.original_context = c_.context;
        rope_ = ops::rope_table(c_.context, c_.head_dim(), c_.rope_base, rope);
        length_ = 0;
    }

    // Appends tokens; returns their logits, [tokens][vocab].
    std::vector<float> forward(const std::vector<int32_t>& tokens) {
        const uint32_t T = static_cast<uint32_t>(tokens.size()), D = c_.dim, F = c_.ffn;
        std::vector<float> x(static_cast<size_t>(T) * D);
        ops::reference_embed(embd_, D, tokens, x.data());
        std::vector<ops::TokenInfo> info;
        for (uint32_t t = 0; t < T; ++t) info.push_back({length_ + t, 0, length_ + t, 0});
        ops::AttentionShape a;
        a.n_head = c_.heads;
        a.n_kv = c_.kv_heads;
        a.head_dim = c_.head_dim();
        a.block = kBlock;
        a.n_rot = c_.head_dim();
        a.qkv_stride = c_.qkv_width();
        a.out_stride = c_.q_dim();
        a.kv_f16 = false;
        auto shape = [&](uint32_t x_stride, uint32_t y_stride, bool acc) {
            ops::MatmulShape s;
            s.tokens = T;
            s.x_stride = x_stride;
            s.y_stride = y_stride;
            s.accumulate = acc;
            s.eps = c_.eps;
            return s;
        };
        std::vector<float> qkv(static_cast<size_t>(T) * c_.qkv_width()),
            attn(static_cast<size_t>(T) * c_.q_dim()), gu(static_cast<size_t>(T) * 2 * F);
        // Rows [first, first + rows) of W, a matrix of weight type `type`, into y from column `first`:
        // its input in fixed point where the engine's kernels take it so (every step the tests run
        // here has as many tokens as the engine's, and so has the LM head: all positions, or one
        // when the engine wants the last one only and the step is short).
        auto matmul = [&](const std::vector<float>& W, uint32_t first, uint32_t rows, uint32_t cols,
                          uint32_t type, ops::MatmulInput in, const std::vector<float>& xs,
                          std::vector<float>& y, const std::vector<float>& norm, ops::MatmulShape s) {
            s.y_offset = first;
            ops::reference_matmul(std::span<const float>(W).subspan(static_cast<size_t>(first) * cols,
                                                                    static_cast<size_t>(rows) * cols),
                                  rows, cols, in, xs, y, norm, {}, s,
                                  ops::fixed_point_input(cpu_driver_, type, T));
        };
        const uint32_t KV = c_.kv_dim(), Q = c_.q_dim();
        for (uint32_t l = 0; l < c_.layers; ++l) {
            const auto& L = layers_[l];
            const auto qkv_shape = shape(D, c_.qkv_width(), false), gu_shape = shape(D, 2 * F, false);
            matmul(L.wqkv, 0, Q, D, type_, ops::MatmulInput::Norm, x, qkv, L.attn_norm, qkv_shape);
            matmul(L.wqkv, Q, KV, D, k_type_, ops::MatmulInput::Norm, x, qkv, L.attn_norm, qkv_shape);
            matmul(L.wqkv, Q + KV, KV, D, v_type_, ops::MatmulInput::Norm, x, qkv, L.attn_norm, qkv_shape);
            for (uint32_t t = 0; t < T && !L.bqkv.empty(); ++t)
                for (uint32_t i = 0; i < c_.qkv_width(); ++i)
                    qkv[static_cast<size_t>(t) * c_.qkv_width() + i] += L.bqkv[i];
            if (c_.qk_norm) ops::reference_qk_norm(a, qkv, T, L.q_norm, L.k_norm, c_.eps);
            ops::reference_rope_store(a, qkv, info, rope_, kv_[l], c_.arch != "llama");
            ops::reference_attention(a, qkv, info, tables_, kv_[l], attn);
            matmul(L.wo, 0, D, Q, type_, ops::MatmulInput::Plain, attn, x, {}, shape(Q, D, true));
            matmul(L.wgu, 0, F, D, type_, ops::MatmulInput::Norm, x, gu, L.ffn_norm, gu_shape);
            matmul(L.wgu, F, F, D, up_type_, ops::MatmulInput::Norm, x, gu, L.ffn_norm, gu_shape);
            matmul(L.wd, 0, D, F, down_type_, ops::MatmulInput::Silu, gu, x, {}, shape(2 * F, D, true));
        }
        std::vector<float> logits(static_cast<size_t>(T) * c_.vocab);
        matmul(lm_head_, 0, c_.vocab, D, type_, ops::MatmulInput::Norm, x, logits, out_norm_,
               shape(D, c_.vocab, false));
        length_ += T;
        return logits;
    }

private:
    static constexpr uint32_t kBlock = 16;
    struct Layer {
        std::vector<float> attn_norm, ffn_norm, wqkv, wo, wgu, wd;
        std::vector<float> bqkv;            // [Q | K | V] biases (Config::qkv_bias), empty without
        std::vector<float> q_norm, k_norm;  // per-head norms (Config::qk_norm), empty without
    };
    Config c_;
    bool tied_;
    uint32_t type_ = 0, k_type_ = 0, v_type_ = 0, up_type_ = 0, down_type_ = 0;
    uint32_t norm_value_type_ = 0, norm_storage_type_ = 0;  // F32
    bool cpu_driver_ = false;
    std::vector<float> embd_, out_norm_, lm_head_;
    std::vector<Layer> layers_;
    std::vector<ops::ReferenceKv> kv_;
    std::vector<uint32_t> tables_;
    std::vector<float> rope_;
    uint32_t length_ = 0;
};

struct Agreement {
    double num = 0, den = 0, max_abs = 0;
    int argmax_mismatch = 0;
    bool finite = true;
    void add(const float* got, const float* want, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            if (!std::isfinite(got[i])) finite = false;
            double d = static_cast<double>(got[i]) - want[i];
            num += d * d;
            den += static_cast<double>(want[i]) * want[i];
            max_abs = std::max(max_abs, std::fabs(d));
        }
        this->n += n;
        if (std::max_element(got, got + n) - got != std::max_element(want, want + n) - want)
            ++argmax_mismatch;
    }
    size_t n = 0;
    double nmse() const { return den > 0 ? num / den : num; }
    double rms() const { return n ? std::sqrt(den / static_cast<double>(n)) : 0.0; }
};

int32_t argmax(const std::vector<float>& v, size_t offset, size_t n) {
    return static_cast<int32_t>(std::max_element(v.begin() + static_cast<ptrdiff_t>(offset),
                                                 v.begin() + static_cast<ptrdiff_t>(offset + n)) -
                                (v.begin() + static_cast<ptrdiff_t>(offset)));
}

// Prefill of 40 random tokens (one step, all logits), then 10 decode steps feeding both sides the
// reference's greedy token: the engine's logits against `ref`'s.
struct Run {
    Agreement prefill, decode;
};
Run prefill_and_decode(Engine& engine, ReferenceModel& ref, const Config& c, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> prompt{1};
    while (prompt.size() < 40) prompt.push_back(static_cast<int32_t>(3 + rng() % (c.vocab - 3)));
    Run run;
    auto seq = engine.create_sequence();
    StepItem item{seq, prompt, true, true};
    auto rows = engine.step(std::span<const StepItem>(&item, 1));
    if (rows.size() != prompt.size())
        throw std::runtime_error("the prefill step returned the wrong number of rows");
    auto want = ref.forward(prompt);
    for (size_t i = 0; i < rows.size(); ++i)
        run.prefill.add(rows[i].data(), want.data() + i * c.vocab, c.vocab);
    int32_t next = argmax(want, (prompt.size() - 1) * c.vocab, c.vocab);
    for (int step = 0; step < 10; ++step) {
        StepItem d{seq, {next}, true, false};
        auto got = engine.step(std::span<const StepItem>(&d, 1));
        auto w = ref.forward({next});
        run.decode.add(got[0].data(), w.data(), c.vocab);
        next = argmax(w, 0, c.vocab);
    }
    return run;
}

// The K-quants need rows of whole 256-element blocks: a wider model for them (head_dim 64, GQA 2:1).
Config config_for(std::initializer_list<uint32_t> types) {
    Config c;
    for (uint32_t t : types)
        if (ops::find_weight_format(t)->block_elements == 256) {
            c.dim = 256;
            c.heads = 4;
            c.kv_heads = 2;
            c.ffn = 512;
        }
    return c;
}

// `c` as a model of `arch`: llama as it is; qwen2 with Q/K/V biases; qwen3 with per-head Q/K
// norms on heads twice as wide (Q twice the model's width); both with Qwen's RoPE base.
Config with_architecture(Config c, const std::string& arch) {
    c.arch = arch;
    if (arch == "llama") return c;
    c.rope_base = 1000000.0f;
    c.qkv_bias = arch == "qwen2";
    c.qk_norm = arch == "qwen3";
    if (c.qk_norm) {
        c.head_size = 2 * c.dim / c.heads;
        c.eps = 1e-6f;
    }
    return c;
}

EngineOptions options() {
    EngineOptions o = test::validated_engine_options();
    o.kv_f16 = false;
    o.context_length = 128;
    o.max_sequences = 2;
    o.max_step_tokens = 64;
    o.max_logit_rows = 64;
    return o;
}

}  // namespace

class RandomModelTest : public QObject {
    Q_OBJECT
private slots:
    void engine_matches_cpu_reference_data() {
        QTest::addColumn<uint32_t>("type");
        QTest::addColumn<bool>("tied");
        QTest::addColumn<uint32_t>("other_type");  // of the tensors `mix` names (see ReferenceModel::write)
        QTest::addColumn<bool>("v_and_down");      // mix: attn_v and ffn_down, else attn_k and ffn_up
        QTest::addColumn<bool>("gpu_layouts");     // EngineTestHooks::gpu_layouts
        const auto u = [](GgmlType t) { return static_cast<uint32_t>(t); };
        for (auto t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0})
            for (bool tied : {true, false})
                QTest::addRow("%s, %s output", ggml_type_name(u(t)), tied ? "tied" : "untied")
                    << u(t) << tied << u(t) << false << false;
        QTest::newRow("Q8_0 with F16 attn_k and ffn_up")
            << u(GgmlType::Q8_0) << false << u(GgmlType::F16) << false << false;
        // Types stored in another type's device layout: Q4_1 (Q4_K's), Q5_0, IQ4_NL, IQ4_XS
        // (Q8_0's), Q5_1 (Q5_K's), Q3_K (Q6_K's), BF16 (F32's).
        for (auto t : {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::IQ4_XS,
                       GgmlType::Q3_K, GgmlType::BF16})
            QTest::addRow("%s, untied output", ggml_type_name(u(t)))
                << u(t) << false << u(t) << false << false;
        // K-quants, and mixes: Q6_K beside Q4_K in a layer where Q/K/V and gate/up cannot be
        // stacked (the layer is not fused), and llama.cpp's Q4_K_M mix (Q6_K attn_v and ffn_down:
        // fused, its matmuls each in their own type).
        for (auto t : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
            QTest::addRow("%s, untied output", ggml_type_name(u(t)))
                << u(t) << false << u(t) << false << false;
        QTest::newRow("Q4_K, tied output")
            << u(GgmlType::Q4_K) << true << u(GgmlType::Q4_K) << false << false;
        QTest::newRow("Q4_K with Q6_K attn_k and ffn_up")
            << u(GgmlType::Q4_K) << false << u(GgmlType::Q6_K) << false << false;
        QTest::newRow("Q4_K with Q6_K attn_v and ffn_down")
            << u(GgmlType::Q4_K) << false << u(GgmlType::Q6_K) << true << false;
        // llama.cpp's Q3_K_M mix: Q5_K attn_v and ffn_down beside Q3_K.
        QTest::newRow("Q3_K with Q5_K attn_v and ffn_down")
            << u(GgmlType::Q3_K) << false << u(GgmlType::Q5_K) << true << false;
        // The path a GPU takes (row-major weights, split-K matmuls, attention splitting keys), here too.
        for (auto t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K,
                       GgmlType::Q5_K, GgmlType::Q6_K})
            QTest::addRow("%s, GPU layouts", ggml_type_name(u(t))) << u(t) << false << u(t) << false << true;
    }
    void engine_matches_cpu_reference() {
        QFETCH(uint32_t, type);
        QFETCH(bool, tied);
        QFETCH(uint32_t, other_type);
        QFETCH(bool, v_and_down);
        QFETCH(bool, gpu_layouts);
        matches_cpu_reference(config_for({type, other_type}), type, tied, other_type, v_and_down,
                              gpu_layouts);
    }

    // Qwen2's and Qwen3's layers against the same reference with their pieces added: qwen2 a bias
    // on Q, K and V (added before RoPE by the Q/K/V epilogue and the fused layer); qwen3 per-head
    // Q/K RMSNorm before RoPE and Q twice the model's width (as Qwen3-0.6B's 16 heads of 128 on
    // 1024). Both rotate NEOX pairs, which the reference rotates as the file means them. Prefill,
    // fused decode, a mix that runs separate kernels (qwen2) and the GPU layouts.
    void qwen_matches_cpu_reference_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<uint32_t>("type");
        QTest::addColumn<bool>("tied");
        QTest::addColumn<uint32_t>("other_type");
        QTest::addColumn<bool>("v_and_down");
        QTest::addColumn<bool>("gpu_layouts");
        const auto u = [](GgmlType t) { return static_cast<uint32_t>(t); };
        for (const char* arch : {"qwen2", "qwen3"}) {
            const QString a(arch);
            for (auto t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0})
                QTest::addRow("%s %s, tied output", arch, ggml_type_name(u(t)))
                    << a << u(t) << true << u(t) << false << false;
            QTest::addRow("%s Q4_K with Q6_K attn_v and ffn_down", arch)
                << a << u(GgmlType::Q4_K) << false << u(GgmlType::Q6_K) << true << false;
            for (auto t : {GgmlType::F32, GgmlType::Q8_0})
                QTest::addRow("%s %s, GPU layouts", arch, ggml_type_name(u(t)))
                    << a << u(t) << false << u(t) << false << true;
        }
        QTest::newRow("qwen2 Q8_0 with F16 attn_k and ffn_up")
            << QStringLiteral("qwen2") << u(GgmlType::Q8_0) << false << u(GgmlType::F16) << false << false;
        QTest::newRow("qwen2 Q4_K, GPU layouts")
            << QStringLiteral("qwen2") << u(GgmlType::Q4_K) << false << u(GgmlType::Q4_K) << false << true;
    }
    void qwen_matches_cpu_reference() {
        QFETCH(QString, arch);
        QFETCH(uint32_t, type);
        QFETCH(bool, tied);
        QFETCH(uint32_t, other_type);
        QFETCH(bool, v_and_down);
        QFETCH(bool, gpu_layouts);
        matches_cpu_reference(with_architecture(config_for({type, other_type}), arch.toStdString()), type,
                              tied, other_type, v_and_down, gpu_layouts);
    }

private:
    void matches_cpu_reference(const Config& c, uint32_t type, bool tied, uint32_t other_type,
                               bool v_and_down, bool gpu_layouts) {
        const std::string path = test::temp_dir() + "/random-" + c.arch + "-" + ggml_type_name(type) +
                                 (tied ? "-tied" : "") + "-" + ggml_type_name(other_type) +
                                 (v_and_down ? "-vd" : "") + (gpu_layouts ? "-gpu" : "") + ".gguf";
        ReferenceModel ref(c, tied);
        ref.write(path, type, 1000 + type * 2 + (tied ? 1 : 0), other_type,
                  v_and_down ? ReferenceModel::Mix::VAndDown : ReferenceModel::Mix::KAndUp);
        EngineOptions o = options();
        EngineTestHooks hooks;
        hooks.gpu_layouts = gpu_layouts;
        auto engine = load_engine_for_test(path, o, hooks);
        {
            // The bytes one decode step reads, by the device layout they are stored in (what
            // lantern-bench weighs against each layout's arithmetic roofline): the layouts of
            // the file's two matmul types, adding up to the total, tiles' slack not counted.
            // (BF16 goes to F16's layout when its values fit F16, else to F32's.)
            const ModelInfo& m = engine->model();
            auto layouts_of = [](uint32_t t) -> std::set<uint32_t> {
                if (t == uint32_t(GgmlType::BF16)) return {uint32_t(GgmlType::F32), uint32_t(GgmlType::F16)};
                return {ops::find_weight_format(t)->device_type};
            };
            std::set<uint32_t> layouts;
            uint64_t sum = 0;
            for (const auto& [layout, bytes] : m.decode_read_bytes_by_layout) {
                QVERIFY(bytes > 0);
                QVERIFY(layouts_of(type).count(layout) || layouts_of(other_type).count(layout));
                layouts.insert(layout);
                sum += bytes;
            }
            for (uint32_t t : {type, other_type}) {
                const auto allowed = layouts_of(t);
                QVERIFY(std::any_of(layouts.begin(), layouts.end(),
                                    [&](uint32_t l) { return allowed.count(l) > 0; }));
            }
            QCOMPARE(sum, m.decode_read_bytes);
            QVERIFY(m.decode_read_bytes < m.weight_bytes);
        }
        // The reference rounds as the engine's matmul layout does (fixed-point decode input on the
        // CPU layouts only).
        ref.set_cpu_driver(engine->device().type == DeviceType::Cpu && !gpu_layouts);
        QCOMPARE(engine->model().n_kv_heads, c.kv_heads);
        QCOMPARE(engine->model().tied_output, tied);
        QCOMPARE(engine->model().architecture, c.arch);
        QCOMPARE(engine->model().qkv_bias, c.qkv_bias);
        QCOMPARE(engine->tokenizer().vocab_size(), int32_t(c.vocab));

        // The vocabulary loads as a tokenizer: text round-trips (letters as pieces, the rest as bytes).
        const std::string text = "a cat, 42 \xC3\xA9t\xC3\xA9s!";
        auto ids = engine->tokenizer().encode(text, true);
        QCOMPARE(ids.front(), int32_t(1));
        QCOMPARE(engine->tokenizer().decode(std::span<const int32_t>(ids).subspan(1)), text);

        const auto [prefill, decode] = prefill_and_decode(*engine, ref, c, 7 + type);
        qInfo(
            "%s %s: prefill 40 x %u logits NMSE %.3g max |diff| %.3g; decode 10 steps NMSE %.3g max |diff| "
            "%.3g "
            "(logits RMS %.3g)",
            ggml_type_name(type), tied ? "tied" : "untied", c.vocab, prefill.nmse(), prefill.max_abs,
            decode.nmse(), decode.max_abs, decode.rms());
        // On lavapipe the decode steps ran fused layers (the fused decode layer),
        // unless Q/K/V came in three stacks or gate/up could not be interleaved (other types on
        // attn_k and ffn_up); elsewhere the separate kernels. (A fused
        // step can fall back to the separate kernels when a thread is preempted for ~50 ms on a
        // loaded machine; it is then counted.)
        const bool lavapipe = engine->device().name.find("llvmpipe") != std::string::npos;
        const auto& prof = engine->last_step_profile();
        QCOMPARE(prof.fused_layers || prof.fused_fallbacks > 0,
                 lavapipe && (other_type == type || v_and_down) && !gpu_layouts);
        for (const auto* a : {&prefill, &decode}) {
            QVERIFY2(a->finite, "the engine produced NaN/Inf logits");
            QVERIFY2(a->nmse() < kLogitNmse,
                     qPrintable(QString("NMSE %1 >= %2").arg(a->nmse()).arg(kLogitNmse)));
            const double bound = kLogitMaxAbs * std::max(1.0, a->rms());
            QVERIFY2(a->max_abs < bound,
                     qPrintable(QString("max |diff| %1 >= %2").arg(a->max_abs).arg(bound)));
            QCOMPARE(a->argmax_mismatch, 0);
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

private slots:
    // RoPE scaling of context-extended models (rope.scaling.*, and rope_freqs.weight of Llama 3.1+;
    // lantern/rope.h): the engine matches the reference that rotates as the scaling says, and
    // clearly not the one that ignores it, so the test fails if the engine drops it. (The table
    // itself: test_op_attention rope_table_angles.)
    void rope_scaling_matches_reference_data() {
        QTest::addColumn<uint32_t>("type");
        QTest::addColumn<int>("scaling");  // RopeScaling::Type
        QTest::addColumn<float>("factor");
        QTest::addColumn<uint32_t>("original");       // YaRN's original context (0: the trained one)
        QTest::addColumn<bool>("frequency_factors");  // rope_freqs.weight (Llama 3.1+)
        const auto q8 = uint32_t(GgmlType::Q8_0), f32 = uint32_t(GgmlType::F32);
        const int linear = int(RopeScaling::Type::Linear), yarn = int(RopeScaling::Type::Yarn);
        const int none = int(RopeScaling::Type::None);
        QTest::newRow("Q8_0, linear x4") << q8 << linear << 4.0f << 0u << false;
        QTest::newRow("F32, linear x2.5") << f32 << linear << 2.5f << 0u << false;
        QTest::newRow("Q8_0, YaRN x4 over 32") << q8 << yarn << 4.0f << 32u << false;
        QTest::newRow("F32, YaRN x8") << f32 << yarn << 8.0f << 0u << false;
        QTest::newRow("Q8_0, frequency factors") << q8 << none << 1.0f << 0u << true;
        QTest::newRow("F32, linear x2 and frequency factors") << f32 << linear << 2.0f << 0u << true;
    }
    void rope_scaling_matches_reference() {
        QFETCH(uint32_t, type);
        QFETCH(int, scaling);
        QFETCH(float, factor);
        QFETCH(uint32_t, original);
        QFETCH(bool, frequency_factors);
        Config c = config_for({type});
        c.rope.type = static_cast<RopeScaling::Type>(scaling);
        c.rope.factor = factor;
        c.rope.original_context = original;
        if (frequency_factors)  // Llama 3.1's shape: 1 for the fast pairs, up to 8 for the slow ones
            for (uint32_t i = 0; i < c.head_dim() / 2; ++i)
                c.rope.frequency_factors.push_back(i < 2 ? 1.0f : i < 5 ? 2.5f : 8.0f);
        Config unscaled = c;
        unscaled.rope = {};
        const std::string path = test::temp_dir() + "/random-rope-" + std::to_string(scaling) +
                                 (frequency_factors ? "-ff-" : "-") + ggml_type_name(type) + ".gguf";
        ReferenceModel ref(c, false), ignoring(unscaled, false);
        ref.write(path, type, 77);
        ignoring.write(path + ".unscaled.gguf", type, 77);  // same seed: the same weights
        auto engine = Engine::load(path, options());
        const RopeScaling& got = engine->model().rope_scaling;
        QVERIFY(got.type == c.rope.type);
        QCOMPARE(got.factor, factor);
        QCOMPARE(got.original_context, original ? original : c.context);
        QCOMPARE(got.frequency_factors, c.rope.frequency_factors);
        const bool cpu_layouts = engine->device().type == DeviceType::Cpu;
        ref.set_cpu_driver(cpu_layouts);
        ignoring.set_cpu_driver(cpu_layouts);
        const auto run = prefill_and_decode(*engine, ref, c, 5);
        auto engine2 = Engine::load(path, options());
        const auto wrong = prefill_and_decode(*engine2, ignoring, c, 5);
        qInfo("%s, %s x%g: prefill NMSE %.3g, decode %.3g; against the unscaled reference %.3g / %.3g",
              ggml_type_name(type), rope_scaling_name(c.rope.type), factor, run.prefill.nmse(),
              run.decode.nmse(), wrong.prefill.nmse(), wrong.decode.nmse());
        for (const auto* a : {&run.prefill, &run.decode}) {
            QVERIFY(a->finite);
            QVERIFY2(a->nmse() < kLogitNmse,
                     qPrintable(QString("NMSE %1 >= %2").arg(a->nmse()).arg(kLogitNmse)));
            QCOMPARE(a->argmax_mismatch, 0);
        }
        QVERIFY2(wrong.prefill.nmse() > 1e-4,
                 "the scaling made no difference: the test cannot tell it from none");
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // The fused decode layers (one dispatch per run of layers, ops::DecodeLayerOp) compute exactly what the
    // separate kernels compute: same routines, same order of operations, so the logits of every
    // decode step are bit for bit the same, for every weight and KV type. The odd shape (F32/F16:
    // quantized rows need whole blocks) has rows that are not multiples of 4 floats,
    // a head dimension of 10 (no whole 16-byte KV chunks) and 9 heads (a partial group of 8).
    void fused_layers_match_separate_kernels_data() {
        QTest::addColumn<uint32_t>("type");
        QTest::addColumn<bool>("kv_f16");
        QTest::addColumn<bool>("odd");
        QTest::addColumn<uint32_t>("v_down_type");  // of attn_v and ffn_down (a layer of mixed types)
        QTest::addColumn<bool>("nine_heads");       // 9 heads of 32: lanes own heads for 1-4 tokens
        // 32 heads of 8, 4 per KV head: lanes own two heads each (ops::heads_per_lane_for on 2 threads)
        QTest::addColumn<bool>("many_heads");
        QTest::addColumn<QString>(
            "arch");  // llama; qwen2 (Q/K/V biases); qwen3 (Q/K norms in the band, Q 2x wide)
        const auto u = [](GgmlType t) { return static_cast<uint32_t>(t); };
        for (auto t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K,
                       GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                       GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::Q3_K, GgmlType::BF16})
            for (bool kv_f16 : {true, false})
                for (bool odd : {false, true}) {
                    if (odd && ops::find_weight_format(u(t))->block_elements > 1) continue;
                    QTest::addRow("%s, %s KV%s", ggml_type_name(u(t)), kv_f16 ? "F16" : "F32",
                                  odd ? ", odd shape" : "")
                        << u(t) << kv_f16 << odd << u(t) << false << false << QStringLiteral("llama");
                }
        // Mixed layers: Q4_K_M's (Q6_K attn_v and ffn_down beside Q4_K), Q5_K_M's, Q3_K_M's, and a float V
        // and down beside Q8_0 (zero-padded float groups in the second Q/K/V stack).
        for (auto [t, o] :
             {std::pair{GgmlType::Q4_K, GgmlType::Q6_K}, std::pair{GgmlType::Q5_K, GgmlType::Q6_K},
              std::pair{GgmlType::Q3_K, GgmlType::Q5_K}, std::pair{GgmlType::Q8_0, GgmlType::F16}})
            for (bool kv_f16 : {true, false})
                QTest::addRow("%s with %s attn_v and ffn_down, %s KV", ggml_type_name(u(t)),
                              ggml_type_name(u(o)), kv_f16 ? "F16" : "F32")
                    << u(t) << kv_f16 << false << u(o) << false << false << QStringLiteral("llama");
        // Quantized layers whose 2-4 token steps run fused (the shapes above split keys
        // for one token there): the fused layer's tokens-per-lane variants over integer weights.
        for (auto t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::IQ4_NL})
            QTest::addRow("%s, F16 KV, nine heads", ggml_type_name(u(t)))
                << u(t) << true << false << u(t) << true << false << QStringLiteral("llama");
        // GQA with two query heads per lane (F32 KV there: test_op_attention).
        QTest::newRow("Q8_0, F16 KV, 32 heads of 4 per KV head")
            << u(GgmlType::Q8_0) << true << false << u(GgmlType::Q8_0) << false << true
            << QStringLiteral("llama");
        // Qwen2's biases and Qwen3's per-head norms (whole heads in each Q/K/V band), alone, in a
        // mixed layer, and in steps of 2-4 tokens (nine heads).
        for (const char* arch : {"qwen2", "qwen3"}) {
            QTest::addRow("%s Q8_0, F16 KV", arch)
                << u(GgmlType::Q8_0) << true << false << u(GgmlType::Q8_0) << false << false << QString(arch);
            QTest::addRow("%s F32, F32 KV", arch)
                << u(GgmlType::F32) << false << false << u(GgmlType::F32) << false << false << QString(arch);
            QTest::addRow("%s Q4_K with Q6_K attn_v and ffn_down, F16 KV", arch)
                << u(GgmlType::Q4_K) << true << false << u(GgmlType::Q6_K) << false << false << QString(arch);
            QTest::addRow("%s Q8_0, F16 KV, nine heads", arch)
                << u(GgmlType::Q8_0) << true << false << u(GgmlType::Q8_0) << true << false << QString(arch);
        }
    }
    void fused_layers_match_separate_kernels() {
        QFETCH(uint32_t, type);
        QFETCH(bool, kv_f16);
        QFETCH(bool, odd);
        QFETCH(uint32_t, v_down_type);
        QFETCH(bool, nine_heads);
        QFETCH(bool, many_heads);
        QFETCH(QString, arch);
        Config c = config_for({type, v_down_type});
        if (odd) {
            c.dim = 90;
            c.heads = 9;
            c.kv_heads = 3;
            c.ffn = 150;
        }
        if (nine_heads) {
            c.dim = 288;
            c.heads = 9;
            c.kv_heads = 3;
            c.ffn = 320;
        }
        if (many_heads) {
            c.dim = 256;
            c.heads = 32;
            c.kv_heads = 8;
            c.ffn = 320;
        }
        c = with_architecture(c, arch.toStdString());
        const std::string path = test::temp_dir() + "/fused-" + c.arch + "-" + ggml_type_name(type) +
                                 (odd ? "-odd" : "") + (nine_heads ? "-nine" : "") +
                                 (many_heads ? "-many" : "") + "-" + ggml_type_name(v_down_type) + ".gguf";
        ReferenceModel ref(c, false);
        ref.write(path, type, 3000 + type, v_down_type, ReferenceModel::Mix::VAndDown);
        auto o = options();
        o.kv_f16 = kv_f16;
        auto fused = Engine::load(path, o);
        // Elsewhere (GPUs) both engines run the separate kernels; the comparison still holds.
        const bool lavapipe = fused->device().name.find("llvmpipe") != std::string::npos;
        o.fused_decode = false;
        auto separate = Engine::load(path, o);
        std::mt19937 rng(5 + type);
        std::vector<int32_t> prompt{1};
        while (prompt.size() < 24) prompt.push_back(static_cast<int32_t>(3 + rng() % (c.vocab - 3)));
        auto sf = fused->create_sequence(), ss = separate->create_sequence();
        int fused_steps = 0;
        auto lf = fused->prefill(sf, prompt);
        QCOMPARE(lf, separate->prefill(ss, prompt));
        // Steps of two, three and four tokens (as for sequences decoding together, or a short
        // prompt; the fused layer's tokens-per-lane variants): fused too where the separate
        // attention kernel splits its work for them as for one — with 9 heads (two groups of 8)
        // lanes own heads either way; with 6, one token splits keys and more do not, so those
        // steps run the separate kernels.
        for (const auto& tokens : {std::vector<int32_t>{5, 6}, std::vector<int32_t>{7, 8, 9},
                                   std::vector<int32_t>{10, 11, 12, 13}}) {
            StepItem a{sf, tokens, true, true}, b{ss, tokens, true, true};
            const auto ra = fused->step(std::span<const StepItem>(&a, 1));
            const auto& prof = fused->last_step_profile();  // (a fallback on a loaded machine counts)
            QCOMPARE(prof.fused_layers || prof.fused_fallbacks > 0,
                     lavapipe && (odd || nine_heads || many_heads));
            QVERIFY2(ra == separate->step(std::span<const StepItem>(&b, 1)),
                     qPrintable(QString("a %1-token step differs").arg(tokens.size())));
            lf = ra.back();
        }
        for (int step = 0; step < 12; ++step) {
            const int32_t next = argmax(lf, 0, c.vocab);
            StepItem a{sf, {next}, true, false}, b{ss, {next}, true, false};
            lf = fused->step(std::span<const StepItem>(&a, 1))[0];
            const auto ls = separate->step(std::span<const StepItem>(&b, 1))[0];
            fused_steps += fused->last_step_profile().fused_layers ? 1 : 0;
            QVERIFY(!separate->last_step_profile().fused_layers);
            QVERIFY2(lf == ls,
                     qPrintable(QString("decode step %1: fused and separate logits differ").arg(step)));
        }
        // Every step ran fused on lavapipe, but for any that fell back (a thread preempted for
        // ~50 ms on a loaded machine: counted, and computed by the separate kernels).
        const uint32_t fallbacks = fused->last_step_profile().fused_fallbacks;
        qInfo("%d of 12 decode steps fused, %u fell back", fused_steps, fallbacks);
        QCOMPARE(uint32_t(fused_steps) + fallbacks, lavapipe ? 12u : 0u);
        QVERIFY(!lavapipe || fused_steps >= 9);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Converted GGUFs keep 1-D tensors in F32, but nothing in the format says so: a file whose
    // norm weights are F16 or BF16 runs exactly as the same file with those values in F32 (the
    // engine converts them on load; read as the floats they are not, the logits would differ).
    // A split model (three files, gguf-split's naming) loads by its first file and computes
    // exactly what the same model in one file computes.
    void split_model_matches_the_single_file() {
        const uint32_t type = uint32_t(GgmlType::Q8_0);
        const Config c = config_for({type});
        const std::string one = test::temp_dir() + "/random-unsplit.gguf",
                          prefix = test::temp_dir() + "/random-split";
        ReferenceModel a(c, false), b(c, false);
        a.write(one, type, 99);
        b.write(prefix, type, 99, ~0u, ReferenceModel::Mix::KAndUp, 3);
        auto whole = Engine::load(one, options());
        auto split = Engine::load(gguf_split_path(prefix, 1, 3), options());
        QCOMPARE(split->model().parameters, whole->model().parameters);
        QCOMPARE(split->model().weight_bytes, whole->model().weight_bytes);
        std::vector<int32_t> prompt{1, 17, 42, 99, 5, 230, 7};
        auto s1 = whole->create_sequence(), s2 = split->create_sequence();
        QVERIFY(whole->prefill(s1, prompt) == split->prefill(s2, prompt));
        for (int32_t t : {3, 8, 150}) {
            StepItem i1{s1, {t}, true, false}, i2{s2, {t}, true, false};
            QVERIFY(whole->step(std::span<const StepItem>(&i1, 1))[0] ==
                    split->step(std::span<const StepItem>(&i2, 1))[0]);
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void norms_in_f16_or_bf16_run_as_f32() {
        const uint32_t q8 = static_cast<uint32_t>(GgmlType::Q8_0), f32 = static_cast<uint32_t>(GgmlType::F32);
        for (uint32_t t : {static_cast<uint32_t>(GgmlType::F16), static_cast<uint32_t>(GgmlType::BF16)}) {
            const Config c = config_for({q8});
            std::vector<std::vector<float>> logits;
            for (uint32_t storage : {f32, t}) {
                ReferenceModel ref(c, false);
                ref.set_norms(t, storage);
                const std::string path = test::temp_dir() + "/norms-" + ggml_type_name(storage) + ".gguf";
                ref.write(path, q8, 77);
                if (storage != f32)
                    QCOMPARE(GgufFile::open(path)->find_tensor("blk.0.attn_norm.weight")->type, storage);
                auto engine = Engine::load(path, options());
                auto seq = engine->create_sequence();
                const std::vector<int32_t> prompt{1, 7, 9, 11};
                auto last = engine->prefill(seq, prompt);
                std::vector<float> all = last;
                for (int i = 0; i < 3; ++i) {
                    StepItem item{seq, {argmax(last, 0, c.vocab)}, true, false};
                    last = engine->step(std::span<const StepItem>(&item, 1))[0];
                    all.insert(all.end(), last.begin(), last.end());
                }
                logits.push_back(all);
            }
            QVERIFY2(logits[0] == logits[1], ggml_type_name(t));
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // lantern-bench's synthetic shapes by name, and any other written out as
    // DIM/LAYERS/HEADS/KV_HEADS/FFN/VOCAB (untied LM head); shapes the engine cannot run refused.
    void synthetic_shapes_by_name_and_written_out() {
        const SyntheticShape named = synthetic_shape("110m"),
                             written = synthetic_shape("768/12/12/12/2048/32000");
        QCOMPARE(written.dim, named.dim);
        QCOMPARE(written.n_layers, named.n_layers);
        QCOMPARE(written.n_heads, named.n_heads);
        QCOMPARE(written.n_kv_heads, named.n_kv_heads);
        QCOMPARE(written.ffn_dim, named.ffn_dim);
        QCOMPARE(written.vocab, named.vocab);
        QVERIFY(!written.tied_output);
        const SyntheticShape gqa = synthetic_shape("2048/4/32/4/5632/512");
        QCOMPARE(gqa.n_kv_heads, 4u);
        QCOMPARE(gqa.n_layers, 4u);
        // The Qwen shapes, and modifiers that shrink one for tests.
        const SyntheticShape qwen2 = synthetic_shape("qwen2.5-0.5b");
        QCOMPARE(qwen2.architecture, std::string("qwen2"));
        QVERIFY(qwen2.qkv_bias && !qwen2.qk_norm && qwen2.tied_output);
        QCOMPARE(qwen2.head_size(), 64u);
        QCOMPARE(qwen2.vocab, 151936u);
        const SyntheticShape qwen3 =
            synthetic_shape("qwen3-0.6b,layers=2,vocab=1024,untied=1,output_std=0.5");
        QCOMPARE(qwen3.architecture, std::string("qwen3"));
        QVERIFY(qwen3.qk_norm && !qwen3.qkv_bias && !qwen3.tied_output);
        QCOMPARE(qwen3.head_size(), 128u);  // 16 heads of 128 on a width of 1024
        QCOMPARE(qwen3.n_layers, 2u);
        QCOMPARE(qwen3.vocab, 1024u);
        QCOMPARE(qwen3.output_std, 0.5f);
        for (const char* bad :
             {"768/12/12/5/2048/32000", "770/12/12/12/2048/32000", "768/0/12/12/2048/32000",
              "768/12/12/12/2048", "768/12/12/12/2048/32000x", "huge", "qwen3-0.6b,layers=0",
              "qwen3-0.6b,vocab=100", "qwen3-0.6b,output_std=1", "qwen3-0.6b,colour=red"}) {
            bool refused = false;
            try {
                synthetic_shape(bad);
            } catch (const Error& e) {
                refused = e.code() == ErrorCode::InvalidArgument;
            }
            QVERIFY2(refused, bad);
        }
    }

    // lantern-bench's Q4_K_M-like synthetic model (kSyntheticQ4KM): Q4_K, with Q6_K for the
    // output and for attn_v and ffn_down in the "more bits" layers, as llama.cpp's Q4_K_M files.
    // It loads and runs; on lavapipe every layer is fused, the mixed ones too (Q and K stacked in
    // Q4_K, V alone in Q6_K: one Q/K/V op of two matmuls in the layer's one dispatch).
    void synthetic_q4_k_m_mix_loads_and_runs() {
        SyntheticShape shape;
        shape.name = "mix";
        shape.dim = 256;
        shape.n_layers = 8;
        shape.n_heads = 4;
        shape.n_kv_heads = 2;
        shape.ffn_dim = 512;
        shape.vocab = 300;
        shape.context_length = 128;
        shape.tied_output = false;
        const std::string path = test::temp_dir() + "/synthetic-q4_k_m.gguf";
        write_synthetic_model(shape, kSyntheticQ4KM, path, 5);
        auto file = GgufFile::open(path);
        const uint32_t q4k = static_cast<uint32_t>(GgmlType::Q4_K),
                       q6k = static_cast<uint32_t>(GgmlType::Q6_K);
        QCOMPARE(file->find_tensor("output.weight")->type, q6k);
        QCOMPARE(file->find_tensor("token_embd.weight")->type, q4k);
        const std::vector<uint32_t> more_bits = {0, 3, 6, 7};  // first and last eighth, every third between
        for (uint32_t l = 0; l < shape.n_layers; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            const bool more = std::find(more_bits.begin(), more_bits.end(), l) != more_bits.end();
            QCOMPARE(file->find_tensor(p + "attn_v.weight")->type, more ? q6k : q4k);
            QCOMPARE(file->find_tensor(p + "ffn_down.weight")->type, more ? q6k : q4k);
            QCOMPARE(file->find_tensor(p + "attn_q.weight")->type, q4k);
            QCOMPARE(file->find_tensor(p + "attn_norm.weight")->type, static_cast<uint32_t>(GgmlType::F32));
        }
        auto engine = Engine::load(path, options());
        auto seq = engine->create_sequence();
        const std::vector<int32_t> prompt{1, 40, 41, 42};
        auto logits = engine->prefill(seq, prompt);
        for (int i = 0; i < 3; ++i) {
            const auto next =
                static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
            StepItem item{seq, {next}, true, false};
            logits = engine->step(std::span<const StepItem>(&item, 1))[0];
            QVERIFY(std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }));
        }
        const bool lavapipe = engine->device().name.find("llvmpipe") != std::string::npos;
        const auto& prof = engine->last_step_profile();
        QCOMPARE(prof.fused_layers || prof.fused_fallbacks > 0, lavapipe);
        // One dispatch per run of consecutive layers of the same types (a run's layers share one
        // kernel; here [0], [1, 2], [3], [4, 5], [6, 7]), plus the embedding and the LM head.
        uint32_t runs = 0;
        for (uint32_t l = 0; l < shape.n_layers; ++l) {
            const bool more = std::find(more_bits.begin(), more_bits.end(), l) != more_bits.end();
            const bool more_before =
                l > 0 && std::find(more_bits.begin(), more_bits.end(), l - 1) != more_bits.end();
            runs += (l == 0 || more != more_before) ? 1 : 0;
        }
        QCOMPARE(runs, 5u);
        if (prof.fused_layers) QCOMPARE(prof.dispatches, runs + 2);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Fused layers run as runs of consecutive layers, one dispatch each, and a run ends where its
    // layers' caches leave one buffer (a model whose caches exceed one storage-buffer view): with
    // the caches of 1, 2 and all 3 layers to a buffer, 3, 2 and 1 runs, each computing what the
    // separate kernels compute.
    void fused_runs_end_where_the_caches_leave_a_buffer_data() {
        QTest::addColumn<uint32_t>("per_buffer");
        QTest::addColumn<uint32_t>("runs");
        QTest::newRow("one layer per buffer") << 1u << 3u;
        QTest::newRow("two layers per buffer") << 2u << 2u;
        QTest::newRow("as many as fit") << 0u << 1u;
    }
    void fused_runs_end_where_the_caches_leave_a_buffer() {
        QFETCH(uint32_t, per_buffer);
        QFETCH(uint32_t, runs);
        Config c;  // 3 layers
        c.dim = 288;
        c.heads = 9;  // lanes own heads for one token (two groups of 8), as in real models
        c.kv_heads = 3;
        c.ffn = 320;
        QCOMPARE(c.layers, 3u);
        const std::string path = test::temp_dir() + "/fused-runs.gguf";
        ReferenceModel ref(c, false);
        ref.write(path, static_cast<uint32_t>(GgmlType::Q8_0), 4100);
        auto o = options();
        EngineTestHooks hooks;
        hooks.kv_layers_per_buffer = per_buffer;
        auto fused = load_engine_for_test(path, o, hooks);
        const bool lavapipe =
            fused->device().name.find("llvmpipe") != std::string::npos;  // else no fused layers
        o.fused_decode = false;
        auto separate = Engine::load(path, o);
        const std::vector<int32_t> prompt{1, 17, 42, 99, 5};
        auto sf = fused->create_sequence(), ss = separate->create_sequence();
        auto lf = fused->prefill(sf, prompt);
        QCOMPARE(lf, separate->prefill(ss, prompt));
        uint32_t fused_steps = 0;
        for (int step = 0; step < 6; ++step) {
            const int32_t next = argmax(lf, 0, c.vocab);
            StepItem a{sf, {next}, true, false}, b{ss, {next}, true, false};
            lf = fused->step(std::span<const StepItem>(&a, 1))[0];
            QVERIFY2(lf == separate->step(std::span<const StepItem>(&b, 1))[0],
                     qPrintable(QString("decode step %1: fused and separate logits differ").arg(step)));
            const auto& p = fused->last_step_profile();
            if (p.fused_layers) {
                ++fused_steps;
                QCOMPARE(p.dispatches, runs + 2);  // the runs, the embedding and the LM head
            }
        }
        QCOMPARE(fused_steps + fused->last_step_profile().fused_fallbacks, lavapipe ? 6u : 0u);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A fused step whose wait gives up (here: layer 1's attention items look claimed by a
    // workgroup that never finishes them) runs again with the separate kernels after its first
    // layer already wrote x and the KV cache: the rerun must rewrite all of it, so the logits are
    // those of an engine without fused layers. After three such steps the fused layers stay off.
    void fused_step_that_gives_up_reruns_with_separate_kernels() {
        const Config c;
        const std::string path = test::temp_dir() + "/fused-stall.gguf";
        ReferenceModel ref(c, false);
        ref.write(path, static_cast<uint32_t>(GgmlType::Q8_0), 4000);
        auto o = options();
        o.kv_f16 = true;
        EngineTestHooks hooks;
        hooks.fused_decode_stall_layer = 1;
        auto stalled = load_engine_for_test(path, o, hooks);
        const bool lavapipe =
            stalled->device().name.find("llvmpipe") != std::string::npos;  // else no fused layers
        o.fused_decode = false;
        auto separate = Engine::load(path, o);
        const std::vector<int32_t> prompt{1, 17, 42, 99, 5};
        auto s1 = stalled->create_sequence(), s2 = separate->create_sequence();
        auto l1 = stalled->prefill(s1, prompt);
        QCOMPARE(l1, separate->prefill(s2, prompt));
        for (uint32_t step = 0; step < 5; ++step) {
            const int32_t next = argmax(l1, 0, c.vocab);
            StepItem a{s1, {next}, true, false}, b{s2, {next}, true, false};
            l1 = stalled->step(std::span<const StepItem>(&a, 1))[0];
            QVERIFY2(l1 == separate->step(std::span<const StepItem>(&b, 1))[0],
                     qPrintable(QString("decode step %1: the rerun's logits differ").arg(step)));
            const auto& p = stalled->last_step_profile();
            QVERIFY(!p.fused_layers);  // every step ended on the separate kernels
            QCOMPARE(p.fused_fallbacks, lavapipe ? std::min(step + 1, 3u) : 0u);
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void greedy_tokens_match_cpu_reference_data() {
        QTest::addColumn<uint32_t>("type");
        for (auto t : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K,
                       GgmlType::Q6_K, GgmlType::Q5_0})
            QTest::newRow(ggml_type_name(static_cast<uint32_t>(t))) << static_cast<uint32_t>(t);
    }
    // Greedy decoding run independently on both sides (each feeds back its own choice) picks the
    // same 20 tokens. Prompt: BOS and 20 random tokens, fed through Engine::prefill in chunks of 8.
    void greedy_tokens_match_cpu_reference() {
        QFETCH(uint32_t, type);
        const Config c = config_for({type});
        const std::string path = test::temp_dir() + "/greedy-" + ggml_type_name(type) + ".gguf";
        ReferenceModel ref(c, false);
        ref.write(path, type, 2000 + type);
        auto o = options();
        o.max_step_tokens = 8;
        auto engine = Engine::load(path, o);
        ref.set_cpu_driver(engine->device().type == DeviceType::Cpu);
        std::mt19937 rng(99 + type);
        std::vector<int32_t> prompt{1};
        while (prompt.size() < 21) prompt.push_back(static_cast<int32_t>(3 + rng() % (c.vocab - 3)));

        auto seq = engine->create_sequence();
        auto logits = engine->prefill(seq, prompt);
        auto ref_logits = ref.forward(prompt);
        std::vector<int32_t> got, want;
        int32_t want_next = argmax(ref_logits, (prompt.size() - 1) * c.vocab, c.vocab);
        for (int i = 0; i < 20; ++i) {
            int32_t g = argmax(logits, 0, c.vocab);
            got.push_back(g);
            want.push_back(want_next);
            StepItem d{seq, {g}, true, false};
            logits = engine->step(std::span<const StepItem>(&d, 1))[0];
            ref_logits = ref.forward({want_next});
            want_next = argmax(ref_logits, 0, c.vocab);
        }
        QString g_s, w_s;
        for (int i = 0; i < 20; ++i) {
            g_s += QString::number(got[i]) + " ";
            w_s += QString::number(want[i]) + " ";
        }
        qInfo("%s greedy: %s", ggml_type_name(type), qPrintable(g_s));
        QVERIFY2(got == want, qPrintable("engine " + g_s + "\nreference " + w_s));
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(RandomModelTest)
#include "test_random_model.moc"
