// Weight access for every supported tensor type. Each matrix is stored row-major as the engine
// repacked it at load time (engine/src/ops/weight_format.cpp), in 16-byte units so that every load
// is one uvec4 texel: one memory transaction on GPUs, and on lavapipe one straight-line gather for
// the whole SIMD group (a storage-buffer load there is a per-lane loop with a bounds branch per
// component, about 3x slower; see BindingKind in engine/src/vulkan/context.h):
//   binding 0 (R32G32B32A32_UINT texels) = the values; binding 1 (R32_SFLOAT texels) = per-block scales
//   F32  : 4 floats per unit;  rows padded with zeros to a whole number of units
//   F16  : 8 halves per unit;  rows padded likewise
//   Q8_0 : 16 int8 per unit (half a block), element order; value = q * ws[unit / 2]
//   Q4_0 : 32 4-bit values per unit (one block), nibble i of word w = element 8w + i;
//          value = (q - 8) * ws[unit]
// Adding a type = one branch here + one row in the engine's weight-format table + its variants in
// shaders/manifest.txt.
layout(binding = 0) uniform usamplerBuffer weight_units;
layout(binding = 1) uniform samplerBuffer weight_scales;

// EPU: elements per 16-byte unit. GPS: units per group — the units that share one scale, or for
// float types enough units for 16 elements — so kernels fetch a scale once per group.
#if defined(WTYPE_F32)
#define EPU 4u
#define GPS 4u
#elif defined(WTYPE_F16)
#define EPU 8u
#define GPS 2u
#elif defined(WTYPE_Q8_0)
#define EPU 16u
#define GPS 2u
#elif defined(WTYPE_Q4_0)
#define EPU 32u
#define GPS 1u
#else
#error "define one WTYPE_*"
#endif
#define VPU (EPU / 4u)  // vec4s per unit
#define EPG (EPU * GPS)  // elements per group
#define VPG (VPU * GPS)  // vec4s per group

vec4 signed_bytes(uint u) {
    return vec4(int(u << 24) >> 24, int(u << 16) >> 24, int(u << 8) >> 24, int(u) >> 24);
}

// Loads unit `i` (a global unit index) into w[0..VPU) *without* its block scale, and returns the
// scale (1 for float types): value = w * scale. Kernels multiply a unit's partial dot product by
// the scale once instead of scaling every element.
// The values of unit `i` (a global unit index), unscaled.
void load_values(uint i, out vec4 w[VPU]) {
    uvec4 q = texelFetch(weight_units, int(i));
#if defined(WTYPE_F32)
    w[0] = uintBitsToFloat(q);
#elif defined(WTYPE_F16)
    w[0] = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
    w[1] = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
#elif defined(WTYPE_Q8_0)
    w[0] = signed_bytes(q.x);
    w[1] = signed_bytes(q.y);
    w[2] = signed_bytes(q.z);
    w[3] = signed_bytes(q.w);
#elif defined(WTYPE_Q4_0)
    for (uint c = 0; c < 4u; ++c) {
        uint u = q[c];
        w[2u * c] = vec4(u & 15u, (u >> 4) & 15u, (u >> 8) & 15u, (u >> 12) & 15u) - 8.0;
        w[2u * c + 1u] = vec4((u >> 16) & 15u, (u >> 20) & 15u, (u >> 24) & 15u, u >> 28) - 8.0;
    }
#endif
}

// The scale of unit `i` (1 for float types). Units of one group share it when the group starts
// at a multiple of GPS, which holds for every row start (rows are whole blocks).
float unit_scale(uint i) {
#if defined(WTYPE_Q8_0)
    return texelFetch(weight_scales, int(i >> 1)).x;
#elif defined(WTYPE_Q4_0)
    return texelFetch(weight_scales, int(i)).x;
#else
    return 1.0;
#endif
}

float load_unit(uint i, out vec4 w[VPU]) {
    load_values(i, w);
    return unit_scale(i);
}

// One element: element e of the row starting at unit `row_unit`.
float load1(uint row_unit, uint e) {
    vec4 w[VPU];
    float d = load_unit(row_unit + e / EPU, w);
    uint k = e % EPU;
    return w[k / 4u][k % 4u] * d;
}
