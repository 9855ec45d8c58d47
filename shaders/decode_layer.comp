#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#if defined(PHASE_CLOCK)
#extension GL_EXT_shader_realtime_clock : require
#endif
// Whole transformer layers of a decode step (one token, or up to 24: batched decode, short
// prompts; the matmuls' decode layout, see kRowLayoutMaxTokens) in one dispatch, for lavapipe —
// a run of consecutive layers (all of a model's where its weights share a slab), each
//   Q/K/V matmul (RMSNorm in; RoPE + KV store out) -> attention -> output projection (+= x)
//   -> gate/up matmul (RMSNorm in; SwiGLU out) -> down matmul (+= x)
// Why: lavapipe runs each dispatch by waking its worker threads and waiting for them all, and on
// the machines measured that hand-off costs far more than an empty dispatch suggests: a chain of
// dispatches that each stream 1-2 MiB of distinct data ran at 11-24 GB/s, against 41 GB/s for the
// same access pattern in one dispatch (lantern-bench's workgroup-contiguous roofline), and a 110M
// decode step was 62 dispatches. Here the grid is one workgroup per driver thread
// (ops::DecodeLayerOp); the op code is the separate kernels' own (matmul_rows.glsl,
// attention_heads.glsl), run once per op "item" — what a workgroup of the separate kernel did.
// Each matmul has its own weight type (specialization constants TYPE_*), so the layers of a file
// that mixes types (Q4_K_M: Q6_K attn_v and ffn_down beside Q4_K) are fused too. A step of 2-4
// tokens (sequences decoding together: the API server's clients) runs a variant with that many
// tokens per lane (TOKENS_PER_LANE), so each weight is read and unpacked once for all of them:
// 110M Q8_0 with 2, 3 and 4 sequences, 76 -> 87, 79 -> 102 and 67-71 -> 117-124 tok/s in all (one
// token per lane read the layer's weights once per token; four ran the separate kernels).
//
// Ops follow each other through counters in `sync`, not barriers: a workgroup claims the op's
// items one at a time, and before the next op waits until every claimed item is finished. Vulkan
// does not promise that a dispatch's workgroups run at the same time, and on lavapipe a worker
// can start late (woken onto the CPU of a spinning one, it waits for the scheduler: waiting at a
// barrier for all workgroups gave up after 65536 spins in most layers of a stories260K step).
// With claiming nobody waits for a workgroup that has not started — the first one takes all the
// work, a late one finds none left — so the kernel is correct however the driver schedules it;
// only an item claimed and then not finished (its thread preempted for ~50 ms) ends the wait:
// then sync[0] is set, every workgroup and the step's later layers stop, and the host runs the
// step again with the separate kernels (LlamaModel::forward), which rewrite everything it wrote.
//
// Everything lives in a few shared views: the run's weights are one contiguous span of a weight
// slab (binding 0 as 16-byte units, binding 1 as floats: quantized scales and the norm weights),
// its layers' K and V caches one span each of a KV buffer,
// the activations one arena (x | q/k/v | attention out | FFN), so each op reads at its offsets.
// Reads of what an earlier op of the same dispatch wrote go through texel views of the same
// memory: on a CPU driver that is plain memory, and the counters' atomics order it.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS_QKV = 32;   // rows per lane of each matmul (its tiles are 8x that)
layout(constant_id = 2) const uint ROWS_O = 32;
layout(constant_id = 3) const uint ROWS_GU = 32;
layout(constant_id = 4) const uint ROWS_DOWN = 32;
layout(constant_id = 5) const bool VEC4_INPUT = false;  // activation rows are multiples of 4 floats
layout(constant_id = 6) const uint HD = 64;          // head dimension (even, at most 256)
layout(constant_id = 7) const bool Q_VEC4 = false;
// Attention's layout, as the separate kernel picks it for one token (the host runs this kernel
// only for steps where it would pick the same, so both compute the same bits): lanes own heads,
// one item per 8 * HEADS_PER_LANE heads; or (fewer such items than driver threads) lanes split the keys of one
// head, one item per head.
layout(constant_id = 8) const bool LANES_OWN_HEADS = true;
// Q/K/V in two parts (0: one stacked matrix): rows per lane of the second, whose rows follow the
// first's in the stacked [Q | K | V] order. A layer of a Q4_K_M file has Q and K in Q4_K and V in
// Q6_K; the two run as one op, their bands claimed from one counter.
layout(constant_id = 9) const uint ROWS_QKV_B = 0;
// The weight type of each matmul (a ggml type number, weights.glsl): constants, so that each
// matmul compiles only its own type's code.
layout(constant_id = 10) const uint TYPE_QKV = 8;
layout(constant_id = 11) const uint TYPE_QKV_B = 8;
layout(constant_id = 12) const uint TYPE_O = 8;
layout(constant_id = 13) const uint TYPE_GU = 8;
layout(constant_id = 14) const uint TYPE_DOWN = 8;
// Tokens per lane: each lane's rows are computed for LT tokens at once, so a step of several
// tokens (sequences decoding together) reads and unpacks each weight once, not once per token.
// The host builds the variant a step needs (1 for one token, else the step's count, at most 4).
layout(constant_id = 15) const uint TOKENS_PER_LANE = 1;
// Attention with lanes owning heads: query heads per lane, as the separate kernel's (AttentionOp).
layout(constant_id = 16) const uint HEADS_PER_LANE = 1;
const bool LANE_PER_ROW = true, LANE_PER_TOKEN = false;
const uint LT = TOKENS_PER_LANE;
#define ROWS_MAX 32u          // kCpuRows in ops/matmul.cpp
#define ATT_MAX_SUBGROUPS 1
// Rounds of 32 counter reads before a wait gives up (~50 ms here; below lavapipe's loop limit
// of 65535 iterations). A thread preempted in the middle of an item resumes well within that.
#define SPIN_ROUNDS 49152u

