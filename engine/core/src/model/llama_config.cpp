#include "model/llama_config.h"

#include <cmath>
#include <cstring>
#include <map>

#include "lantern/error.h"

namespace lantern {
bool supported_architecture(std::string_view architecture) {
    return architecture == "llama" || architecture == "qwen2" || architecture == "qwen3" ||
           architecture == "phi3" || architecture == "gemma2" || architecture == "gemma3";
}
}  // namespace lantern

namespace lantern::model {

namespace {
uint32_t required(const GgufFile& g, const std::string& key) {
    auto v = g.get_int(key);
    if (!v)
        throw Error(ErrorCode::InvalidModelFile, g.path() + ": required metadata \"" + key + "\" is missing");
    if (*v <= 0 || *v > (1 << 24))
        throw Error(ErrorCode::InvalidModelFile,
                    g.path() + ": metadata \"" + key + "\" = " + std::to_string(*v) + " is out of range");
    return static_cast<uint32_t>(*v);
}

// Gemma 2 and 3: what differs from Llama, read as llama.cpp reads it (src/models/gemma2.cpp and
// gemma3.cpp: the same defaults, the same layer pattern, the same query scale).
void read_gemma(const GgufFile& g, ModelInfo& m) {
    const bool gemma2 = m.architecture == "gemma2";
    if (!gemma2 && m.architecture != "gemma3") return;
    const std::string a = m.architecture + ".";
    m.embed_scale = std::sqrt(static_cast<float>(m.dim));
    m.post_norms = true;
    m.gelu = true;
    m.tied_output = gemma2 || m.tied_output;  // gemma2 always reads its LM head from token_embd
    // The 27B models scale queries by 1 / sqrt(width / heads), the others by 1 / sqrt(head size);
    // llama.cpp tells the 27B models by their layer count (46 for Gemma 2, 62 for Gemma 3).
    if (m.n_layers == (gemma2 ? 46u : 62u)) m.attn_scale = 1.0f / std::sqrt(float(m.dim / m.n_heads));
    const auto number = [&](const std::string& key, float fallback) {
        const auto v = g.get_float(a + key);
        if (v && (!std::isfinite(*v) || *v < 0.0))
            throw Error(ErrorCode::InvalidModelFile,
                        g.path() + ": metadata \"" + a + key + "\" = " + std::to_string(*v) + " is invalid");
        return v ? static_cast<float>(*v) : fallback;
    };
    m.final_softcap = number("final_logit_softcapping", gemma2 ? 30.0f : 0.0f);
    if (gemma2) m.attn_softcap = number("attn_logit_softcapping", 50.0f);
    // Sliding window: gemma2 always (4096 unless the file says), every second layer local from
    // layer 0; gemma3 where the file gives a window, five local layers to one global.
    const bool has_window = g.get_int(a + "attention.sliding_window").has_value();
    m.sliding_window = has_window ? required(g, a + "attention.sliding_window") : (gemma2 ? 4096u : 0u);
    if (m.sliding_window) {
        uint32_t period = gemma2 ? 2 : 6;
        if (const auto v = g.get_int(a + "attention.sliding_window_pattern")) {
            if (*v < 0 || *v > 1024)
                throw Error(ErrorCode::InvalidModelFile,
                            g.path() + ": " + a +
                                "attention.sliding_window_pattern must be one number of layers (a period)");
            period = static_cast<uint32_t>(*v);
        }
        m.local_layers.resize(m.n_layers);
        for (uint32_t l = 0; l < m.n_layers; ++l) m.local_layers[l] = period == 0 || l % period < period - 1;
    }
    m.rope_freq_base_local = gemma2 ? m.rope_freq_base : number("rope.freq_base_swa", 10000.0f);
    m.rope_local_scaled = gemma2;
    for (uint32_t l = 0; l < m.n_layers; ++l)
        for (const char* piece : {"post_attention_norm", "post_ffw_norm"}) {
            const std::string name = "blk." + std::to_string(l) + "." + piece + ".weight";
            const auto* t = g.find_tensor(name);
            if (!t) throw Error(ErrorCode::InvalidModelFile, g.path() + ": tensor " + name + " is missing");
        }
}
}  // namespace

ModelInfo read_llama_config(const GgufFile& g) {
    ModelInfo m;
    m.path = g.path();
    m.architecture = g.get_string("general.architecture").value_or("");
    if (m.architecture.empty())
        throw Error(ErrorCode::InvalidModelFile, g.path() + ": general.architecture is missing");
    if (!supported_architecture(m.architecture))
        throw Error(ErrorCode::UnsupportedArchitecture,
                    "unsupported architecture \"" + m.architecture +
                        "\": Lantern runs llama, qwen2, qwen3, phi3, gemma2 and gemma3 models");
    m.name = g.get_string("general.name").value_or("");
    const std::string a = m.architecture + ".";
    m.dim = required(g, a + "embedding_length");
    m.n_layers = required(g, a + "block_count");
    m.ffn_dim = required(g, a + "feed_forward_length");
    m.n_heads = required(g, a + "attention.head_count");
    m.n_kv_heads =
        g.get_int(a + "attention.head_count_kv") ? required(g, a + "attention.head_count_kv") : m.n_heads;
    m.context_length = g.get_int(a + "context_length") ? required(g, a + "context_length") : 2048;
    // Head size: attention.key_length where the file has it (Qwen3: wider than dim / heads), the
    // same for values; else the width split among the heads.
    if (g.get_int(a + "attention.key_length")) {
        m.head_dim = required(g, a + "attention.key_length");
        const uint32_t v =
            g.get_int(a + "attention.value_length") ? required(g, a + "attention.value_length") : m.head_dim;
        if (v != m.head_dim)
            throw Error(ErrorCode::UnsupportedArchitecture, "key length " + std::to_string(m.head_dim) +
                                                                " and value length " + std::to_string(v) +
                                                                " differ: not supported");
    } else if (m.dim % m.n_heads != 0) {
        throw Error(ErrorCode::InvalidModelFile, g.path() + ": embedding length " + std::to_string(m.dim) +
                                                     " is not a multiple of the head count " +
                                                     std::to_string(m.n_heads));
    } else {
        m.head_dim = m.dim / m.n_heads;
    }
    if (m.n_heads % m.n_kv_heads != 0)
        throw Error(ErrorCode::InvalidModelFile, g.path() + ": head count " + std::to_string(m.n_heads) +
                                                     " is not a multiple of the KV head count " +
                                                     std::to_string(m.n_kv_heads));
    m.n_rot = g.get_int(a + "rope.dimension_count") ? required(g, a + "rope.dimension_count") : m.head_dim;
    if (m.n_rot > m.head_dim || m.n_rot % 2 != 0)
        throw Error(ErrorCode::InvalidModelFile,
                    g.path() + ": rope dimension " + std::to_string(m.n_rot) + " is invalid");
    m.rope_freq_base = static_cast<float>(g.get_float(a + "rope.freq_base").value_or(10000.0));
    m.rms_eps = static_cast<float>(g.get_float(a + "attention.layer_norm_rms_epsilon").value_or(1e-5));
    // RoPE scaling, read as llama.cpp reads it: the factor (rope.scaling.factor, or the older
    // rope.scale_linear) applies as the type says, a missing type meaning linear; a factor of 0 or
    // none means no scaling. Other kinds (LongRoPE, ...) are refused by name.
    const auto scaling = g.get_string(a + "rope.scaling.type").value_or("linear");
    auto factor = g.get_float(a + "rope.scaling.factor");
    if (!factor) factor = g.get_float(a + "rope.scale_linear");
    if (factor && (!std::isfinite(*factor) || *factor < 0.0))
        throw Error(ErrorCode::InvalidModelFile, g.path() + ": RoPE scaling factor " +
                                                     std::to_string(*factor) + " is not a positive number");
    RopeScaling& rs = m.rope_scaling;
    if (scaling == "linear" || scaling == "yarn") {
        if (factor && *factor != 0.0) {
            rs.type = scaling == "yarn" ? RopeScaling::Type::Yarn : RopeScaling::Type::Linear;
            rs.factor = static_cast<float>(*factor);
        }
    } else if (scaling != "none") {
        throw Error(ErrorCode::UnsupportedArchitecture,
                    "RoPE scaling \"" + scaling + "\" is not supported yet (linear and YaRN are)");
    }
    rs.original_context = g.get_int(a + "rope.scaling.original_context_length")
                              ? required(g, a + "rope.scaling.original_context_length")
                              : m.context_length;
    rs.attn_factor = static_cast<float>(g.get_float(a + "rope.scaling.attn_factor").value_or(1.0));
    if (!(rs.attn_factor > 0.0f) || !std::isfinite(rs.attn_factor) || rs.original_context == 0)
        throw Error(ErrorCode::InvalidModelFile,
                    g.path() + ": RoPE scaling attn_factor or original context is invalid");

    // Llama 3.1+ carry their frequency scaling as a tensor rather than metadata, Phi-3's LongRoPE
    // as two (short and long); ignoring them would run such a model with the wrong angles at every
    // position.
    const auto factors = [&](const char* name, std::vector<float>& out) {
        const auto* ff = g.find_tensor(name);
        if (!ff) return false;
        const uint32_t pairs = m.n_rot / 2;
        if (ff->type != static_cast<uint32_t>(GgmlType::F32) || ff->shape.size() != 1 ||
            ff->shape[0] != pairs)
            throw Error(ErrorCode::InvalidModelFile,
                        g.path() + ": " + name + " must be " + std::to_string(pairs) +
                            " F32 values (one per rotated pair), not " + std::to_string(ff->elements()) +
                            " " + ggml_type_name(ff->type));
        const auto bytes = g.tensor_data(*ff);
        out.resize(pairs);
        std::memcpy(out.data(), bytes.data(), 4ull * pairs);
        for (float f : out)
            if (!(f > 0.0f) || !std::isfinite(f))
                throw Error(ErrorCode::InvalidModelFile, g.path() + ": " + name + " holds " +
                                                             std::to_string(f) + ", not a positive factor");
        return true;
    };
    const bool freqs = factors("rope_freqs.weight", rs.frequency_factors);
    const bool short_factors = factors("rope_factors_short.weight", rs.frequency_factors);
    const bool long_factors = factors("rope_factors_long.weight", rs.frequency_factors_long);
    if (freqs && (short_factors || long_factors))
        throw Error(ErrorCode::InvalidModelFile,
                    g.path() + ": both rope_freqs.weight and LongRoPE factors: which one applies is unclear");
    if (short_factors != long_factors)
        throw Error(
            ErrorCode::InvalidModelFile,
            g.path() + ": LongRoPE needs both rope_factors_short.weight and rope_factors_long.weight");
    // phi3.attention.sliding_window is not applied: llama.cpp runs Phi-3 without it (its converters
    // do not say which layers it would be for), and Lantern gives llama.cpp's tokens.

    const auto* emb = g.find_tensor("token_embd.weight");
    if (!emb) throw Error(ErrorCode::InvalidModelFile, g.path() + ": tensor token_embd.weight is missing");
    if (emb->shape.size() != 2 || emb->shape[0] != m.dim)
        throw Error(ErrorCode::InvalidModelFile, g.path() + ": token_embd.weight has the wrong shape");
    m.vocab = static_cast<uint32_t>(emb->shape[1]);
    m.tied_output = g.find_tensor("output.weight") == nullptr;

    // Qwen rotates the NEOX way (pairs (i, i + n_rot / 2)); Llama's converted files do not.
    m.rope_neox = m.architecture != "llama";
    read_gemma(g, m);
    // Per-head Q/K norms (qwen3 and gemma3 always; their weights a head wide).
    m.qk_norm = m.architecture == "qwen3" || m.architecture == "gemma3";
    for (uint32_t l = 0; l < m.n_layers && m.qk_norm; ++l)
        for (const char* piece : {"attn_q_norm", "attn_k_norm"}) {
            const std::string name = "blk." + std::to_string(l) + "." + piece + ".weight";
            const auto* t = g.find_tensor(name);
            if (!t) throw Error(ErrorCode::InvalidModelFile, g.path() + ": tensor " + name + " is missing");
            if (t->elements() != m.head_dim)
                throw Error(ErrorCode::InvalidModelFile,
                            g.path() + ": tensor " + name + " has " + std::to_string(t->elements()) +
                                " values, not the head size " + std::to_string(m.head_dim));
        }
    // Biases: on Q, K and V in every layer (qwen2 always; a llama file may carry them too, as
    // llama.cpp reads them), on nothing else. A bias Lantern would not add is refused by name
    // rather than left out of the sums.
    m.qkv_bias = m.architecture == "qwen2" || g.find_tensor("blk.0.attn_q.bias") != nullptr;
    for (uint32_t l = 0; l < m.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char* piece : {"attn_q", "attn_k", "attn_v"})
            if (m.qkv_bias != (g.find_tensor(p + piece + ".bias") != nullptr))
                throw Error(ErrorCode::InvalidModelFile,
                            g.path() + ": tensor " + p + piece + ".bias is " +
                                (m.qkv_bias ? "missing" : "there") + " while " +
                                (m.qkv_bias ? "Q, K and V have biases" : "the other layers' Q has none"));
        for (const char* piece : {"attn_output", "ffn_gate", "ffn_up", "ffn_down"})
            if (g.find_tensor(p + piece + ".bias"))
                throw Error(ErrorCode::UnsupportedArchitecture, "tensor " + p + piece + ".bias: a bias on " +
                                                                    piece +
                                                                    " is not supported (only on Q, K and V)");
    }
    if (m.qkv_bias && m.qk_norm)
        throw Error(ErrorCode::UnsupportedArchitecture,
                    "Q/K/V biases beside per-head Q/K norms are not supported");

