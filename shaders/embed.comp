#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require  // weights.glsl unrolls its loops
// x[t][k] = dequant(token_embd[token[t]][k]) * scale: the embedding lookup, in any weight type
// (scale: 1, or Gemma's sqrt(width)).
// One invocation per (16-byte unit, token): it dequantizes a whole unit.
layout(local_size_x_id = 0) in;
#include "weights.glsl"
layout(std430, binding = 2) readonly buffer Tokens { uint tokens[]; };
layout(std430, binding = 3) writeonly buffer Out { float x[]; };
// One dispatch per row part of the table (its rows first_row .. first_row + rows - 1): a token
// whose row another part holds is left to that part's dispatch.
layout(push_constant) uniform Push {
    uint K; uint T; uint rows; uint row_units; uint tile_rows; uint first_row; uint vocab; float scale;
} pc;
void main() {
    uint u = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
    if (u >= pc.row_units || t >= pc.T) return;
    uint tok = min(tokens[t], pc.vocab - 1u);  // the host validates ids; never read out of bounds
    if (tok < pc.first_row || tok - pc.first_row >= pc.rows) return;
    vec4 w[VPU_MAX];
    dequant_unit(WT, row_walk(WT, tok - pc.first_row, pc.rows, pc.row_units, pc.tile_rows), u, w);
    for (uint v = 0; v < VPU; ++v)
        for (uint c = 0; c < 4u; ++c) {
            uint k = u * EPU + 4u * v + c;
            if (k < pc.K) x[t * pc.K + k] = w[v][c] * pc.scale;
        }
}
