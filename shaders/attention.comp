#version 450
#extension GL_GOOGLE_include_directive : require
// Causal self-attention over the paged KV cache, one workgroup per (query head, token).
// Token t (position pos, in a sequence whose block table starts at tok[t].y) attends to positions
// 0..pos, read through the block table. GQA: query head h reads KV head h / (n_head / n_kv).
//
// Lanes split the keys (lane i takes keys i, i + WG, ...). Each lane keeps its own numerically
// stable online softmax — running max m, running sum l, and an output accumulator o[head_dim] in
// registers — so every K and V row is read by exactly one lane as a contiguous stream (the fast
// pattern on CPU drivers, and one coalesced row per lane on GPUs). At the end the lanes' partial
// results are merged: M = max m_i, l = sum l_i e^(m_i - M), o = sum o_i e^(m_i - M) / l.
// Capture (flags bit 0): for token pc.capture_token the raw scores of every head go to
// capture[h][j] and (M, l) to the tail, so the host can draw the attention heatmap.
// The head dimension is a specialization constant (known at model load), so the per-row loops
// unroll exactly and the whole-chunk path is chosen at compile time. Everything read (q, the
// cache rows, the token info and block tables) goes through texel views (see shaders/weights.glsl
// for why); the storage views of the caches serve head dimensions that are not a whole number of
// 16-byte chunks. Each lane writes its share of the output row (a storage store on lavapipe is a
// loop over the lanes, so one lane storing the whole row cost head_dim such loops).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HD = 64;  // head dimension (even, at most 256)
layout(constant_id = 2) const bool Q_VEC4 = false;  // q rows start at multiples of 4 floats: vec4 fetches
#define MAX_SUBGROUPS 64
#include "kv.glsl"
layout(binding = 0) uniform samplerBuffer qkv_texels;
layout(std430, binding = 1) readonly buffer KCache { uint kc[]; };
layout(std430, binding = 2) readonly buffer VCache { uint vc[]; };
layout(binding = 7) uniform usamplerBuffer kc4;
layout(binding = 8) uniform usamplerBuffer vc4;
layout(binding = 3) uniform usamplerBuffer tok;     // (pos, table offset, slot, seq) per token
layout(binding = 4) uniform usamplerBuffer tables;  // block tables
layout(binding = 9) uniform samplerBuffer qkv_vec4;
layout(std430, binding = 5) writeonly buffer Out { float o[]; };
layout(std430, binding = 6) writeonly buffer Capture { float capture[]; };
layout(push_constant) uniform Push {
    uint n_head; uint n_kv; uint hd; uint qkv_stride; uint out_stride; uint block;
    float scale; uint flags; uint capture_token; uint capture_stride;
} pc;

// Elements per 16-byte load of the cache; rows are read 16 bytes at a time when hd allows it.
#if defined(KV_F16)
#define KV_EPL 8u
#else
#define KV_EPL 4u
#endif
const uint CHUNKS = (HD + KV_EPL - 1u) / KV_EPL;
const bool WHOLE_CHUNKS = HD % KV_EPL == 0u;

shared float red_m[MAX_SUBGROUPS];
shared float red_l[MAX_SUBGROUPS];
shared float red_o[MAX_SUBGROUPS * 4];

// Loads elements [c * KV_EPL, (c + 1) * KV_EPL) of a cache row starting at element `base`.
void load_chunk(bool is_k, uint base, uint c, out vec4 a, out vec4 b) {
    uint e = base + c * KV_EPL;
    if (WHOLE_CHUNKS) {
        uvec4 w = is_k ? texelFetch(kc4, int(e / KV_EPL)) : texelFetch(vc4, int(e / KV_EPL));
#if defined(KV_F16)
        a = vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y));
        b = vec4(unpackHalf2x16(w.z), unpackHalf2x16(w.w));
#else
        a = uintBitsToFloat(w);
        b = vec4(0.0);
