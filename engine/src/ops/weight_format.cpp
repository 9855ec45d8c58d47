#include "ops/weight_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lantern/error.h"
#include "lantern/gguf.h"

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

// ---- F32 ----
// Float rows are copied into zero-padded rows of whole groups: 16 elements (4 F32 or 2 F16 units).
void repack_row_padded(const uint8_t* src, uint64_t cols, uint64_t elem_bytes, uint32_t* values) {
    const uint64_t bytes = cols * elem_bytes, padded = (cols + 15) / 16 * 16 * elem_bytes;
    auto* out = reinterpret_cast<uint8_t*>(values);
    std::memcpy(out, src, bytes);
    std::memset(out + bytes, 0, padded - bytes);
}
void repack_row_f32(const uint8_t* src, uint64_t cols, uint32_t* values, float*) {
    repack_row_padded(src, cols, 4, values);
}
void dequant_f32(const uint8_t* src, float* dst, uint64_t n) { std::memcpy(dst, src, n * 4); }
void quant_f32(const float* src, uint8_t* dst, uint64_t n) { std::memcpy(dst, src, n * 4); }

// ---- F16 ----
void repack_row_f16(const uint8_t* src, uint64_t cols, uint32_t* values, float*) {
    repack_row_padded(src, cols, 2, values);
}
void dequant_f16(const uint8_t* src, float* dst, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = half_to_float(h);
    }
}
void quant_f16(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
        uint16_t h = float_to_half(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

// ---- Q8_0: block = f16 scale d, then 32 x int8 q; value = q * d. On the device each byte is q + 128
// (unsigned: cheaper to unpack, see shaders/weights.glsl). ----
float block_scale(const uint8_t* block) {
    uint16_t h;
    std::memcpy(&h, block, 2);
    return half_to_float(h);
}
void repack_row_q8_0(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    auto* out = reinterpret_cast<uint8_t*>(values);
    for (uint64_t b = 0; b < cols / 32; ++b) {
        const uint8_t* blk = src + b * 34;
        scales[b] = block_scale(blk);
        for (int i = 0; i < 32; ++i) out[b * 32 + i] = static_cast<uint8_t>(blk[2 + i] ^ 0x80u);
    }
}
void dequant_q8_0(const uint8_t* src, float* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / 32; ++b) {
        const uint8_t* blk = src + b * 34;
        float d = block_scale(blk);
        for (int i = 0; i < 32; ++i) dst[b * 32 + i] = static_cast<float>(static_cast<int8_t>(blk[2 + i])) * d;
    }
}
void quant_q8_0(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / 32; ++b) {
        float amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(src[b * 32 + i]));
        float d = amax / 127.0f;
        uint16_t dh = float_to_half(d);
        uint8_t* blk = dst + b * 34;
        std::memcpy(blk, &dh, 2);
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int i = 0; i < 32; ++i)
            blk[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(src[b * 32 + i] * id)));
    }
}

// ---- Q4_0: block = f16 scale d, then 16 bytes; element j = low nibble of byte j, element j+16 =
// high nibble of byte j; value = (q - 8) * d. Repacked to natural element order, 8 per uint. ----
void repack_row_q4_0(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    for (uint64_t b = 0; b < cols / 32; ++b) {
        const uint8_t* blk = src + b * 18;
        scales[b] = block_scale(blk);
        uint8_t q[32];
        for (int j = 0; j < 16; ++j) {
            q[j] = blk[2 + j] & 15;
            q[j + 16] = blk[2 + j] >> 4;
        }
        for (int w = 0; w < 4; ++w) {
            uint32_t u = 0;
            for (int k = 0; k < 8; ++k) u |= static_cast<uint32_t>(q[w * 8 + k]) << (4 * k);
            values[b * 4 + w] = u;
        }
    }
}
void dequant_q4_0(const uint8_t* src, float* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / 32; ++b) {
        const uint8_t* blk = src + b * 18;
        float d = block_scale(blk);
        for (int j = 0; j < 16; ++j) {
            dst[b * 32 + j] = (static_cast<float>(blk[2 + j] & 15) - 8.0f) * d;
            dst[b * 32 + j + 16] = (static_cast<float>(blk[2 + j] >> 4) - 8.0f) * d;
        }
    }
}
void quant_q4_0(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / 32; ++b) {
        // Like ggml: the scale maps the value of largest magnitude to -8.
        float amax = 0, max = 0;
        for (int i = 0; i < 32; ++i) {
            float v = src[b * 32 + i];
            if (std::fabs(v) > amax) {
                amax = std::fabs(v);
                max = v;
            }
        }
        float d = max / -8.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint8_t* blk = dst + b * 18;
        uint16_t dh = float_to_half(d);
        std::memcpy(blk, &dh, 2);
        for (int j = 0; j < 16; ++j) {
            auto q = [&](float v) {
                int x = static_cast<int>(v * id + 8.5f);
                return static_cast<uint8_t>(std::min(15, std::max(0, x)));
            };
            blk[2 + j] = static_cast<uint8_t>(q(src[b * 32 + j]) | q(src[b * 32 + j + 16]) << 4);
        }
    }
}

