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

// ---- K-quants: 256-element super-blocks with a f16 scale d (and dmin) and per-sub-block scales
// (and mins) quantized to 6 or 8 bits (the GGUF / ggml spec). On the device the super-block
// structure disappears: each sub-block becomes a group with its scale (and min) as floats,
// d * sc (and dmin * m), so the kernels see the same "units + per-group floats" as Q8_0/Q4_0.
// Q4_K keeps its nibbles (one 16-byte unit per 32-element group, Q4_0's nibble order); Q5_K and
// Q6_K are widened to a byte per element (Q8_0's unit): 1.25 bytes per element on the device
// instead of 0.69 and 0.82 in the file, the price of not adding a 5- and 6-bit unpack to every
// kernel layout. ----
constexpr uint64_t kSuper = 256;

float f16_at(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return half_to_float(h);
}
void put_f16(uint8_t* p, float v) {
    const uint16_t h = float_to_half(v);
    std::memcpy(p, &h, 2);
}

// Scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K/Q5_K: sub-blocks 0-3 keep
// their 6 bits in the low bits of bytes j (scale) and j + 4 (min); 4-7 have their low 4 bits in
// byte j + 4 (scale low nibble, min high nibble) and their top 2 bits in the top bits of bytes
// j - 4 (scale) and j (min).
void k_scale_min(const uint8_t* sc, int j, int& scale, int& min) {
    if (j < 4) {
        scale = sc[j] & 63;
        min = sc[j + 4] & 63;
    } else {
        scale = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
        min = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
    }
}
void k_pack_scale_min(const int scale[8], const int min[8], uint8_t* sc) {
    for (int j = 0; j < 4; ++j) {
        sc[j] = static_cast<uint8_t>((scale[j] & 63) | (scale[j + 4] >> 4) << 6);
        sc[j + 4] = static_cast<uint8_t>((min[j] & 63) | (min[j + 4] >> 4) << 6);
        sc[j + 8] = static_cast<uint8_t>((scale[j + 4] & 15) | (min[j + 4] & 15) << 4);
    }
}

// Raw values (q, unsigned) and per-sub-block float scale/min of one Q4_K or Q5_K super-block.
// Q4_K: d, dmin, scales[12], qs[128]; Q5_K: the same with qh[32] (fifth bits) before qs. In each
// 64-element chunk c, element 64c + l is the low nibble of qs[32c + l], element 64c + 32 + l its
// high nibble; Q5_K adds bit 2c (resp. 2c + 1) of qh[l] as bit 4.
void k_min_block(const uint8_t* blk, bool five, uint8_t q[256], float scale[8], float min[8]) {
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
            q[64 * c + 32 + l] = static_cast<uint8_t>((b >> 4) | (five ? ((qh[l] >> (2 * c + 1)) & 1) << 4 : 0));
        }
}
// The inverse: values x of one super-block -> its bytes. Per sub-block the range [min(0, lo), hi]
// is cut into nmax steps; the sub-block scales and mins are then quantized to 6 bits against the
// super-block's largest, and q recomputed with the scales as stored. (Simpler than ggml's
// weighted search, and only used for test and benchmark models.)
void k_min_quantize_block(const float* x, bool five, uint8_t* blk) {
    const int nmax = five ? 31 : 15;
    float step[8], offset[8], max_step = 0, max_offset = 0;
    for (int j = 0; j < 8; ++j) {
        float lo = 0, hi = 0;
        for (int i = 0; i < 32; ++i) {
            lo = std::min(lo, x[32 * j + i]);
            hi = std::max(hi, x[32 * j + i]);
        }
        step[j] = (hi - lo) / static_cast<float>(nmax);
        offset[j] = -lo;
        max_step = std::max(max_step, step[j]);
        max_offset = std::max(max_offset, offset[j]);
    }
    put_f16(blk, max_step / 63.0f);
    put_f16(blk + 2, max_offset / 63.0f);
    const float d = f16_at(blk), dmin = f16_at(blk + 2);
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
        sc[j] = d > 0 ? std::min(63, static_cast<int>(std::lround(step[j] / d))) : 0;
        mn[j] = dmin > 0 ? std::min(63, static_cast<int>(std::lround(offset[j] / dmin))) : 0;
    }
    k_pack_scale_min(sc, mn, blk + 4);
    uint8_t* qh = blk + 16;
    uint8_t* qs = blk + (five ? 48 : 16);
    if (five) std::memset(qh, 0, 32);
    for (int j = 0; j < 8; ++j) {
        const float s = d * static_cast<float>(sc[j]), m = dmin * static_cast<float>(mn[j]);
        for (int i = 0; i < 32; ++i) {
            const int v = s > 0 ? std::clamp(static_cast<int>(std::lround((x[32 * j + i] + m) / s)), 0, nmax) : 0;
            const int c = j / 2, l = i;
            uint8_t& b = qs[32 * c + l];
            if (j % 2 == 0)
                b = static_cast<uint8_t>((b & 0xf0) | (v & 15));
            else
                b = static_cast<uint8_t>((b & 0x0f) | (v & 15) << 4);
            if (five && (v & 16)) qh[l] = static_cast<uint8_t>(qh[l] | 1u << j);
        }
    }
}

