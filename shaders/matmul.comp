#version 450
#extension GL_GOOGLE_include_directive : require
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
//    run dot_rows() below.
//  * split-K (GPUs): the workgroup owns ROWS rows for TOKENS tokens; lanes take consecutive 16-byte
//    units of a row (coalesced), and partial sums are reduced with subgroupAdd, then across subgroups.
// Weights, input and norm weight are read through texel views (see weights.glsl for why).
//
// The input is transformed on the fly ("prologue"), saving a dispatch and a round trip:
//   INPUT_PLAIN : in = x[row][k]
//   INPUT_NORM  : in = x[row][k] * rsqrt(mean(x[row]^2) + eps) * norm_w[k]    (RMSNorm fused)
//   INPUT_SILU  : in = silu(x[row][k]) * x[row][K + k]   (x holds [gate | up]; SwiGLU fused)
// flags bit 0: accumulate into y (residual add fused); bit 1: x row of token t is rowmap[t].
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
const uint LT = LANE_PER_TOKEN ? TOKENS_PER_LANE : 1u;
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

shared float partial[ROWS * TOKENS * MAX_SUBGROUPS];
shared float inv_rms_shared[TOKENS];

uint x_row(uint t) { return ((pc.flags & 2u) != 0u) ? rowmap[t] : t; }

// Input element k of token t, prologue applied (s = that token's RMS scale, NORM only).
float input_at(uint base, uint k, float s) {
#if defined(INPUT_NORM)
    return x(base + k) * s * norm_w(k);
#elif defined(INPUT_SILU)
    float g = x(base + k);
    return g / (1.0 + exp(-g)) * x(base + pc.K + k);
#else
    return x(base + k);
#endif
}

vec4 input4(uint base, uint k, float s) {
    if (VEC4_INPUT) {
#if defined(INPUT_NORM)
        return x4((base + k) / 4u) * s * norm_w4(k / 4u);
#elif defined(INPUT_SILU)
        vec4 g = x4((base + k) / 4u);
        return g / (1.0 + exp(-g)) * x4((base + pc.K + k) / 4u);
#else
        return x4((base + k) / 4u);
#endif
    }
    return vec4(input_at(base, k, s), input_at(base, k + 1u, s), input_at(base, k + 2u, s),
                input_at(base, k + 3u, s));
}

// x itself at k (no prologue): one vec4 texel when rows allow, else four floats.
vec4 x4_at(uint base, uint k) {
    if (VEC4_INPUT) return x4((base + k) / 4u);
    return vec4(x(base + k), x(base + k + 1u), x(base + k + 2u), x(base + k + 3u));
}

// The input vec4 at k for the CPU layouts' groups: the prologue applied, or (raw) x itself —
// INPUT_NORM takes x raw and dot_rows applies the norm. Float rows may end inside their last
// group, whose weights are zero-padded, so the input is masked to 0 past K (it may hold anything
// there, even NaNs), by a clamped fetch and a select rather than a branch: lavapipe runs both
// sides of a branch. `raw` is a constant at every call, so each call compiles one path.
vec4 group_input4(uint base, uint k, bool raw) {
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0)
    return raw ? x4_at(base, k) : input4(base, k, 1.0);  // quantized rows are whole groups (checked on load)
#else
    if (VEC4_INPUT) {  // K is a multiple of 4
        const uint kc = min(k, pc.K - 4u);
        const vec4 v = raw ? x4((base + kc) / 4u) : input4(base, kc, 1.0);
        return k < pc.K ? v : vec4(0.0);
    }
    vec4 v;
    for (uint c = 0; c < 4u; ++c) {
        const uint kc = min(k + c, pc.K - 1u);
        const float e = raw ? x(base + kc) : input_at(base, kc, 1.0);
        v[c] = k + c < pc.K ? e : 0.0;
    }
    return v;
#endif
}

#if defined(INPUT_NORM)
// The norm weight at k for the CPU layouts' groups (RMSNorm is applied in dot_rows: the sum of
// squares is gathered in the group loop and the row sums scaled by rsqrt(mean + eps) at the end,
// the scale being the same for every k). Past K any finite value will do: x is 0 there.
vec4 group_norm4(uint k) {
    if (VEC4_INPUT) return norm_w4(min(k, pc.K - 4u) / 4u);
    return vec4(norm_w(min(k, pc.K - 1u)), norm_w(min(k + 1u, pc.K - 1u)), norm_w(min(k + 2u, pc.K - 1u)),
                norm_w(min(k + 3u, pc.K - 1u)));
}
#endif

void store(uint row, uint t, float v) {
    uint o = t * pc.y_stride + pc.y_offset + row;
    y[o] = ((pc.flags & 1u) != 0u) ? y[o] + v : v;
}

#if defined(EPILOGUE_SWIGLU)
uvec4 token_info(uint t) { return uvec4(0u); }
// Rows (row, row + 1) of token t, row even: gate and up of FFN unit (y_offset + row) / 2 (parts of
// the weight start at even rows).
void store_pair(uint row, uint t, uvec4 info, float g, float u) {
    y[t * pc.y_stride + (pc.y_offset + row) / 2u] = g / (1.0 + exp(-g)) * u;
}
#endif

