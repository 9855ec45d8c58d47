#version 450
#extension GL_GOOGLE_include_directive : require
// The Q/K/V step of models with per-head Q/K norms (Qwen3), after a Q/K/V matmul that stored its
// rows plainly: per token and head, Q and K heads are RMS-normalised over the head with the
// layer's per-dimension weights (attn_q_norm, attn_k_norm), then rotated by RoPE as the Q/K/V
// epilogue rotates (neighbour pairs; the loader reordered NEOX rows); Q goes back in place, K and
// V into the paged KV cache (qk_norm.glsl). One invocation per (token, head).
layout(local_size_x = 64) in;
#include "kv.glsl"
layout(std430, binding = 0) buffer QKV { float qkv[]; };
layout(binding = 1) uniform usamplerBuffer tok;   // (pos, table offset, slot, item) per token
layout(binding = 2) uniform samplerBuffer rope;   // cos, sin of [pos][i]
layout(binding = 3) uniform samplerBuffer norm;   // [q_norm (hd) | k_norm (hd)]
layout(std430, binding = 4) writeonly buffer KCache { uint kc[]; };
layout(std430, binding = 5) writeonly buffer VCache { uint vc[]; };
layout(push_constant) uniform Push {
    uint T, n_head, n_kv, hd, n_rot, block, qkv_stride;
    float eps;
} pc;

float y_get(uint o) { return qkv[o]; }
void y_set(uint o, float v) { qkv[o] = v; }
float qk_norm_w(uint i) { return texelFetch(norm, int(i)).x; }
float rope_at(uint i) { return texelFetch(rope, int(i)).x; }
#if defined(KV_F16)
void k_store(uint i, vec2 v) { kc[i / 2u] = packHalf2x16(v); }
void v_store(uint i, vec2 v) { vc[i / 2u] = packHalf2x16(v); }
#else
void k_store(uint i, vec2 v) {
    kc[i] = floatBitsToUint(v.x);
    kc[i + 1u] = floatBitsToUint(v.y);
}
void v_store(uint i, vec2 v) {
    vc[i] = floatBitsToUint(v.x);
    vc[i + 1u] = floatBitsToUint(v.y);
}
#endif
#include "qk_norm.glsl"

void main() {
    const uint heads = pc.n_head + 2u * pc.n_kv;
    const uint id = gl_GlobalInvocationID.x;
    if (id >= pc.T * heads) return;
    const uint t = id / heads;
    qk_norm_rope_head(t, id % heads, texelFetch(tok, int(t)), pc.n_head, pc.n_kv, pc.hd, pc.n_rot, pc.block,
                      pc.qkv_stride, pc.eps);
}
