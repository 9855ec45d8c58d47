// The table of supported ggml tensor types (names, block sizes, the device layout and shader
// variants of each) and its lookups, with the half <-> float conversions every file here uses.
#include <cstring>

#include "lantern/error.h"
#include "lantern/gguf.h"
#include "ops/weight_format.h"
#include "ops/weight_format_blocks.h"

namespace lantern::ops {

using shaders::ShaderId;

float half_to_float(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                mant <<= 1;
                ++e;
            } while (!(mant & 0x400));
            bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | mant << 13;
    } else {
        bits = sign | (exp + 112) << 23 | mant << 13;
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t float_to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xff;
    uint32_t mant = x & 0x7fffff;
    if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int e = static_cast<int>(exp) - 127 + 15;
    if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        uint32_t shift = static_cast<uint32_t>(14 - e);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | static_cast<uint32_t>(e) << 10 | mant >> 13;
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
    return static_cast<uint16_t>(half);
}

namespace {

using namespace detail;

// ---- BF16: the top half of an F32. Repacked into F16's device layout (2 bytes per weight, as in
// the file) when no finite value of the tensor exceeds F16's range (bf16_in_f16_range), else into
// F32's (4 bytes per weight). F16 has 3 more significant bits, so the conversion is exact for
// |x| >= 2^-17; smaller values become F16 subnormals, off by at most 2^-25 — a thousandth of the
// rounding BF16 itself applied to a weight of typical size (0.02: steps of 2^-13). Exact for
// every tensor would mean F32 for nearly all: a real weight matrix almost always holds a few
// values below 2^-17. (Twice the memory is what decides whether an 8B BF16 model fits a GPU.) ----
bool bf16_in_f16_range(std::span<const uint8_t> data) {
    for (size_t i = 0; i + 1 < data.size(); i += 2) {
        uint16_t h;
        std::memcpy(&h, data.data() + i, 2);
        const int exp = (h >> 7) & 0xff;
        // Finite with an exponent above 15: |x| >= 2^16, an F16 infinity. (The largest BF16 below
        // that, 65280, is an F16 value.)
        if (exp != 0xff && exp - 127 > 15) return false;
    }
    return true;
}

// The shader variants of type t (shaders/manifest.txt names them <kernel>_<t>[_kv<kv>]). The fused
// decode layer takes its types as specialization constants (the ggml numbers), so it has no row here.
#define LANTERN_TYPE_SHADERS(t)                                                                      \
    ShaderId::embed_##t, ShaderId::matmul_##t, ShaderId::matmul_norm_##t, ShaderId::matmul_silu_##t, \
        ShaderId::matmul_rope_##t##_kvf16, ShaderId::matmul_rope_##t##_kvf32, ShaderId::matmul_swiglu_##t

// ggml type, name, block elements and bytes, device layout (a ggml type the shaders run), units
// per group, shaders, elements per unit, floats per group, repack (weight_repack.cpp) / dequantize /
// quantize (weight_quantize.cpp). A type stored in another's device layout has that type's layout
// fields and shaders (test_weight_formats checks).
const WeightFormat kWeightFormats[] = {
    {0, "F32", 1, 4, 0, 4, LANTERN_TYPE_SHADERS(f32), 4, 0, repack_row_f32, dequant_f32, quant_f32},
    {1, "F16", 1, 2, 1, 2, LANTERN_TYPE_SHADERS(f16), 8, 0, repack_row_f16, dequant_f16, quant_f16},
    {8, "Q8_0", 32, 34, 8, 2, LANTERN_TYPE_SHADERS(q8_0), 16, 1, repack_row_q8_0, dequant_q8_0, quant_q8_0},
    {2, "Q4_0", 32, 18, 2, 1, LANTERN_TYPE_SHADERS(q4_0), 32, 1, repack_row_q4_0, dequant_q4_0, quant_q4_0},
    {3, "Q4_1", 32, 20, 12, 1, LANTERN_TYPE_SHADERS(q4_k), 32, 2, repack_row_q4_1, dequant_q4_1, quant_q4_1},
    {6, "Q5_0", 32, 22, 8, 2, LANTERN_TYPE_SHADERS(q8_0), 16, 1, repack_row_q5_0, dequant_q5_0, quant_q5_0},
    {7, "Q5_1", 32, 24, 13, 2, LANTERN_TYPE_SHADERS(q5_k), 16, 2, repack_row_q5_1, dequant_q5_1, quant_q5_1},
    {12, "Q4_K", 256, 144, 12, 1, LANTERN_TYPE_SHADERS(q4_k), 32, 2, repack_row_q4_k, dequant_q4_k,
     quant_q4_k},
    {13, "Q5_K", 256, 176, 13, 2, LANTERN_TYPE_SHADERS(q5_k), 16, 2, repack_row_q5_k, dequant_q5_k,
     quant_q5_k},
    {14, "Q6_K", 256, 210, 14, 1, LANTERN_TYPE_SHADERS(q6_k), 16, 1, repack_row_q6_k, dequant_q6_k,
     quant_q6_k},
    {11, "Q3_K", 256, 110, 14, 1, LANTERN_TYPE_SHADERS(q6_k), 16, 1, repack_row_q3_k, dequant_q3_k,
     quant_q3_k},
    {20, "IQ4_NL", 32, 18, 8, 2, LANTERN_TYPE_SHADERS(q8_0), 16, 1, repack_row_iq4_nl, dequant_iq4_nl,
     quant_iq4_nl},
    {23, "IQ4_XS", 256, 136, 8, 2, LANTERN_TYPE_SHADERS(q8_0), 16, 1, repack_row_iq4_xs, dequant_iq4_xs,
     quant_iq4_xs},
    {30, "BF16", 1, 2, 0, 4, LANTERN_TYPE_SHADERS(f32), 4, 0, repack_row_bf16, dequant_bf16, quant_bf16},
    // A BF16 tensor whose values are in F16's range (weight_format_for_data); find_weight_format(30)
    // finds the row above.
    {30, "BF16", 1, 2, 1, 2, LANTERN_TYPE_SHADERS(f16), 8, 0, repack_row_bf16_as_f16, dequant_bf16,
     quant_bf16},
};
#undef LANTERN_TYPE_SHADERS

}  // namespace

