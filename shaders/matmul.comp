#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// y[t][n] (+)= sum_k W[n][k] * in(t, k)  — every linear layer of the model (Q/K/V, output
// projection, gate/up, down, LM head), for decode (T = 1) and prefill (T up to the step budget).
//
// Three ways to split the work, chosen per device and step by specialization constants:
//  * LANE_PER_ROW (decode on CPU drivers such as lavapipe): invocation i of workgroup (x, t)
//    owns ROWS rows for token t, i, i + WG, i + 2 WG, ... of the workgroup's band, and walks them
//    whole. A workgroup's lanes are SIMD lanes of one CPU thread there, so the input loads are
//    the same for every lane and are shared by ROWS weight rows; no reduction, no shared memory.
//    The band is one weight tile (see weights.glsl), so at each step the lanes read neighbouring
//    rows' units and the workgroup streams through the tile.
//  * LANE_PER_TOKEN (prefill on CPU drivers): lane i of workgroup (x, y) owns TOKENS_PER_LANE
//    tokens and the ROWS rows of band x; the weight units are the same for every lane, so one fetch
//    serves all the workgroup's tokens, and one unpack serves the lane's tokens. Both CPU layouts
//    run matmul_rows() (shaders/matmul_rows.glsl, shared with the fused decode-layer kernel).
//  * split-K (GPUs): the workgroup owns ROWS rows for TOKENS tokens; lanes take consecutive 16-byte
//    units of a row (coalesced), and partial sums are reduced with subgroupAdd, then across subgroups.
// Weights, input and norm weight are read through texel views (see weights.glsl for why).
//
// The input is transformed on the fly ("prologue"), saving a dispatch and a round trip:
//   INPUT_PLAIN : in = x[row][k]
//   INPUT_NORM  : in = x[row][k] * rsqrt(mean(x[row]^2) + eps) * norm_w[k]    (RMSNorm fused)
//   INPUT_SILU  : in = silu(x[row][k]) * x[row][K + k]   (x holds [gate | up]; SwiGLU fused)
// flags bit 0: accumulate into y (residual add fused); bit 1: x row of token t is rowmap[t];
// bit 2 (EPILOGUE_ROPE_KV): add the rows' biases before RoPE (Qwen2's Q/K/V).
// EPILOGUE_ROPE_KV (the Q/K/V matmul): y's rows are the stacked [Q | K | V] heads, and each pair
// of rows (2i, 2i+1) is finished together: Q and K pairs rotate by RoPE at the token's position,
// Q goes to y, K and V go straight into the paged KV cache (y's K and V columns stay unwritten).
// This replaces a separate RoPE + KV-store dispatch per layer (one dispatch and barrier less per
// layer; on lavapipe that dispatch alone cost 4-8 % of a 110M decode step).
// EPILOGUE_SWIGLU (the gate/up matmul): y's rows are gate and up rows interleaved (gate i = row
// 2i, up i = row 2i + 1) and each pair becomes y[t][i] = silu(gate) * up, so the down matmul reads
// a plain input: SwiGLU's exp runs once per element instead of once per element and workgroup
// of the down matmul.
// VEC4_INPUT (specialization constant): rows of x and K are multiples of 4 floats, so the input is
// fetched as vec4 texels; a constant rather than a flag so that each variant compiles only its path.
// TILED (GPUs, prefill steps of ops::kTiledMinTokens tokens or more): a GEMM tile per workgroup,
// BN = 64 weight rows x BT = 64 tokens, over K in steps of BK = 32 elements. At each step the
// workgroup's 128 lanes dequantize the tile's weights once into shared memory (f32, k-major) and
// load the tokens' inputs with the prologue applied, then each lane multiplies a 4-row x 8-token
// block held in registers: every weight read from memory serves 64 tokens and every input 64
// rows, where split-K served 8 tokens and 4 rows. 128 lanes: every Vulkan device runs that many.
// The RMSNorm prologue multiplies by the norm weight while loading and scales by each token's
// rsqrt(mean x^2 + eps) at the end, gathered from the loading lanes' sums of squares.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 4;        // rows per workgroup (split-K, LANE_PER_TOKEN) or per lane (LANE_PER_ROW)
layout(constant_id = 2) const uint TOKENS = 8;      // tokens per workgroup (1 = decode)
layout(constant_id = 3) const bool LANE_PER_ROW = false;
layout(constant_id = 4) const bool LANE_PER_TOKEN = false;  // prefill on CPU drivers (see above)
layout(constant_id = 5) const bool VEC4_INPUT = false;
// Tokens per lane (LANE_PER_TOKEN): each unpacked weight unit serves LT tokens of the lane, so the
// int8/f16 unpack — the largest cost on CPU drivers — is paid once per LT tokens.
layout(constant_id = 6) const uint TOKENS_PER_LANE = 1;
const uint LT = TOKENS_PER_LANE;
layout(constant_id = 7) const bool TILED = false;  // see the top (workgroup size 128)
layout(constant_id = 8) const uint TILE_VEC4 = 1;  // shared vec4s of the tiles: (BN + BT) * BK / 4 when TILED
#include "gpu_tiles.h"
const uint TILE_R = 4u, TILE_T = 8u;  // rows and tokens of a lane's register block
const uint BN = LANTERN_TILED_ROWS, BT = LANTERN_TILED_TOKENS, BK = LANTERN_TILED_K_STEP, TILE_LANES = LANTERN_TILED_LANES;
#if LANTERN_TILED_ROWS != 16 * 4 || LANTERN_TILED_TOKENS != 8 * 8 || LANTERN_TILED_LANES != 16 * 8 || \
    LANTERN_TILED_K_STEP != 2 * 16
