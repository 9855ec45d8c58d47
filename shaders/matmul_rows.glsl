// The CPU-driver layouts of the matmul (LANE_PER_ROW for decode, LANE_PER_TOKEN for prefill; see
// shaders/matmul.comp for what they are and why), as functions that the standalone matmul kernel
// and the fused decode-layer kernel (shaders/decode_layer.comp) both run.
//
// Which weight type (weights.glsl), input prologue and output epilogue a call runs are arguments
// (wt, IN_* and OUT_*), not preprocessor branches, so that one shader can hold several matmuls:
// every call site passes constants, and once the driver has inlined the call (every Vulkan driver
// inlines all functions) the branches fold away, so each call compiles only its own path.
//
// The including shader provides, before including this file:
//  - weights.glsl (with WEIGHT_UNIT_BASE / WEIGHT_FLOAT_BASE if the weights share a view);
//  - `pc` with the fields of matmul.comp's push constants (a push-constant block there, a global
//    variable filled before each matmul in the decode-layer kernel);
//  - constants ROWS_MAX (the per-lane accumulator arrays' size; calls pass their own row count up
//    to it), LT, LANE_PER_ROW, VEC4_INPUT, and shared float partial[] of at least
//    LT * ROWS_MAX * (workgroup size) floats;
//  - accessors x(i), x4(i) (vec4 index), norm_w(i), norm_w4(i), y_get(o), y_set(o, v),
//    rowmap_at(t); with HAS_ROPE_KV also tok_at(t), rope_at(i), k_store(i, v), v_store(i, v),
//    qkv_bias_on() and qkv_bias_at(col)
//    (i: element index in the layer's cache, v: the RoPE pair at i, i + 1).

const uint IN_PLAIN = 0u, IN_NORM = 1u, IN_SILU = 2u;           // input prologues
const uint OUT_PLAIN = 0u, OUT_ROPE_KV = 1u, OUT_SWIGLU = 2u;    // output epilogues

uint x_row(uint t) { return ((pc.flags & 2u) != 0u) ? rowmap_at(t) : t; }

// The gated FFN's activation of its gate: SiLU (SwiGLU), or where flags bit 3 is set GELU in its
// tanh form (GeGLU: Gemma), tanh's argument clamped where it is +-1 in float (a driver's tanh may
// divide infinities beyond).
float gelu_tanh(float g) {
    return 0.5 * g * (1.0 + tanh(clamp(0.7978845608028654 * g * (1.0 + 0.044715 * g * g), -15.0, 15.0)));
}
float glu_gate(float g) { return ((pc.flags & 8u) != 0u) ? gelu_tanh(g) : g / (1.0 + exp(-g)); }
vec4 glu_gate4(vec4 g) {
    if ((pc.flags & 8u) != 0u)
        return 0.5 * g * (1.0 + tanh(clamp(0.7978845608028654 * g * (1.0 + 0.044715 * g * g), -15.0, 15.0)));
    return g / (1.0 + exp(-g));
}

// Input element k of token t, prologue applied (s = that token's RMS scale, IN_NORM only).
float input_at(uint base, uint k, float s, uint in_kind) {
    if (in_kind == IN_NORM) return x(base + k) * s * norm_w(k);
    if (in_kind == IN_SILU) {
        return glu_gate(x(base + k)) * x(base + pc.K + k);
    }
    return x(base + k);
}

vec4 input4(uint base, uint k, float s, uint in_kind) {
    if (VEC4_INPUT) {
        if (in_kind == IN_NORM) return x4((base + k) / 4u) * s * norm_w4(k / 4u);
        if (in_kind == IN_SILU) {
            return glu_gate4(x4((base + k) / 4u)) * x4((base + pc.K + k) / 4u);
        }
        return x4((base + k) / 4u);
    }
    return vec4(input_at(base, k, s, in_kind), input_at(base, k + 1u, s, in_kind), input_at(base, k + 2u, s, in_kind),
                input_at(base, k + 3u, s, in_kind));
}

// x itself at k (no prologue): one vec4 texel when rows allow, else four floats.
vec4 x4_at(uint base, uint k) {
    if (VEC4_INPUT) return x4((base + k) / 4u);
    return vec4(x(base + k), x(base + k + 1u), x(base + k + 2u), x(base + k + 3u));
}