const WeightFormat* find_weight_format(uint32_t ggml_type) {
    for (const auto& f : kWeightFormats)
        if (f.ggml_type == ggml_type) return &f;
    return nullptr;
}

std::span<const WeightFormat> weight_formats() {
    return kWeightFormats;
}

const WeightFormat& weight_format_for_data(uint32_t ggml_type, std::span<const uint8_t> data,
                                           const std::string& tensor_name) {
    const WeightFormat& f = weight_format_for(ggml_type, tensor_name);
    if (ggml_type == static_cast<uint32_t>(GgmlType::BF16) && bf16_in_f16_range(data))
        for (const auto& g : kWeightFormats)
            if (g.ggml_type == ggml_type && g.device_type == static_cast<uint32_t>(GgmlType::F16)) return g;
    return f;
}

const WeightFormat& weight_format_for(uint32_t ggml_type, const std::string& tensor_name) {
    if (const auto* f = find_weight_format(ggml_type)) return *f;
    std::string supported;  // from the table, so the message cannot fall behind it
    for (const auto& f : kWeightFormats)
        if (find_weight_format(f.ggml_type) == &f)
            supported += (supported.empty() ? "" : ", ") + std::string(f.name);
    throw Error(ErrorCode::UnsupportedTensorType,
                "tensor \"" + tensor_name + "\" is stored as " + ggml_type_name(ggml_type) + " (ggml type " +
                    std::to_string(ggml_type) + "), which Lantern cannot run yet (supported: " + supported +
                    ")");
}

}  // namespace lantern::ops
