// The GPU prefill kernels' tile shapes, one source for the shaders that tile by them
// (matmul.comp's TILED branch, attention_tiled.comp) and the host code that sizes their grids and
// shared memory (ops/matmul.cpp, ops/attention.cpp): preprocessor definitions only, so that GLSL
// and C++ both include this file. The kernels' lane maps are written for these values; each kernel
// stops its compile with #error if they change.
#ifndef LANTERN_GPU_TILES_H
#define LANTERN_GPU_TILES_H

#define LANTERN_TILED_LANES 128  // lanes per workgroup of both kernels

// The tiled GEMM: a workgroup multiplies ROWS weight rows by TOKENS tokens, over K in steps of
// K_STEP elements, its weight and input tiles held in shared memory as floats.
#define LANTERN_TILED_ROWS 64
#define LANTERN_TILED_TOKENS 64
#define LANTERN_TILED_K_STEP 32
#define LANTERN_TILED_GEMM_SHARED_BYTES \
    ((LANTERN_TILED_ROWS + LANTERN_TILED_TOKENS) * LANTERN_TILED_K_STEP * 4)

// Tiled attention: a workgroup takes QUERIES step tokens of one head, a quad of lanes each, and
// stages KV_FLOATS floats of keys and as many of values in shared memory at a time.
#define LANTERN_TILED_QUERIES (LANTERN_TILED_LANES / 4)
#define LANTERN_TILED_KV_FLOATS 2048
#define LANTERN_TILED_ATTENTION_SHARED_BYTES (2 * LANTERN_TILED_KV_FLOATS * 4)

#endif