uint64_t k_block_bytes(bool five) { return five ? 176 : 144; }

void repack_row_k_min(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales, bool five) {
    uint8_t q[256];
    float s[8], m[8];
    for (uint64_t b = 0; b < cols / kSuper; ++b) {
        k_min_block(src + b * k_block_bytes(five), five, q, s, m);
        for (int j = 0; j < 8; ++j) {
            scales[(b * 8 + j) * 2] = s[j];
            scales[(b * 8 + j) * 2 + 1] = m[j];
        }
        if (five) {  // a byte per element (Q8_0's unit)
            std::memcpy(reinterpret_cast<uint8_t*>(values) + b * 256, q, 256);
        } else {     // nibble i of word w = element 8w + i (Q4_0's unit)
            for (int w = 0; w < 32; ++w) {
                uint32_t u = 0;
                for (int k = 0; k < 8; ++k) u |= static_cast<uint32_t>(q[w * 8 + k]) << (4 * k);
                values[b * 32 + w] = u;
            }
        }
    }
}
void dequant_k_min(const uint8_t* src, float* dst, uint64_t n, bool five) {
    uint8_t q[256];
    float s[8], m[8];
    for (uint64_t b = 0; b < n / kSuper; ++b) {
        k_min_block(src + b * k_block_bytes(five), five, q, s, m);
        for (int e = 0; e < 256; ++e) dst[b * 256 + e] = static_cast<float>(q[e]) * s[e / 32] - m[e / 32];
    }
}
void quant_k_min(const float* src, uint8_t* dst, uint64_t n, bool five) {
    for (uint64_t b = 0; b < n / kSuper; ++b) k_min_quantize_block(src + b * 256, five, dst + b * k_block_bytes(five));
}
// The table's function pointers: Q4_K (five = false) and Q5_K.
template <bool Five>
void repack_row_k_min_of(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_k_min(src, cols, values, scales, Five);
}
template <bool Five>
void dequant_k_min_of(const uint8_t* src, float* dst, uint64_t n) {
    dequant_k_min(src, dst, n, Five);
}
template <bool Five>
void quant_k_min_of(const float* src, uint8_t* dst, uint64_t n) {
    quant_k_min(src, dst, n, Five);
}

