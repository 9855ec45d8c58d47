// Weight access for every supported tensor type. The engine repacks each matrix at load time
// (engine/src/ops/weight_format.cpp) into 16-byte units so that every load is one uvec4 texel: one
// memory transaction on GPUs, and on lavapipe one straight-line gather for the whole SIMD group (a
// storage-buffer load there is a per-lane loop with a bounds branch per component, about 3x
// slower; see BindingKind in engine/src/vulkan/context.h):
//   binding 0 (R32G32B32A32_UINT texels) = the values; binding 1 (R32_SFLOAT texels) = per-group
//   scales: their own array in row-major weights, else a float view of the values buffer itself
//   F32  : 4 floats per unit
//   F16  : 8 halves per unit
//   Q8_0 : 16 bytes per unit (half a block), element order, stored as q + 128 (unsigned)
//   Q4_0 : 32 4-bit values per unit (one block), nibble i of word w = element 8w + i, stored as q
//   Q4_K : as Q4_0, one unit per 32-element sub-block, with a scale and a min per group
//   Q5_K : as Q8_0's bytes (q, 0..31), two units per 32-element sub-block, a scale and a min
//   Q6_K : as Q8_0's bytes (q, 0..63), one unit per 16-element sub-block, a scale
// Value = (raw - WZERO) * scale, and for types with mins (WMINS) raw * scale - min. Kernels that
// sum many products take the raw values and subtract WZERO * sum(input) (and min * sum(input))
// once per group: on CPU drivers the unpack is the largest cost per weight, and
// an unsigned byte unpacks with one shift and one mask (a signed one needs two shifts), and Q4_0
// saves its subtraction per element.
//
// Layout: rows of whole groups (GPS units sharing one scale; float rows are zero-padded to whole
// groups). tile_rows = 1: plain row-major, scales in their own array (GPUs, whose lanes split a
// row). Otherwise (CPU drivers; tile_rows a multiple of 8) rows are stored in tiles of tile_rows
// rows (a part's last tile may be shorter): inside a tile, group 0 of every row, then group 1 of
// every row, and so on; within a group, the tile's rows in quads of 32 (four octets of 8; the
// last quad may be shorter), each quad's units preceded (quantized types) by its 8 scale texels:
// texel i holds the scales of row i of its octets 0, 1, 2, 3 (zero past the last row), and with
// mins by 8 more texels holding the mins in the same order (mins at scale texel + 8). A decode
// lane, which owns row i of every octet, so fetches four of its rows' scales in one texel (32
// single-float gathers per group of a 32-row lane were 8 % of 110M Q8_0 decode on lavapipe), and
// a prefill workgroup, which owns a quad, reads its scales and units as one run. (All of a
// group's scales in one block, before or after its units, made reads jump: decode 0.76x with
// them after, prefill 0.93x with them before.)
// A workgroup walks a whole tile, group by group, so its weight reads — scales included — form
// one sequential stream instead of one stream per row, which the CPU's prefetchers cannot follow
// past a few dozen (110M Q8_0 LM head on lavapipe: 8.6 -> 13 GB/s), and scales in their own array
// were a second stream that the gathers missed (GEMV over a 110 MB matrix: 8.2 -> 7.2 ms).
//
// Adding a type = one branch here (its EPU, GPS, WZERO and unpack family) + one row in the engine's
// weight-format table + its variants in shaders/manifest.txt.
layout(binding = 0) uniform usamplerBuffer weight_units;
layout(binding = 1) uniform samplerBuffer weight_scales;
// Where this matrix starts in those views: 0 when each matmul binds its own weight, the matrix's
// first unit (and that times 4 floats) when several matrices share one view (decode_layer.comp).
#ifndef WEIGHT_UNIT_BASE
#define WEIGHT_UNIT_BASE 0u
#define WEIGHT_FLOAT_BASE 0u
#endif

