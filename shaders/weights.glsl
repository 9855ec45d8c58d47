// Weight access for every supported tensor type. The engine repacks each matrix at load time
// (engine/core/src/ops/weight_repack.cpp) into 16-byte units so that every load is one uvec4 texel: one
// memory transaction on GPUs, and on lavapipe one straight-line gather for the whole SIMD group (a
// storage-buffer load there is a per-lane loop with a bounds branch per component, about 3x
// slower; see BindingKind in engine/core/src/vulkan/context.h):
//   binding 0 (R32G32B32A32_UINT texels) = the values; binding 1 (R32_SFLOAT texels) = per-group
//   scales: their own array in row-major weights, else a float view of the values buffer itself
//   F32  : 4 floats per unit
//   F16  : 8 halves per unit
//   Q8_0 : 16 bytes per unit (half a block), element order, stored as q + 128 (unsigned)
//   Q4_0 : 32 4-bit values per unit (one block), nibble i of word w = element 8w + i, stored as q
//   Q4_K : as Q4_0, one unit per 32-element sub-block, with a scale and a min per group
//   Q5_K : as Q8_0's bytes (q, 0..31), two units per 32-element sub-block, a scale and a min
//   Q6_K : as Q8_0's bytes (q, 0..63), one unit per 16-element sub-block, a scale
// Other file types arrive in one of these layouts (ops::WeightFormat::device_type): Q4_1 in Q4_K's,
// Q5_0, IQ4_NL and IQ4_XS in Q8_0's, Q5_1 in Q5_K's, BF16 in F32's.
// Value = (raw - WZERO) * scale, and for types with mins (WMINS) raw * scale - min. Kernels that
// sum many products take the raw values and subtract WZERO * sum(input) (and min * sum(input))
// once per group: on CPU drivers the unpack is the largest cost per weight, and
// an unsigned byte unpacks with one shift and one mask (a signed one needs two shifts), and Q4_0
// saves its subtraction per element.
//
// Layout: rows of whole groups (GPS units sharing one scale; float rows are zero-padded to whole
// groups). tile_rows = 1: plain row-major, scales in their own array (GPUs, whose lanes split a
// row). Otherwise (CPU drivers; tile_rows a multiple of 8) rows are stored in tiles of tile_rows
// rows (a part's last tile may be shorter), and a tile is 8 lane streams: row i of the tile is row
// i / 8 of stream i % 8 — the rows that decode lane i % 8 owns (shaders/matmul_rows.glsl) — and
// the streams are padded with zero rows to one length. A stream holds group 0 of its rows, then
// group 1, and so on; each group starts (quantized types) with its scale texels, texel q holding
// the scales of the stream's rows 4q .. 4q + 3 (zero past the tile's last row), then (types
// with mins) as many texels of mins in the same order, then the rows' units. A tiled part ends
// with zero texels (ops::kTiledSlackWords) that a decode lane's row slots past a short last tile
// read instead of rows (dot_rows in matmul_rows.glsl).
// So each decode lane reads one sequential stream of its own, scales included, and the 8 loads of
// lavapipe's texel-fetch helper (one per lane) go to 8 streams at once, the read roofline's
// lane-contiguous pattern (docs/decisions/0007-cpu-weights-in-row-tiles-and-lane-streams.md). A prefill workgroup owns 32 rows of a tile: runs of
// 16 (8, 4) neighbouring rows of 2 (4, 8) neighbouring streams (matmul_rows.glsl).
// Earlier layouts, measured: the tile as one sequential stream, rows in quads of 32 (a fetch's 8
// lanes 32 bytes apart), was this one's predecessor; rows row-major inside a band were 256
// streams per workgroup, more than the CPU's prefetchers follow (110M Q8_0 LM head on lavapipe:
// 8.6 -> 13 GB/s with tiles), and scales in an array of their own were a second stream that the
// gathers missed (GEMV over a 110 MB matrix: 8.2 -> 7.2 ms); all of a group's scales in one block
// made reads jump (decode 0.76x).
//
// Adding a type = its number and properties here (EPU_OF, GPS_OF, WZERO_OF, unpack family) + one
// row in the engine's weight-format table + its variants in shaders/manifest.txt.
layout(binding = 0) uniform usamplerBuffer weight_units;
layout(binding = 1) uniform samplerBuffer weight_scales;
// Where this matrix starts in those views: 0 when each matmul binds its own weight, the matrix's
// first unit (and that times 4 floats) when several matrices share one view (decode_layer.comp).
#ifndef WEIGHT_UNIT_BASE
#define WEIGHT_UNIT_BASE 0u
#define WEIGHT_FLOAT_BASE 0u
#endif