#include "kv.glsl"
layout(binding = 2) uniform samplerBuffer act_float;
layout(std430, binding = 3) buffer Act { float act[]; };
layout(binding = 4) uniform samplerBuffer act_vec4;
layout(binding = 5) uniform usamplerBuffer tok;      // (pos, table offset, slot, item) per token
layout(binding = 6) uniform samplerBuffer rope;      // cos, sin of [pos][i]
layout(std430, binding = 7) buffer KCache { uint kc[]; };
layout(std430, binding = 8) buffer VCache { uint vc[]; };
layout(binding = 9) uniform usamplerBuffer kc4;
layout(binding = 10) uniform usamplerBuffer vc4;
layout(binding = 11) uniform usamplerBuffer tables;  // block tables
// sync[0]: a wait gave up this step; then per layer and op, items claimed and items finished
// (op_counter); in the profiled variant (PHASE_CLOCK) each workgroup's clock at the events of
// each layer from lp.clock_base on (mark). The host zeroes it before each step.
layout(std430, binding = 12) coherent buffer Sync { uint sync[]; };

layout(push_constant) uniform Layers {
    uint T;          // tokens in the step
    uint slot;       // the run's first layer: its counters in sync (layer r's at slot + r)
    uint layers;     // layers in the run
    uint dim;        // model width
    uint ffn;        // FFN width
    uint qdim;       // Q's width and the attention output's: heads x head dim (Qwen3: wider than dim)
    uint qkv_rows;   // rows of Q, K and V together
    uint qkv_a_rows; // rows of the first Q/K/V part (all of them with one part)
    // The run's first layer: first 16-byte unit of each matrix in binding 0, first float of each
    // norm weight in binding 1. Each later layer's are layer_units units further, and its caches
    // layer_kv 16-byte units further than the one before (the host checks that a run's layers lie
    // so, ops::DecodeLayerOp::joins: push constants, not a table in memory, so that the offsets
    // stay uniform values for the compiler).
    uint w_qkv, w_qkv_b, w_o, w_gu, w_down;
    uint norm_attn, norm_ffn;
    uint bias_qkv;   // first float of the Q/K/V biases in binding 1 (as the norms); ~0u: none (Qwen2 has them)
    uint norm_qk;    // first float of the per-head Q then K norm weights (Qwen3); ~0u: none
    uint layer_units, layer_kv;
    uint act_x, act_qkv, act_attn, act_ffn;  // first float of each activation in the arena
    uint n_head, n_kv, n_rot, block;
    float eps, scale;
    uint clock_base; // PHASE_CLOCK: where the clock events start in sync
} lp;

