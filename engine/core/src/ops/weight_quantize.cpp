// The CPU reference dequantizers and quantizers of every type (GGUF bytes <-> floats), used by the
// references, the tests and the synthetic-model writer, and their dequantize / quantize wrappers.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "lantern/gguf.h"
#include "ops/weight_format.h"
#include "ops/weight_format_blocks.h"

namespace lantern::ops {

namespace detail {

namespace {
void put_f16(uint8_t* p, float v) {
    const uint16_t h = float_to_half(v);
    std::memcpy(p, &h, 2);
}
}  // namespace

// ---- F32 ----
void dequant_f32(const uint8_t* src, float* dst, uint64_t n) {
    std::memcpy(dst, src, n * 4);
}
void quant_f32(const float* src, uint8_t* dst, uint64_t n) {
    std::memcpy(dst, src, n * 4);
}

// ---- F16 ----
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

// ---- Q8_0: block = f16 scale d, then 32 x int8 q; value = q * d. ----
void dequant_q8_0(const uint8_t* src, float* dst, uint64_t n) {
    for (uint64_t b = 0; b < n / 32; ++b) {
        const uint8_t* blk = src + b * 34;
        float d = block_scale(blk);
        for (int i = 0; i < 32; ++i)
            dst[b * 32 + i] = static_cast<float>(static_cast<int8_t>(blk[2 + i])) * d;
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
// high nibble of byte j; value = (q - 8) * d. ----
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

// ---- K-quants with mins: Q4_K and Q5_K (decoded by k_min_block, weight_format_blocks.h). ----
namespace {
void k_pack_scale_min(const int scale[8], const int min[8], uint8_t* sc) {
    for (int j = 0; j < 4; ++j) {
        sc[j] = static_cast<uint8_t>((scale[j] & 63) | (scale[j + 4] >> 4) << 6);
        sc[j + 4] = static_cast<uint8_t>((min[j] & 63) | (min[j + 4] >> 4) << 6);
        sc[j + 8] = static_cast<uint8_t>((scale[j + 4] & 15) | (min[j + 4] & 15) << 4);
    }
}

// The inverse of k_min_block: values x of one super-block -> its bytes. Per sub-block the range
// [min(0, lo), hi] is cut into nmax steps; the sub-block scales and mins are then quantized to 6
// bits against the super-block's largest, and q recomputed with the scales as stored. (Simpler than
// ggml's weighted search, and only used for test and benchmark models.)
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
            const int v =
                s > 0 ? std::clamp(static_cast<int>(std::lround((x[32 * j + i] + m) / s)), 0, nmax) : 0;
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

void dequant_k_min(const uint8_t* src, float* dst, uint64_t n, bool five) {
    uint8_t q[256];
    float s[8], m[8];
    for (uint64_t b = 0; b < n / kSuper; ++b) {
        k_min_block(src + b * k_block_bytes(five), five, q, s, m);
        for (int e = 0; e < 256; ++e) dst[b * 256 + e] = static_cast<float>(q[e]) * s[e / 32] - m[e / 32];
    }
}
void quant_k_min(const float* src, uint8_t* dst, uint64_t n, bool five) {
    for (uint64_t b = 0; b < n / kSuper; ++b)
        k_min_quantize_block(src + b * 256, five, dst + b * k_block_bytes(five));
}
}  // namespace
// The table's function pointers: Q4_K (five = false) and Q5_K.
void dequant_q4_k(const uint8_t* src, float* dst, uint64_t n) {
    dequant_k_min(src, dst, n, false);
}
void dequant_q5_k(const uint8_t* src, float* dst, uint64_t n) {
    dequant_k_min(src, dst, n, true);
}
void quant_q4_k(const float* src, uint8_t* dst, uint64_t n) {
    quant_k_min(src, dst, n, false);
}
void quant_q5_k(const float* src, uint8_t* dst, uint64_t n) {
    quant_k_min(src, dst, n, true);
}

// ---- Q6_K and Q3_K (decoded by q6_k_block and q3_k_block, weight_format_blocks.h): raw bytes
// q + 32 and a float scale per 16 elements. ----
namespace {
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
}  // namespace
void dequant_q6_k(const uint8_t* src, float* dst, uint64_t n) {
    dequant_sixteen<q6_k_block, kQ6Bytes>(src, dst, n);
}
void dequant_q3_k(const uint8_t* src, float* dst, uint64_t n) {
    dequant_sixteen<q3_k_block, kQ3Bytes>(src, dst, n);
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
                // quarter 0: low nibble of ql[l]; 1: low of ql[l + 32]; 2: high of ql[l]; 3: high of ql[l +
                // 32]
                uint8_t& lo = ql[l + (quarter % 2) * 32];
                lo = static_cast<uint8_t>(lo | (v & 15) << (quarter >= 2 ? 4 : 0));
                qh[l] = static_cast<uint8_t>(qh[l] | (v >> 4) << (2 * quarter));
            }
        }
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
                const int v =
                    (s != 0 ? std::clamp(static_cast<int>(std::lround(x[e] / s)), -4, 3) : 0) + 4;  // 0..7
                const int h = e / 128, r = e % 128, j = r / 32, sh = (r % 32) / 16, l = r % 16;
                qs[32 * h + 16 * sh + l] =
                    static_cast<uint8_t>(qs[32 * h + 16 * sh + l] | (v & 3) << (2 * j));
                hmask[16 * sh + l] = static_cast<uint8_t>(hmask[16 * sh + l] | (v >> 2) << (4 * h + j));
            }
        }
    }
}

