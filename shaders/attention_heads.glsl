// Causal self-attention over the paged KV cache: the body of shaders/attention.comp (see there for
// the two ways a workgroup's lanes share the work) as a function, so that the fused decode-layer
// kernel (shaders/decode_layer.comp) runs the same code.
//
// The including shader provides: `pc` with attention.comp's push-constant fields, constants HD,
// Q_VEC4, LANES_OWN_HEADS and ATT_MAX_SUBGROUPS, kv.glsl, and accessors q_at(i), q4_at(i) (vec4
// index) for the Q/K/V rows, k4_at(i), v4_at(i) (16-byte texels of the caches), k_word(e),
// v_word(e) (the 32-bit word holding element e), tok_at(t), table_at(i), out_set(i, v) and
// capture_set(i, v).

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
shared float red[ATT_MAX_SUBGROUPS * RED_STRIDE];


// Loads elements [c * KV_EPL, (c + 1) * KV_EPL) of a cache row starting at element `base`.
void load_chunk(bool is_k, uint base, uint c, out vec4 a, out vec4 b) {
    uint e = base + c * KV_EPL;
    if (WHOLE_CHUNKS) {
        uvec4 w = is_k ? k4_at(e / KV_EPL) : v4_at(e / KV_EPL);
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
            uint w = is_k ? k_word(e + i) : v_word(e + i);
            v[i] = unpackHalf2x16(w >> (((e + i) & 1u) * 16u)).x;
#else
            v[i] = uintBitsToFloat(is_k ? k_word(e + i) : v_word(e + i));
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

// Query heads per lane (lanes own heads): consecutive heads of one KV head, so each K and V chunk
// a lane fetches serves all of them (GQA). The host picks it (AttentionOp); splitting keys, one.
const uint HPL = LANES_OWN_HEADS ? HEADS_PER_LANE : 1u;

// One workgroup: `wg_id` is its place in a grid of `rows` workgroup rows (one per token).
void attention_workgroup(uvec2 wg_id, uint rows) {
    const uint tid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    const uint t = token_of_row(wg_id.y, rows);
    // Lanes own heads: lane i takes heads h0 .. h0 + HPL - 1; lanes past the last head compute a
    // copy of the last ones and store nothing (n_head is a multiple of HPL).
    const uint h_lane = LANES_OWN_HEADS ? (wg_id.x * wg + tid) * HPL : wg_id.x;
    const bool live = h_lane < pc.n_head;
    const uint h0 = min(h_lane, pc.n_head - HPL);
    const uint j_first = LANES_OWN_HEADS ? 0u : tid, j_step = LANES_OWN_HEADS ? 1u : wg;
    const uint hd = HD;
    const uint kvh = h0 / (pc.n_head / pc.n_kv);
    const uvec4 info = tok_at(t);
    const uint n_ctx = info.x + 1u, table = info.y;
    // Keys first .. n_ctx - 1: all of them, or the last pc.window in a sliding-window layer.
    const uint first = (pc.window > 0u && n_ctx > pc.window) ? n_ctx - pc.window : 0u;
    const bool capturing = (pc.flags & 1u) != 0u && t == pc.capture_token;
    // Keys a sliding window left out weigh nothing in the capture (-inf scores).
    if (capturing && live)
        for (uint g = 0; g < HPL; ++g)
            for (uint j = j_first; j < first; j += j_step) capture_set((h0 + g) * pc.capture_stride + j, -1.0 / 0.0);

    // q (pre-scaled) in registers, in the same chunk layout as the cache rows: head g's chunk c
    // at g * CHUNKS + c.
    vec4 qa[HPL * CHUNKS], qb[HPL * CHUNKS];
    [[unroll]] for (uint g = 0; g < HPL; ++g) {
        const uint qbase = t * pc.qkv_stride + (h0 + g) * hd;
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {
            if (Q_VEC4 && WHOLE_CHUNKS) {
                qa[g * CHUNKS + c] = q4_at((qbase + c * KV_EPL) / 4u) * pc.scale;
                qb[g * CHUNKS + c] = KV_EPL == 8u ? q4_at((qbase + c * KV_EPL) / 4u + 1u) * pc.scale : vec4(0.0);
                continue;
            }
            float v[8];
            [[unroll]] for (uint i = 0; i < 8u; ++i) {
                uint d = c * KV_EPL + i;
                v[i] = (i < KV_EPL && d < hd) ? q_at(qbase + d) * pc.scale : 0.0;
            }
            qa[g * CHUNKS + c] = vec4(v[0], v[1], v[2], v[3]);
            qb[g * CHUNKS + c] = vec4(v[4], v[5], v[6], v[7]);
        }
    }

    float m[HPL], l[HPL];
    vec4 oa[HPL * CHUNKS], ob[HPL * CHUNKS];
    [[unroll]] for (uint g = 0; g < HPL; ++g) {
        m[g] = -1.0 / 0.0;
        l[g] = 0.0;
    }
    [[unroll]] for (uint c = 0; c < HPL * CHUNKS; ++c) {
        oa[c] = vec4(0.0);
        ob[c] = vec4(0.0);
    }
    // One key: row `key_base` of the caches, position `key_j` (a macro: the per-lane arrays
    // cannot be passed to a function). Each chunk is loaded once for the lane's heads; per head
    // the arithmetic is exactly that of one head per lane, so every layout computes the same bits.
#define ATTEND_KEY(key_base, key_j)                                                                 \
    {                                                                                              \
        float s[HPL], correction[HPL], p[HPL];                                                     \
        [[unroll]] for (uint g = 0; g < HPL; ++g) s[g] = 0.0;                                      \
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {                                             \
            vec4 ka, kb;                                                                           \
            load_chunk(true, key_base, c, ka, kb);                                                 \
            [[unroll]] for (uint g = 0; g < HPL; ++g)                                              \
                s[g] += dot(qa[g * CHUNKS + c], ka) + dot(qb[g * CHUNKS + c], kb);                 \
        }                                                                                          \
        [[unroll]] for (uint g = 0; g < HPL; ++g) {                                                \
            if (pc.softcap > 0.0) s[g] = pc.softcap * tanh(s[g] / pc.softcap);                     \
            if (capturing && live) capture_set((h0 + g) * pc.capture_stride + (key_j), s[g]);      \
            float m_new = max(m[g], s[g]);                                                         \
            correction[g] = exp(m[g] - m_new); /* 0 on this lane's first key (m = -inf) */         \
            p[g] = exp(s[g] - m_new);                                                              \
            l[g] = l[g] * correction[g] + p[g];                                                    \
            m[g] = m_new;                                                                          \
        }                                                                                          \
        [[unroll]] for (uint c = 0; c < CHUNKS; ++c) {                                             \
            vec4 va, vb;                                                                           \
            load_chunk(false, key_base, c, va, vb);                                                \
            [[unroll]] for (uint g = 0; g < HPL; ++g) {                                            \
                oa[g * CHUNKS + c] = oa[g * CHUNKS + c] * correction[g] + p[g] * va;               \
                ob[g * CHUNKS + c] = ob[g * CHUNKS + c] * correction[g] + p[g] * vb;               \
            }                                                                                      \
        }                                                                                          \
    }
    if (LANES_OWN_HEADS) {
        // Every lane walks the same keys: block by block of the sequence's table, so the table
        // lookup and kv_index's divisions come once per block, not once per key (on lavapipe a
        // division is eight scalar ones, one per lane, even when all lanes divide the same values).
        const uint b_first = first / pc.block;
        for (uint j0 = b_first * pc.block, b = b_first; j0 < n_ctx; j0 += pc.block, ++b) {
            const uint row0 = kv_index(table_at(table + b) * pc.block, kvh, 0u, pc.n_kv, hd, pc.block);
            const uint in_block = min(pc.block, n_ctx - j0);
            for (uint o = first > j0 ? first - j0 : 0u; o < in_block; ++o) ATTEND_KEY(row0 + o * hd, j0 + o)
        }
    } else {
        for (uint j = first + j_first; j < n_ctx; j += j_step) {
            const uint slot = table_at(table + j / pc.block) * pc.block + j % pc.block;
            ATTEND_KEY(kv_index(slot, kvh, 0u, pc.n_kv, hd, pc.block), j)
        }
    }
#undef ATTEND_KEY

    if (LANES_OWN_HEADS) {
        // Each lane holds its heads' whole results (l > 0: every token sees at least itself).
        if (!live) return;
        [[unroll]] for (uint g = 0; g < HPL; ++g) {
            const uint obase = t * pc.out_stride + (h0 + g) * hd;
            [[unroll]] for (uint c = 0; c < CHUNKS; ++c)
                [[unroll]] for (uint i = 0; i < KV_EPL; ++i) {
                    const uint d = c * KV_EPL + i;
                    const uint k = g * CHUNKS + c;
                    if (d < hd) out_set(obase + d, (i < 4u ? oa[k][i] : ob[k][i - 4u]) / l[g]);
                }
            if (capturing) {
                capture_set(pc.n_head * pc.capture_stride + 2u * (h0 + g), m[g]);
                capture_set(pc.n_head * pc.capture_stride + 2u * (h0 + g) + 1u, l[g]);
            }
        }
        return;
    }

    // Lanes split the keys (HPL is 1): one head, h0.
    const uint h = h0;
    const uint obase = t * pc.out_stride + h * hd;

    // Merge the lanes: within each subgroup with subgroup operations, then (several subgroups)
    // across subgroups through shared memory.
    const bool one_subgroup = gl_NumSubgroups == 1u;
    const float M = subgroupMax(m[0]);
    const float f = (m[0] == -1.0 / 0.0) ? 0.0 : exp(m[0] - M);  // lanes that saw no key contribute nothing
    const float L = subgroupAdd(l[0] * f);
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
                    out_set(obase + d, v / L);
                else
                    red[rbase + 2u + d] = v;  // every lane of the subgroup holds the same sums
            }
        }
    }
    if (one_subgroup) {
        if (capturing && tid == 0u) {
            capture_set(pc.n_head * pc.capture_stride + 2u * h, M);
            capture_set(pc.n_head * pc.capture_stride + 2u * h + 1u, L);
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
            out_set(obase + d, v / Lw);
        } else if (capturing) {
            capture_set(pc.n_head * pc.capture_stride + 2u * h, Mw);
            capture_set(pc.n_head * pc.capture_stride + 2u * h + 1u, Lw);
        }
    }
}