// The in_kind vec4 at k for the CPU layouts' groups: the prologue applied, or (raw) x itself —
// IN_NORM takes x raw and dot_rows applies the norm. Float rows may end inside their last
// group, whose weights are zero-padded, so the in_kind is masked to 0 past K (it may hold anything
// there, even NaNs), by a clamped fetch and a select rather than a branch: lavapipe runs both
// sides of a branch. `raw` is a constant at every call, so each call compiles one path.
vec4 group_input4(uint wt, uint base, uint k, bool raw, uint in_kind) {
    if (QUANT_OF(wt))  // quantized rows are whole groups (checked on load)
        return raw ? x4_at(base, k) : input4(base, k, 1.0, in_kind);
    if (VEC4_INPUT) {  // K is a multiple of 4
        const uint kc = min(k, pc.K - 4u);
        const vec4 v = raw ? x4((base + kc) / 4u) : input4(base, kc, 1.0, in_kind);
        return k < pc.K ? v : vec4(0.0);
    }
    vec4 v;
    for (uint c = 0; c < 4u; ++c) {
        const uint kc = min(k + c, pc.K - 1u);
        const float e = raw ? x(base + kc) : input_at(base, kc, 1.0, in_kind);
        v[c] = k + c < pc.K ? e : 0.0;
    }
    return v;
}

// The norm weight at k for the CPU layouts' groups (RMSNorm is applied in dot_rows: the sum of
// squares is gathered in the group loop and the row sums scaled by rsqrt(mean + eps) at the end,
// the scale being the same for every k). Past K any finite value will do: x is 0 there.
vec4 group_norm4(uint k) {
    if (VEC4_INPUT) return norm_w4(min(k, pc.K - 4u) / 4u);
    return vec4(norm_w(min(k, pc.K - 1u)), norm_w(min(k + 1u, pc.K - 1u)), norm_w(min(k + 2u, pc.K - 1u)),
                norm_w(min(k + 3u, pc.K - 1u)));
}

void store(uint row, uint t, float v) {
    uint o = t * pc.y_stride + pc.y_offset + row;
    y_set(o, ((pc.flags & 1u) != 0u) ? y_get(o) + v : v);
}

// The token's texel of `tok` (RoPE + KV store only; fetched once by callers that store many pairs).
uvec4 token_info(uint t, uint out_kind) {
#if defined(HAS_ROPE_KV)
    if (out_kind == OUT_ROPE_KV) return tok_at(t);
#endif
    return uvec4(0u);
}

// Rows (row, row + 1) of token t, row even (parts of a weight start at even rows, so pairs never
// straddle two of them). OUT_SWIGLU: gate and up of FFN unit (y_offset + row) / 2, y gets
// silu(gate) * up. OUT_ROPE_KV: one RoPE pair of a Q, K or V head of the stacked [Q | K | V] rows,
// after its bias where the kernel has one (qkv_bias_on, qkv_bias_at);
// Q goes to y, K and V into the paged KV cache. `info` is the token's texel of `tok`.
void store_pair(uint row, uint t, uvec4 info, float a, float b, uint out_kind) {
    if (out_kind == OUT_SWIGLU) {
        y_set(t * pc.y_stride + (pc.y_offset + row) / 2u, glu_gate(a) * b);
        return;
    }
#if defined(HAS_ROPE_KV)
    const uint col = pc.y_offset + row;  // column of the stacked [Q | K | V] row
    const uint head = col / pc.hd, d = col % pc.hd;
    vec2 v = vec2(a, b);
    if (qkv_bias_on()) v += vec2(qkv_bias_at(col), qkv_bias_at(col + 1u));
    if (head < pc.n_head + pc.n_kv && d < pc.n_rot) {
        const uint r = 2u * (info.x * (pc.n_rot / 2u) + d / 2u);
        const vec2 cs = vec2(rope_at(r), rope_at(r + 1u));
        v = vec2(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x);
    }
    if (head < pc.n_head) {
        const uint o = t * pc.y_stride + col;
        y_set(o, v.x);
        y_set(o + 1u, v.y);
        return;
    }
    const bool is_k = head < pc.n_head + pc.n_kv;
    const uint i = kv_index(info.z, head - pc.n_head - (is_k ? 0u : pc.n_kv), d, pc.n_kv, pc.hd, pc.block);
    if (is_k) k_store(i, v); else v_store(i, v);
#endif
}

