#version 450
#extension GL_GOOGLE_include_directive : require
// RoPE ("normal" GGUF llama mode: adjacent pairs (2i, 2i+1) rotate by pos * base^(-2i/head_dim))
// applied to Q in place and to K on its way into the paged KV cache; V is copied into the cache.
// Angles come from a table the host computed in double precision (rope[pos][i] = (cos, sin)),
// so every device rotates identically. One invocation per pair; y = token.
layout(local_size_x_id = 0) in;
#include "kv.glsl"
layout(std430, binding = 0) buffer QKV { float qkv[]; };
layout(std430, binding = 1) writeonly buffer KCache { uint kc[]; };
layout(std430, binding = 2) writeonly buffer VCache { uint vc[]; };
layout(std430, binding = 3) readonly buffer TokInfo { uvec4 tok[]; };  // (pos, table offset, slot, seq)
layout(std430, binding = 4) readonly buffer Rope { vec2 rope[]; };
layout(push_constant) uniform Push {
    uint T; uint n_head; uint n_kv; uint hd; uint qkv_stride; uint block; uint n_rot;
} pc;

void store(bool is_k, uint slot, uint kvh, uint d, vec2 v) {
    uint i = kv_index(slot, kvh, d, pc.n_kv, pc.hd, pc.block);
#if defined(KV_F16)
    if (is_k) kc[i / 2u] = packHalf2x16(v); else vc[i / 2u] = packHalf2x16(v);
#else
    if (is_k) { kc[i] = floatBitsToUint(v.x); kc[i + 1u] = floatBitsToUint(v.y); }
    else { vc[i] = floatBitsToUint(v.x); vc[i + 1u] = floatBitsToUint(v.y); }
#endif
}

void main() {
    uint p = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
    uint half_hd = pc.hd / 2u;
    uint rope_pairs = (pc.n_head + pc.n_kv) * half_hd;
    uint total = rope_pairs + pc.n_kv * half_hd;
    if (t >= pc.T || p >= total) return;
    uvec4 info = tok[t];
    uint pos = info.x, slot = info.z;
    uint head = p / half_hd, i = p % half_hd;
    uint col = head * pc.hd + 2u * i;  // Q heads, then K heads, then V heads in the qkv row
    uint base = t * pc.qkv_stride + col;
    vec2 v = vec2(qkv[base], qkv[base + 1u]);
    if (p < rope_pairs && 2u * i < pc.n_rot) {
        vec2 cs = rope[pos * (pc.n_rot / 2u) + i];
        v = vec2(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x);
    }
    if (head < pc.n_head) {
        qkv[base] = v.x;
        qkv[base + 1u] = v.y;
    } else if (head < pc.n_head + pc.n_kv) {
        store(true, slot, head - pc.n_head, 2u * i, v);
    } else {
        store(false, slot, head - pc.n_head - pc.n_kv, 2u * i, v);
    }
}