// ---- Q4_1, Q5_0, Q5_1 (LegacyLayout and legacy_block, weight_format_blocks.h). ----
namespace {
// Exactly ggml's arithmetic: q * d + m, and Q5_0's (q - 16) * d.
void dequant_legacy(const uint8_t* src, float* dst, uint64_t n, const LegacyLayout& l) {
    uint8_t q[32];
    float d, m;
    for (uint64_t b = 0; b < n / 32; ++b) {
        legacy_block(src + b * l.bytes, l, q, d, m);
        for (int e = 0; e < 32; ++e)
            dst[b * 32 + e] =
                l.m_at >= 0 ? static_cast<float>(q[e]) * d + m : static_cast<float>(q[e] - 16) * d;
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
}  // namespace
// The table's function pointers, one per layout.
void dequant_q4_1(const uint8_t* src, float* dst, uint64_t n) {
    dequant_legacy(src, dst, n, kQ4_1);
}
void dequant_q5_0(const uint8_t* src, float* dst, uint64_t n) {
    dequant_legacy(src, dst, n, kQ5_0);
}
void dequant_q5_1(const uint8_t* src, float* dst, uint64_t n) {
    dequant_legacy(src, dst, n, kQ5_1);
}
void quant_q4_1(const float* src, uint8_t* dst, uint64_t n) {
    quant_legacy(src, dst, n, kQ4_1);
}
void quant_q5_0(const float* src, uint8_t* dst, uint64_t n) {
    quant_legacy(src, dst, n, kQ5_0);
}
void quant_q5_1(const float* src, uint8_t* dst, uint64_t n) {
    quant_legacy(src, dst, n, kQ5_1);
}

// ---- IQ4_NL, IQ4_XS (kIq4Levels, iq4_levels and iq4_xs_scale, weight_format_blocks.h). ----
namespace {
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
}  // namespace

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

// ---- BF16: the top half of an F32. ----
void dequant_bf16(const uint8_t* src, float* dst, uint64_t n) {
    bf16_to_f32_bits(src, n, reinterpret_cast<uint32_t*>(dst));
}
void quant_bf16(const float* src, uint8_t* dst, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, src + i, 4);
        // Round to nearest even (NaNs stay NaNs: their top mantissa bit is kept set).
        const uint16_t h = (u & 0x7fffffffu) > 0x7f800000u
                               ? static_cast<uint16_t>(u >> 16 | 0x40u)
                               : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
        std::memcpy(dst + 2 * i, &h, 2);
    }
}

}  // namespace detail

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
    for (uint64_t r = 0; r < rows; ++r)
        f.quantize_row(src.data() + r * row_length, out.data() + r * row_bytes, row_length);
    return out;
}

}  // namespace lantern::ops
