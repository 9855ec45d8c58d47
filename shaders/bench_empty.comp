#version 450
// Dispatch-overhead probe: one invocation that writes one word.
layout(local_size_x = 1) in;
layout(std430, binding = 0) writeonly buffer Dst { uint dst[]; };
void main() { dst[0] = gl_WorkGroupID.x; }
