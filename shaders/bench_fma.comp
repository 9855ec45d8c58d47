#version 450
#extension GL_EXT_control_flow_attributes : require
// Multiply-add roofline: the most float multiply-adds a second the device's kernels can do. Each
// lane runs eight independent vec4 chains of acc = acc * m + c (so a chain's latency never limits
// it), from registers only; a multiply and an add, as the matmul and attention kernels write their
// products (a GPU compiler fuses them into FMAs; lavapipe's NIR keeps them two instructions).
// Nothing is read; the sums are stored only if they come out as an impossible value, so the
// compiler must compute them but the store never runs. lantern-bench gives prefill as a fraction
// of this (Rooflines::fma_gflop_s): its multiply-adds per token over every weight and key.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push {
    uint iterations;  // of the loop below: 32 multiply-adds per lane each
    float m;          // just under 1, so the chains neither overflow nor die out
} pc;

void main() {
    vec4 acc[8];
    [[unroll]] for (uint i = 0; i < 8u; ++i) acc[i] = vec4(float(gl_GlobalInvocationID.x % 7u + i)) * 1e-3;
    const vec4 m = vec4(pc.m), c = vec4(1e-6);
    for (uint n = 0; n < pc.iterations; ++n)
        [[unroll]] for (uint i = 0; i < 8u; ++i) acc[i] = acc[i] * m + c;
    vec4 s = vec4(0.0);
    [[unroll]] for (uint i = 0; i < 8u; ++i) s += acc[i];
    const float total = dot(s, vec4(1.0));
    if (total == -1.0) dst[gl_GlobalInvocationID.x] = total;
}