// EPU: elements per 16-byte unit. GPS: units per group — the units that share one scale, or for
// float types enough units for 16 elements — so kernels fetch a scale once per group.
// WZERO: the zero point of the raw values.
#if defined(WTYPE_F32)
#define EPU 4u
#define GPS 4u
#define WZERO 0.0
#elif defined(WTYPE_F16)
#define EPU 8u
#define GPS 2u
#define WZERO 0.0
#elif defined(WTYPE_Q8_0)
#define EPU 16u
#define GPS 2u
#define WZERO 128.0
#define WBYTES
#elif defined(WTYPE_Q4_0)
#define EPU 32u
#define GPS 1u
#define WZERO 8.0
#define WNIBBLES
#elif defined(WTYPE_Q4_K)
#define EPU 32u
#define GPS 1u
#define WZERO 0.0
#define WNIBBLES
#define WMINS
#elif defined(WTYPE_Q5_K)
#define EPU 16u
#define GPS 2u
#define WZERO 0.0
#define WBYTES
#define WMINS
#elif defined(WTYPE_Q6_K)
#define EPU 16u
#define GPS 1u
#define WZERO 32.0
#define WBYTES
#else
#error "define one WTYPE_*"
#endif
// WQUANT: integer raw values with a float scale per group (every type but F32 and F16).
#if defined(WBYTES) || defined(WNIBBLES)
#define WQUANT
#endif
// Floats per group beside the values (ops::WeightFormat::scales_per_group).
#if defined(WMINS)
#define SPG 2u
#elif defined(WQUANT)
#define SPG 1u
#else
#define SPG 0u
#endif
#define VPU (EPU / 4u)  // vec4s per unit
#define EPG (EPU * GPS)  // elements per group
#define VPG (VPU * GPS)  // vec4s per group

// Scale texels per quad of rows and group, and per group of a tile of n rows (the layout above).
#define QUAD_SCALE_TEXELS (8u * SPG)
uint tile_scale_texels(uint n) { return ((n + 31u) / 32u) * QUAD_SCALE_TEXELS; }

// Where a row's units and scales are: unit u of the row is unit_at(walk, u), the scale of its
// group g is at float index walk.scale_first + g * walk.scale_stride of the scales view.
struct RowWalk {
    uint first;         // unit index of the row's unit 0
    uint stride;        // units from one group of the row to its next
    uint scale_first;   // float index of the row's group-0 scale
    uint scale_stride;  // floats from one group's scale to the next
    uint min_offset;    // floats from a group's scale to its min (WMINS)
};
// The tile of a row, split from row_walk so that a band of rows in one tile pays its integer
// divisions once: a CPU driver has no vector division, so each one costs a scalar divide per lane
// (a lane's 32 rows walked one by one took ~500 of them per band of the fused decode kernel).
struct TileWalk {
    uint t0;      // the tile's first row
    uint n;       // its rows (tile_rows but for the last tile)
    uint base;    // texel index of its group 0
    uint stride;  // texels from one group of its rows to the next
};
TileWalk tile_walk(uint row, uint rows, uint row_units, uint tile_rows) {
    if (tile_rows == 1u) return TileWalk(row, 1u, 0u, GPS);
    const uint t0 = row - row % tile_rows, n = min(tile_rows, rows - t0);
    // Every earlier tile is whole.
    const uint whole = tile_rows * GPS + tile_scale_texels(tile_rows);
    return TileWalk(t0, n, (t0 / tile_rows) * (row_units / GPS) * whole, n * GPS + tile_scale_texels(n));
}
// A row of the tile `tw` (divisions by constants only).
RowWalk row_walk_in(TileWalk tw, uint row, uint row_units, uint tile_rows) {
    if (tile_rows == 1u) return RowWalk(row * row_units, GPS, row * (row_units / GPS) * SPG, SPG, 1u);
    const uint rr = row - tw.t0;
    const uint quad = tw.base + (rr / 32u) * (QUAD_SCALE_TEXELS + 32u * GPS);  // every earlier quad is whole
    return RowWalk(quad + QUAD_SCALE_TEXELS + (rr % 32u) * GPS, tw.stride,
                   (quad + rr % 8u) * 4u + (rr / 8u) % 4u, tw.stride * 4u, 32u);
}
RowWalk row_walk(uint row, uint rows, uint row_units, uint tile_rows) {
    return row_walk_in(tile_walk(row, rows, row_units, tile_rows), row, row_units, tile_rows);
}
uint unit_at(RowWalk walk, uint u) { return walk.first + (u / GPS) * walk.stride + u % GPS; }