#error "matmul_tiled's lanes own 4 x 8 blocks (16 lanes over the rows, 8 over the tokens) and load 16 inputs"
#endif
#define MAX_SUBGROUPS 32
#include "weights.glsl"
// The input and the norm weight are read through texel views (floats at 2 and 4, vec4s of the
// same buffers at 6 and 7); the output is a storage buffer.
layout(binding = 2) uniform samplerBuffer x_float;
layout(std430, binding = 3) buffer Y { float y[]; };
layout(binding = 4) uniform samplerBuffer norm_float;
layout(std430, binding = 5) readonly buffer RowMap { uint rowmap[]; };
layout(binding = 6) uniform samplerBuffer x_vec4;
layout(binding = 7) uniform samplerBuffer norm_vec4;
float x(uint i) { return texelFetch(x_float, int(i)).x; }
vec4 x4(uint i) { return texelFetch(x_vec4, int(i)); }
float norm_w(uint i) { return texelFetch(norm_float, int(i)).x; }
vec4 norm_w4(uint i) { return texelFetch(norm_vec4, int(i)); }
#if defined(EPILOGUE_ROPE_KV) || defined(EPILOGUE_SWIGLU)
#define PAIR_EPILOGUE  // rows are finished in pairs (2i, 2i + 1) by store_pair
#endif
#if defined(EPILOGUE_ROPE_KV)
#include "kv.glsl"
layout(binding = 8) uniform usamplerBuffer tok;   // (pos, table offset, slot, item) per token
layout(binding = 9) uniform samplerBuffer rope;   // cos, sin of [pos][i]
layout(std430, binding = 10) writeonly buffer KCache { uint kc[]; };
layout(std430, binding = 11) writeonly buffer VCache { uint vc[]; };
layout(binding = 12) uniform samplerBuffer qkv_bias;  // flags bit 2: F32 biases of the [Q | K | V] rows
#endif
layout(push_constant) uniform Push {
    uint K;          // input length (row length of W)
    uint N;          // output rows in this weight part
    uint T;          // tokens
    uint x_stride;   // floats between consecutive x rows
    uint y_stride;   // floats between consecutive y rows
    uint y_offset;   // first output column written (weight parts split by rows)
    uint flags;
    float eps;
    uint row_units;  // 16-byte units per weight row (rows are padded to whole groups)
    uint tile_rows;  // weight layout (weights.glsl); a CPU-layout band never crosses a tile
    // EPILOGUE_ROPE_KV only: heads, head and rotary dimensions, KV block size.
    uint n_head;
    uint n_kv;
    uint hd;
    uint n_rot;
    uint block;
} pc;

// Split-K: per subgroup sums. CPU layouts: each lane's row sums (matmul_rows.glsl), LT * ROWS per
// lane, workgroups of at most MAX_SUBGROUPS lanes (8 for decode, 32 for prefill).
shared float partial[ROWS * TOKENS * TOKENS_PER_LANE * MAX_SUBGROUPS];
shared float inv_rms_shared[TOKENS];
// TILED: the weight tile ws[k][row] (BK x BN floats) then the input tile xs[k][token] (BK x BT),
// each as vec4s over rows or tokens.
shared vec4 tiles[TILE_VEC4];
const uint XS = BK * BN / 4u;  // the input tile's first vec4

