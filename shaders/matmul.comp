#version 450
#extension GL_GOOGLE_include_directive : require
// y[t][n] (+)= sum_k W[n][k] * in(t, k)  — every linear layer of the model (Q/K/V, output
// projection, gate/up, down, LM head), for decode (T = 1) and prefill (T up to the step budget).
//
// Workgroup (x, y) computes ROWS output rows for up to 8 tokens (token group y): each weight value
// is loaded once and used for all 8 tokens, so decode reads every weight exactly once and prefill
// reads them ceil(T/8) times. Invocations split k; partial sums are reduced with subgroupAdd and
// then across subgroups in shared memory.
//
// The input is transformed on the fly ("prologue"), saving a dispatch and a round trip:
//   INPUT_PLAIN : in = x[row][k]
//   INPUT_NORM  : in = x[row][k] * rsqrt(mean(x[row]^2) + eps) * norm_w[k]    (RMSNorm fused)
//   INPUT_SILU  : in = silu(x[row][k]) * x[row][K + k]   (x holds [gate | up]; SwiGLU fused)
// flags bit 0: accumulate into y (residual add fused); bit 1: x row of token t is rowmap[t].
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 2;
#define MAX_T 8
#define MAX_SUBGROUPS 32
#include "weights.glsl"
layout(std430, binding = 2) readonly buffer X { float x[]; };
layout(std430, binding = 3) buffer Y { float y[]; };
layout(std430, binding = 4) readonly buffer NormW { float norm_w[]; };
layout(std430, binding = 5) readonly buffer RowMap { uint rowmap[]; };
layout(push_constant) uniform Push {
    uint K;         // input length (row length of W)
    uint N;         // output rows in this weight part
    uint T;         // tokens
    uint x_stride;  // floats between consecutive x rows
    uint y_stride;  // floats between consecutive y rows
    uint y_offset;  // first output column written (weight parts split by rows)
    uint flags;
    float eps;
} pc;

shared float partial[ROWS * MAX_T * MAX_SUBGROUPS];
shared float inv_rms[MAX_T];

uint x_row(uint t) { return ((pc.flags & 2u) != 0u) ? rowmap[t] : t; }

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    const uint row0 = gl_WorkGroupID.x * ROWS;
    const uint t0 = gl_WorkGroupID.y * MAX_T;
    const uint nt = min(MAX_T, pc.T - t0);
    const uint K = pc.K;

#ifdef INPUT_NORM
    for (uint t = 0; t < nt; ++t) {
        uint base = x_row(t0 + t) * pc.x_stride;
        float ss = 0.0;
        for (uint k = tid; k < K; k += wg) ss += x[base + k] * x[base + k];
        ss = subgroupAdd(ss);
        if (subgroupElect()) partial[gl_SubgroupID] = ss;
        barrier();
        if (tid == 0) {
            float total = 0.0;
            for (uint s = 0; s < gl_NumSubgroups; ++s) total += partial[s];
            inv_rms[t] = inversesqrt(total / float(K) + pc.eps);
        }
        barrier();
    }
#endif

    float acc[ROWS][MAX_T];
    for (uint r = 0; r < ROWS; ++r)
        for (uint t = 0; t < MAX_T; ++t) acc[r][t] = 0.0;

    const uint k8_end = (K / 8u) * 8u;
    for (uint k = tid * 8u; k < k8_end; k += wg * 8u) {
        vec4 w_lo[ROWS], w_hi[ROWS];
        for (uint r = 0; r < ROWS; ++r) {
            uint row = min(row0 + r, pc.N - 1u);  // clamped rows compute garbage that is never stored
            load8(row * K + k, w_lo[r], w_hi[r]);
        }
        for (uint t = 0; t < nt; ++t) {
            uint base = x_row(t0 + t) * pc.x_stride + k;
            vec4 a = vec4(x[base], x[base + 1], x[base + 2], x[base + 3]);
            vec4 b = vec4(x[base + 4], x[base + 5], x[base + 6], x[base + 7]);
#if defined(INPUT_NORM)
            float s = inv_rms[t];
            a *= s * vec4(norm_w[k], norm_w[k + 1], norm_w[k + 2], norm_w[k + 3]);
            b *= s * vec4(norm_w[k + 4], norm_w[k + 5], norm_w[k + 6], norm_w[k + 7]);
#elif defined(INPUT_SILU)
            vec4 ua = vec4(x[base + K], x[base + K + 1], x[base + K + 2], x[base + K + 3]);
            vec4 ub = vec4(x[base + K + 4], x[base + K + 5], x[base + K + 6], x[base + K + 7]);
            a = a / (1.0 + exp(-a)) * ua;
            b = b / (1.0 + exp(-b)) * ub;
#endif
            for (uint r = 0; r < ROWS; ++r) acc[r][t] += dot(w_lo[r], a) + dot(w_hi[r], b);
        }
    }
    // Tail of rows whose length is not a multiple of 8 (only float weight types allow this).
    for (uint k = k8_end + tid; k < K; k += wg) {
        for (uint t = 0; t < nt; ++t) {
            uint base = x_row(t0 + t) * pc.x_stride + k;
            float v = x[base];
#if defined(INPUT_NORM)
            v *= inv_rms[t] * norm_w[k];
#elif defined(INPUT_SILU)
            v = v / (1.0 + exp(-v)) * x[base + K];
#endif
            for (uint r = 0; r < ROWS; ++r) acc[r][t] += load1(min(row0 + r, pc.N - 1u) * K + k) * v;
        }
    }

    barrier();  // `partial` was used by the norm prologue
    for (uint r = 0; r < ROWS; ++r)
        for (uint t = 0; t < nt; ++t) {
            float s = subgroupAdd(acc[r][t]);
            if (subgroupElect()) partial[(r * MAX_T + t) * MAX_SUBGROUPS + gl_SubgroupID] = s;
        }
    barrier();
    if (tid < ROWS * MAX_T) {
        uint r = tid / MAX_T, t = tid % MAX_T;
        if (t < nt && row0 + r < pc.N) {
            float s = 0.0;
            for (uint g = 0; g < gl_NumSubgroups; ++g) s += partial[(r * MAX_T + t) * MAX_SUBGROUPS + g];
            uint o = (t0 + t) * pc.y_stride + pc.y_offset + row0 + r;
            y[o] = ((pc.flags & 1u) != 0u) ? y[o] + s : s;
        }
    }
}