// A weight type is a value here, the ggml number of a layout above (ops::WeightFormat::
// device_type), passed to every function as `wt`: a compile-time constant at every call (a
// WTYPE_* define's WT, or a specialization constant), so once the driver inlines the call the
// per-type branches fold away and each call compiles only its own type. One shader can so hold matmuls of several types: the
// fused decode layer of a Q4_K_M file, whose attn_v and ffn_down are Q6_K (decode_layer.comp).
const uint T_F32 = 0u, T_F16 = 1u, T_Q4_0 = 2u, T_Q8_0 = 8u, T_Q4_K = 12u, T_Q5_K = 13u, T_Q6_K = 14u;
// EPU: elements per 16-byte unit. GPS: units per group — the units that share one scale, or for
// float types enough units for 16 elements — so kernels fetch a scale once per group.
// WZERO: the zero point of the raw values. Written as conditional expressions so that they are
// constant expressions (array sizes) for a constant type.
#define EPU_OF(t) ((t) == T_F32 ? 4u : (t) == T_F16 ? 8u : ((t) == T_Q4_0 || (t) == T_Q4_K) ? 32u : 16u)
#define GPS_OF(t) ((t) == T_F32 ? 4u : ((t) == T_Q4_0 || (t) == T_Q4_K || (t) == T_Q6_K) ? 1u : 2u)
#define WZERO_OF(t) ((t) == T_Q8_0 ? 128.0 : (t) == T_Q4_0 ? 8.0 : (t) == T_Q6_K ? 32.0 : 0.0)
// Raw values: a byte per element (Q8_0's unit) or a nibble (Q4_0's unit); quantized = either,
// with a float scale per group; K-quants with a min beside it (Q4_K, Q5_K).
#define BYTES_OF(t) ((t) == T_Q8_0 || (t) == T_Q5_K || (t) == T_Q6_K)
#define NIBBLES_OF(t) ((t) == T_Q4_0 || (t) == T_Q4_K)
#define QUANT_OF(t) (BYTES_OF(t) || NIBBLES_OF(t))
#define MINS_OF(t) ((t) == T_Q4_K || (t) == T_Q5_K)
// Floats per group beside the values (ops::WeightFormat::scales_per_group).
#define SPG_OF(t) (MINS_OF(t) ? 2u : QUANT_OF(t) ? 1u : 0u)
#define VPU_OF(t) (EPU_OF(t) / 4u)  // vec4s per unit
#define EPG_OF(t) (EPU_OF(t) * GPS_OF(t))  // elements per group
#define VPG_OF(t) (VPU_OF(t) * GPS_OF(t))  // vec4s per group
// Array sizes that hold any type's unit or group (unused entries are never touched).
#define VPU_MAX 8u
#define VPG_MAX 8u
#define GPS_MAX 4u
// 16-byte units per row of k elements (rows are whole groups; ops::repacked_row_units).
uint row_units_of(uint wt, uint k) { return (k + EPG_OF(wt) - 1u) / EPG_OF(wt) * GPS_OF(wt); }