// The op being run: the push-constant fields of matmul.comp and attention.comp, plus where its
// data starts in the shared views. Set by main() before each op from constants and `lp`, so the
// op code sees the same values a separate dispatch would.
struct Op {
    uint K, N, T, x_stride, y_stride, y_offset, flags;
    float eps;
    uint row_units, tile_rows, n_head, n_kv, hd, n_rot, block;
    uint qkv_stride, out_stride;
    float scale;
    uint capture_token, capture_stride;
    float softcap;  // attention.comp's: 0 here (no fused layer soft-caps or slides a window)
    uint window;
    uint w_base, x_base, y_base, norm_base;
};
Op pc;

// The layer being run: its counter slot, and where its weights and caches start relative to the
// run's first layer's (16-byte units).
uint slot, w_layer, kv_layer;

// Where the matrix being run starts in the weight views (see weights.glsl).
#define WEIGHT_UNIT_BASE pc.w_base
#define WEIGHT_FLOAT_BASE (pc.w_base * 4u)
#define WTYPE_PER_CALL
#include "weights.glsl"

shared float partial[8u * ROWS_MAX * LT];

// Accessors for matmul_rows.glsl and attention_heads.glsl.
float x(uint i) { return texelFetch(act_float, int(pc.x_base + i)).x; }
vec4 x4(uint i) { return texelFetch(act_vec4, int(pc.x_base / 4u + i)); }
float norm_w(uint i) { return texelFetch(weight_scales, int(pc.norm_base + i)).x; }
vec4 norm_w4(uint i) { return uintBitsToFloat(texelFetch(weight_units, int(pc.norm_base / 4u + i))); }
uint rowmap_at(uint t) { return t; }
float y_get(uint o) { return act[pc.y_base + o]; }
void y_set(uint o, float v) { act[pc.y_base + o] = v; }
#define HAS_ROPE_KV
uvec4 tok_at(uint t) { return texelFetch(tok, int(t)); }
float rope_at(uint i) { return texelFetch(rope, int(i)).x; }
bool qkv_bias_on() { return lp.bias_qkv != 0xFFFFFFFFu; }
float qkv_bias_at(uint col) { return texelFetch(weight_scales, int(lp.bias_qkv + w_layer * 4u + col)).x; }
float qk_norm_w(uint i) { return texelFetch(weight_scales, int(lp.norm_qk + w_layer * 4u + i)).x; }
#if defined(KV_F16)
void k_store(uint i, vec2 v) { kc[kv_layer * 4u + i / 2u] = packHalf2x16(v); }
void v_store(uint i, vec2 v) { vc[kv_layer * 4u + i / 2u] = packHalf2x16(v); }
uint k_word(uint e) { return kc[kv_layer * 4u + e / 2u]; }
uint v_word(uint e) { return vc[kv_layer * 4u + e / 2u]; }
#else
void k_store(uint i, vec2 v) {
    kc[kv_layer * 4u + i] = floatBitsToUint(v.x);
    kc[kv_layer * 4u + i + 1u] = floatBitsToUint(v.y);
}
void v_store(uint i, vec2 v) {
    vc[kv_layer * 4u + i] = floatBitsToUint(v.x);
    vc[kv_layer * 4u + i + 1u] = floatBitsToUint(v.y);
}
uint k_word(uint e) { return kc[kv_layer * 4u + e]; }
uint v_word(uint e) { return vc[kv_layer * 4u + e]; }
#endif
float q_at(uint i) { return x(i); }
vec4 q4_at(uint i) { return x4(i); }
uvec4 k4_at(uint i) { return texelFetch(kc4, int(kv_layer + i)); }
uvec4 v4_at(uint i) { return texelFetch(vc4, int(kv_layer + i)); }
uint table_at(uint i) { return texelFetch(tables, int(i)).x; }
void out_set(uint i, float v) { act[pc.y_base + i] = v; }
void capture_set(uint i, float v) {}
#include "matmul_rows.glsl"
#include "attention_heads.glsl"
#include "qk_norm.glsl"