// Decode on CPU drivers multiplies the integer weights by the group's input in fixed point: 15
// bits and a sign, and a power-of-two scale per weight group (32 elements, 16 for Q6_K;
// ops::fixed_point_input). Integer products need no int->float convert per weight, which was a
// quarter of the decode kernels' instructions on lavapipe (per weight: unpack, convert, multiply,
// add -> unpack, multiply, add; 110M Q8_0 decode 1.13x). The power-of-two scale makes the integers
// exact (v * 2^n is, and so is rounding it), so a CPU reference reproduces them bit for bit, and 15
// bits keep the input near float16 precision (llama.cpp's CPU backend rounds it to 8 bits). Why 15
// and not 16: the clamp to +-32767 lets LLVM prove that every product is of two 16-bit values (the
// weights' raw values are at most 255), so x86 JIT code multiplies with `vpmaddwd` instead of
// `vpmulld` (110M Q8_0 decode 1.00-1.10x, TinyLlama Q8_0 1.03-1.15x, interleaved on a Zen 5 host).
// Sums stay far from overflow: 32 products of at most 255 * 2^15 each. Prefill keeps float
// products: each unpacked weight serves many tokens there, so the convert is already shared.
bool fixed_point_input(uint wt) { return LANE_PER_ROW && QUANT_OF(wt); }

