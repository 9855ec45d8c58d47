// GGUF blocks -> the device layout (shaders/weights.glsl): each type's row repack, repack_rows /
// repack, and the tiled layout of lane streams the CPU-driver kernels read (tile_rows_of).
#include <algorithm>
#include <cstring>

#include "lantern/error.h"
#include "ops/weight_format.h"
#include "ops/weight_format_blocks.h"

namespace lantern::ops {

namespace detail {

// ---- F32 ----
// Float rows are copied into zero-padded rows of whole groups: 16 elements (4 F32 or 2 F16 units).
namespace {
void repack_row_padded(const uint8_t* src, uint64_t cols, uint64_t elem_bytes, uint32_t* values) {
    const uint64_t bytes = cols * elem_bytes, padded = (cols + 15) / 16 * 16 * elem_bytes;
    auto* out = reinterpret_cast<uint8_t*>(values);
    std::memcpy(out, src, bytes);
    std::memset(out + bytes, 0, padded - bytes);
}
}  // namespace
void repack_row_f32(const uint8_t* src, uint64_t cols, uint32_t* values, float*) {
    repack_row_padded(src, cols, 4, values);
}

// ---- F16 ----
void repack_row_f16(const uint8_t* src, uint64_t cols, uint32_t* values, float*) {
    repack_row_padded(src, cols, 2, values);
}

// ---- Q8_0: block = f16 scale d, then 32 x int8 q; value = q * d. On the device each byte is q + 128
// (unsigned: cheaper to unpack, see shaders/weights.glsl). ----
void repack_row_q8_0(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    auto* out = reinterpret_cast<uint8_t*>(values);
    for (uint64_t b = 0; b < cols / 32; ++b) {
        const uint8_t* blk = src + b * 34;
        scales[b] = block_scale(blk);
        for (int i = 0; i < 32; ++i) out[b * 32 + i] = static_cast<uint8_t>(blk[2 + i] ^ 0x80u);
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

// ---- K-quants (Q4_K, Q5_K; decoded by k_min_block, weight_format_blocks.h). On the device the
// super-block structure disappears: each sub-block becomes a group with its scale (and min) as
// floats, d * sc (and dmin * m), so the kernels see the same "units + per-group floats" as
// Q8_0/Q4_0. Q4_K keeps its nibbles (one 16-byte unit per 32-element group, Q4_0's nibble order);
// Q5_K and Q6_K are widened to a byte per element (Q8_0's unit): 1.25 bytes per element on the
// device instead of 0.69 and 0.82 in the file, the price of not adding a 5- and 6-bit unpack to
// every kernel layout. ----
namespace {
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
        } else {  // nibble i of word w = element 8w + i (Q4_0's unit)
            for (int w = 0; w < 32; ++w) {
                uint32_t u = 0;
                for (int k = 0; k < 8; ++k) u |= static_cast<uint32_t>(q[w * 8 + k]) << (4 * k);
                values[b * 32 + w] = u;
            }
        }
    }
}
}  // namespace
// The table's function pointers: Q4_K (five = false) and Q5_K.
void repack_row_q4_k(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_k_min(src, cols, values, scales, false);
}
void repack_row_q5_k(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_k_min(src, cols, values, scales, true);
}

// ---- Q6_K and Q3_K: their super-block decoder (q6_k_block, q3_k_block) writes the device layout
// directly, a raw byte (q + 32) per element and a float scale per 16. ----
namespace {
template <SixteenBlock Block, uint64_t Bytes>
void repack_row_sixteen(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    for (uint64_t b = 0; b < cols / kSuper; ++b)
        Block(src + b * Bytes, reinterpret_cast<uint8_t*>(values) + b * 256, scales + b * 16);
}
}  // namespace
void repack_row_q6_k(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_sixteen<q6_k_block, kQ6Bytes>(src, cols, values, scales);
}
void repack_row_q3_k(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_sixteen<q3_k_block, kQ3Bytes>(src, cols, values, scales);
}

// ---- Q4_1, Q5_0, Q5_1 (LegacyLayout, weight_format_blocks.h): into Q4_K's, Q8_0's and Q5_K's
// device layouts. ----
namespace {
void repack_row_legacy(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales,
                       const LegacyLayout& l) {
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
}  // namespace
// The table's function pointers, one per layout.
void repack_row_q4_1(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_legacy(src, cols, values, scales, kQ4_1);
}
void repack_row_q5_0(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_legacy(src, cols, values, scales, kQ5_0);
}
void repack_row_q5_1(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    repack_row_legacy(src, cols, values, scales, kQ5_1);
}

// ---- IQ4_NL, IQ4_XS (weight_format_blocks.h): into Q8_0's device layout, the level + 128 as a
// byte and a float scale per 32. ----
namespace {
void iq4_repack_32(const int8_t v[32], float d, uint8_t* bytes, float* scale) {
    *scale = d;
    for (int e = 0; e < 32; ++e) bytes[e] = static_cast<uint8_t>(v[e] + 128);
}
}  // namespace

void repack_row_iq4_nl(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales) {
    int8_t v[32];
    for (uint64_t b = 0; b < cols / 32; ++b) {
        iq4_levels(src + b * 18 + 2, v);
        iq4_repack_32(v, block_scale(src + b * 18), reinterpret_cast<uint8_t*>(values) + b * 32, scales + b);
    }
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

// ---- BF16: into F16's device layout when the tensor's values are in F16's range, else F32's (see
// bf16_in_f16_range in weight_types.cpp). ----
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
void repack_row_bf16(const uint8_t* src, uint64_t cols, uint32_t* values, float*) {
    bf16_to_f32_bits(src, cols, values);
    for (uint64_t i = cols; i < (cols + 15) / 16 * 16; ++i) values[i] = 0;  // whole groups, as F32
}

}  // namespace detail

uint64_t repacked_row_units(const WeightFormat& f, uint64_t cols) {
    const uint64_t group_elements = uint64_t{f.unit_elements} * f.group_units;
    return (cols + group_elements - 1) / group_elements * f.group_units;
}

uint64_t repacked_row_scales(const WeightFormat& f, uint64_t cols) {
    return repacked_row_units(f, cols) / f.group_units * f.scales_per_group;
}

void repack_rows(const WeightFormat& f, std::span<const uint8_t> src, uint64_t rows, uint64_t cols,
                 uint32_t* values, uint64_t value_stride, float* scales, uint64_t scale_stride) {
    const uint64_t row_bytes = cols / f.block_elements * f.block_bytes;
    if (src.size() < rows * row_bytes)
        throw Error(ErrorCode::Internal, "repack: the source is shorter than its rows");
    const bool scaled = f.block_elements > 1;
    for (uint64_t i = 0; i < rows; ++i)
        f.repack_row(src.data() + i * row_bytes, cols, values + i * value_stride,
                     scaled ? scales + i * scale_stride : nullptr);
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
uint64_t lane_rows(uint64_t n) {
    return (n + kStreams - 1) / kStreams;
}
uint64_t scale_texels_per_group(uint64_t n) {
    return (lane_rows(n) + 3) / 4;
}
}  // namespace

uint64_t tiled_words(uint64_t row_units, uint32_t scales_per_group, uint64_t rows, uint64_t tile_rows,
                     uint32_t group_units) {
    const uint64_t groups = row_units / group_units, group_words = group_units * 4;
    uint64_t words = 0;
    for (uint64_t t0 = 0; t0 < rows; t0 += tile_rows) {
        const uint64_t n = std::min(tile_rows, rows - t0);
        const uint64_t stream_group_words =
            scales_per_group * scale_texels_per_group(n) * 4 + lane_rows(n) * group_words;
        words += kStreams * groups * stream_group_words;
    }
    return words + kTiledSlackWords;
}

void tile_rows_into(const Repacked& r, uint64_t first_row, uint64_t rows, uint64_t tile_rows,
                    uint32_t group_units, uint32_t* dst) {
    if (tile_rows % kStreams != 0)
        throw Error(ErrorCode::Internal, "weight tiles must be whole octets of rows");
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
                        const float v = k < lr && row < n
                                            ? r.scales[((first_row + t0 + row) * groups + g) * spg + s]
                                            : 0.0f;
                        std::memcpy(dst++, &v, 4);
                    }
                for (uint64_t k = 0; k < lr; ++k) {
                    const uint64_t row = lane + kStreams * k;
                    if (row < n)
                        std::memcpy(dst,
                                    r.values.data() + ((first_row + t0 + row) * groups + g) * group_words,
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
        auto at = [&](uint64_t row) {
            return r.values.begin() + static_cast<std::ptrdiff_t>(row * groups * group_words);
        };
        out.values.assign(at(first_row), at(first_row + rows));
        if (!r.scales.empty())
            out.scales.assign(
                r.scales.begin() + static_cast<std::ptrdiff_t>(first_row * groups * r.scales_per_group),
                r.scales.begin() +
                    static_cast<std::ptrdiff_t>((first_row + rows) * groups * r.scales_per_group));
        return out;
    }
    out.values.resize(tiled_words(r.row_units, r.scales_per_group, rows, tile_rows, group_units));
    tile_rows_into(r, first_row, rows, tile_rows, group_units, out.values.data());
    return out;
}

}  // namespace lantern::ops
