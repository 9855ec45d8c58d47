#version 450
#extension GL_GOOGLE_include_directive : require
// Causal self-attention over the paged KV cache. Token t (position pos, in a sequence whose block
// table starts at tok[t].y) attends to positions 0..pos, read through the block table. GQA: query
// head h reads KV head h / (n_head / n_kv). Two ways to spread the work, chosen per device by the
// specialization constant LANES_OWN_HEADS:
//  * Lanes split the keys (GPUs; on CPU drivers, steps that would have fewer own-heads workgroups
//    than the driver has threads, see AttentionOp): one workgroup per (query head, token); lane i
//    takes keys i, i + WG, ... Each lane keeps its own numerically stable online softmax — running
//    max m, running sum l, and an output accumulator o[head_dim] in registers — so every K and V
//    row is read by exactly one lane as one coalesced row. At the end the lanes' partial results
//    are merged: M = max m_i, l = sum l_i e^(m_i - M), o = sum o_i e^(m_i - M) / l.
//  * Lanes own heads (CPU drivers): workgroup (x, t) takes query heads x * WG + i, one per lane,
//    each over all the token's keys, so no merge at all. On lavapipe a subgroup operation is a loop
//    over the lanes with a branch per lane, and the merge's 2 + 2 * CHUNKS of them (plus the
//    stores it leads to) were most of the attention time at short contexts: at position 4 of a
//    110M decode, 80 % of the attention samples fell after the key loop. The work per key is the
//    same (8 lanes take 8 heads instead of 8 keys), the key loop's trip count is the same for every
//    lane, and the block-table lookups are shared by the workgroup.
// Capture (flags bit 0): for token pc.capture_token the raw scores of every head go to
// capture[h][j] and (M, l) to the tail, so the host can draw the attention heatmap.
// The head dimension is a specialization constant (known at model load), so the per-row loops
// unroll exactly and the whole-chunk path is chosen at compile time. Everything read (q, the
// cache rows, the token info and block tables) goes through texel views (see shaders/weights.glsl
// for why); the storage views of the caches serve head dimensions that are not a whole number of
// 16-byte chunks. Each lane writes its share of the output row (a storage store on lavapipe is a
// loop over the lanes, so one lane storing the whole row cost head_dim such loops).
// The loops over chunks are unrolled and no loop with a run-time trip count may enclose an access
// to the per-lane arrays (q, o): a single such access keeps them as arrays in the compiled shader,
// and lavapipe then writes them lane by lane, with a branch per lane, at every key (the old merge's
// loops over subgroups did that). Without the scatter, on lavapipe: 110M Q8_0 pp256 +14 %; a model
// whose time is mostly attention (dim 512, 8 heads of 64, 4 layers) pp512 and tg512 +25 %. So the
// merge across subgroups goes through shared memory in a stage of its own, and the output stores
// are unrolled too.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HD = 64;  // head dimension (even, at most 256)
layout(constant_id = 2) const bool Q_VEC4 = false;  // q rows start at multiples of 4 floats: vec4 fetches
layout(constant_id = 3) const bool LANES_OWN_HEADS = false;  // see the top
// Subgroups per workgroup at most (the host keeps the workgroup at most 8 subgroups wide).
#define MAX_SUBGROUPS 8
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
// Per subgroup: (max, sum, o[CHUNKS * KV_EPL]) of its lanes (workgroups of several subgroups only).
const uint RED_STRIDE = CHUNKS * KV_EPL + 2u;
shared float red[MAX_SUBGROUPS * RED_STRIDE];


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
    [[unroll]] for (uint i = 0; i < 8u; ++i) {
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

// Token of workgroup row y: rows are dealt light, heavy, light, ... (token 0, the last, 1, the
// last but one, ...) so that each half of the workgroup range holds as many long contexts as short
// ones: a CPU driver gives each thread a contiguous range of workgroups, and in a prefill later
// tokens attend to more keys (110M pp256 on lavapipe +3.5 %).
uint token_of_row(uint y, uint rows) { return (y % 2u == 0u) ? y / 2u : rows - 1u - y / 2u; }

void main() {
    const uint tid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    const uint t = token_of_row(gl_WorkGroupID.y, gl_NumWorkGroups.y);
    // Lanes own heads: lanes past the last head compute a copy of it and store nothing.
    const uint h_lane = LANES_OWN_HEADS ? gl_WorkGroupID.x * wg + tid : gl_WorkGroupID.x;
    const bool live = h_lane < pc.n_head;
    const uint h = min(h_lane, pc.n_head - 1u);
    const uint j_first = LANES_OWN_HEADS ? 0u : tid, j_step = LANES_OWN_HEADS ? 1u : wg;
    const uint hd = HD;
    const uint kvh = h / (pc.n_head / pc.n_kv);
    const uvec4 info = texelFetch(tok, int(t));
    const uint n_ctx = info.x + 1u, table = info.y;
    const bool capturing = (pc.flags & 1u) != 0u && t == pc.capture_token;

    // q (pre-scaled) in registers, in the same chunk layout as the cache rows.
    vec4 qa[CHUNKS], qb[CHUNKS];
    const uint qbase = t * pc.qkv_stride + h * hd;
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
        if (Q_VEC4 && WHOLE_CHUNKS) {
            qa[c] = texelFetch(qkv_vec4, int((qbase + c * KV_EPL) / 4u)) * pc.scale;
            qb[c] = KV_EPL == 8u ? texelFetch(qkv_vec4, int((qbase + c * KV_EPL) / 4u + 1u)) * pc.scale : vec4(0.0);
            continue;
        }
        float v[8];
        [[unroll]] for (uint i = 0; i < 8u; ++i) {
            uint d = c * KV_EPL + i;
            v[i] = (i < KV_EPL && d < hd) ? texelFetch(qkv_texels, int(qbase + d)).x * pc.scale : 0.0;
        }
        qa[c] = vec4(v[0], v[1], v[2], v[3]);
        qb[c] = vec4(v[4], v[5], v[6], v[7]);
    }

    float m = -1.0 / 0.0, l = 0.0;
    vec4 oa[CHUNKS], ob[CHUNKS];
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
        oa[c] = vec4(0.0);
        ob[c] = vec4(0.0);
    }
    for (uint j = j_first; j < n_ctx; j += j_step) {
        uint slot = texelFetch(tables, int(table + j / pc.block)).x * pc.block + j % pc.block;
        uint base = kv_index(slot, kvh, 0u, pc.n_kv, hd, pc.block);
        float s = 0.0;
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
            vec4 ka, kb;
            load_chunk(true, base, c, ka, kb);
            s += dot(qa[c], ka) + dot(qb[c], kb);
        }
        if (capturing && live) capture[h * pc.capture_stride + j] = s;
        float m_new = max(m, s);
        float correction = exp(m - m_new);  // 0 on this lane's first key (m = -inf)
        float p = exp(s - m_new);
        l = l * correction + p;
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
            vec4 va, vb;
            load_chunk(false, base, c, va, vb);
            oa[c] = oa[c] * correction + p * va;
            ob[c] = ob[c] * correction + p * vb;
        }
        m = m_new;
    }

    const uint obase = t * pc.out_stride + h * hd;
    if (LANES_OWN_HEADS) {
        // Each lane holds its head's whole result (l > 0: every token sees at least itself).
        if (!live) return;
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c)
            [[unroll]] for (uint i = 0; i < KV_EPL; ++i) {
                const uint d = c * KV_EPL + i;
                if (d < hd) o[obase + d] = (i < 4u ? oa[c][i] : ob[c][i - 4u]) / l;
            }
        if (capturing) {
            capture[pc.n_head * pc.capture_stride + 2u * h] = m;
            capture[pc.n_head * pc.capture_stride + 2u * h + 1u] = l;
        }
        return;
    }

    // Merge the lanes: within each subgroup with subgroup operations, then (several subgroups)
    // across subgroups through shared memory.
    const bool one_subgroup = gl_NumSubgroups == 1u;
    const float M = subgroupMax(m);
    const float f = (m == -1.0 / 0.0) ? 0.0 : exp(m - M);  // lanes that saw no key contribute nothing
    const float L = subgroupAdd(l * f);
    const uint rbase = gl_SubgroupID * RED_STRIDE;
    if (!one_subgroup && subgroupElect()) {
        red[rbase] = M;
        red[rbase + 1u] = L;
    }
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
        const vec4 sa = subgroupAdd(oa[c] * f), sb = subgroupAdd(ob[c] * f);
        // Lane i of the subgroup stores element i of the chunk: one store per chunk (a store is a
        // loop over the lanes on lavapipe); subgroups narrower than a chunk store element by
        // element. Both unrolled: a loop with a run-time trip count here would keep oa/ob arrays.
        const uint lane = gl_SubgroupInvocationID;
        [[unroll]] for (uint i = 0; i < KV_EPL; ++i) {
            const uint d = c * KV_EPL + i;
            const bool mine = gl_SubgroupSize >= KV_EPL ? lane == i : lane == 0u;
            if (d < hd && mine) {
                const float v = i < 4u ? sa[i] : sb[i - 4u];
                if (one_subgroup)
                    o[obase + d] = v / L;
                else
                    red[rbase + 2u + d] = v;  // every lane of the subgroup holds the same sums
            }
        }
    }
    if (one_subgroup) {
        if (capturing && tid == 0u) {
            capture[pc.n_head * pc.capture_stride + 2u * h] = M;
            capture[pc.n_head * pc.capture_stride + 2u * h + 1u] = L;
        }
        return;
    }
    barrier();
    // Element d (d == hd: the (M, L) pair for the capture): M = max M_g, L = sum L_g e^(M_g - M),
    // o = sum o_g e^(M_g - M) / L over the subgroups g.
    for (uint d = tid; d <= hd; d += wg) {
        float Mw = -1.0 / 0.0;
        for (uint g = 0; g < gl_NumSubgroups; ++g) Mw = max(Mw, red[g * RED_STRIDE]);
        float Lw = 0.0, v = 0.0;
        for (uint g = 0; g < gl_NumSubgroups; ++g) {
            const uint r = g * RED_STRIDE;
            const float w = red[r] == -1.0 / 0.0 ? 0.0 : exp(red[r] - Mw);
            Lw += red[r + 1u] * w;
            if (d < hd) v += red[r + 2u + d] * w;
        }
        if (d < hd) {
            o[obase + d] = v / Lw;
        } else if (capturing) {
            capture[pc.n_head * pc.capture_stride + 2u * h] = Mw;
            capture[pc.n_head * pc.capture_stride + 2u * h + 1u] = Lw;
        }
    }
}