// Q6_K: ql[128] (low 4 bits), qh[64] (top 2 bits), int8 scales[16] (one per 16 elements), f16 d.
// In each half h (128 elements; ql, qh and scales advance by 64, 32 and 8), for l < 32: elements
// l and l + 64 are the low and high nibbles of ql[l], l + 32 and l + 96 those of ql[l + 32], and
// their top bits are bits 0-1, 4-5, 2-3, 6-7 of qh[l] (in the order l, l + 64, l + 32, l + 96:
// l -> 0, l + 32 -> 2, l + 64 -> 4, l + 96 -> 6). value = d * scale * (q - 32).
constexpr uint64_t kQ6Bytes = 210;
void q6_k_block(const uint8_t* blk, uint8_t q[256], float scale[16]) {
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
// raw byte (q + 32) and each 16-element sub-block's float scale; these run it over a row.
using SixteenBlock = void (*)(const uint8_t* blk, uint8_t q[256], float scale[16]);
template <SixteenBlock Block, uint64_t Bytes>
void repack_row_sixteen(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    for (uint64_t b = 0; b < cols / kSuper; ++b)
        Block(src + b * Bytes, reinterpret_cast<uint8_t*>(values) + b * 256, scales + b * 16);
}
template <SixteenBlock Block, uint64_t Bytes>
void dequant_sixteen(const uint8_t* src, float* dst, uint64_t n) {
    uint8_t q[256];
    float s[16];
    for (uint64_t b = 0; b < n / kSuper; ++b) {
        Block(src + b * Bytes, q, s);
        for (int e = 0; e < 256; ++e) dst[b * 256 + e] = (static_cast<float>(q[e]) - 32.0f) * s[e / 16];
    }
}
// The quantizers' first step for 16-element sub-blocks: each one's step (its value of largest
// magnitude over -levels, so that value maps to -levels, as Q4_0's maps to -8); returns the
// largest step's magnitude.
float sixteen_steps(const float* x, float levels, float step[16]) {
    float max_abs = 0;
    for (int j = 0; j < 16; ++j) {
        float amax = 0, max = 0;
        for (int i = 0; i < 16; ++i)
            if (std::fabs(x[16 * j + i]) > amax) {
                amax = std::fabs(x[16 * j + i]);
                max = x[16 * j + i];
            }
        step[j] = max / -levels;
        max_abs = std::max(max_abs, std::fabs(step[j]));
    }
    return max_abs;
}
// Per 16 elements the value of largest magnitude maps to -32 (as Q4_0's maps to -8), the sub-block
// scales are quantized to int8 against the largest, and q recomputed with the scales as stored.
void quant_q6_k(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / kSuper; ++b) {
        const float* x = src + b * 256;
        uint8_t* blk = dst + b * kQ6Bytes;
        float step[16];
        const float max_abs = sixteen_steps(x, 32.0f, step);
        put_f16(blk + 208, max_abs / 127.0f);
        const float d = f16_at(blk + 208);
        std::memset(blk, 0, 208);
        for (int j = 0; j < 16; ++j) {
            const int sc = d > 0 ? std::clamp(static_cast<int>(std::lround(step[j] / d)), -127, 127) : 0;
            blk[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(sc));
            const float s = d * static_cast<float>(sc);
            for (int i = 0; i < 16; ++i) {
                const int e = 16 * j + i;
                const int v = s != 0 ? std::clamp(static_cast<int>(std::lround(x[e] / s)), -32, 31) + 32 : 32;
                const int h = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
                uint8_t* ql = blk + 64 * h;
                uint8_t* qh = blk + 128 + 32 * h;
                // quarter 0: low nibble of ql[l]; 1: low of ql[l + 32]; 2: high of ql[l]; 3: high of ql[l + 32]
                uint8_t& lo = ql[l + (quarter % 2) * 32];
                lo = static_cast<uint8_t>(lo | (v & 15) << (quarter >= 2 ? 4 : 0));
                qh[l] = static_cast<uint8_t>(qh[l] | (v >> 4) << (2 * quarter));
            }
        }
    }
}

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
int q3_k_scale(const uint8_t* scales, int k) {
    const int low = k < 8 ? scales[k] & 15 : scales[k - 8] >> 4;
    const int high = (scales[8 + k % 4] >> (2 * (k / 4))) & 3;
    return (low | high << 4) - 32;
}
void q3_k_block(const uint8_t* blk, uint8_t q[256], float scale[16]) {
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
// Per 16 elements the value of largest magnitude maps to -4 (as Q6_K's to -32), the sub-block
// scales are quantized to 6 bits (-32..31) against the largest, and q recomputed with the scales
// as stored.
void quant_q3_k(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / kSuper; ++b) {
        const float* x = src + b * 256;
        uint8_t* blk = dst + b * kQ3Bytes;
        float step[16];
        const float max_abs = sixteen_steps(x, 4.0f, step);
        std::memset(blk, 0, kQ3Bytes);
        put_f16(blk + 108, max_abs / 31.0f);
        const float d = f16_at(blk + 108);
        uint8_t* hmask = blk;
        uint8_t* qs = blk + 32;
        uint8_t* packed = blk + 96;
        for (int k = 0; k < 16; ++k) {
            const int sc = d > 0 ? std::clamp(static_cast<int>(std::lround(step[k] / d)), -32, 31) : 0;
            const int stored = sc + 32;
            if (k < 8) {
                packed[k] = static_cast<uint8_t>(packed[k] | (stored & 15));
            } else {
                packed[k - 8] = static_cast<uint8_t>(packed[k - 8] | (stored & 15) << 4);
            }
            packed[8 + k % 4] = static_cast<uint8_t>(packed[8 + k % 4] | (stored >> 4) << (2 * (k / 4)));
            const float s = d * static_cast<float>(sc);
            for (int i = 0; i < 16; ++i) {
                const int e = 16 * k + i;
                const int v = (s != 0 ? std::clamp(static_cast<int>(std::lround(x[e] / s)), -4, 3) : 0) + 4;  // 0..7
                const int h = e / 128, r = e % 128, j = r / 32, sh = (r % 32) / 16, l = r % 16;
                qs[32 * h + 16 * sh + l] = static_cast<uint8_t>(qs[32 * h + 16 * sh + l] | (v & 3) << (2 * j));
                hmask[16 * sh + l] = static_cast<uint8_t>(hmask[16 * sh + l] | (v >> 2) << (4 * h + j));
            }
        }
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
constexpr LegacyLayout kQ4_1{20, 2, -1, 4}, kQ5_0{22, -1, 2, 6}, kQ5_1{24, 2, 4, 8};

// Raw values (0..15 or 0..31) of one block in element order, its scale d and min m (0 if none).
void legacy_block(const uint8_t* blk, const LegacyLayout& l, uint8_t q[32], float& d, float& m) {
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
// Exactly ggml's arithmetic: q * d + m, and Q5_0's (q - 16) * d.
void dequant_legacy(const uint8_t* src, float* dst, uint64_t n, const LegacyLayout& l) {
    uint8_t q[32];
    float d, m;
    for (uint64_t b = 0; b < n / 32; ++b) {
        legacy_block(src + b * l.bytes, l, q, d, m);
        for (int e = 0; e < 32; ++e)
            dst[b * 32 + e] = l.m_at >= 0 ? static_cast<float>(q[e]) * d + m : static_cast<float>(q[e] - 16) * d;
    }
}
void repack_row_legacy(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales, const LegacyLayout& l) {
    uint8_t q[32];
    float d, m;
    for (uint64_t b = 0; b < cols / 32; ++b) {
        legacy_block(src + b * l.bytes, l, q, d, m);
        if (l.m_at >= 0) {
            scales[2 * b] = d;
            scales[2 * b + 1] = -m;
        } else {
            scales[b] = d;
        }
        if (l.qh_at < 0) {  // Q4_1: nibble i of word w = element 8w + i (Q4_0's unit)
            for (int w = 0; w < 4; ++w) {
                uint32_t u = 0;
                for (int k = 0; k < 8; ++k) u |= static_cast<uint32_t>(q[w * 8 + k]) << (4 * k);
                values[b * 4 + w] = u;
            }
        } else {  // a byte per element; Q5_0 offset to Q8_0's zero point of 128
            auto* out = reinterpret_cast<uint8_t*>(values) + b * 32;
            for (int e = 0; e < 32; ++e) out[e] = static_cast<uint8_t>(q[e] + (l.m_at >= 0 ? 0 : 112));
        }
    }
}
// Q4_1/Q5_1: the block's range [lo, hi] in 15 or 31 steps, m = lo; Q5_0: like Q4_0, the value of
// largest magnitude maps to -16.
void quant_legacy(const float* src, uint8_t* dst, uint64_t n, const LegacyLayout& l) {
    const int nmax = l.qh_at >= 0 ? 31 : 15;
    for (uint64_t b = 0; b < n / 32; ++b) {
        const float* x = src + b * 32;
        uint8_t* blk = dst + b * l.bytes;
        float d, m = 0;
        if (l.m_at >= 0) {
            float lo = x[0], hi = x[0];
            for (int i = 1; i < 32; ++i) {
                lo = std::min(lo, x[i]);
                hi = std::max(hi, x[i]);
            }
            put_f16(blk, (hi - lo) / static_cast<float>(nmax));
            put_f16(blk + l.m_at, lo);
            d = block_scale(blk);
            m = block_scale(blk + l.m_at);
        } else {
            float amax = 0, max = 0;
            for (int i = 0; i < 32; ++i)
                if (std::fabs(x[i]) > amax) {
                    amax = std::fabs(x[i]);
                    max = x[i];
                }
            put_f16(blk, max / -16.0f);
            d = block_scale(blk);
        }
        uint8_t q[32];
        for (int i = 0; i < 32; ++i) {
            const float v = l.m_at >= 0 ? (x[i] - m) / d : x[i] / d + 16.0f;
            q[i] = d != 0 ? static_cast<uint8_t>(std::clamp(static_cast<int>(std::lround(v)), 0, nmax))
                          : static_cast<uint8_t>(l.m_at >= 0 ? 0 : 16);
        }
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            blk[l.qs_at + j] = static_cast<uint8_t>((q[j] & 15) | (q[j + 16] & 15) << 4);
            qh |= static_cast<uint32_t>(q[j] >> 4) << j | static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
        }
        if (l.qh_at >= 0) std::memcpy(blk + l.qh_at, &qh, 4);
    }
}
// The table's function pointers, one instance per layout.
template <const LegacyLayout& L>
void repack_row_legacy_of(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_legacy(src, cols, values, scales, L);
}
template <const LegacyLayout& L>
void dequant_legacy_of(const uint8_t* src, float* dst, uint64_t n) {
    dequant_legacy(src, dst, n, L);
}
template <const LegacyLayout& L>
void quant_legacy_of(const float* src, uint8_t* dst, uint64_t n) {
    quant_legacy(src, dst, n, L);
}

// ---- IQ4_NL, IQ4_XS: 4-bit indices into a fixed non-linear table of 16 int8 levels (the GGUF
// spec's kvalues_iq4nl), value = d * level. IQ4_NL: 32-element blocks {d, qs[16]} in Q4_0's
// nibble order. IQ4_XS: 256-element super-blocks {d, scales_h (u16), scales_l[4], qs[128]}; the
// 6-bit scale of sub-block j (32 elements) is its low nibble (scales_l[j / 2] >> 4 (j % 2)) and
// two high bits (scales_h >> 2j), minus 32; sub-block j's nibbles are qs[16j..16j+15]. Both are
// repacked into Q8_0's device layout: the level + 128 as a byte, a float scale per 32 (d, or
// d * (ls - 32)), so every kernel runs them as Q8_0. (1.13 bytes per weight on the device against
// 0.56 / 0.53 in the file: a table lookup per weight in every kernel layout is the alternative.) ----
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr uint64_t kIq4XsBytes = 136;

// Levels of 32 elements from 16 bytes of nibbles (element j: low nibble of qs[j], j + 16: high).
void iq4_levels(const uint8_t* qs, int8_t v[32]) {
    for (int j = 0; j < 16; ++j) {
        v[j] = kIq4Levels[qs[j] & 15];
        v[j + 16] = kIq4Levels[qs[j] >> 4];
    }
}
// The index of the level nearest to x.
int iq4_nearest(float x) {
    int best = 0;
    for (int i = 1; i < 16; ++i)
        if (std::fabs(x - kIq4Levels[i]) < std::fabs(x - kIq4Levels[best])) best = i;
    return best;
}
// 32 values -> 16 bytes of nibbles against scale d (the largest magnitude maps to -127, as Q4_0's
// to -8, when the caller takes d = max / -127).
void iq4_quantize_32(const float* x, float d, uint8_t* qs) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 16; ++j)
        qs[j] = static_cast<uint8_t>(iq4_nearest(x[j] * id) | iq4_nearest(x[j + 16] * id) << 4);
}
float iq4_block_step(const float* x) {
    float amax = 0, max = 0;
    for (int i = 0; i < 32; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    return max / -127.0f;
}
void iq4_repack_32(const int8_t v[32], float d, uint8_t* bytes, float* scale) {
    *scale = d;
    for (int e = 0; e < 32; ++e) bytes[e] = static_cast<uint8_t>(v[e] + 128);
}

void repack_row_iq4_nl(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    int8_t v[32];
    for (uint64_t b = 0; b < cols / 32; ++b) {
        iq4_levels(src + b * 18 + 2, v);
        iq4_repack_32(v, block_scale(src + b * 18), reinterpret_cast<uint8_t*>(values) + b * 32, scales + b);
    }
}
void dequant_iq4_nl(const uint8_t* src, float* dst, uint64_t n) {
    int8_t v[32];
    for (uint64_t b = 0; b < n / 32; ++b) {
        const float d = block_scale(src + b * 18);
        iq4_levels(src + b * 18 + 2, v);
        for (int e = 0; e < 32; ++e) dst[b * 32 + e] = d * static_cast<float>(v[e]);
    }
}
void quant_iq4_nl(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / 32; ++b) {
        put_f16(dst + b * 18, iq4_block_step(src + b * 32));
        iq4_quantize_32(src + b * 32, block_scale(dst + b * 18), dst + b * 18 + 2);
    }
}

