#version 450
// x[t][i] += y[t][i] * rsqrt(mean_i(y[t][i]^2) + eps) * w[i]: a sublayer's output RMS-normalised
// before the residual add (Gemma's post-attention and post-FFN norms). One workgroup per token;
// the lanes stride over the row, then a tree in shared memory sums the squares.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };
layout(binding = 2) uniform samplerBuffer norm;  // w, F32
layout(push_constant) uniform Push {
    uint dim;
    float eps;
} pc;
shared float partial[64];
void main() {
    const uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, base = t * pc.dim;
    float ss = 0.0;
    for (uint i = tid; i < pc.dim; i += 64u) {
        const float v = y[base + i];
        ss += v * v;
    }
    partial[tid] = ss;
    barrier();
    for (uint s = 32u; s > 0u; s >>= 1u) {
        if (tid < s) partial[tid] += partial[tid + s];
        barrier();
    }
    const float scale = inversesqrt(partial[0] / float(pc.dim) + pc.eps);
    for (uint i = tid; i < pc.dim; i += 64u) x[base + i] += y[base + i] * scale * texelFetch(norm, int(i)).x;
}
