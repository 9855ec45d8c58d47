// lantern/rope.h — how a model's rotary position embedding is scaled (GGUF rope.scaling.*).
//
// Context-extended fine-tunes stretch RoPE so that positions beyond the trained context look like
// ones the model knows. Lantern reads the keys as llama.cpp reads them and supports the two kinds
// Llama-architecture files use; all of it only changes the host-side cos/sin table
// (ops::rope_table), so no kernel knows about scaling.
#pragma once
#include <cstdint>
#include <vector>

namespace lantern {

struct RopeScaling {
    enum class Type { None, Linear, Yarn };
    Type type = Type::None;
    // Linear: positions are divided by it. YaRN: the context's extension over original_context.
    float factor = 1.0f;
    // YaRN: the context the model had before extension (rope.scaling.original_context_length,
    // else the trained context). Pairs rotating fewer than 32 times over it (beta_fast) keep their
    // angles (extrapolated), pairs rotating more slowly than once (beta_slow) are interpolated as
    // in linear scaling, a ramp between; cos and sin are scaled by 1 + 0.1 ln(factor).
    uint32_t original_context = 0;
    float beta_fast = 32.0f, beta_slow = 1.0f;
    // rope.scaling.attn_factor: a magnitude applied to cos and sin for every type (llama.cpp's).
    float attn_factor = 1.0f;
    // Per-pair divisors of the rotation frequency (tensor rope_freqs.weight, n_rot / 2 floats):
    // how Llama 3.1, 3.2 and 3.3 files carry Meta's "llama3" frequency scaling. Empty = all 1.
    // Applies together with any of the types above, as in llama.cpp.
    std::vector<float> frequency_factors;
    // LongRoPE (Phi-3 128k, Phi-3.5, Phi-4-mini: tensors rope_factors_short/long.weight): the short
    // factors are frequency_factors, these the long ones, which replace them when the context run
    // is longer than original_context (as llama.cpp chooses). Empty otherwise. attn_factor carries
    // LongRoPE's magnitude (rope.scaling.attn_factor, sqrt(1 + ln(scale) / ln(original))).
    std::vector<float> frequency_factors_long;
    // The factors for a run of `context` positions (long or short, see above).
    const std::vector<float>& factors_for(uint32_t context) const {
        return !frequency_factors_long.empty() && context > original_context ? frequency_factors_long
                                                                             : frequency_factors;
    }
};

const char* rope_scaling_name(RopeScaling::Type type);  // "none", "linear", "yarn"

}  // namespace lantern