// Scale of sub-block j of an IQ4_XS super-block: d * (ls - 32).
float iq4_xs_scale(const uint8_t* blk, int j) {
    uint16_t h;
    std::memcpy(&h, blk + 2, 2);
    const int ls = ((blk[4 + j / 2] >> (4 * (j % 2))) & 15) | ((h >> (2 * j)) & 3) << 4;
    return f16_at(blk) * static_cast<float>(ls - 32);
}
void repack_row_iq4_xs(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    int8_t v[32];
    for (uint64_t b = 0; b < cols / kSuper; ++b)
        for (int j = 0; j < 8; ++j) {
            const uint8_t* blk = src + b * kIq4XsBytes;
            iq4_levels(blk + 8 + 16 * j, v);
            iq4_repack_32(v, iq4_xs_scale(blk, j), reinterpret_cast<uint8_t*>(values) + (b * 8 + j) * 32,
                          scales + b * 8 + j);
        }
}
void dequant_iq4_xs(const uint8_t* src, float* dst, uint64_t n) {
    int8_t v[32];
    for (uint64_t b = 0; b < n / kSuper; ++b)
        for (int j = 0; j < 8; ++j) {
            const uint8_t* blk = src + b * kIq4XsBytes;
            const float dl = iq4_xs_scale(blk, j);
            iq4_levels(blk + 8 + 16 * j, v);
            for (int e = 0; e < 32; ++e) dst[b * 256 + 32 * j + e] = dl * static_cast<float>(v[e]);
        }
}
// Each sub-block's step (max / -127) quantized to 6 bits against the super-block's largest.
void quant_iq4_xs(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / kSuper; ++b) {
        const float* x = src + b * 256;
        uint8_t* blk = dst + b * kIq4XsBytes;
        float step[8], max_abs = 0;
        for (int j = 0; j < 8; ++j) {
            step[j] = iq4_block_step(x + 32 * j);
            max_abs = std::max(max_abs, std::fabs(step[j]));
        }
        put_f16(blk, max_abs / 31.0f);
        const float d = f16_at(blk);
        uint16_t h = 0;
        std::memset(blk + 4, 0, 4);
        for (int j = 0; j < 8; ++j) {
            const int ls = d > 0 ? std::clamp(static_cast<int>(std::lround(step[j] / d)), -32, 31) + 32 : 32;
            blk[4 + j / 2] = static_cast<uint8_t>(blk[4 + j / 2] | (ls & 15) << (4 * (j % 2)));
            h = static_cast<uint16_t>(h | (ls >> 4) << (2 * j));
        }
        std::memcpy(blk + 2, &h, 2);
        for (int j = 0; j < 8; ++j) iq4_quantize_32(x + 32 * j, iq4_xs_scale(blk, j), blk + 8 + 16 * j);
    }
}

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
void repack_row_bf16_as_f16(const uint8_t* src, uint64_t cols, uint32_t* values, float*) {
    auto* out = reinterpret_cast<uint16_t*>(values);
    for (uint64_t i = 0; i < cols; ++i) {
        uint32_t bits;
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        bits = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        out[i] = float_to_half(f);  // in range: the loader checked bf16_in_f16_range
    }
    for (uint64_t i = cols; i < (cols + 15) / 16 * 16; ++i) out[i] = 0;  // whole groups, as F16
}
void bf16_to_f32_bits(const uint8_t* src, uint64_t n, uint32_t* dst) {
    for (uint64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = static_cast<uint32_t>(h) << 16;
    }
}
void repack_row_bf16(const uint8_t* src, uint64_t cols, uint32_t* values, float*) {
    bf16_to_f32_bits(src, cols, values);
    for (uint64_t i = cols; i < (cols + 15) / 16 * 16; ++i) values[i] = 0;  // whole groups, as F32
}
void dequant_bf16(const uint8_t* src, float* dst, uint64_t n) {
    bf16_to_f32_bits(src, n, reinterpret_cast<uint32_t*>(dst));
}
void quant_bf16(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, src + i, 4);
        // Round to nearest even (NaNs stay NaNs: their top mantissa bit is kept set).
        const uint16_t h = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>(u >> 16 | 0x40u)
                                                          : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

