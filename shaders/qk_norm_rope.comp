#version 450
#extension GL_GOOGLE_include_directive : require
// The Q/K/V step of models with per-head Q/K norms (Qwen3), after a Q/K/V matmul that stored its
// rows plainly: per token and head, Q and K heads are RMS-normalised over the head with the
// layer's per-dimension weights (attn_q_norm, attn_k_norm), then rotated by RoPE as the Q/K/V
// epilogue rotates (neighbour pairs; the loader reordered NEOX rows); Q goes back in place, K and
// V into the paged KV cache. One invocation per (token, head): a head is at most 256 values, read
// twice, next to the matmul that made them.
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

void store(bool is_k, uint i, vec2 v) {
#if defined(KV_F16)
    if (is_k) kc[i / 2u] = packHalf2x16(v); else vc[i / 2u] = packHalf2x16(v);
#else
    if (is_k) {
        kc[i] = floatBitsToUint(v.x);
        kc[i + 1u] = floatBitsToUint(v.y);
    } else {
        vc[i] = floatBitsToUint(v.x);
        vc[i + 1u] = floatBitsToUint(v.y);
    }
#endif
}

void main() {
    const uint heads = pc.n_head + 2u * pc.n_kv;
    const uint id = gl_GlobalInvocationID.x;
    if (id >= pc.T * heads) return;
    const uint t = id / heads, h = id % heads, base = t * pc.qkv_stride + h * pc.hd;
    const uvec4 info = texelFetch(tok, int(t));
    const bool is_v = h >= pc.n_head + pc.n_kv;
    float scale = 1.0;
    if (!is_v) {
        float ss = 0.0;
        for (uint d = 0u; d < pc.hd; ++d) ss += qkv[base + d] * qkv[base + d];
        scale = inversesqrt(ss / float(pc.hd) + pc.eps);
    }
    const uint norm_base = h < pc.n_head ? 0u : pc.hd;
    for (uint d = 0u; d < pc.hd; d += 2u) {
        vec2 v = vec2(qkv[base + d], qkv[base + d + 1u]);
        if (!is_v) {
            v *= scale * vec2(texelFetch(norm, int(norm_base + d)).x, texelFetch(norm, int(norm_base + d + 1u)).x);
            if (d < pc.n_rot) {
                const uint r = 2u * (info.x * (pc.n_rot / 2u) + d / 2u);
                const vec2 cs = vec2(texelFetch(rope, int(r)).x, texelFetch(rope, int(r + 1u)).x);
                v = vec2(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x);
            }
        }
        if (h < pc.n_head) {
            qkv[base + d] = v.x;
            qkv[base + d + 1u] = v.y;
        } else {
            const bool is_k = !is_v;
            const uint kv_head = h - pc.n_head - (is_k ? 0u : pc.n_kv);
            store(is_k, kv_index(info.z, kv_head, d, pc.n_kv, pc.hd, pc.block), v);
        }
    }
}