vec4 bytes4(uint u) { return vec4(u & 255u, (u >> 8) & 255u, (u >> 16) & 255u, u >> 24); }

// Float i of the scales view (a scale of a quantized matrix).
float scale_at(uint i) { return texelFetch(weight_scales, int(WEIGHT_FLOAT_BASE + i)).x; }
// Texel i of the values view as floats: four scales of a tiled quantized matrix.
vec4 scales4_at(uint i) { return uintBitsToFloat(texelFetch(weight_units, int(WEIGHT_UNIT_BASE + i))); }

// The raw values of unit `i` (a unit index), before zero point and scale.
void load_values(uint i, out vec4 w[VPU]) {
    uvec4 q = texelFetch(weight_units, int(WEIGHT_UNIT_BASE + i));
#if defined(WTYPE_F32)
    w[0] = uintBitsToFloat(q);
#elif defined(WTYPE_F16)
    w[0] = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
    w[1] = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
#elif defined(WBYTES)
    w[0] = bytes4(q.x);
    w[1] = bytes4(q.y);
    w[2] = bytes4(q.z);
    w[3] = bytes4(q.w);
#elif defined(WNIBBLES)
    for (uint c = 0; c < 4u; ++c) {
        uint u = q[c];
        w[2u * c] = vec4(u & 15u, (u >> 4) & 15u, (u >> 8) & 15u, (u >> 12) & 15u);
        w[2u * c + 1u] = vec4((u >> 16) & 15u, (u >> 20) & 15u, (u >> 24) & 15u, u >> 28);
    }
#endif
}

#if defined(WQUANT)
// The raw values of unit `i` as integers, for products with a fixed-point input (the CPU decode
// layout, see fixed_point_group in matmul_rows.glsl).
void load_ints(uint i, out ivec4 w[VPU]) {
    uvec4 q = texelFetch(weight_units, int(WEIGHT_UNIT_BASE + i));
    [[unroll]] for (uint c = 0; c < 4u; ++c) {
        const uint u = q[c];
#if defined(WBYTES)
        w[c] = ivec4(u & 255u, (u >> 8) & 255u, (u >> 16) & 255u, u >> 24);
#else
        w[2u * c] = ivec4(u & 15u, (u >> 4) & 15u, (u >> 8) & 15u, (u >> 12) & 15u);
        w[2u * c + 1u] = ivec4((u >> 16) & 15u, (u >> 20) & 15u, (u >> 24) & 15u, u >> 28);
#endif
    }
}
#endif

// The scale of group g of the row at `walk` (1 for float types).
float group_scale(RowWalk walk, uint g) {
#if defined(WQUANT)
    return scale_at(walk.scale_first + g * walk.scale_stride);
#else
    return 1.0;
#endif
}
#if defined(WMINS)
// The min of group g of the row at `walk`.
float group_min(RowWalk walk, uint g) { return scale_at(walk.scale_first + g * walk.scale_stride + walk.min_offset); }
#endif

// The values of unit u of the row at `walk`, dequantized.
void dequant_unit(RowWalk walk, uint u, out vec4 w[VPU]) {
    load_values(unit_at(walk, u), w);
#if defined(WQUANT)
    const float d = group_scale(walk, u / GPS);
#if defined(WMINS)
    const float m = group_min(walk, u / GPS);
#else
    const float m = 0.0;
#endif
    for (uint v = 0; v < VPU; ++v) w[v] = (w[v] - WZERO) * d - m;
#endif
}

// One element: element e of the row at `walk`.
float load1(RowWalk walk, uint e) {
    vec4 w[VPU];
    dequant_unit(walk, e / EPU, w);
    uint k = e % EPU;
    return w[k / 4u][k % 4u];
}