// A matmul of the layer: type wt, K inputs, N rows in tiles of `rows` rows per lane, reading x at
// float x_base (rows x_stride apart), writing y at y_base (rows y_stride apart; flags bit 0: add
// to y). Row units and tile rows follow from those (the host checks that its tiles are lanes x
// rows, see ops::DecodeLayerOp::unsupported).
void set_matmul(uint wt, uint K, uint N, uint rows, uint w, uint x_base, uint x_stride, uint y_base,
                uint y_stride, uint flags, uint norm) {
    pc.K = K;
    pc.N = N;
    pc.row_units = row_units_of(wt, K);
    pc.tile_rows = gl_WorkGroupSize.x * rows;
    pc.w_base = w + w_layer;
    pc.x_base = x_base;
    pc.x_stride = x_stride;
    pc.y_base = y_base;
    pc.y_stride = y_stride;
    pc.y_offset = 0u;
    pc.flags = flags;
    pc.norm_base = norm + w_layer * 4u;  // (norm is unused where the input is plain)
}

// Work sharing (see the top). The op's items — bands of a matmul, groups of 8 heads — are claimed
// one at a time. Counters per op: sync[c] items claimed, sync[c + 1] items finished.
uint op_counter(uint op) { return 1u + slot * 10u + 2u * op; }

shared uint claimed;

// The next unclaimed item of `op` (n or more: none left).
uint claim(uint op) {
    if (gl_LocalInvocationIndex == 0u) claimed = atomicAdd(sync[op_counter(op)], 1u);
    barrier();
    const uint v = claimed;
    barrier();
    return v;
}

void finished(uint op) {
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationIndex == 0u) atomicAdd(sync[op_counter(op) + 1u], 1u);
}

bool gave_up() { return atomicOr(sync[0], 0u) != 0u; }

// The profiled variant (PHASE_CLOCK, `lantern-bench --profile`): this workgroup's device clock at
// event e of the layer — 0 its start, 1 + 2 op the end of its share of op `op` (it found no item
// left), 2 + 2 op the end of its wait for the op's last item (ops 0-3; op 4, down, has no event
// for its wait, which only layers inside a run have: that short wait counts as start-up) —
// as two words at lp.clock_base + ((layer * workgroups + workgroup) * 10 + e) * 2. The host turns
// them into each op's time and the share of it that threads spent waiting (ops::DecodeLayerOp::
// phase_times). One thread writes; the clock read is a call into the driver on lavapipe.
const uint kClockEvents = 10u;
void mark(uint e) {
#if defined(PHASE_CLOCK)
    if (gl_LocalInvocationIndex == 0u) {
        const uvec2 t = clockRealtime2x32EXT();
        const uint i = lp.clock_base + ((slot * gl_NumWorkGroups.x + gl_WorkGroupID.x) * kClockEvents + e) * 2u;
        sync[i] = t.x;
        sync[i + 1u] = t.y;
    }
#endif
}

shared bool all_done;

// Waits until all n items of `op` are finished, so their writes are visible. False: this step is
// given up (a workgroup that claimed an item did not finish it within ~50 ms, here or in another
// wait), and the host runs it again with the separate kernels. The waits are short loops because
// lavapipe ends any loop after 65535 iterations; each iteration reads the counter 32 times.
bool wait_done(uint op, uint n) {
    if (gl_LocalInvocationIndex == 0u) {
        const uint c = op_counter(op) + 1u;
        bool ok = atomicOr(sync[c], 0u) >= n;
        for (uint round = 0u; round < SPIN_ROUNDS && !ok; ++round) {
            [[unroll]] for (uint i = 0u; i < 32u; ++i) ok = atomicOr(sync[c], 0u) >= n;
            if (!ok && gave_up()) break;
        }
        if (!ok) atomicOr(sync[0], 1u);
        all_done = ok;
    }
    barrier();
    memoryBarrierBuffer();
    return all_done;
}

// Bands of `rows` rows per lane in the matmul set last.
uint bands_of(uint rows) { return (pc.N + gl_WorkGroupSize.x * rows - 1u) / (gl_WorkGroupSize.x * rows); }
// Groups of LT tokens in the step: a matmul's items are its bands times these.
uint token_groups() { return (lp.T + LT - 1u) / LT; }