#if defined(EPILOGUE_ROPE_KV)
uvec4 token_info(uint t) { return texelFetch(tok, int(t)); }
// Rows (row, row + 1) of token t, row even: one RoPE pair of a Q, K or V head (see the top).
// Parts of the weight start at even rows (the loader splits them so), so pairs never straddle.
// `info` is the token's texel of `tok` (fetched once by callers that store many pairs).
void store_pair(uint row, uint t, uvec4 info, float a, float b) {
    const uint col = pc.y_offset + row;  // column of the stacked [Q | K | V] row
    const uint head = col / pc.hd, d = col % pc.hd;
    vec2 v = vec2(a, b);
    if (head < pc.n_head + pc.n_kv && d < pc.n_rot) {
        const uint r = 2u * (info.x * (pc.n_rot / 2u) + d / 2u);
        const vec2 cs = vec2(texelFetch(rope, int(r)).x, texelFetch(rope, int(r + 1u)).x);
        v = vec2(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x);
    }
    if (head < pc.n_head) {
        const uint o = t * pc.y_stride + col;
        y[o] = v.x;
        y[o + 1u] = v.y;
        return;
    }
    const bool is_k = head < pc.n_head + pc.n_kv;
    const uint i = kv_index(info.z, head - pc.n_head - (is_k ? 0u : pc.n_kv), d, pc.n_kv, pc.hd, pc.block);
#if defined(KV_F16)
    if (is_k) kc[i / 2u] = packHalf2x16(v); else vc[i / 2u] = packHalf2x16(v);
#else
    if (is_k) { kc[i] = floatBitsToUint(v.x); kc[i + 1u] = floatBitsToUint(v.y); }
    else { vc[i] = floatBitsToUint(v.x); vc[i + 1u] = floatBitsToUint(v.y); }
#endif
}
#endif

// Per-lane state of the CPU layouts, as globals: arrays sized by specialization constants cannot
// be passed to functions (SPIR-V would copy between array types that do not match logically).
uint lane_xb[LT];     // first input element of each of the lane's tokens
float lane_ss[LT];    // sum of their squares (INPUT_NORM)
float lane_acc[LT * ROWS];

// lane_acc[j * ROWS + r] = sum_k W[row0 + r * rstep][k] * in(token j, k) for the CPU layouts
// (rows past N are clamped, their sums never stored). One scale fetch per row and group, each
// unpacked unit serving all LT tokens, raw values against the input with the zero point taken
// off once per group (sum(raw * in) - WZERO * sum(in), see weights.glsl). INPUT_NORM: the sums
// are of x * norm_w; the caller applies each token's RMS scale (lane_ss).
void dot_rows(uint row0, uint rstep) {
    uint first_unit[ROWS];
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0)
    uint first_scale[ROWS];
#endif
    for (uint r = 0; r < ROWS; ++r) {
        const RowWalk walk = row_walk(min(row0 + r * rstep, pc.N - 1u), pc.N, pc.row_units, pc.tile_rows);
        first_unit[r] = walk.first;
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0)
        first_scale[r] = walk.scale_first;
