#version 450
// Read roofline: every invocation streams consecutive vec4s (stride = all invocations) through a
// running sum; one float per workgroup is written so the reads cannot be optimised away.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { vec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { uint n_vec4; } pc;
shared float part[256];
void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    vec4 acc = vec4(0.0);
    for (uint i = gl_GlobalInvocationID.x; i < pc.n_vec4; i += stride) acc += src[i];
    part[gl_LocalInvocationID.x] = acc.x + acc.y + acc.z + acc.w;
    barrier();
    if (gl_LocalInvocationID.x == 0) {
        float s = 0.0;
        for (uint i = 0; i < gl_WorkGroupSize.x; ++i) s += part[i];
        dst[gl_WorkGroupID.x] = s;
    }
}