// What matmul_rows.glsl needs (see there): accessors over this kernel's own bindings.
uint rowmap_at(uint t) { return rowmap[t]; }
float y_get(uint o) { return y[o]; }
void y_set(uint o, float v) { y[o] = v; }
#if defined(EPILOGUE_ROPE_KV)
#define HAS_ROPE_KV
uvec4 tok_at(uint t) { return texelFetch(tok, int(t)); }
float rope_at(uint i) { return texelFetch(rope, int(i)).x; }
bool qkv_bias_on() { return (pc.flags & 4u) != 0u; }
float qkv_bias_at(uint col) { return texelFetch(qkv_bias, int(col)).x; }
#if defined(KV_F16)
void k_store(uint i, vec2 v) { kc[i / 2u] = packHalf2x16(v); }
void v_store(uint i, vec2 v) { vc[i / 2u] = packHalf2x16(v); }
#else
void k_store(uint i, vec2 v) { kc[i] = floatBitsToUint(v.x); kc[i + 1u] = floatBitsToUint(v.y); }
void v_store(uint i, vec2 v) { vc[i] = floatBitsToUint(v.x); vc[i + 1u] = floatBitsToUint(v.y); }
#endif
#endif
#define ROWS_MAX ROWS
#include "matmul_rows.glsl"

// This variant's prologue and epilogue (the defines of shaders/manifest.txt).
#if defined(INPUT_NORM)
const uint INPUT_KIND = IN_NORM;
#elif defined(INPUT_SILU)
const uint INPUT_KIND = IN_SILU;
#else
const uint INPUT_KIND = IN_PLAIN;
#endif
#if defined(EPILOGUE_ROPE_KV)
const uint OUTPUT_KIND = OUT_ROPE_KV;
#elif defined(EPILOGUE_SWIGLU)
const uint OUTPUT_KIND = OUT_SWIGLU;
#else
const uint OUTPUT_KIND = OUT_PLAIN;
#endif

