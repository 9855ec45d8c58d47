#version 450
#extension GL_GOOGLE_include_directive : require
// Causal self-attention over the paged KV cache, one workgroup per (query head, token).
// Token t (position pos, in a sequence whose block table starts at tok[t].y) attends to positions
// 0..pos, read through the block table. Keys are processed in chunks of WG: each invocation scores
// one key into shared memory, then a numerically stable online softmax (running max m and sum l)
// rescales the accumulator, and each invocation accumulates the head dimensions it owns.
// GQA: query head h reads KV head h / (n_head / n_kv).
// Capture (flags bit 0): for token pc.capture_token the raw scores of every head go to
// `scores[h][j]` and (m, l) to `stats[h]`, so the host can draw the attention heatmap.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
#define MAX_HD 256
#define MAX_WG 256
#include "kv.glsl"
layout(std430, binding = 0) readonly buffer QKV { float qkv[]; };
layout(std430, binding = 1) readonly buffer KCache { uint kc[]; };
layout(std430, binding = 2) readonly buffer VCache { uint vc[]; };
layout(std430, binding = 3) readonly buffer TokInfo { uvec4 tok[]; };
layout(std430, binding = 4) readonly buffer Tables { uint tables[]; };
layout(std430, binding = 5) writeonly buffer Out { float o[]; };
layout(std430, binding = 6) writeonly buffer Capture { float capture[]; };
layout(push_constant) uniform Push {
    uint n_head; uint n_kv; uint hd; uint qkv_stride; uint out_stride; uint block;
    float scale; uint flags; uint capture_token; uint capture_stride;
} pc;

shared float q[MAX_HD];
shared float s[MAX_WG];
shared float red[32];

float kv_load(bool is_k, uint i) {
#if defined(KV_F16)
    uint w = is_k ? kc[i / 2u] : vc[i / 2u];
    return unpackHalf2x16(w >> ((i & 1u) * 16u)).x;
#else
    return uintBitsToFloat(is_k ? kc[i] : vc[i]);
#endif
}

float wg_max(float v) {
    v = subgroupMax(v);
    if (subgroupElect()) red[gl_SubgroupID] = v;
    barrier();
    float r = red[0];
    for (uint i = 1; i < gl_NumSubgroups; ++i) r = max(r, red[i]);
    barrier();
    return r;
}
float wg_sum(float v) {
    v = subgroupAdd(v);
    if (subgroupElect()) red[gl_SubgroupID] = v;
    barrier();
    float r = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) r += red[i];
    barrier();
    return r;
}

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    const uint tid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    const uint hd = pc.hd;
    const uint kvh = h / (pc.n_head / pc.n_kv);
    const uvec4 info = tok[t];
    const uint n_ctx = info.x + 1u, table = info.y;
    const bool capturing = (pc.flags & 1u) != 0u && t == pc.capture_token;

    for (uint d = tid; d < hd; d += wg) q[d] = qkv[t * pc.qkv_stride + h * hd + d] * pc.scale;
    barrier();

    float m = -1.0 / 0.0, l = 0.0;
    float acc[MAX_HD / 32];  // dims tid, tid + wg, ... (wg >= 32 guaranteed by the host)
    for (uint i = 0; i < MAX_HD / 32; ++i) acc[i] = 0.0;

    for (uint c0 = 0; c0 < n_ctx; c0 += wg) {
        uint j = c0 + tid;
        float score = -1.0 / 0.0;
        if (j < n_ctx) {
            uint slot = tables[table + j / pc.block] * pc.block + j % pc.block;
            uint kb = kv_index(slot, kvh, 0u, pc.n_kv, hd, pc.block);
            float dotv = 0.0;
            for (uint d = 0; d < hd; ++d) dotv += q[d] * kv_load(true, kb + d);
            score = dotv;
            if (capturing) capture[h * pc.capture_stride + j] = score;
        }
        float m_new = max(m, wg_max(score));
        float p = (j < n_ctx) ? exp(score - m_new) : 0.0;
        s[tid] = p;
        float correction = exp(m - m_new);  // 0 on the first chunk (m = -inf)
        l = l * correction + wg_sum(p);     // wg_sum's barriers also publish s[]
        m = m_new;
        uint n_here = min(wg, n_ctx - c0);
        for (uint i = 0; i * wg + tid < hd; ++i) {
            uint d = i * wg + tid;
            float a = acc[i] * correction;
            for (uint jj = 0; jj < n_here; ++jj) {
                uint jg = c0 + jj;
                uint slot = tables[table + jg / pc.block] * pc.block + jg % pc.block;
                a += s[jj] * kv_load(false, kv_index(slot, kvh, d, pc.n_kv, hd, pc.block));
            }
            acc[i] = a;
        }
        barrier();  // s[] is rewritten by the next chunk
    }
    for (uint i = 0; i * wg + tid < hd; ++i) o[t * pc.out_stride + h * hd + i * wg + tid] = acc[i] / l;
    if (capturing && tid == 0) {
        capture[pc.n_head * pc.capture_stride + 2u * h] = m;
        capture[pc.n_head * pc.capture_stride + 2u * h + 1u] = l;
    }
}