int idot(ivec4 a, ivec4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

// The group input v (its first vpg vec4s) in fixed point: q = clamp(round_even(v * 2^n), +-32767),
// n from the exponent of max |v| (|v| * 2^n < 2^15, so only a value rounding up to 2^15 is
// clamped, by one step); returns 2^-n (v ~ q * 2^-n) and sets `qsum` to sum(q). A group of values below
// 2^-111 quantizes to zeros. A group holding a NaN or an infinity gets a NaN scale, so that its
// rows' sums are NaN as float products would be, not quietly finite.
float fixed_point_group(uint vpg, vec4 v[VPG_MAX], out ivec4 q[VPG_MAX], out int qsum) {
    // max |v| as bits: an unsigned max of the magnitudes' bit patterns orders finite values as
    // floats do and puts infinities and NaNs (exponent field 255) above them, whatever the
    // driver's float max does with NaNs.
    uvec4 m = uvec4(0u);
    [[unroll]] for (uint i = 0; i < vpg; ++i) m = max(m, floatBitsToUint(v[i]) & 0x7fffffffu);
    // max |v| < 2^(e - 126) for its biased exponent e, so v * 2^(141 - e) < 2^15.
    const uint e = max(max(m.x, m.y), max(m.z, m.w)) >> 23;
    const bool tiny = e < 16u;
    const float up = tiny ? 0.0 : uintBitsToFloat((268u - min(e, 254u)) << 23);  // 2^(141 - e)
    ivec4 total = ivec4(0);
    [[unroll]] for (uint i = 0; i < vpg; ++i) {
        q[i] = clamp(ivec4(roundEven(v[i] * up)), ivec4(-32767), ivec4(32767));
        total += q[i];
    }
    qsum = total.x + total.y + total.z + total.w;
    if (e == 255u) return uintBitsToFloat(0x7fc00000u);
    return tiny ? 0.0 : uintBitsToFloat((e - 14u) << 23);  // 2^(e - 141)
}

// Per-lane state of the CPU layouts, as globals: arrays sized by specialization constants cannot
// be passed to functions (SPIR-V would copy between array types that do not match logically).
uint lane_xb[LT];     // first in_kind element of each of the lane's tokens
float lane_ss[LT];    // sum of their squares (IN_NORM)
float lane_acc[LT * ROWS_MAX];

// The rows of a CPU-layout band: slot r (< rows) holds row band_row(r) = row0 + (r >> cshift) +
// (r & (2^cshift - 1)) * rstep. A decode lane's rows are one octet apart (cshift 31: row0 + r *
// rstep, one lane stream of the tile); a prefill workgroup takes 2^cshift rows from each of a few
// neighbouring lane streams (weights.glsl), so its reads are runs of whole rows of each stream.
uint band_row0, band_rstep, band_cshift;
uint band_row(uint r) {
    return band_row0 + (band_cshift >= 31u ? r * band_rstep
                                            : (r >> band_cshift) + (r & ((1u << band_cshift) - 1u)) * band_rstep);
}

// lane_acc[j * ROWS_MAX + r] = sum_k W[band_row(r)][k] * in(token j, k) for r < rows (the sums
// of rows past N are garbage, never stored). One scale fetch per row and group, each unpacked unit
// serving all LT tokens, raw values against the in_kind with the zero point taken off once per
// group (sum(raw * in) - WZERO * sum(in), see weights.glsl). IN_NORM: the sums are of x * norm_w;
// the caller applies each token's RMS scale (lane_ss).
//
// Two things here are for lavapipe, whose texel fetch is a call to an out-of-line helper that
// clobbers every vector register (docs/decisions/0019-decode-lane-fetch-order.md), and both were found by comparing decode
// with bench_dot.comp, the least work a kernel can do per weight:
//  - A decode lane's rows are one lane stream of the band's tile (weights.glsl), so their units
//    sit at constant offsets from one per-lane address: row slot r's group g starts at
//    lane_first + g * stride + r * GPS. Rows past the tile's last row read the stream's zero
//    padding or, in a short last tile, the data after it (the host leaves slack after every tiled
//    part, so those reads stay inside the view). 32 per-row addresses held through the group loop
//    were 32 more values spilled around every fetch.
//  - Each quad of rows (one scale texel) fetches its units before unpacking any of them, so the
//    helper calls run back to back and their loads overlap instead of each waiting behind the last
//    unit's arithmetic and the spills around it (bench_dot's Q8_0 rate 1.2x).
void dot_rows(uint wt, uint rows, uint in_kind) {
    const uint VPU_ = VPU_OF(wt), VPG_ = VPG_OF(wt), EPG_ = EPG_OF(wt), GPS_ = GPS_OF(wt);
    const float WZERO_ = WZERO_OF(wt);
    const bool quant = QUANT_OF(wt), mins_on = MINS_OF(wt), fixed_point = fixed_point_input(wt);
    // The band lies in one tile (the host checks tile_rows).
    const TileWalk tile = tile_walk(wt, min(band_row0, pc.N - 1u), pc.N, pc.row_units, pc.tile_rows);
    // Row slot r's group-0 unit and, for r a multiple of 4, its quad's group-0 scale texel.
    // LANE_PER_ROW: slot r is row r of the lane's stream (the band is the whole tile), so only
    // slot 0's are kept. LANE_PER_TOKEN: slots come in runs from a few streams (band_row), each
    // kept; rows past N are clamped to the last row.
    uint first_unit[ROWS_MAX];
    uint scale_texel[ROWS_MAX / 4u];
    const uint walked = LANE_PER_ROW ? 1u : rows;
    [[unroll]] for (uint r = 0; r < walked; ++r) {
        const uint row = LANE_PER_ROW ? band_row0 : min(band_row(r), pc.N - 1u);  // (every stream has row 0)
        const RowWalk walk = row_walk_in(wt, tile, row, pc.row_units, pc.tile_rows);
        first_unit[r] = walk.first;
        if (r % 4u == 0u) scale_texel[r / 4u] = walk.scale_first / 4u;
    }
    // So its rows share one group stride.
    const uint stride = tile.stride;
    [[unroll]] for (uint i = 0; i < LT * ROWS_MAX; ++i) lane_acc[i] = 0.0;
    [[unroll]] for (uint j = 0; j < LT; ++j) lane_ss[j] = 0.0;
    const uint groups = (pc.K + EPG_ - 1u) / EPG_;
    for (uint g = 0; g < groups; ++g) {
        vec4 in_v[LT][VPG_MAX];
        float zero[LT], in_sum[LT];
        [[unroll]] for (uint j = 0; j < LT; ++j) {
            vec4 sum = vec4(0.0);
            [[unroll]] for (uint v = 0; v < VPG_; ++v) {
                if (in_kind == IN_NORM) {
                    const vec4 xv = group_input4(wt, lane_xb[j], g * EPG_ + 4u * v, true, in_kind);
                    lane_ss[j] += dot(xv, xv);
                    in_v[j][v] = xv * group_norm4(g * EPG_ + 4u * v);
                } else {
                    in_v[j][v] = group_input4(wt, lane_xb[j], g * EPG_ + 4u * v, false, in_kind);
                }
                sum += in_v[j][v];
            }
            in_sum[j] = dot(sum, vec4(1.0));
            zero[j] = WZERO_ * in_sum[j];
        }
        ivec4 in_q[LT][VPG_MAX];
        float in_s[LT];
        int zero_q[LT];
        if (fixed_point)
            [[unroll]] for (uint j = 0; j < LT; ++j) {
                int qsum;
                in_s[j] = fixed_point_group(VPG_, in_v[j], in_q[j], qsum);
                zero_q[j] = int(WZERO_) * qsum;
                in_sum[j] = float(qsum) * in_s[j];  // the mins' input: the rounded one, as the products'
            }
        const uint lane_first = first_unit[0] + g * stride;
        [[unroll]] for (uint r0 = 0; r0 < rows; r0 += 4u) {
            const uint q = r0 / 4u;
            vec4 scales = vec4(1.0), mins = vec4(0.0);
            if (quant) {
                const uint texel = (LANE_PER_ROW ? scale_texel[0] + q : scale_texel[q]) + g * stride;
                scales = scales4_at(texel);
                if (mins_on) mins = scales4_at(texel + tile.head);  // the mins follow the scale texels
            }
            // Decode fetches the quad's units first (see above). Prefill does not: there each unit
            // serves several tokens' arithmetic, and fetching first measured no faster (0.997x at
            // pp256) while lavapipe took longer to compile it.
            uvec4 raw[4u * GPS_MAX];
            if (LANE_PER_ROW)
                [[unroll]] for (uint rr = 0; rr < 4u; ++rr)
                    if (r0 + rr < rows)
                        [[unroll]] for (uint h = 0; h < GPS_; ++h)
                            raw[rr * GPS_ + h] = unit_texel(lane_first + (r0 + rr) * GPS_ + h);
            [[unroll]] for (uint rr = 0; rr < 4u; ++rr) {
                const uint r = r0 + rr;
                if (r >= rows) continue;  // (rows is a constant: this folds)
                const uint first = LANE_PER_ROW ? 0u : first_unit[r] + g * stride;
                float a[LT];  // the row's sums over this group (quantized: zero point off, input scale on)
                if (fixed_point) {
                    int ai[LT];
                    [[unroll]] for (uint j = 0; j < LT; ++j) ai[j] = 0;
                    [[unroll]] for (uint h = 0; h < GPS_; ++h) {
                        ivec4 w[VPU_MAX];
                        unpack_ints(wt, LANE_PER_ROW ? raw[rr * GPS_ + h] : unit_texel(first + h), w);
                        [[unroll]] for (uint j = 0; j < LT; ++j)
                            [[unroll]] for (uint v = 0; v < VPU_; ++v) ai[j] += idot(w[v], in_q[j][h * VPU_ + v]);
                    }
                    [[unroll]] for (uint j = 0; j < LT; ++j) a[j] = float(ai[j] - zero_q[j]) * in_s[j];
                } else {
                    [[unroll]] for (uint j = 0; j < LT; ++j) a[j] = 0.0;
                    [[unroll]] for (uint h = 0; h < GPS_; ++h) {
                        vec4 w[VPU_MAX];
                        unpack_values(wt, LANE_PER_ROW ? raw[rr * GPS_ + h] : unit_texel(first + h), w);
                        [[unroll]] for (uint j = 0; j < LT; ++j)
                            [[unroll]] for (uint v = 0; v < VPU_; ++v) a[j] += dot(w[v], in_v[j][h * VPU_ + v]);
                    }
                    if (quant) [[unroll]] for (uint j = 0; j < LT; ++j) a[j] -= zero[j];
                }
                if (mins_on) {
                    [[unroll]] for (uint j = 0; j < LT; ++j) lane_acc[j * ROWS_MAX + r] += a[j] * scales[rr] - mins[rr] * in_sum[j];
                } else if (quant) {
                    [[unroll]] for (uint j = 0; j < LT; ++j) lane_acc[j * ROWS_MAX + r] += a[j] * scales[rr];
                } else {
                    [[unroll]] for (uint j = 0; j < LT; ++j) lane_acc[j * ROWS_MAX + r] += a[j];
                }
            }
        }
    }
}

// One workgroup of a CPU layout over weights of type `wt`: `wg` is its (x, y) place in the grid,
// `rows` the rows per lane (LANE_PER_ROW) or per workgroup (LANE_PER_TOKEN, 32).
// LANE_PER_ROW: lane i owns rows x * WG * rows + i + r * WG (r < rows) of token y: one lane stream
// of a tile (weights.glsl). LANE_PER_TOKEN: the workgroup owns 32 rows of one tile, c neighbouring
// rows (c = 16, 8 or 4: the largest that divides the tile's stream length) from each of 32 / c
// neighbouring lane streams, so that it reads runs of whole rows of each stream; lane i takes tokens
// y * WG * LT + j * WG + i (j < LT). The grid covers every tile whole (workgroups past N return).
void matmul_rows(uint wt, uvec2 wg_id, uint rows, uint in_kind, uint out_kind) {
    const uint tid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    const bool pairs = out_kind != OUT_PLAIN;
    if (LANE_PER_ROW) {
        band_row0 = wg_id.x * wg * rows + tid;
        band_rstep = wg;
        band_cshift = 31u;
    } else {
        const uint per_tile = pc.tile_rows / rows, stream_rows = pc.tile_rows / 8u;
        const uint c = stream_rows % 16u == 0u ? 16u : stream_rows % 8u == 0u ? 8u : 4u;
        const uint streams = rows / c, w = wg_id.x % per_tile, stream_groups = 8u / streams;
        band_row0 = (wg_id.x / per_tile) * pc.tile_rows + (w % stream_groups) * streams + 8u * c * (w / stream_groups);
        band_rstep = 8u;
        band_cshift = findMSB(c);
        if (band_row0 >= pc.N) return;  // the last tile's workgroups past its rows (uniform: no barrier follows)
    }
    uint t[LT];
    [[unroll]] for (uint j = 0; j < LT; ++j) {
        t[j] = LANE_PER_ROW ? wg_id.y * LT + j : (wg_id.y * LT + j) * wg + tid;
        const uint tc = min(t[j], pc.T - 1u);  // lanes past the last token compute a copy, never stored
        lane_xb[j] = x_row(tc) * pc.x_stride;
    }
    dot_rows(wt, rows, in_kind);
    // The row sums (IN_NORM: scaled by the token's RMS factor) go to shared memory, slot
    // (j * wg + tid) * rows + r, and the epilogues read them there. Why: a CPU driver keeps a
    // private array that is ever indexed by a variable in memory, written lane by lane each time;
    // indexed only by constants (the loops touching lane_acc are unrolled) it stays in registers
    // through the group loop (with tile_walk's divisions paid once per band: 110M Q8_0 decode on
    // lavapipe 1.15x). Unrolling the epilogues instead (a store, RoPE and KV-cache writes per row)
    // doubled LLVM's time for a cold start.
    float norm_scale[LT];
    [[unroll]] for (uint j = 0; j < LT; ++j)
        norm_scale[j] = in_kind == IN_NORM ? inversesqrt(lane_ss[j] / float(pc.K) + pc.eps) : 1.0;
    [[unroll]] for (uint j = 0; j < LT; ++j)
        [[unroll]] for (uint r = 0; r < rows; ++r)
            partial[(j * wg + tid) * rows + r] = lane_acc[j * ROWS_MAX + r] * norm_scale[j];
    if (!pairs) {
        [[unroll]] for (uint j = 0; j < LT; ++j)
            if (t[j] < pc.T)
                for (uint r = 0; r < rows; ++r)
                    if (band_row(r) < pc.N) store(band_row(r), t[j], partial[(j * wg + tid) * rows + r]);
        return;
    }
    if (LANE_PER_ROW) {
        // Row pairs sit in neighbouring lanes (band_row0 has the lane's parity, the step is even): each
        // lane of a pair stores every other pair (the even lane those at even r, the odd lane
        // those at odd r), reading its neighbour's sum from shared memory.
        barrier();
        const uint odd = tid & 1u;
        [[unroll]] for (uint j = 0; j < LT; ++j) {
            if (t[j] < pc.T) {
                const uvec4 info = token_info(t[j], out_kind);
                for (uint r = odd; r < rows; r += 2u) {
                    const float mine = partial[(j * wg + tid) * rows + r], other = partial[(j * wg + (tid ^ 1u)) * rows + r];
                    const uint row = band_row(r) - odd;  // the pair's even row
                    if (row < pc.N)
                        store_pair(row, t[j], info, odd == 0u ? mine : other, odd == 0u ? other : mine, out_kind);
                }
            }
        }
    } else {
        // LANE_PER_TOKEN: each lane holds all of the workgroup's rows; a pair (2i, 2i + 1) is the
        // same slot of an even stream and the next one (slots r and r + c).
        const uint c = 1u << band_cshift;
        [[unroll]] for (uint j = 0; j < LT; ++j)
            if (t[j] < pc.T)
                for (uint i = 0; i < rows / 2u; ++i) {
                    const uint r = ((i >> band_cshift) << (band_cshift + 1u)) | (i & (c - 1u));
                    if (band_row(r) < pc.N)
                        store_pair(band_row(r), t[j], token_info(t[j], out_kind), partial[(j * wg + tid) * rows + r],
                                   partial[(j * wg + tid) * rows + r + c], out_kind);
                }
    }
}