// A shader of one type (a WTYPE_* define: the separate kernels) gets it as WT, the shorthands
// below, and WQUANT / WMINS for its own preprocessor branches.
#if defined(WTYPE_F32)
const uint WT = T_F32;
#elif defined(WTYPE_F16)
const uint WT = T_F16;
#elif defined(WTYPE_Q8_0)
const uint WT = T_Q8_0;
#elif defined(WTYPE_Q4_0)
const uint WT = T_Q4_0;
#elif defined(WTYPE_Q4_K)
const uint WT = T_Q4_K;
#define WMINS
#elif defined(WTYPE_Q5_K)
const uint WT = T_Q5_K;
#define WMINS
#elif defined(WTYPE_Q6_K)
const uint WT = T_Q6_K;
#elif !defined(WTYPE_PER_CALL)
#error "define one WTYPE_*, or WTYPE_PER_CALL for a shader that passes its types"
#endif
#if !defined(WTYPE_PER_CALL)
#if !defined(WTYPE_F32) && !defined(WTYPE_F16)
#define WQUANT
#endif
#define EPU EPU_OF(WT)
#define GPS GPS_OF(WT)
#define WZERO WZERO_OF(WT)
#define VPU VPU_OF(WT)
#define EPG EPG_OF(WT)
#endif

// Where a row's units and scales are: unit u of the row is unit_at(walk, u), the scale of its
// group g is at float index walk.scale_first + g * walk.scale_stride of the scales view.
struct RowWalk {
    uint first;         // unit index of the row's unit 0
    uint stride;        // units from one group of the row to its next
    uint scale_first;   // float index of the row's group-0 scale
    uint scale_stride;  // floats from one group's scale to the next
    uint min_offset;    // floats from a group's scale to its min (types with mins)
};
// The tile of a row, split from row_walk so that a band of rows in one tile pays its integer
// divisions once: a CPU driver has no vector division, so each one costs a scalar divide per lane
// (a lane's 32 rows walked one by one took ~500 of them per band of the fused decode kernel).
struct TileWalk {
    uint t0;      // the tile's first row
    uint n;       // its rows (tile_rows but for the last tile)
    uint base;    // texel index of its first lane stream
    uint stride;  // texels of one group in a stream: its scale texels (and mins), then its units
    uint lane;    // texels of one stream (every group)
    uint head;    // scale texels per group of a stream (4 rows each); as many of mins follow them
};
uint stream_rows(uint n) { return (n + 7u) / 8u; }
uint stream_head(uint wt, uint n) { return QUANT_OF(wt) ? (stream_rows(n) + 3u) / 4u : 0u; }
uint stream_stride(uint wt, uint n) { return stream_head(wt, n) * SPG_OF(wt) + stream_rows(n) * GPS_OF(wt); }
TileWalk tile_walk(uint wt, uint row, uint rows, uint row_units, uint tile_rows) {
    if (tile_rows == 1u) return TileWalk(row, 1u, 0u, GPS_OF(wt), 0u, 0u);
    const uint t0 = row - row % tile_rows, n = min(tile_rows, rows - t0);
    const uint groups = row_units / GPS_OF(wt);
    // Every earlier tile is whole.
    const uint stride = stream_stride(wt, n);
    return TileWalk(t0, n, (t0 / tile_rows) * 8u * groups * stream_stride(wt, tile_rows), stride, groups * stride,
                    stream_head(wt, n));
}
// A row of the tile `tw` (divisions by constants only): row i of the tile is row i / 8 of
// stream i % 8.
RowWalk row_walk_in(uint wt, TileWalk tw, uint row, uint row_units, uint tile_rows) {
    if (tile_rows == 1u)
        return RowWalk(row * row_units, GPS_OF(wt), row * (row_units / GPS_OF(wt)) * SPG_OF(wt), SPG_OF(wt), 1u);
    const uint rr = row - tw.t0, k = rr / 8u;
    const uint stream = tw.base + (rr % 8u) * tw.lane;
    return RowWalk(stream + tw.head * SPG_OF(wt) + k * GPS_OF(wt), tw.stride, (stream + k / 4u) * 4u + k % 4u,
                   tw.stride * 4u, tw.head * 4u);
}
RowWalk row_walk(uint wt, uint row, uint rows, uint row_units, uint tile_rows) {
    return row_walk_in(wt, tile_walk(wt, row, rows, row_units, tile_rows), row, row_units, tile_rows);
}
uint unit_at(uint wt, RowWalk walk, uint u) { return walk.first + (u / GPS_OF(wt)) * walk.stride + u % GPS_OF(wt); }