const WeightFormat kWeightFormats[] = {
    {0, "F32", 1, 4, 4, ShaderId::embed_f32, ShaderId::matmul_f32, ShaderId::matmul_norm_f32, ShaderId::matmul_silu_f32,
     ShaderId::matmul_rope_f32_kvf16, ShaderId::matmul_rope_f32_kvf32, ShaderId::matmul_swiglu_f32,
     ShaderId::decode_layer_f32_kvf16, ShaderId::decode_layer_f32_kvf32, 4, repack_row_f32,
     dequant_f32, quant_f32},
    {1, "F16", 1, 2, 2, ShaderId::embed_f16, ShaderId::matmul_f16, ShaderId::matmul_norm_f16, ShaderId::matmul_silu_f16,
     ShaderId::matmul_rope_f16_kvf16, ShaderId::matmul_rope_f16_kvf32, ShaderId::matmul_swiglu_f16,
     ShaderId::decode_layer_f16_kvf16, ShaderId::decode_layer_f16_kvf32, 8, repack_row_f16,
     dequant_f16, quant_f16},
    {8, "Q8_0", 32, 34, 2, ShaderId::embed_q8_0, ShaderId::matmul_q8_0, ShaderId::matmul_norm_q8_0,
     ShaderId::matmul_silu_q8_0, ShaderId::matmul_rope_q8_0_kvf16, ShaderId::matmul_rope_q8_0_kvf32,
     ShaderId::matmul_swiglu_q8_0,
     ShaderId::decode_layer_q8_0_kvf16, ShaderId::decode_layer_q8_0_kvf32, 16, repack_row_q8_0, dequant_q8_0, quant_q8_0},
    {2, "Q4_0", 32, 18, 1, ShaderId::embed_q4_0, ShaderId::matmul_q4_0, ShaderId::matmul_norm_q4_0,
     ShaderId::matmul_silu_q4_0, ShaderId::matmul_rope_q4_0_kvf16, ShaderId::matmul_rope_q4_0_kvf32,
     ShaderId::matmul_swiglu_q4_0,
     ShaderId::decode_layer_q4_0_kvf16, ShaderId::decode_layer_q4_0_kvf32, 32, repack_row_q4_0, dequant_q4_0, quant_q4_0},
};

}  // namespace

uint64_t repacked_row_units(const WeightFormat& f, uint64_t cols) {
    const uint64_t group_elements = uint64_t{f.unit_elements} * f.group_units;
    return (cols + group_elements - 1) / group_elements * f.group_units;
}

uint64_t repacked_row_scales(const WeightFormat& f, uint64_t cols) {
    return f.block_elements > 1 ? repacked_row_units(f, cols) / f.group_units : 0;
}

void repack_rows(const WeightFormat& f, std::span<const uint8_t> src, uint64_t rows, uint64_t cols, uint32_t* values,
                 uint64_t value_stride, float* scales, uint64_t scale_stride) {
    const uint64_t row_bytes = cols / f.block_elements * f.block_bytes;
    if (src.size() < rows * row_bytes) throw Error(ErrorCode::Internal, "repack: the source is shorter than its rows");
    const bool scaled = f.block_elements > 1;
    for (uint64_t i = 0; i < rows; ++i)
        f.repack_row(src.data() + i * row_bytes, cols, values + i * value_stride, scaled ? scales + i * scale_stride : nullptr);
}

Repacked repack(const WeightFormat& f, std::span<const uint8_t> src, uint64_t rows, uint64_t cols) {
    Repacked r;
    r.row_units = repacked_row_units(f, cols);
    const uint64_t groups = repacked_row_scales(f, cols);
    r.values.resize(rows * r.row_units * 4);
    r.scales.resize(rows * groups);
    repack_rows(f, src, rows, cols, r.values.data(), r.row_units * 4, r.scales.data(), groups);
    return r;
}

