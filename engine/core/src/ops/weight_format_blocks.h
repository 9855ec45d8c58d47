// Internal to the weight-format files: the GGUF block decoders that the GPU repack
// (weight_repack.cpp) and the CPU dequantizers (weight_quantize.cpp) share, and each type's row
// functions, which the type table (weight_types.cpp) points at.
#pragma once
#include <cstdint>
#include <cstring>

#include "ops/weight_format.h"

namespace lantern::ops::detail {

// ---- Each type's row functions (the table's repack_row / dequantize_row / quantize_row) ----
// weight_repack.cpp: one GGUF row -> the device layout.
void repack_row_f32(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_f16(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q8_0(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q4_0(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q4_1(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q5_0(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q5_1(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q4_k(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q5_k(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q6_k(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_q3_k(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_iq4_nl(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_iq4_xs(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_bf16(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
void repack_row_bf16_as_f16(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
// weight_quantize.cpp: GGUF bytes of one row <-> floats.
void dequant_f32(const uint8_t* src, float* dst, uint64_t n);
void dequant_f16(const uint8_t* src, float* dst, uint64_t n);
void dequant_q8_0(const uint8_t* src, float* dst, uint64_t n);
void dequant_q4_0(const uint8_t* src, float* dst, uint64_t n);
void dequant_q4_1(const uint8_t* src, float* dst, uint64_t n);
void dequant_q5_0(const uint8_t* src, float* dst, uint64_t n);
void dequant_q5_1(const uint8_t* src, float* dst, uint64_t n);
void dequant_q4_k(const uint8_t* src, float* dst, uint64_t n);
void dequant_q5_k(const uint8_t* src, float* dst, uint64_t n);
void dequant_q6_k(const uint8_t* src, float* dst, uint64_t n);
void dequant_q3_k(const uint8_t* src, float* dst, uint64_t n);
void dequant_iq4_nl(const uint8_t* src, float* dst, uint64_t n);
void dequant_iq4_xs(const uint8_t* src, float* dst, uint64_t n);
void dequant_bf16(const uint8_t* src, float* dst, uint64_t n);
void quant_f32(const float* src, uint8_t* dst, uint64_t n);
void quant_f16(const float* src, uint8_t* dst, uint64_t n);
void quant_q8_0(const float* src, uint8_t* dst, uint64_t n);
void quant_q4_0(const float* src, uint8_t* dst, uint64_t n);
void quant_q4_1(const float* src, uint8_t* dst, uint64_t n);
void quant_q5_0(const float* src, uint8_t* dst, uint64_t n);
void quant_q5_1(const float* src, uint8_t* dst, uint64_t n);
void quant_q4_k(const float* src, uint8_t* dst, uint64_t n);
void quant_q5_k(const float* src, uint8_t* dst, uint64_t n);
void quant_q6_k(const float* src, uint8_t* dst, uint64_t n);
void quant_q3_k(const float* src, uint8_t* dst, uint64_t n);
void quant_iq4_nl(const float* src, uint8_t* dst, uint64_t n);
void quant_iq4_xs(const float* src, uint8_t* dst, uint64_t n);
void quant_bf16(const float* src, uint8_t* dst, uint64_t n);

// ---- Block decoders ----

// The f16 scale at the start of a Q8_0 / Q4_0 / legacy / IQ4_NL block (or at an offset in one).
inline float block_scale(const uint8_t* block) {
    uint16_t h;
    std::memcpy(&h, block, 2);
    return half_to_float(h);
}

// ---- K-quants: 256-element super-blocks with a f16 scale d (and dmin) and per-sub-block scales
// (and mins) quantized to 6 or 8 bits (the GGUF / ggml spec). ----
constexpr uint64_t kSuper = 256;

inline float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return half_to_float(h);
}

// Scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K/Q5_K: sub-blocks 0-3 keep
// their 6 bits in the low bits of bytes j (scale) and j + 4 (min); 4-7 have their low 4 bits in
// byte j + 4 (scale low nibble, min high nibble) and their top 2 bits in the top bits of bytes
// j - 4 (scale) and j (min).
inline void k_scale_min(const uint8_t* sc, int j, int& scale, int& min) {
    if (j < 4) {
        scale = sc[j] & 63;
        min = sc[j + 4] & 63;
    } else {
        scale = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
        min = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
    }
}

// Raw values (q, unsigned) and per-sub-block float scale/min of one Q4_K or Q5_K super-block.
// Q4_K: d, dmin, scales[12], qs[128]; Q5_K: the same with qh[32] (fifth bits) before qs. In each
// 64-element chunk c, element 64c + l is the low nibble of qs[32c + l], element 64c + 32 + l its
// high nibble; Q5_K adds bit 2c (resp. 2c + 1) of qh[l] as bit 4.
inline void k_min_block(const uint8_t* blk, bool five, uint8_t q[256], float scale[8], float min[8]) {
    const float d = f16_at(blk), dmin = f16_at(blk + 2);
    const uint8_t* sc = blk + 4;
    const uint8_t* qh = blk + 16;
    const uint8_t* qs = blk + (five ? 48 : 16);
    for (int j = 0; j < 8; ++j) {
        int s, m;
        k_scale_min(sc, j, s, m);
        scale[j] = d * static_cast<float>(s);
        min[j] = dmin * static_cast<float>(m);
    }
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            const uint8_t b = qs[32 * c + l];
            q[64 * c + l] = static_cast<uint8_t>((b & 15) | (five ? ((qh[l] >> (2 * c)) & 1) << 4 : 0));
            q[64 * c + 32 + l] =
                static_cast<uint8_t>((b >> 4) | (five ? ((qh[l] >> (2 * c + 1)) & 1) << 4 : 0));
        }
}

inline uint64_t k_block_bytes(bool five) {
    return five ? 176 : 144;
}

// Q6_K: ql[128] (low 4 bits), qh[64] (top 2 bits), int8 scales[16] (one per 16 elements), f16 d.
// In each half h (128 elements; ql, qh and scales advance by 64, 32 and 8), for l < 32: elements
// l and l + 64 are the low and high nibbles of ql[l], l + 32 and l + 96 those of ql[l + 32], and
// their top bits are bits 0-1, 4-5, 2-3, 6-7 of qh[l] (in the order l, l + 64, l + 32, l + 96:
// l -> 0, l + 32 -> 2, l + 64 -> 4, l + 96 -> 6). value = d * scale * (q - 32).
constexpr uint64_t kQ6Bytes = 210;
inline void q6_k_block(const uint8_t* blk, uint8_t q[256], float scale[16]) {
    const float d = f16_at(blk + 208);
    for (int j = 0; j < 16; ++j) scale[j] = d * static_cast<float>(static_cast<int8_t>(blk[192 + j]));
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = blk + 64 * h;
        const uint8_t* qh = blk + 128 + 32 * h;
        uint8_t* out = q + 128 * h;
        for (int l = 0; l < 32; ++l) {
            out[l] = static_cast<uint8_t>((ql[l] & 15) | (qh[l] & 3) << 4);
            out[l + 32] = static_cast<uint8_t>((ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4);
            out[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4);
            out[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4);
        }
    }
}
// Q6_K and Q3_K end up in the same device layout: a super-block decoder gives each element's
// raw byte (q + 32) and each 16-element sub-block's float scale; repack_row_sixteen
// (weight_repack.cpp) and dequant_sixteen (weight_quantize.cpp) run it over a row.
using SixteenBlock = void (*)(const uint8_t* blk, uint8_t q[256], float scale[16]);

// Q3_K: hmask[32] (third bits), qs[64] (low 2 bits), scales[12] (sixteen 6-bit scales, offset 32),
// f16 d. Element e of the super-block: half h = e / 128, r = e % 128, j = r / 32 (which 2-bit
// field of the byte), s = (r % 32) / 16, l = r % 16; its low bits are bits 2j..2j+1 of
// qs[32h + 16s + l], its third bit is bit 4h + j of hmask[16s + l], and q = low - (third ? 0 : 4),
// in -4..3; its sub-block is e / 16, whose 6-bit scale is the low nibble of scales[k] (k < 8) or
// the high nibble of scales[k - 8] (k >= 8) below bits 2(k / 4)..2(k / 4)+1 of scales[8 + k % 4].
// value = d * (scale - 32) * q. On the device: Q6_K's layout (a byte per element, q + 32, and a
// float scale per 16), so exactly the same values; 1.25 bytes per weight against 0.43 in the file
// (Q3_K_S/M/L files load, at the memory of a Q8_0 one).
constexpr uint64_t kQ3Bytes = 110;
inline int q3_k_scale(const uint8_t* scales, int k) {
    const int low = k < 8 ? scales[k] & 15 : scales[k - 8] >> 4;
    const int high = (scales[8 + k % 4] >> (2 * (k / 4))) & 3;
    return (low | high << 4) - 32;
}
inline void q3_k_block(const uint8_t* blk, uint8_t q[256], float scale[16]) {
    const uint8_t* hmask = blk;
    const uint8_t* qs = blk + 32;
    const float d = f16_at(blk + 108);
    for (int k = 0; k < 16; ++k) scale[k] = d * static_cast<float>(q3_k_scale(blk + 96, k));
    for (int e = 0; e < 256; ++e) {
        const int h = e / 128, r = e % 128, j = r / 32, s = (r % 32) / 16, l = r % 16;
        const int low = (qs[32 * h + 16 * s + l] >> (2 * j)) & 3;
        const int third = (hmask[16 * s + l] >> (4 * h + j)) & 1;
        q[e] = static_cast<uint8_t>(low - (third ? 0 : 4) + 32);  // Q6_K's raw: q + 32
    }
}

// ---- Q4_1, Q5_0, Q5_1: 32-element blocks like Q4_0, with a 5th bit per element (qh, 32 bits
// little-endian; bit j for element j) and/or a min m (value = q * d + m; Q5_0: (q - 16) * d):
//   Q4_1: d, m, qs[16]   Q5_0: d, qh[4], qs[16]   Q5_1: d, m, qh[4], qs[16]
// with Q4_0's nibble order (element j = low nibble of qs[j], j + 16 its high nibble). No kernel
// of their own: each is repacked into the device layout of a type the shaders already run —
// Q4_1 into Q4_K's (nibbles, a scale and a min per 32), Q5_0 into Q8_0's (bytes q + 112, so
// that raw - 128 = q - 16), Q5_1 into Q5_K's (bytes, a scale and a min per 32), the min stored
// as -m (the device's value is raw * scale - min). ----
struct LegacyLayout {
    uint32_t bytes;
    int m_at, qh_at, qs_at;  // byte offsets in the block; -1: none
};
inline constexpr LegacyLayout kQ4_1{20, 2, -1, 4}, kQ5_0{22, -1, 2, 6}, kQ5_1{24, 2, 4, 8};

// Raw values (0..15 or 0..31) of one block in element order, its scale d and min m (0 if none).
inline void legacy_block(const uint8_t* blk, const LegacyLayout& l, uint8_t q[32], float& d, float& m) {
    d = block_scale(blk);
    m = l.m_at >= 0 ? block_scale(blk + l.m_at) : 0.0f;
    uint32_t qh = 0;
    if (l.qh_at >= 0) std::memcpy(&qh, blk + l.qh_at, 4);
    for (int j = 0; j < 16; ++j) {
        const uint8_t b = blk[l.qs_at + j];
        q[j] = static_cast<uint8_t>((b & 15) | ((qh >> j) & 1) << 4);
        q[j + 16] = static_cast<uint8_t>((b >> 4) | ((qh >> (j + 16)) & 1) << 4);
    }
}

// ---- IQ4_NL, IQ4_XS: 4-bit indices into a fixed non-linear table of 16 int8 levels (the GGUF
// spec's kvalues_iq4nl), value = d * level. IQ4_NL: 32-element blocks {d, qs[16]} in Q4_0's
// nibble order. IQ4_XS: 256-element super-blocks {d, scales_h (u16), scales_l[4], qs[128]}; the
// 6-bit scale of sub-block j (32 elements) is its low nibble (scales_l[j / 2] >> 4 (j % 2)) and
// two high bits (scales_h >> 2j), minus 32; sub-block j's nibbles are qs[16j..16j+15]. Both are
// repacked into Q8_0's device layout: the level + 128 as a byte, a float scale per 32 (d, or
// d * (ls - 32)), so every kernel runs them as Q8_0. (1.13 bytes per weight on the device against
// 0.56 / 0.53 in the file: a table lookup per weight in every kernel layout is the alternative.) ----
inline constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};
constexpr uint64_t kIq4XsBytes = 136;

// Levels of 32 elements from 16 bytes of nibbles (element j: low nibble of qs[j], j + 16: high).
inline void iq4_levels(const uint8_t* qs, int8_t v[32]) {
    for (int j = 0; j < 16; ++j) {
        v[j] = kIq4Levels[qs[j] & 15];
        v[j + 16] = kIq4Levels[qs[j] >> 4];
    }
}
// Scale of sub-block j of an IQ4_XS super-block: d * (ls - 32).
inline float iq4_xs_scale(const uint8_t* blk, int j) {
    uint16_t h;
    std::memcpy(&h, blk + 2, 2);
    const int ls = ((blk[4 + j / 2] >> (4 * (j % 2))) & 15) | ((h >> (2 * j)) & 3) << 4;
    return f16_at(blk) * static_cast<float>(ls - 32);
}

// ---- BF16: the top half of an F32 (see bf16_in_f16_range in weight_types.cpp for its layouts).
// n BF16 values -> the bits of the F32s they are.
inline void bf16_to_f32_bits(const uint8_t* src, uint64_t n, uint32_t* dst) {
    for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = static_cast<uint32_t>(h) << 16;
    }
}

}  // namespace lantern::ops::detail