// A matmul of the layer (type wt) whose lanes own `rows` rows each, as op number `op`.
bool run_matmul(uint wt, uint op, uint rows, uint in_kind, uint out_kind) {
    const uint bands = bands_of(rows);
    const uint n = bands * token_groups();
    for (uint v = claim(op); v < n; v = claim(op)) {
        matmul_rows(wt, uvec2(v % bands, v / bands), rows, in_kind, out_kind);
        finished(op);
    }
    mark(1u + 2u * op);
    const bool ok = wait_done(op, n);
    mark(2u + 2u * op);
    return ok;
}

// Part `b` (0 or 1) of Q/K/V: RMSNorm of x in; Q rows RoPE'd to the q/k/v rows, K and V into
// the cache. The second part's rows continue the first's (y_offset), so its epilogue sees the
// columns of the stacked [Q | K | V] it holds.
void set_qkv(bool b) {
    set_matmul(b ? TYPE_QKV_B : TYPE_QKV, lp.dim, b ? lp.qkv_rows - lp.qkv_a_rows : lp.qkv_a_rows,
               b ? ROWS_QKV_B : ROWS_QKV, b ? lp.w_qkv_b : lp.w_qkv, lp.act_x, lp.dim, lp.act_qkv, lp.qkv_rows, 0u,
               lp.norm_attn);
    pc.y_offset = b ? lp.qkv_a_rows : 0u;
}

// With per-head Q/K norms (lp.norm_qk, Qwen3) the Q/K/V bands store their rows plainly, and the
// workgroup that computed a band then normalises, rotates and stores its heads for its tokens
// (qk_norm.glsl, as the separate QkNormRopeOp does: one lane a head and token). The host fuses
// such layers only where every band holds whole heads. `first`, `rows`: the band's stacked rows.
void qk_norm_band(uint first, uint rows, uint group) {
    memoryBarrierBuffer();
    barrier();
    const uint heads = rows / HD, h0 = first / HD, t0 = group * LT, nt = min(LT, lp.T - t0);
    for (uint p = gl_LocalInvocationIndex; p < heads * nt; p += gl_WorkGroupSize.x) {
        const uint t = t0 + p / heads;
        qk_norm_rope_head(t, h0 + p % heads, tok_at(t), lp.n_head, lp.n_kv, HD, lp.n_rot, lp.block, lp.qkv_rows,
                          lp.eps);
    }
}