// The shader variants of type t (shaders/manifest.txt names them <kernel>_<t>[_kv<kv>]). The fused
// decode layer takes its types as specialization constants (the ggml numbers), so it has no row here.
#define LANTERN_TYPE_SHADERS(t)                                                                     \
    ShaderId::embed_##t, ShaderId::matmul_##t, ShaderId::matmul_norm_##t, ShaderId::matmul_silu_##t,   \
        ShaderId::matmul_rope_##t##_kvf16, ShaderId::matmul_rope_##t##_kvf32, ShaderId::matmul_swiglu_##t

// ggml type, name, block elements and bytes, device layout (a ggml type the shaders run), units
// per group, shaders, elements per unit, floats per group, repack / dequantize / quantize. A type
// stored in another's device layout has that type's layout fields and shaders (test_ops checks).
const WeightFormat kWeightFormats[] = {
    {0, "F32", 1, 4, 0, 4, LANTERN_TYPE_SHADERS(f32), 4, 0, repack_row_f32, dequant_f32, quant_f32},
    {1, "F16", 1, 2, 1, 2, LANTERN_TYPE_SHADERS(f16), 8, 0, repack_row_f16, dequant_f16, quant_f16},
    {8, "Q8_0", 32, 34, 8, 2, LANTERN_TYPE_SHADERS(q8_0), 16, 1, repack_row_q8_0, dequant_q8_0, quant_q8_0},
    {2, "Q4_0", 32, 18, 2, 1, LANTERN_TYPE_SHADERS(q4_0), 32, 1, repack_row_q4_0, dequant_q4_0, quant_q4_0},
    {3, "Q4_1", 32, 20, 12, 1, LANTERN_TYPE_SHADERS(q4_k), 32, 2, repack_row_legacy_of<kQ4_1>, dequant_legacy_of<kQ4_1>,
     quant_legacy_of<kQ4_1>},
    {6, "Q5_0", 32, 22, 8, 2, LANTERN_TYPE_SHADERS(q8_0), 16, 1, repack_row_legacy_of<kQ5_0>, dequant_legacy_of<kQ5_0>,
     quant_legacy_of<kQ5_0>},
    {7, "Q5_1", 32, 24, 13, 2, LANTERN_TYPE_SHADERS(q5_k), 16, 2, repack_row_legacy_of<kQ5_1>, dequant_legacy_of<kQ5_1>,
     quant_legacy_of<kQ5_1>},
    {12, "Q4_K", 256, 144, 12, 1, LANTERN_TYPE_SHADERS(q4_k), 32, 2, repack_row_k_min_of<false>, dequant_k_min_of<false>,
     quant_k_min_of<false>},
    {13, "Q5_K", 256, 176, 13, 2, LANTERN_TYPE_SHADERS(q5_k), 16, 2, repack_row_k_min_of<true>, dequant_k_min_of<true>,
     quant_k_min_of<true>},
    {14, "Q6_K", 256, 210, 14, 1, LANTERN_TYPE_SHADERS(q6_k), 16, 1, repack_row_sixteen<q6_k_block, kQ6Bytes>,
     dequant_sixteen<q6_k_block, kQ6Bytes>, quant_q6_k},
    {11, "Q3_K", 256, 110, 14, 1, LANTERN_TYPE_SHADERS(q6_k), 16, 1, repack_row_sixteen<q3_k_block, kQ3Bytes>,
     dequant_sixteen<q3_k_block, kQ3Bytes>, quant_q3_k},
    {20, "IQ4_NL", 32, 18, 8, 2, LANTERN_TYPE_SHADERS(q8_0), 16, 1, repack_row_iq4_nl, dequant_iq4_nl, quant_iq4_nl},
    {23, "IQ4_XS", 256, 136, 8, 2, LANTERN_TYPE_SHADERS(q8_0), 16, 1, repack_row_iq4_xs, dequant_iq4_xs, quant_iq4_xs},
    {30, "BF16", 1, 2, 0, 4, LANTERN_TYPE_SHADERS(f32), 4, 0, repack_row_bf16, dequant_bf16, quant_bf16},
    // A BF16 tensor whose values are in F16's range (weight_format_for_data); find_weight_format(30)
    // finds the row above.
    {30, "BF16", 1, 2, 1, 2, LANTERN_TYPE_SHADERS(f16), 8, 0, repack_row_bf16_as_f16, dequant_bf16, quant_bf16},
};
#undef LANTERN_TYPE_SHADERS

}  // namespace

