#version 450
#extension GL_GOOGLE_include_directive : require
// x[t][k] = dequant(token_embd[token[t]][k]): the embedding lookup, in any weight type.
// One invocation per (k, t).
layout(local_size_x_id = 0) in;
#include "weights.glsl"
layout(std430, binding = 2) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 3) writeonly buffer Out { float x[]; };
layout(push_constant) uniform Push { uint K; uint T; uint vocab; } pc;
void main() {
    uint k = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
    if (k >= pc.K || t >= pc.T) return;
    uint tok = min(tokens[t], pc.vocab - 1u);  // the host validates ids; never read out of bounds
    x[t * pc.K + k] = load1(tok * pc.K + k);
}