// One layer (slot, w_layer and kv_layer set). False: the step is given up (here or in an earlier layer).
bool run_layer(bool last) {
    if (gave_up()) return false;
    pc.T = lp.T;
    pc.eps = lp.eps;
    pc.n_head = lp.n_head;
    pc.n_kv = lp.n_kv;
    pc.hd = HD;
    pc.n_rot = lp.n_rot;
    pc.block = lp.block;
    pc.scale = lp.scale;
    pc.capture_token = 0u;
    pc.capture_stride = 0u;
    pc.softcap = 0.0;
    pc.window = 0u;
    mark(0u);

    // Q/K/V: RMSNorm of x in, RoPE'd Q to the q/k/v rows, K and V into the cache. In two parts,
    // one op: the first part's bands are items 0..n_a-1, the second's follow.
    set_qkv(false);
    const uint bands_a = bands_of(ROWS_QKV), n_a = bands_a * token_groups();
    uint bands_b = 0u;
    if (ROWS_QKV_B != 0u) {
        set_qkv(true);
        bands_b = bands_of(ROWS_QKV_B);
    }
    const uint n_qkv = n_a + bands_b * token_groups();
    const bool qk_norm = lp.norm_qk != 0xFFFFFFFFu;
    const uint qkv_out = qk_norm ? OUT_PLAIN : OUT_ROPE_KV;
    for (uint v = claim(0u); v < n_qkv; v = claim(0u)) {
        if (ROWS_QKV_B == 0u || v < n_a) {
            set_qkv(false);
            const uint band = v % bands_a, tile = gl_WorkGroupSize.x * ROWS_QKV;
            matmul_rows(TYPE_QKV, uvec2(band, v / bands_a), ROWS_QKV, IN_NORM, qkv_out);
            if (qk_norm) qk_norm_band(band * tile, min(tile, lp.qkv_a_rows - band * tile), v / bands_a);
        } else {
            set_qkv(true);
            const uint band = (v - n_a) % bands_b, tile = gl_WorkGroupSize.x * ROWS_QKV_B;
            matmul_rows(TYPE_QKV_B, uvec2(band, (v - n_a) / bands_b), ROWS_QKV_B, IN_NORM, qkv_out);
            if (qk_norm)
                qk_norm_band(lp.qkv_a_rows + band * tile, min(tile, lp.qkv_rows - lp.qkv_a_rows - band * tile),
                             (v - n_a) / bands_b);
        }
        finished(0u);
    }
    mark(1u);
    if (!wait_done(0u, n_qkv)) return false;
    mark(2u);

    // Attention: one item per 8 * HEADS_PER_LANE heads (lanes own heads) or per head (lanes split
    // keys), and token.
    pc.x_base = lp.act_qkv;
    pc.y_base = lp.act_attn;
    pc.qkv_stride = lp.qkv_rows;
    pc.out_stride = lp.qdim;
    pc.flags = 0u;
    const uint heads_per_item = gl_WorkGroupSize.x * HEADS_PER_LANE;
    const uint groups = LANES_OWN_HEADS ? (lp.n_head + heads_per_item - 1u) / heads_per_item : lp.n_head;
    for (uint v = claim(1u); v < groups * lp.T; v = claim(1u)) {
        attention_workgroup(uvec2(v % groups, v / groups), lp.T);
        finished(1u);
    }
    mark(3u);
    if (!wait_done(1u, groups * lp.T)) return false;
    mark(4u);

    // Output projection, added to x.
    set_matmul(TYPE_O, lp.qdim, lp.dim, ROWS_O, lp.w_o, lp.act_attn, lp.qdim, lp.act_x, lp.dim, 1u, 0u);
    if (!run_matmul(TYPE_O, 2u, ROWS_O, IN_PLAIN, OUT_PLAIN)) return false;

    // Gate/up: RMSNorm of x in, silu(gate) * up out (gate and up rows interleaved).
    set_matmul(TYPE_GU, lp.dim, 2u * lp.ffn, ROWS_GU, lp.w_gu, lp.act_x, lp.dim, lp.act_ffn, lp.ffn, 0u,
               lp.norm_ffn);
    if (!run_matmul(TYPE_GU, 3u, ROWS_GU, IN_NORM, OUT_SWIGLU)) return false;

    // Down, added to x. After the run's last layer the dispatch's end orders it for what follows;
    // within a run the next layer waits for it like any op.
    set_matmul(TYPE_DOWN, lp.ffn, lp.dim, ROWS_DOWN, lp.w_down, lp.act_ffn, lp.ffn, lp.act_x, lp.dim, 1u, 0u);
    const uint bands = bands_of(ROWS_DOWN), n_down = bands * token_groups();
    for (uint v = claim(4u); v < n_down; v = claim(4u)) {
        matmul_rows(TYPE_DOWN, uvec2(v % bands, v / bands), ROWS_DOWN, IN_PLAIN, OUT_PLAIN);
        finished(4u);
    }
    mark(9u);
    return last || wait_done(4u, n_down);
}

// A run of consecutive layers, one after another in this dispatch (ops::DecodeLayerOp): their
// weights in one slab and their caches in one K and one V buffer. Why not a dispatch per layer:
// lavapipe wakes its threads for each dispatch and waits for all of them at its end (measured in
// docs/decisions/0017-fused-decode-layer.md). [[dont_unroll]]: the loop's trip count is a push constant,
// and a copy of the layer per iteration would multiply the shader's size.
void main() {
    [[dont_unroll]] for (uint r = 0u; r < lp.layers; ++r) {
        slot = lp.slot + r;
        w_layer = r * lp.layer_units;
        kv_layer = r * lp.layer_kv;
        if (!run_layer(r + 1u == lp.layers)) return;
    }
}