uint64_t tiled_words(const Repacked& r, uint64_t rows, uint64_t tile_rows, uint32_t group_units) {
    const uint64_t groups = r.row_units / group_units, group_words = group_units * 4;
    const uint64_t scale_words = r.scales.empty() ? 0 : 32;  // per quad and group: 8 texels of 4 scales
    uint64_t words = 0;
    for (uint64_t t0 = 0; t0 < rows; t0 += tile_rows) {
        const uint64_t n = std::min(tile_rows, rows - t0);
        words += groups * (n * group_words + (n + 31) / 32 * scale_words);
    }
    return words;
}

void tile_rows_into(const Repacked& r, uint64_t first_row, uint64_t rows, uint64_t tile_rows, uint32_t group_units,
                    uint32_t* dst) {
    if (tile_rows % 8 != 0) throw Error(ErrorCode::Internal, "weight tiles must be whole octets of rows");
    const uint64_t groups = r.row_units / group_units;
    const uint64_t group_words = group_units * 4;  // uint32 words per group
    const bool scaled = !r.scales.empty();
    // Per tile and group: the rows in quads of 32, each quad's units preceded (quantized types)
    // by 8 scale texels — texel i holds the scales of row i of its octets 0..3, zero past the
    // last row (shaders/weights.glsl, the tile layout; row_walk_in reads it back).
    for (uint64_t t0 = 0; t0 < rows; t0 += tile_rows) {
        const uint64_t n = std::min(tile_rows, rows - t0);
        for (uint64_t g = 0; g < groups; ++g)
            for (uint64_t q0 = 0; q0 < n; q0 += 32) {  // quads of 32 rows
                for (uint64_t i = 0; scaled && i < 8; ++i)
                    for (uint64_t c = 0; c < 4; ++c) {
                        const uint64_t row = q0 + c * 8 + i;  // row of the tile
                        const float v = row < n ? r.scales[(first_row + t0 + row) * groups + g] : 0.0f;
                        std::memcpy(dst++, &v, 4);
                    }
                for (uint64_t i = q0; i < std::min<uint64_t>(n, q0 + 32); ++i) {
                    std::memcpy(dst, r.values.data() + ((first_row + t0 + i) * groups + g) * group_words,
                                group_words * 4);
                    dst += group_words;
                }
            }
    }
}

Repacked tile_rows_of(const Repacked& r, uint64_t first_row, uint64_t rows, uint64_t tile_rows,
                      uint32_t group_units) {
    const uint64_t groups = r.row_units / group_units;
    const uint64_t group_words = group_units * 4;  // uint32 words per group
    Repacked out;
    out.row_units = r.row_units;
    if (tile_rows == 1) {  // row-major, scales in their own array
        auto at = [&](uint64_t row) { return r.values.begin() + static_cast<std::ptrdiff_t>(row * groups * group_words); };
        out.values.assign(at(first_row), at(first_row + rows));
        if (!r.scales.empty())
            out.scales.assign(r.scales.begin() + static_cast<std::ptrdiff_t>(first_row * groups),
                              r.scales.begin() + static_cast<std::ptrdiff_t>((first_row + rows) * groups));
        return out;
    }
    out.values.resize(tiled_words(r, rows, tile_rows, group_units));
    tile_rows_into(r, first_row, rows, tile_rows, group_units, out.values.data());
    return out;
}

const WeightFormat* find_weight_format(uint32_t ggml_type) {
    for (const auto& f : kWeightFormats)
        if (f.ggml_type == ggml_type) return &f;
    return nullptr;
}

const WeightFormat& weight_format_for(uint32_t ggml_type, const std::string& tensor_name) {
    if (const auto* f = find_weight_format(ggml_type)) return *f;
    throw Error(ErrorCode::UnsupportedTensorType,
                "tensor \"" + tensor_name + "\" is stored as " + ggml_type_name(ggml_type) + " (ggml type " +
                    std::to_string(ggml_type) + "), which Lantern cannot run yet (supported: F32, F16, Q8_0, Q4_0)");
}

std::vector<float> dequantize(uint32_t ggml_type, std::span<const uint8_t> src, uint64_t elements) {
    const auto& f = weight_format_for(ggml_type, "<buffer>");
    std::vector<float> out(elements);
    f.dequantize_row(src.data(), out.data(), elements);
    return out;
}

std::vector<uint8_t> quantize(uint32_t ggml_type, std::span<const float> src, uint64_t row_length) {
    const auto& f = weight_format_for(ggml_type, "<buffer>");
    uint64_t rows = src.size() / row_length;
    uint64_t row_bytes = ggml_row_bytes(ggml_type, row_length);
    std::vector<uint8_t> out(rows * row_bytes);
    for (uint64_t r = 0; r < rows; ++r) f.quantize_row(src.data() + r * row_length, out.data() + r * row_bytes, row_length);
    return out;
}

}  // namespace lantern::ops
