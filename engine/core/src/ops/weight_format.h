// Weight formats: the table of supported ggml tensor types, how each is repacked for the GPU
// (shaders/weights.glsl documents the device layout), and CPU dequantization / quantization used by
// the references, the tests and the synthetic-model writer.
//
// Adding a type = one row in kWeightFormats (weight_types.cpp) with its repack (weight_repack.cpp)
// and dequantize/quantize (weight_quantize.cpp) functions + its number and properties in
// weights.glsl (EPU_OF, GPS_OF, ...) + its variants in shaders/manifest.txt (the fused decode layer
// takes any type as a specialization constant). The K-quants (Q4_K, Q5_K, Q6_K) came that way: their
// 256-element super-blocks become 32- or 16-element groups with float scales (and mins), so every
// kernel layout runs them unchanged. Q4_1, Q5_0 and Q5_1 need not even that: they are repacked into
// Q4_K's, Q8_0's and Q5_K's device layouts.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lantern_shaders/shaders.h"

namespace lantern::ops {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // round to nearest even

struct Repacked {
    std::vector<uint32_t> values;  // binding 0 (wq): rows of row_units 16-byte units
    // binding 1 (ws): per group its scale, or (types with mins) its scale and min; empty for
    // float types
    std::vector<float> scales;
    uint64_t row_units = 0;         // a whole number of groups (float rows are zero-padded)
    uint32_t scales_per_group = 0;  // WeightFormat::scales_per_group
};

struct WeightFormat {
    uint32_t ggml_type;
    const char* name;
    uint32_t block_elements;
    uint32_t block_bytes;
    // The type whose device layout this one is repacked into and whose kernels run it (the
    // shaders' type number, weights.glsl): its own, or for Q4_1, Q5_0 and Q5_1 that of Q4_K, Q8_0
    // and Q5_K. The fields below describe that layout.
    uint32_t device_type;
    uint32_t group_units;  // 16-byte units sharing one scale (GPS in shaders/weights.glsl)
    // Shader variants for this type.
    shaders::ShaderId embed, matmul, matmul_norm, matmul_silu;
    shaders::ShaderId matmul_rope_kvf16, matmul_rope_kvf32;  // Q/K/V: norm in, RoPE + KV store out
    shaders::ShaderId matmul_swiglu;                         // gate/up: norm in, SwiGLU out
    uint32_t unit_elements;  // elements per 16-byte unit (EPU in shaders/weights.glsl)
    // Floats per group beside the values: 0 (float types), 1 (a scale: value = (raw - zero) *
    // scale), 2 (a scale and a min: value = raw * scale - min; the K-quants Q4_K and Q5_K).
    uint32_t scales_per_group;
    // One GGUF row of `cols` elements -> its repacked_row_units() 16-byte units at `values` (float
    // rows zero-padded to whole groups) and, quantized types, scales_per_group floats per group
    // at `scales`.
    // Every word is written, so the caller's buffers may hold anything before.
    void (*repack_row)(const uint8_t* src, uint64_t cols, uint32_t* values, float* scales);
    // GGUF bytes of one row -> floats (the CPU reference).
    void (*dequantize_row)(const uint8_t* src, float* dst, uint64_t n);
    // floats -> GGUF bytes of one row (for writing test/synthetic models).
    void (*quantize_row)(const float* src, uint8_t* dst, uint64_t n);
};

// 16-byte units of a repacked row of `cols` elements (whole groups).
uint64_t repacked_row_units(const WeightFormat& f, uint64_t cols);
// Floats beside the values of a repacked row: scales_per_group per group.
uint64_t repacked_row_scales(const WeightFormat& f, uint64_t cols);
// `rows` GGUF rows into caller buffers: row i's units at values + i * value_stride (32-bit words)
// and its scales at scales + i * scale_stride — so rows can be stacked or interleaved with other
// matrices' where they belong (the model loader), with no intermediate copy.
void repack_rows(const WeightFormat& f, std::span<const uint8_t> src, uint64_t rows, uint64_t cols,
                 uint32_t* values, uint64_t value_stride, float* scales, uint64_t scale_stride);
// GGUF bytes of `rows` x `cols` -> a fresh row-major Repacked.
Repacked repack(const WeightFormat& f, std::span<const uint8_t> src, uint64_t rows, uint64_t cols);

// Rows [first_row, first_row + rows) of a row-major repacked matrix in the device layout (see
// shaders/weights.glsl): tile_rows = 1 keeps the rows as they are, scales in their own array;
// otherwise (a multiple of 8) tiles of `tile_rows` rows, each tile 8 lane streams (row i of the
// tile is row i / 8 of stream i % 8), a stream holding group 0 of its rows, then group 1, ...,
// each group's scale texels (and mins) before its units (the result has no scale array).
Repacked tile_rows_of(const Repacked& r, uint64_t first_row, uint64_t rows, uint64_t tile_rows,
                      uint32_t group_units);
// The tiled layout (tile_rows > 1) in pieces, so the model loader can write it straight into
// mapped device memory instead of a vector it then copies: its size in 32-bit words, and the
// words themselves (what tile_rows_of returns as values). Both end with kTiledSlackWords zero
// words after the tiles.
// Why the slack: a decode lane reads its 32 row slots at fixed offsets from its stream's start
// (dot_rows in shaders/matmul_rows.glsl), and in a short last tile the slots past the stream's
// rows land after the tiles — at most 32 units of 4 texels (F32's group) — so those reads, whose
// sums are never stored, stay inside the part's texel view.
constexpr uint64_t kTiledSlackWords = 32 * 4 * 4;
// (By a row's units and its scales per group alone, so a load can be planned before any repack.)
uint64_t tiled_words(uint64_t row_units, uint32_t scales_per_group, uint64_t rows, uint64_t tile_rows,
                     uint32_t group_units);
void tile_rows_into(const Repacked& r, uint64_t first_row, uint64_t rows, uint64_t tile_rows,
                    uint32_t group_units, uint32_t* dst);

// nullptr when the type has no kernels. (The type's first row: a type may have more than one, see
// weight_format_for_data.)
const WeightFormat* find_weight_format(uint32_t ggml_type);
// The format a tensor of this type and data is uploaded in: its type's row, or a more compact
// layout the data allows (BF16 in F16's layout when no value exceeds F16's range; see
// weight_types.cpp for the bound on what changes).
// Throws as weight_format_for.
const WeightFormat& weight_format_for_data(uint32_t ggml_type, std::span<const uint8_t> data,
                                           const std::string& tensor_name);
// Every row of the table (tests).
std::span<const WeightFormat> weight_formats();
// Throws Error(UnsupportedTensorType) naming the tensor and its type.
const WeightFormat& weight_format_for(uint32_t ggml_type, const std::string& tensor_name);

// Convenience for tests and writers.
std::vector<float> dequantize(uint32_t ggml_type, std::span<const uint8_t> src, uint64_t elements);
std::vector<uint8_t> quantize(uint32_t ggml_type, std::span<const float> src, uint64_t row_length);

}  // namespace lantern::ops