uint64_t repacked_row_units(const WeightFormat& f, uint64_t cols) {
    const uint64_t group_elements = uint64_t{f.unit_elements} * f.group_units;
    return (cols + group_elements - 1) / group_elements * f.group_units;
}

uint64_t repacked_row_scales(const WeightFormat& f, uint64_t cols) {
    return repacked_row_units(f, cols) / f.group_units * f.scales_per_group;
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
    r.scales_per_group = f.scales_per_group;
    const uint64_t groups = repacked_row_scales(f, cols);
    r.values.resize(rows * r.row_units * 4);
    r.scales.resize(rows * groups);
    repack_rows(f, src, rows, cols, r.values.data(), r.row_units * 4, r.scales.data(), groups);
    return r;
}

// The tiled layout's shape (shaders/weights.glsl): a tile of n rows is 8 lane streams of
// lane_rows(n) rows each (row i of the tile is row i / 8 of stream i % 8, streams padded with zero
// rows to the same length); a stream holds, per group, the scale texels of its rows (4 rows per
// texel), then as many of mins (types with mins), then its rows' units.
namespace {
constexpr uint64_t kStreams = 8;
uint64_t lane_rows(uint64_t n) { return (n + kStreams - 1) / kStreams; }
uint64_t scale_texels_per_group(uint64_t n) { return (lane_rows(n) + 3) / 4; }
}  // namespace

