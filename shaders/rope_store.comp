#version 450
#extension GL_GOOGLE_include_directive : require
// RoPE ("normal" GGUF llama mode: adjacent pairs (2i, 2i+1) rotate by pos * base^(-2i/head_dim))
// applied to Q in place and to K on its way into the paged KV cache; V is copied into the cache.
// Angles come from a table the host computed in double precision (rope[pos][i] = (cos, sin)),
// so every device rotates identically. Invocations stride over the token's pairs; y = token.
// Everything is read through texel views and only the results go through storage buffers: on
// lavapipe a storage load is a per-lane loop, and this kernel is almost all loads (it cost ~1 ms
// of a 110M model's ~16 ms decode step before). On CPU drivers a decode step runs it as a single
// workgroup, which lavapipe executes on the submitting thread without waking its pool.
layout(local_size_x_id = 0) in;
#include "kv.glsl"
layout(std430, binding = 0) writeonly buffer QKV { float qkv[]; };
layout(std430, binding = 1) writeonly buffer KCache { uint kc[]; };
layout(std430, binding = 2) writeonly buffer VCache { uint vc[]; };
layout(binding = 3) uniform usamplerBuffer tok;   // (pos, table offset, slot, seq) per token
layout(binding = 4) uniform samplerBuffer rope;   // cos, sin of [pos][i]
layout(binding = 5) uniform samplerBuffer qkv_in; // the same qkv buffer, read side
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
    const uint t = gl_WorkGroupID.y;
    const uint half_hd = pc.hd / 2u;
    const uint rope_pairs = (pc.n_head + pc.n_kv) * half_hd;
    const uint total = rope_pairs + pc.n_kv * half_hd;
    if (t >= pc.T) return;
    const uvec4 info = texelFetch(tok, int(t));
    const uint pos = info.x, slot = info.z;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint p = gl_GlobalInvocationID.x; p < total; p += stride) {
        const uint head = p / half_hd, i = p % half_hd;
        const uint base = t * pc.qkv_stride + head * pc.hd + 2u * i;  // Q heads, then K, then V
        vec2 v = vec2(texelFetch(qkv_in, int(base)).x, texelFetch(qkv_in, int(base + 1u)).x);
        if (p < rope_pairs && 2u * i < pc.n_rot) {
            const uint r = 2u * (pos * (pc.n_rot / 2u) + i);
            const vec2 cs = vec2(texelFetch(rope, int(r)).x, texelFetch(rope, int(r + 1u)).x);
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
}