// The TILED kernel (see the top). Lane roles: loading, lane i takes token i / 2 of the tile and
// its 16 elements 16 * (i % 2) .. of each k step (so it also sums that token's squares), and
// weight units i, i + 128, ... of the tile's BN rows; multiplying, lane i owns rows
// 4 * (i % 16) .. + 3 and tokens 8 * (i / 16) .. + 7.
void matmul_tiled() {
    const uint tid = gl_LocalInvocationID.x;
    const uint n0 = gl_WorkGroupID.x * BN, t0 = gl_WorkGroupID.y * BT, K = pc.K;
    const uint xt = tid / 2u, xk = 16u * (tid % 2u);
    const uint xbase = x_row(min(t0 + xt, pc.T - 1u)) * pc.x_stride;  // past T: a copy, never stored
    const uint rl = tid % 16u, tl = tid / 16u;
    const uint UPS = BK / EPU;  // units of a row per k step
    float acc[TILE_R * TILE_T];
    [[unroll]] for (uint i = 0; i < TILE_R * TILE_T; ++i) acc[i] = 0.0;
    float ss = 0.0;
    const uint steps = (K + BK - 1u) / BK;
    for (uint s = 0; s < steps; ++s) {
        const uint k0 = s * BK;
        // The weights, dequantized once: units past the row's (whole groups) are zeros.
        for (uint i = tid; i < BN * UPS; i += TILE_LANES) {
            const uint r = i / UPS, uu = i % UPS, u = s * UPS + uu;
            vec4 w[VPU_MAX];
            if (u < pc.row_units) {
                const RowWalk walk = row_walk(WT, min(n0 + r, pc.N - 1u), pc.N, pc.row_units, pc.tile_rows);
                dequant_unit(WT, walk, u, w);
            } else {
                for (uint v = 0; v < VPU; ++v) w[v] = vec4(0.0);
            }
            for (uint v = 0; v < VPU; ++v)
                for (uint c = 0; c < 4u; ++c) tiles[(uu * EPU + 4u * v + c) * (BN / 4u) + r / 4u][r % 4u] = w[v][c];
        }
        // The inputs, prologue applied (IN_NORM: x * norm_w here, the RMS scale at the end); past K,
        // zeros (x may hold anything there).
        for (uint q = 0; q < 4u; ++q) {
            const uint k = k0 + xk + 4u * q;
            vec4 v = vec4(0.0);
            if (VEC4_INPUT) {  // K is a multiple of 4
                if (k < K) v = INPUT_KIND == IN_NORM ? x4_at(xbase, k) : input4(xbase, k, 1.0, INPUT_KIND);
            } else {
                for (uint c = 0; c < 4u; ++c)
                    if (k + c < K) v[c] = INPUT_KIND == IN_NORM ? x(xbase + k + c) : input_at(xbase, k + c, 1.0, INPUT_KIND);
            }
            if (INPUT_KIND == IN_NORM) {
                ss += dot(v, v);
                v *= group_norm4(k);
            }
            for (uint c = 0; c < 4u; ++c) tiles[XS + (xk + 4u * q + c) * (BT / 4u) + xt / 4u][xt % 4u] = v[c];
        }
        barrier();
        for (uint kk = 0; kk < BK; ++kk) {
            const vec4 wv = tiles[kk * (BN / 4u) + rl];
            const vec4 xa = tiles[XS + kk * (BT / 4u) + 2u * tl], xb = tiles[XS + kk * (BT / 4u) + 2u * tl + 1u];
            [[unroll]] for (uint i = 0; i < TILE_R; ++i) {
                [[unroll]] for (uint j = 0; j < 4u; ++j) {
                    acc[i * TILE_T + j] += wv[i] * xa[j];
                    acc[i * TILE_T + 4u + j] += wv[i] * xb[j];
                }
            }
        }
        barrier();
    }
    // Each token's RMS scale from its two loading lanes' sums (the tiles are free again).
    float scale[TILE_T];
    [[unroll]] for (uint j = 0; j < TILE_T; ++j) scale[j] = 1.0;
    if (INPUT_KIND == IN_NORM) {
        tiles[tid / 4u][tid % 4u] = ss;
        barrier();
        [[unroll]] for (uint j = 0; j < TILE_T; ++j) {
            const uint tok = TILE_T * tl + j;
            const vec4 pair = tiles[tok / 2u];
            const float total = (tok % 2u == 0u) ? pair.x + pair.y : pair.z + pair.w;
            scale[j] = inversesqrt(total / float(K) + pc.eps);
        }
    }
    [[unroll]] for (uint j = 0; j < TILE_T; ++j) {
        const uint t = t0 + TILE_T * tl + j;
        if (t >= pc.T) continue;
#if defined(PAIR_EPILOGUE)
        const uvec4 info = token_info(t, OUTPUT_KIND);
        [[unroll]] for (uint i = 0; i < TILE_R; i += 2u) {
            const uint row = n0 + TILE_R * rl + i;  // even: pairs never straddle lanes
            if (row < pc.N)
                store_pair(row, t, info, acc[i * TILE_T + j] * scale[j], acc[(i + 1u) * TILE_T + j] * scale[j],
                           OUTPUT_KIND);
        }
#else
        [[unroll]] for (uint i = 0; i < TILE_R; ++i) {
            const uint row = n0 + TILE_R * rl + i;
            if (row < pc.N) store(row, t, acc[i * TILE_T + j] * scale[j]);
        }
#endif
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    if (TILED) {
        matmul_tiled();
        return;
    }

    if (LANE_PER_ROW || LANE_PER_TOKEN) {
        matmul_rows(WT, gl_WorkGroupID.xy, ROWS, INPUT_KIND, OUTPUT_KIND);
        return;
    }

    const uint t0 = gl_WorkGroupID.y * TOKENS;
    const uint nt = min(TOKENS, pc.T - t0);
    const uint K = pc.K;
    const uint full_units = K / EPU;
    float scale[TOKENS];
    uint xbase[TOKENS];
    for (uint t = 0; t < TOKENS; ++t) {
        xbase[t] = x_row(t0 + min(t, nt - 1u)) * pc.x_stride;
        scale[t] = 1.0;
    }
#ifdef INPUT_NORM
    // The lanes share the sum of squares through shared memory.
    for (uint t = 0; t < TOKENS; ++t) {
        if (t >= nt) break;
        float ss = 0.0;
        for (uint k = tid; k < K; k += wg) ss += x(xbase[t] + k) * x(xbase[t] + k);
        ss = subgroupAdd(ss);
        if (subgroupElect()) partial[gl_SubgroupID] = ss;
        barrier();
        if (tid == 0u) {
            float total = 0.0;
            for (uint s = 0; s < gl_NumSubgroups; ++s) total += partial[s];
            inv_rms_shared[t] = inversesqrt(total / float(K) + pc.eps);
        }
        barrier();
    }
    for (uint t = 0; t < TOKENS; ++t) scale[t] = inv_rms_shared[t];
#endif

    // Split-K. Each lane loads unit u of all ROWS rows first, then fetches each token's input for
    // that unit once and applies it to every row: the input is read once per unit instead of once
    // per row and unit (on an H200 the input fetches, 4x the weight fetches, bound a 7B Q8_0 decode
    // at ~0.8 TB/s). Raw values with the zero point taken off per unit, as in dot_rows.
    const uint row0 = gl_WorkGroupID.x * ROWS;
    float acc[ROWS * TOKENS];
    for (uint i = 0; i < ROWS * TOKENS; ++i) acc[i] = 0.0;
    RowWalk walk[ROWS];
    for (uint r = 0; r < ROWS; ++r) walk[r] = row_walk(WT, min(row0 + r, pc.N - 1u), pc.N, pc.row_units, pc.tile_rows);
    for (uint u = tid; u < full_units; u += wg) {
        vec4 w[ROWS][VPU];  // (VPU, not VPU_MAX: no larger a private array than the type needs on GPUs)
        float d[ROWS];
#if defined(WMINS)
        float m[ROWS];
#endif
        for (uint r = 0; r < ROWS; ++r) {
            vec4 unit[VPU_MAX];
            load_values(WT, unit_at(WT, walk[r], u), unit);
            for (uint v = 0; v < VPU; ++v) w[r][v] = unit[v];
            d[r] = group_scale(WT, walk[r], u / GPS);
#if defined(WMINS)
            m[r] = group_min(WT, walk[r], u / GPS);
#endif
        }
        for (uint t = 0; t < TOKENS; ++t) {
            if (t < nt) {
                vec4 in_v[VPU];
                vec4 sum = vec4(0.0);
                for (uint v = 0; v < VPU; ++v) {
                    in_v[v] = input4(xbase[t], u * EPU + 4u * v, scale[t], INPUT_KIND);
                    sum += in_v[v];
                }
                const float in_sum = dot(sum, vec4(1.0)), zero = WZERO * in_sum;
                for (uint r = 0; r < ROWS; ++r) {
                    float a = 0.0;
                    for (uint v = 0; v < VPU; ++v) a += dot(w[r][v], in_v[v]);
#if defined(WMINS)
                    // The min, like the zero point, comes off per unit over that unit's input.
                    acc[r * TOKENS + t] += (a - zero) * d[r] - m[r] * in_sum;
#else
                    acc[r * TOKENS + t] += (a - zero) * d[r];
#endif
                }
            }
        }
    }
    for (uint k = full_units * EPU + tid; k < K; k += wg)
        for (uint r = 0; r < ROWS; ++r) {
            float wk = load1(WT, walk[r], k);
            for (uint t = 0; t < TOKENS; ++t)
                if (t < nt) acc[r * TOKENS + t] += wk * input_at(xbase[t], k, scale[t], INPUT_KIND);
        }
    barrier();  // `partial` may still be read by the norm prologue
    for (uint i = 0; i < ROWS * TOKENS; ++i) {
        float s = subgroupAdd(acc[i]);
        if (subgroupElect()) partial[i * MAX_SUBGROUPS + gl_SubgroupID] = s;
    }
    barrier();
#if defined(PAIR_EPILOGUE)
    // ROWS is even here (the host makes it so) and row0 too: each lane finishes a row pair.
    for (uint i = tid; i < (ROWS / 2u) * TOKENS; i += wg) {
        const uint r = 2u * (i / TOKENS), t = i % TOKENS;
        if (t < nt && row0 + r < pc.N) {
            float a = 0.0, b = 0.0;
            for (uint g = 0; g < gl_NumSubgroups; ++g) {
                a += partial[(r * TOKENS + t) * MAX_SUBGROUPS + g];
                b += partial[((r + 1u) * TOKENS + t) * MAX_SUBGROUPS + g];
            }
            store_pair(row0 + r, t0 + t, token_info(t0 + t, OUTPUT_KIND), a, b, OUTPUT_KIND);
        }
    }
#else
    for (uint i = tid; i < ROWS * TOKENS; i += wg) {
        uint r = i / TOKENS, t = i % TOKENS;
        if (t < nt && row0 + r < pc.N) {
            float s = 0.0;
            for (uint g = 0; g < gl_NumSubgroups; ++g) s += partial[i * MAX_SUBGROUPS + g];
            store(row0 + r, t0 + t, s);
        }
    }
#endif
}
