#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Arithmetic roofline of a weight layout: the least work a decode kernel can do per weight of that
// layout, at the read roofline's best pattern (each lane streaming its own run of texels). A lane
// walks blocks laid out as a decode lane's tile stream (weights.glsl): the scale texel of four
// rows (types with mins: then their mins' texel) and the four rows' units of one group; it fetches
// the units first (as dot_rows in matmul_rows.glsl does), unpacks them with weights.glsl's
// functions, multiplies them by one group's input held in registers (fixed point for quantized
// types, as decode on CPU drivers does) and adds each row's sum, scaled, to the row's accumulator.
// What decode adds on top (the group input's fetch and rounding per band, per-band setup and
// stores, the other ops of a layer) is left out. So a decode kernel at this rate does the
// layout's arithmetic as fast as this device runs it, and the gap between this roofline and the
// read roofline is the cost of that arithmetic here: nothing on a GPU, most of the time for 4- and
// 8-bit types on a CPU driver.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DOT_TYPE = 8u;  // a weights.glsl type number
// Which lane takes which block: false = each lane its own contiguous run of blocks (CPU drivers,
// whose lanes are SIMD lanes of one thread); true = grid-stride, neighbouring lanes neighbouring
// blocks (GPUs, whose lanes' loads coalesce).
layout(constant_id = 2) const bool GRID_STRIDE = false;
#define WTYPE_PER_CALL
#include "weights.glsl"
layout(std430, binding = 2) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push {
    uint n_units;  // 16-byte texels in the buffer
    int first;     // texel of the input's values
} pc;

int idot(ivec4 a, ivec4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

// The type is an argument, as in the fused decode layer: the driver folds it once it inlines the call.
void stream_dot(uint wt) {
    const bool quant = QUANT_OF(wt);
    const uint head = SPG_OF(wt);  // scale (and mins) texels of a block
    const uint block = head + 4u * GPS_OF(wt);
    const uint lanes = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    const uint per_lane = pc.n_units / block / lanes;
    uint i = GRID_STRIDE ? gl_GlobalInvocationID.x * block : gl_GlobalInvocationID.x * per_lane * block;
    const uint step = GRID_STRIDE ? lanes * block : block;
    // One group's input, the same for every lane as in decode. Read from the buffer, so that the
    // compiler cannot strength-reduce the multiplies by values it knows (a constant input ran
    // Q8_0 at a third of this rate); 15 bits and a sign, clamped as decode's fixed-point input
    // (fixed_point_group in matmul_rows.glsl) so that the compiler may multiply in 16 bits too.
    ivec4 in_q[VPG_MAX];
    vec4 in_v[VPG_MAX];
    int qsum = 0;
    [[unroll]] for (uint v = 0; v < VPG_MAX; ++v) {
        in_q[v] = clamp(ivec4(unit_texel(uint(pc.first) + v) & 0xffffu) - 32768, ivec4(-32767), ivec4(32767));
        in_v[v] = vec4(in_q[v]);
        qsum += in_q[v].x + in_q[v].y + in_q[v].z + in_q[v].w;
    }
    const int zero_q = int(WZERO_OF(wt)) * qsum;
    const float in_s = 1.0 / 32768.0, in_sum = float(qsum) * in_s;
    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
    for (uint b = 0; b < per_lane; ++b, i += step) {
        const vec4 d = quant ? scales4_at(i) : vec4(1.0);
        const vec4 mn = MINS_OF(wt) ? scales4_at(i + 1u) : vec4(0.0);
        uvec4 raw[4u * GPS_MAX];
        [[unroll]] for (uint u = 0; u < 4u * GPS_OF(wt); ++u) raw[u] = unit_texel(i + head + u);
        [[unroll]] for (uint r = 0; r < 4u; ++r) {
            if (quant) {
                int ai = 0;
                [[unroll]] for (uint h = 0; h < GPS_OF(wt); ++h) {
                    ivec4 w[VPU_MAX];
                    unpack_ints(wt, raw[r * GPS_OF(wt) + h], w);
                    [[unroll]] for (uint v = 0; v < VPU_OF(wt); ++v) ai += idot(w[v], in_q[h * VPU_OF(wt) + v]);
                }
                acc[r] += float(ai - zero_q) * in_s * d[r] - mn[r] * in_sum;
            } else {
                float a = 0.0;
                [[unroll]] for (uint h = 0; h < GPS_OF(wt); ++h) {
                    vec4 w[VPU_MAX];
                    unpack_values(wt, raw[r * GPS_OF(wt) + h], w);
                    [[unroll]] for (uint v = 0; v < VPU_OF(wt); ++v) a += dot(w[v], in_v[h * VPU_OF(wt) + v]);
                }
                acc[r] += a;
            }
        }
    }
    const float s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    if (s == 12345.678) dst[gl_GlobalInvocationID.x] = s;  // practically never: keeps the work alive
    if (gl_LocalInvocationID.x == 0u) dst[gl_WorkGroupID.x] = s;
}

void main() { stream_dot(DOT_TYPE); }