vec4 bytes4(uint u) { return vec4(u & 255u, (u >> 8) & 255u, (u >> 16) & 255u, u >> 24); }

// Float i of the scales view (a scale of a quantized matrix).
float scale_at(uint i) { return texelFetch(weight_scales, int(WEIGHT_FLOAT_BASE + i)).x; }
// Texel i of the values view as floats: four scales of a tiled quantized matrix.
vec4 scales4_at(uint i) { return uintBitsToFloat(texelFetch(weight_units, int(WEIGHT_UNIT_BASE + i))); }

// Texel i of the values view: one 16-byte unit.
uvec4 unit_texel(uint i) { return texelFetch(weight_units, int(WEIGHT_UNIT_BASE + i)); }

// The raw values of a unit `q`, before zero point and scale: VPU_OF(wt) vec4s.
void unpack_values(uint wt, uvec4 q, out vec4 w[VPU_MAX]) {
    if (wt == T_F32) {
        w[0] = uintBitsToFloat(q);
    } else if (wt == T_F16) {
        w[0] = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
        w[1] = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
    } else if (BYTES_OF(wt)) {
        w[0] = bytes4(q.x);
        w[1] = bytes4(q.y);
        w[2] = bytes4(q.z);
        w[3] = bytes4(q.w);
    } else {  // nibbles
        [[unroll]] for (uint c = 0; c < 4u; ++c) {
            uint u = q[c];
            w[2u * c] = vec4(u & 15u, (u >> 4) & 15u, (u >> 8) & 15u, (u >> 12) & 15u);
            w[2u * c + 1u] = vec4((u >> 16) & 15u, (u >> 20) & 15u, (u >> 24) & 15u, u >> 28);
        }
    }
}
// The raw values of unit `i` (a unit index).
void load_values(uint wt, uint i, out vec4 w[VPU_MAX]) { unpack_values(wt, unit_texel(i), w); }

// The raw values of a unit `q` of a quantized type as integers, for products with a fixed-point
// input (the CPU decode layout, see fixed_point_group in matmul_rows.glsl).
void unpack_ints(uint wt, uvec4 q, out ivec4 w[VPU_MAX]) {
    [[unroll]] for (uint c = 0; c < 4u; ++c) {
        const uint u = q[c];
        if (BYTES_OF(wt)) {
            w[c] = ivec4(u & 255u, (u >> 8) & 255u, (u >> 16) & 255u, u >> 24);
        } else {
            w[2u * c] = ivec4(u & 15u, (u >> 4) & 15u, (u >> 8) & 15u, (u >> 12) & 15u);
            w[2u * c + 1u] = ivec4((u >> 16) & 15u, (u >> 20) & 15u, (u >> 24) & 15u, u >> 28);
        }
    }
}

// The scale of group g of the row at `walk` (1 for float types).
float group_scale(uint wt, RowWalk walk, uint g) {
    return QUANT_OF(wt) ? scale_at(walk.scale_first + g * walk.scale_stride) : 1.0;
}
// The min of group g of the row at `walk` (0 for types without mins).
float group_min(uint wt, RowWalk walk, uint g) {
    return MINS_OF(wt) ? scale_at(walk.scale_first + g * walk.scale_stride + walk.min_offset) : 0.0;
}

// The values of unit u of the row at `walk`, dequantized.
void dequant_unit(uint wt, RowWalk walk, uint u, out vec4 w[VPU_MAX]) {
    load_values(wt, unit_at(wt, walk, u), w);
    if (QUANT_OF(wt)) {
        const float d = group_scale(wt, walk, u / GPS_OF(wt)), m = group_min(wt, walk, u / GPS_OF(wt));
        for (uint v = 0; v < VPU_OF(wt); ++v) w[v] = (w[v] - WZERO_OF(wt)) * d - m;
    }
}

// One element: element e of the row at `walk`.
float load1(uint wt, RowWalk walk, uint e) {
    vec4 w[VPU_MAX];
    dequant_unit(wt, walk, e / EPU_OF(wt), w);
    uint k = e % EPU_OF(wt);
    return w[k / 4u][k % 4u];
}