#endif
        return;
    }
    // Head dims that are not a multiple of the 16-byte chunk: element by element, zero-padded.
    float v[8];
    for (uint i = 0; i < 8u; ++i) {
        uint d = c * KV_EPL + i;
        v[i] = 0.0;
        if (i < KV_EPL && d < HD) {
#if defined(KV_F16)
            uint w = is_k ? kc[(e + i) / 2u] : vc[(e + i) / 2u];
            v[i] = unpackHalf2x16(w >> (((e + i) & 1u) * 16u)).x;
#else
            v[i] = uintBitsToFloat(is_k ? kc[e + i] : vc[e + i]);
#endif
        }
    }
    a = vec4(v[0], v[1], v[2], v[3]);
    b = vec4(v[4], v[5], v[6], v[7]);
}

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    const uint tid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    const uint hd = HD;
    const uint kvh = h / (pc.n_head / pc.n_kv);
    const uvec4 info = texelFetch(tok, int(t));
    const uint n_ctx = info.x + 1u, table = info.y;
    const bool capturing = (pc.flags & 1u) != 0u && t == pc.capture_token;

    // q (pre-scaled) in registers, in the same chunk layout as the cache rows.
    vec4 qa[CHUNKS], qb[CHUNKS];
    const uint qbase = t * pc.qkv_stride + h * hd;
    for (uint c = 0; c < CHUNKS; ++c) {
        if (Q_VEC4 && WHOLE_CHUNKS) {
            qa[c] = texelFetch(qkv_vec4, int((qbase + c * KV_EPL) / 4u)) * pc.scale;
            qb[c] = KV_EPL == 8u ? texelFetch(qkv_vec4, int((qbase + c * KV_EPL) / 4u + 1u)) * pc.scale : vec4(0.0);
            continue;
        }
        float v[8];
        for (uint i = 0; i < 8u; ++i) {
            uint d = c * KV_EPL + i;
            v[i] = (i < KV_EPL && d < hd) ? texelFetch(qkv_texels, int(qbase + d)).x * pc.scale : 0.0;
        }
        qa[c] = vec4(v[0], v[1], v[2], v[3]);
        qb[c] = vec4(v[4], v[5], v[6], v[7]);
    }

    float m = -1.0 / 0.0, l = 0.0;
    vec4 oa[CHUNKS], ob[CHUNKS];
    for (uint c = 0; c < CHUNKS; ++c) {
        oa[c] = vec4(0.0);
        ob[c] = vec4(0.0);
    }
    for (uint j = tid; j < n_ctx; j += wg) {
        uint slot = texelFetch(tables, int(table + j / pc.block)).x * pc.block + j % pc.block;
        uint base = kv_index(slot, kvh, 0u, pc.n_kv, hd, pc.block);
        float s = 0.0;
        for (uint c = 0; c < CHUNKS; ++c) {
            vec4 ka, kb;
            load_chunk(true, base, c, ka, kb);
            s += dot(qa[c], ka) + dot(qb[c], kb);
        }
        if (capturing) capture[h * pc.capture_stride + j] = s;
        float m_new = max(m, s);
        float correction = exp(m - m_new);  // 0 on this lane's first key (m = -inf)
        float p = exp(s - m_new);
        l = l * correction + p;
        for (uint c = 0; c < CHUNKS; ++c) {
            vec4 va, vb;
            load_chunk(false, base, c, va, vb);
            oa[c] = oa[c] * correction + p * va;
            ob[c] = ob[c] * correction + p * vb;
        }
        m = m_new;
    }

    // Merge the lanes: first within the subgroup, then across subgroups through shared memory.
    float M = subgroupMax(m);
    if (gl_NumSubgroups > 1u) {
        if (subgroupElect()) red_m[gl_SubgroupID] = M;
        barrier();
        M = red_m[0];
        for (uint s = 1; s < gl_NumSubgroups; ++s) M = max(M, red_m[s]);
        barrier();
    }
    float f = (m == -1.0 / 0.0) ? 0.0 : exp(m - M);  // lanes that saw no key contribute nothing
    float L = subgroupAdd(l * f);
    if (gl_NumSubgroups > 1u) {
        if (subgroupElect()) red_l[gl_SubgroupID] = L;
        barrier();
        L = 0.0;
        for (uint s = 0; s < gl_NumSubgroups; ++s) L += red_l[s];
        barrier();
    }
    const uint obase = t * pc.out_stride + h * hd;
    for (uint c = 0; c < CHUNKS; ++c) {
        vec4 sa = subgroupAdd(oa[c] * f), sb = subgroupAdd(ob[c] * f);
        if (gl_NumSubgroups > 1u) {
            for (uint half_ = 0; half_ < 2u; ++half_) {
                vec4 v = half_ == 0u ? sa : sb;
                if (subgroupElect())
                    for (uint i = 0; i < 4u; ++i) red_o[gl_SubgroupID * 4u + i] = v[i];
                barrier();
                v = vec4(0.0);
                for (uint s = 0; s < gl_NumSubgroups; ++s)
                    v += vec4(red_o[s * 4u], red_o[s * 4u + 1u], red_o[s * 4u + 2u], red_o[s * 4u + 3u]);
                barrier();
                if (half_ == 0u) sa = v; else sb = v;
            }
        }
        for (uint i = 0; i < 8u; ++i) {  // element i of the chunk is lane i % wg's to store
            uint d = c * KV_EPL + i;
            if (i % wg == tid && i < KV_EPL && d < hd) o[obase + d] = (i < 4u ? sa[i] : sb[i - 4u]) / L;
        }
    }
    if (capturing && tid == 0u) {
        capture[pc.n_head * pc.capture_stride + 2u * h] = M;
        capture[pc.n_head * pc.capture_stride + 2u * h + 1u] = L;
    }
}