#endif
    }
    // The band lies in one tile (the host checks tile_rows), so its rows share one group stride.
    const RowWalk walk0 = row_walk(min(row0, pc.N - 1u), pc.N, pc.row_units, pc.tile_rows);
    const uint stride = walk0.stride;
    for (uint i = 0; i < LT * ROWS; ++i) lane_acc[i] = 0.0;
    for (uint j = 0; j < LT; ++j) lane_ss[j] = 0.0;
    const uint groups = (pc.K + EPG - 1u) / EPG;
    for (uint g = 0; g < groups; ++g) {
        vec4 in_v[LT][VPG];
        float zero[LT];
        for (uint j = 0; j < LT; ++j) {
            vec4 sum = vec4(0.0);
            for (uint v = 0; v < VPG; ++v) {
#if defined(INPUT_NORM)
                const vec4 xv = group_input4(lane_xb[j], g * EPG + 4u * v, true);
                lane_ss[j] += dot(xv, xv);
                in_v[j][v] = xv * group_norm4(g * EPG + 4u * v);
#else
                in_v[j][v] = group_input4(lane_xb[j], g * EPG + 4u * v, false);
#endif
                sum += in_v[j][v];
            }
            zero[j] = WZERO * dot(sum, vec4(1.0));
        }
        for (uint r = 0; r < ROWS; ++r) {
            const uint first = first_unit[r] + g * stride;
            float a[LT];
            for (uint j = 0; j < LT; ++j) a[j] = 0.0;
            for (uint h = 0; h < GPS; ++h) {
                vec4 w[VPU];
                load_values(first + h, w);
                for (uint j = 0; j < LT; ++j)
                    for (uint v = 0; v < VPU; ++v) a[j] += dot(w[v], in_v[j][h * VPU + v]);
            }
#if defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0)
            const float d = texelFetch(weight_scales, int(first_scale[r] + g * walk0.scale_stride)).x;
            for (uint j = 0; j < LT; ++j) lane_acc[j * ROWS + r] += (a[j] - zero[j]) * d;
#else
            for (uint j = 0; j < LT; ++j) lane_acc[j * ROWS + r] += a[j];
#endif
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;

    if (LANE_PER_ROW || LANE_PER_TOKEN) {
        // LANE_PER_ROW: lane i owns rows x * WG * ROWS + i + r * WG (r < ROWS). LANE_PER_TOKEN:
        // the workgroup owns rows x * ROWS + r, lane i tokens y * WG * LT + j * WG + i (j < LT).
        const uint row0 = LANE_PER_ROW ? gl_WorkGroupID.x * wg * ROWS + tid : gl_WorkGroupID.x * ROWS;
        const uint rstep = LANE_PER_ROW ? wg : 1u;
        uint t[LT];
        for (uint j = 0; j < LT; ++j) {
            t[j] = LANE_PER_ROW ? gl_WorkGroupID.y : (gl_WorkGroupID.y * LT + j) * wg + tid;
            const uint tc = min(t[j], pc.T - 1u);  // lanes past the last token compute a copy, never stored
            lane_xb[j] = x_row(tc) * pc.x_stride;
        }
        dot_rows(row0, rstep);
#if defined(INPUT_NORM)
        for (uint j = 0; j < LT; ++j) {
            const float s = inversesqrt(lane_ss[j] / float(pc.K) + pc.eps);
            for (uint r = 0; r < ROWS; ++r) lane_acc[j * ROWS + r] *= s;
        }
#endif
#if defined(PAIR_EPILOGUE)
        if (LANE_PER_ROW) {
            // Row pairs sit in neighbouring lanes (row0 has the lane's parity, rstep is even): the
            // lanes swap their sums through shared memory, and each lane of a pair stores every
            // other pair (the even lane those at even r, the odd lane those at odd r).
            for (uint r = 0; r < ROWS; ++r) partial[tid * ROWS + r] = lane_acc[r];
            barrier();
            const uint odd = tid & 1u;
            if (t[0] < pc.T) {
                const uvec4 info = token_info(t[0]);
                for (uint r = odd; r < ROWS; r += 2u) {
                    const float mine = lane_acc[r], other = partial[(tid ^ 1u) * ROWS + r];
                    const uint row = row0 + r * rstep - odd;  // the pair's even row
                    if (row < pc.N) store_pair(row, t[0], info, odd == 0u ? mine : other, odd == 0u ? other : mine);
                }
            }
        } else {
            // LANE_PER_TOKEN: the workgroup's rows start even and each lane holds all of them.
            for (uint j = 0; j < LT; ++j)
                if (t[j] < pc.T)
                    for (uint r = 0; r < ROWS; r += 2u)
                        if (row0 + r < pc.N)
                            store_pair(row0 + r, t[j], token_info(t[j]), lane_acc[j * ROWS + r],
                                       lane_acc[j * ROWS + r + 1u]);
        }
#else
        for (uint j = 0; j < LT; ++j)
            if (t[j] < pc.T)
                for (uint r = 0; r < ROWS; ++r)
                    if (row0 + r * rstep < pc.N) store(row0 + r * rstep, t[j], lane_acc[j * ROWS + r]);
#endif
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
    for (uint r = 0; r < ROWS; ++r) walk[r] = row_walk(min(row0 + r, pc.N - 1u), pc.N, pc.row_units, pc.tile_rows);
    for (uint u = tid; u < full_units; u += wg) {
        vec4 w[ROWS][VPU];
        float d[ROWS];
        for (uint r = 0; r < ROWS; ++r) {
            load_values(unit_at(walk[r], u), w[r]);
            d[r] = group_scale(walk[r], u / GPS);
        }
        for (uint t = 0; t < TOKENS; ++t) {
            if (t < nt) {
                vec4 in_v[VPU];
                vec4 sum = vec4(0.0);
                for (uint v = 0; v < VPU; ++v) {
                    in_v[v] = input4(xbase[t], u * EPU + 4u * v, scale[t]);
                    sum += in_v[v];
                }
                const float zero = WZERO * dot(sum, vec4(1.0));
                for (uint r = 0; r < ROWS; ++r) {
                    float a = 0.0;
                    for (uint v = 0; v < VPU; ++v) a += dot(w[r][v], in_v[v]);
                    acc[r * TOKENS + t] += (a - zero) * d[r];
                }
            }
        }
    }
    for (uint k = full_units * EPU + tid; k < K; k += wg)
        for (uint r = 0; r < ROWS; ++r) {
            float wk = load1(walk[r], k);
            for (uint t = 0; t < TOKENS; ++t)
                if (t < nt) acc[r * TOKENS + t] += wk * input_at(xbase[t], k, scale[t]);
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
            store_pair(row0 + r, t0 + t, token_info(t0 + t), a, b);
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