    std::map<std::string, uint32_t> types;
    for (const auto& t : g.tensors()) {
        types[ggml_type_name(t.type)]++;
        m.parameters += t.elements();
        m.file_bytes += t.size_bytes;
    }
    for (const auto& [name, n] : types) {
        if (!m.weight_types.empty()) m.weight_types += ", ";
        m.weight_types += name + " x " + std::to_string(n);
    }
    return m;
}

void add_fused_tensor_views(GgufFile& g, const ModelInfo& m) {
    if (m.architecture != "phi3") return;
    const uint64_t q = m.q_dim(), kv = static_cast<uint64_t>(m.n_kv_heads) * m.head_dim;
    for (uint32_t l = 0; l < m.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        if (g.find_tensor(p + "attn_qkv.bias"))
            throw Error(ErrorCode::UnsupportedArchitecture,
                        "tensor " + p + "attn_qkv.bias: a bias on Q, K and V fused is not supported");
        // Files that write Q, K and V apart (llama.cpp reads either) need no views.
        if (!g.find_tensor(p + "attn_q.weight")) {
            const auto* qkv = g.find_tensor(p + "attn_qkv.weight");
            if (!qkv || qkv->shape.size() != 2 || qkv->shape[0] != m.dim || qkv->shape[1] != q + 2 * kv)
                throw Error(ErrorCode::InvalidModelFile,
                            g.path() + ": tensor " + p + "attn_qkv.weight must be " +
                                std::to_string(q + 2 * kv) + " rows (Q, K and V) of " +
                                std::to_string(m.dim));
            g.add_row_view(p + "attn_q.weight", p + "attn_qkv.weight", 0, q);
            g.add_row_view(p + "attn_k.weight", p + "attn_qkv.weight", q, kv);
            g.add_row_view(p + "attn_v.weight", p + "attn_qkv.weight", q + kv, kv);
        }
        if (!g.find_tensor(p + "ffn_gate.weight")) {
            const auto* up = g.find_tensor(p + "ffn_up.weight");
            if (!up || up->shape.size() != 2 || up->shape[0] != m.dim || up->shape[1] != 2ull * m.ffn_dim)
                throw Error(ErrorCode::InvalidModelFile,
                            g.path() + ": tensor " + p + "ffn_up.weight must be " +
                                std::to_string(2ull * m.ffn_dim) + " rows (gate, then up) of " +
                                std::to_string(m.dim));
            g.add_row_view(p + "ffn_gate.weight", p + "ffn_up.weight", 0, m.ffn_dim);
            g.add_row_view(p + "ffn_up.weight", p + "ffn_up.weight", m.ffn_dim, m.ffn_dim);
        }
    }
}

}  // namespace lantern::model
