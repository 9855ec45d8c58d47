#version 450
#extension GL_GOOGLE_include_directive : require
// Causal self-attention over the paged KV cache. Token t (position pos, in a sequence whose block
// table starts at tok[t].y) attends to positions 0..pos (pos - window + 1..pos in a sliding-window
// layer), read through the block table. GQA: query
// head h reads KV head h / (n_head / n_kv). Two ways to spread the work, chosen per device by the
// specialization constant LANES_OWN_HEADS:
//  * Lanes split the keys (GPUs; on CPU drivers, steps that would have fewer own-heads workgroups
//    than the driver has threads, see AttentionOp): one workgroup per (query head, token); lane i
//    takes keys i, i + WG, ... Each lane keeps its own numerically stable online softmax — running
//    max m, running sum l, and an output accumulator o[head_dim] in registers — so every K and V
//    row is read by exactly one lane as one coalesced row. At the end the lanes' partial results
//    are merged: M = max m_i, l = sum l_i e^(m_i - M), o = sum o_i e^(m_i - M) / l.
//  * Lanes own heads (CPU drivers): workgroup (x, t) takes query heads x * WG + i, one per lane
//    (or HEADS_PER_LANE neighbours of one KV head per lane: GQA, see attention_heads.glsl),
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
// Lanes own heads: query heads per lane, all of one KV head (see attention_heads.glsl).
layout(constant_id = 4) const uint HEADS_PER_LANE = 1;
// Subgroups per workgroup at most (the host keeps the workgroup at most 8 subgroups wide).
#define ATT_MAX_SUBGROUPS 8
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
    float softcap;  // > 0: each score s becomes softcap * tanh(s / softcap) (Gemma 2)
    uint window;    // > 0: a token at position p attends to positions p - window + 1 .. p (sliding window)
} pc;

// What attention_heads.glsl needs (see there): accessors over this kernel's bindings.
float q_at(uint i) { return texelFetch(qkv_texels, int(i)).x; }
vec4 q4_at(uint i) { return texelFetch(qkv_vec4, int(i)); }
uvec4 k4_at(uint i) { return texelFetch(kc4, int(i)); }
uvec4 v4_at(uint i) { return texelFetch(vc4, int(i)); }
#if defined(KV_F16)
uint k_word(uint e) { return kc[e / 2u]; }
uint v_word(uint e) { return vc[e / 2u]; }
#else
uint k_word(uint e) { return kc[e]; }
uint v_word(uint e) { return vc[e]; }
#endif
uvec4 tok_at(uint t) { return texelFetch(tok, int(t)); }
uint table_at(uint i) { return texelFetch(tables, int(i)).x; }
void out_set(uint i, float v) { o[i] = v; }
void capture_set(uint i, float v) { capture[i] = v; }
#include "attention_heads.glsl"

void main() { attention_workgroup(gl_WorkGroupID.xy, gl_NumWorkGroups.y); }
