#version 450
#extension GL_EXT_control_flow_attributes : require
// Read roofline: streams a buffer through a running sum; one float per workgroup is written so
// the reads cannot be optimised away. Built three times: reading a storage buffer, (TEXEL) reading
// the same buffer as R32G32B32A32 texels, the way the matmul kernels read weights, and (IMAGE) as a
// storage texel buffer with imageLoad (on lavapipe the fastest streaming read there is, 15-20 %
// above texel fetches; the matmuls did not get faster with it, see docs/experiments.md).
// MODE (specialization constant) picks the access pattern:
//   0: grid-stride — lane i of the dispatch reads vec4 i, i + stride, ... (coalesced on GPUs)
//   1: lane-contiguous — each lane reads its own contiguous chunk of vec4s, 16 per iteration into
//      four sums (on lavapipe a loop of one fetch and one add per iteration read 1.3-1.5x slower:
//      its fetch is a call, and the loop kept the next iteration's loads from starting early;
//      the roofline had understated this device by that much until bench_dot.comp outran it)
//   2: uniform — every lane of a workgroup reads the same vec4 (broadcast loads); workgroups
//      split the buffer, so each byte is read once per workgroup lane group
//   3: workgroup-contiguous — workgroup w reads its own contiguous chunk, its lanes consecutive
//      vec4s: one sequential stream per workgroup, the way the CPU-driver matmuls stream a weight
//      tile (the host runs it with one-subgroup workgroups on CPU drivers: lavapipe runs the
//      subgroups of a wider workgroup one after another, each reading every WG-th 16 bytes)
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MODE = 0;
#if defined(TEXEL)
layout(binding = 0) uniform samplerBuffer src_texels;
#define SRC(i) texelFetch(src_texels, int(i))
#elif defined(IMAGE)
layout(binding = 0, rgba32f) readonly uniform imageBuffer src_image;
#define SRC(i) imageLoad(src_image, int(i))
#else
layout(std430, binding = 0) readonly buffer Src { vec4 src[]; };
#define SRC(i) src[i]
#endif
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { uint n_vec4; } pc;
void main() {
    uint lanes = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    vec4 acc = vec4(0.0);
    if (MODE == 0u) {
        for (uint i = gl_GlobalInvocationID.x; i < pc.n_vec4; i += lanes) acc += SRC(i);
    } else if (MODE == 1u) {
        uint chunk = (pc.n_vec4 + lanes - 1u) / lanes;
        uint begin = gl_GlobalInvocationID.x * chunk, end = min(begin + chunk, pc.n_vec4);
        uint i = begin;
        for (; i + 16u <= end; i += 16u) {
            vec4 a[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
            [[unroll]] for (uint u = 0; u < 16u; ++u) a[u % 4u] += SRC(i + u);
            acc += (a[0] + a[1]) + (a[2] + a[3]);
        }
        for (; i < end; ++i) acc += SRC(i);
    } else if (MODE == 3u) {
        uint chunk = (pc.n_vec4 + gl_NumWorkGroups.x - 1u) / gl_NumWorkGroups.x;
        uint begin = gl_WorkGroupID.x * chunk, end = min(begin + chunk, pc.n_vec4);
        for (uint i = begin + gl_LocalInvocationID.x; i < end; i += gl_WorkGroupSize.x) acc += SRC(i);
    } else {
        uint chunk = (pc.n_vec4 + gl_NumWorkGroups.x - 1u) / gl_NumWorkGroups.x;
        uint begin = gl_WorkGroupID.x * chunk, end = min(begin + chunk, pc.n_vec4);
        for (uint i = begin; i < end; ++i) acc += SRC(i);
    }
    float s = acc.x + acc.y + acc.z + acc.w;
    if (s == 12345.678) dst[gl_GlobalInvocationID.x] = s;  // practically never: keeps the loads alive
    if (gl_LocalInvocationID.x == 0u) dst[gl_WorkGroupID.x] = s;
}