uint64_t tiled_words(uint64_t row_units, uint32_t scales_per_group, uint64_t rows, uint64_t tile_rows,
                     uint32_t group_units) {
    const uint64_t groups = row_units / group_units, group_words = group_units * 4;
    uint64_t words = 0;
    for (uint64_t t0 = 0; t0 < rows; t0 += tile_rows) {
        const uint64_t n = std::min(tile_rows, rows - t0);
        const uint64_t stream_group_words = scales_per_group * scale_texels_per_group(n) * 4 + lane_rows(n) * group_words;
        words += kStreams * groups * stream_group_words;
    }
    return words + kTiledSlackWords;
}

void tile_rows_into(const Repacked& r, uint64_t first_row, uint64_t rows, uint64_t tile_rows, uint32_t group_units,
                    uint32_t* dst) {
    if (tile_rows % kStreams != 0) throw Error(ErrorCode::Internal, "weight tiles must be whole octets of rows");
    const uint64_t groups = r.row_units / group_units;
    const uint64_t group_words = group_units * 4;  // uint32 words per group
    const uint64_t spg = r.scales_per_group;
    // Stream by stream, group by group: the scale texels (texel q holds the scales of the
    // stream's rows 4q .. 4q + 3, zero past the tile's last row), the mins' texels in the same
    // order, then the units of the stream's rows (zeros for padding rows). row_walk_in in
    // shaders/weights.glsl reads it back.
    for (uint64_t t0 = 0; t0 < rows; t0 += tile_rows) {
        const uint64_t n = std::min(tile_rows, rows - t0), lr = lane_rows(n), st = scale_texels_per_group(n);
        for (uint64_t lane = 0; lane < kStreams; ++lane)
            for (uint64_t g = 0; g < groups; ++g) {
                for (uint64_t s = 0; s < spg; ++s)
                    for (uint64_t k = 0; k < st * 4; ++k) {
                        const uint64_t row = lane + kStreams * k;  // row of the tile
                        const float v = k < lr && row < n ? r.scales[((first_row + t0 + row) * groups + g) * spg + s] : 0.0f;
                        std::memcpy(dst++, &v, 4);
                    }
                for (uint64_t k = 0; k < lr; ++k) {
                    const uint64_t row = lane + kStreams * k;
                    if (row < n)
                        std::memcpy(dst, r.values.data() + ((first_row + t0 + row) * groups + g) * group_words,
                                    group_words * 4);
                    else
                        std::memset(dst, 0, group_words * 4);
                    dst += group_words;
                }
            }
    }
    std::memset(dst, 0, kTiledSlackWords * 4);
}

