#version 450
// Device self-test: out[i] = in[i] * scale + bias. Used at start-up checks and by the first
// Vulkan test to prove the embedded SPIR-V, descriptors and push constants work end to end.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { float src[]; };
layout(std430, binding = 1) writeonly buffer Out { float dst[]; };
layout(push_constant) uniform Push { uint n; float scale; float bias; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < pc.n) dst[i] = src[i] * pc.scale + pc.bias;
}
