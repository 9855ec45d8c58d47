#version 450
#extension GL_GOOGLE_include_directive : require
// Causal self-attention for prefill steps on GPUs (ops::AttentionOp, steps of
// kTiledAttentionMinTokens tokens or more on devices where lanes split keys): queries in blocks,
// keys and values streamed through shared memory in tiles, an online softmax per query. The same
// contract as attention.comp (same bindings and push constants; see there): token t at position pos
// attends to positions first .. pos of its sequence (first = pos - window + 1 in a sliding-window
// layer, else 0) through the paged KV cache, GQA query head h reads KV head h / (n_head / n_kv),
// scores scaled and (Gemma 2) soft-capped. No capture: steps that capture a token's scores run
// attention.comp.
//
// Workgroup (x, y): query head x for the 32 step tokens 32y .. 32y + 31, four lanes per token (a
// quad), each holding a quarter of the head's dimensions of q and of the output accumulator; a
// score's partial dot products are summed across the quad with quad swaps. The block's tokens are
// taken sequence by sequence (a step's tokens are grouped by sequence, so a block usually holds one
// or two): for each, the workgroup loads the keys and values that any of its tokens sees, BKV at a
// time, into shared memory (once per block instead of once per token and lane), and each token's
// quad walks the tile. So K and V are read from memory once per 32 queries, where attention.comp's
// split-keys layout reads them once per query.
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_quad : require
#include "gpu_tiles.h"
#if LANTERN_TILED_QUERIES * 4 != LANTERN_TILED_LANES
#error "attention_tiled gives each query a quad of lanes"
#endif
layout(local_size_x = LANTERN_TILED_LANES) in;
layout(constant_id = 1) const uint HD = 64;     // head dimension (even, at most 256)
const uint QPW = LANTERN_TILED_QUERIES;         // queries (tokens) per workgroup
const uint DPL = (HD + 3u) / 4u;                // dimensions per lane
const uint BKV = LANTERN_TILED_KV_FLOATS / HD;  // keys per shared tile (8 KiB of K and of V as f32)
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
    float softcap;
    uint window;
    uint tokens;  // tokens in the step
} pc;

shared float ks[BKV * HD], vs[BKV * HD];
shared uint seg_table, seg_lo, seg_hi;

// Element e (an index into the layer's pool) of the K or V cache.
float cache_at(bool is_k, uint e) {
#if defined(KV_F16)
    const uint w = is_k ? kc[e / 2u] : vc[e / 2u];
    return unpackHalf2x16(w >> ((e & 1u) * 16u)).x;
#else
    return uintBitsToFloat(is_k ? kc[e] : vc[e]);
#endif
}

void main() {
    const uint tid = gl_LocalInvocationID.x, part = tid % 4u;
    const uint h = gl_WorkGroupID.x, kvh = h / (pc.n_head / pc.n_kv);
    const uint t = gl_WorkGroupID.y * QPW + tid / 4u;
    const bool live = t < pc.tokens;
    const uvec4 info = texelFetch(tok, int(min(t, pc.tokens - 1u)));
    const uint n_ctx = info.x + 1u, table = info.y;
    const uint first = (pc.window > 0u && n_ctx > pc.window) ? n_ctx - pc.window : 0u;

    float q[DPL], acc[DPL];
    const uint qbase = t * pc.qkv_stride + h * HD;
    [[unroll]] for (uint i = 0; i < DPL; ++i) {
        const uint d = part * DPL + i;
        q[i] = (live && d < HD) ? texelFetch(qkv_texels, int(qbase + d)).x * pc.scale : 0.0;
        acc[i] = 0.0;
    }
    float m = -1.0 / 0.0, l = 0.0;
    bool done = !live;
    // One pass per sequence among the block's tokens, the one with the lowest table offset first.
    for (;;) {
        if (tid == 0u) {
            seg_table = 0xffffffffu;
            seg_lo = 0xffffffffu;
            seg_hi = 0u;
        }
        barrier();
        if (!done) atomicMin(seg_table, table);
        barrier();
        const uint st = seg_table;
        if (st == 0xffffffffu) break;  // (uniform: every lane read the same value)
        const bool mine = !done && table == st;
        if (mine) {
            atomicMin(seg_lo, first);
            atomicMax(seg_hi, n_ctx);
        }
        barrier();
        const uint lo = seg_lo, hi = seg_hi;
        for (uint k0 = lo; k0 < hi; k0 += BKV) {
            barrier();  // the previous tile is no longer read
            for (uint e = tid; e < BKV * HD; e += LANTERN_TILED_LANES) {
                const uint j = k0 + e / HD, d = e % HD;
                float kv_k = 0.0, kv_v = 0.0;
                if (j < hi) {
                    const uint slot = texelFetch(tables, int(st + j / pc.block)).x * pc.block + j % pc.block;
                    const uint i = kv_index(slot, kvh, d, pc.n_kv, HD, pc.block);
                    kv_k = cache_at(true, i);
                    kv_v = cache_at(false, i);
                }
                ks[e] = kv_k;
                vs[e] = kv_v;
            }
            barrier();
            const uint in_tile = min(BKV, hi - k0);
            for (uint j = 0; j < in_tile; ++j) {
                float s = 0.0;
                [[unroll]] for (uint i = 0; i < DPL; ++i) {
                    const uint d = part * DPL + i;
                    if (d < HD) s += q[i] * ks[j * HD + d];
                }
                s += subgroupQuadSwapHorizontal(s);
                s += subgroupQuadSwapVertical(s);
                const uint key = k0 + j;
                if (mine && key >= first && key < n_ctx) {
                    if (pc.softcap > 0.0) s = pc.softcap * tanh(s / pc.softcap);
                    const float m_new = max(m, s);
                    const float correction = exp(m - m_new), p = exp(s - m_new);
                    l = l * correction + p;
                    m = m_new;
                    [[unroll]] for (uint i = 0; i < DPL; ++i) {
                        const uint d = part * DPL + i;
                        acc[i] = acc[i] * correction + (d < HD ? p * vs[j * HD + d] : 0.0);
                    }
                }
            }
        }
        if (mine) done = true;
        barrier();  // seg_* are rewritten next
    }
    if (!live) return;
    const uint obase = t * pc.out_stride + h * HD;
    [[unroll]] for (uint i = 0; i < DPL; ++i) {
        const uint d = part * DPL + i;
        if (d < HD) o[obase + d] = acc[i] / l;  // l > 0: every token sees at least itself
    }
}