Repacked tile_rows_of(const Repacked& r, uint64_t first_row, uint64_t rows, uint64_t tile_rows,
                      uint32_t group_units) {
    const uint64_t groups = r.row_units / group_units;
    const uint64_t group_words = group_units * 4;  // uint32 words per group
    Repacked out;
    out.row_units = r.row_units;
    out.scales_per_group = r.scales_per_group;
    if (tile_rows == 1) {  // row-major, scales in their own array
        auto at = [&](uint64_t row) { return r.values.begin() + static_cast<std::ptrdiff_t>(row * groups * group_words); };
        out.values.assign(at(first_row), at(first_row + rows));
        if (!r.scales.empty())
            out.scales.assign(r.scales.begin() + static_cast<std::ptrdiff_t>(first_row * groups * r.scales_per_group),
                              r.scales.begin() + static_cast<std::ptrdiff_t>((first_row + rows) * groups * r.scales_per_group));
        return out;
    }
    out.values.resize(tiled_words(r.row_units, r.scales_per_group, rows, tile_rows, group_units));
    tile_rows_into(r, first_row, rows, tile_rows, group_units, out.values.data());
    return out;
}

const WeightFormat* find_weight_format(uint32_t ggml_type) {
    for (const auto& f : kWeightFormats)
        if (f.ggml_type == ggml_type) return &f;
    return nullptr;
}

std::span<const WeightFormat> weight_formats() { return kWeightFormats; }

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
        if (find_weight_format(f.ggml_type) == &f) supported += (supported.empty() ? "" : ", ") + std::string(f.name);
    throw Error(ErrorCode::UnsupportedTensorType,
                "tensor \"" + tensor_name + "\" is stored as " + ggml_type_name(ggml_type) + " (ggml type " +
                    std::to_string(ggml_type) + "), which Lantern cannot run yet (supported: " + supported + ")");
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
