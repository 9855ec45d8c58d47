// Linear layers: y[t][n] (+)= sum_k W[n][k] * in(t, k), with the input prologue fused
// (plain, RMSNorm, or SwiGLU) and the residual add fused. Kernel: shaders/matmul.comp.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "ops/attention.h"
#include "ops/device_weight.h"

namespace lantern::ops {

enum class MatmulInput { Plain, Norm, Silu };

struct MatmulShape {
    uint32_t tokens = 1;
    uint32_t x_stride = 0, y_stride = 0, y_offset = 0;
    bool accumulate = false;  // y += W x (residual connection)
    bool use_rowmap = false;  // x row of token t is rowmap[t] (LM head over chosen positions)
    float eps = 1e-5f;        // RMSNorm epsilon (Norm input only)
};

// CPU layouts: lanes per workgroup and rows per workgroup (prefill) or at most per lane (decode,
// see decode_rows_for in matmul.cpp); the fused decode layer (ops/decode_layer.h) uses the same.
// Why these sizes: docs/decisions/0011-matmul-work-split-per-device.md.
constexpr uint32_t kCpuLanes = 8, kCpuRows = 32;
// The tiled weight layout (shaders/weights.glsl) is built for them: a decode lane owns row i of
// every octet (8 rows) of its tile, which is one lane stream of the layout; a prefill workgroup 32
// rows from a multiple of 32.
static_assert(kCpuLanes == 8 && kCpuRows == 32, "the tiled weight layout assumes 8 lanes and 32-row bands");
// On CPU drivers a step of up to kRowLayoutMaxTokens tokens (batched decode of a few sequences,
// short prompts) runs the decode layout (lanes own rows), not the prefill layout, whose 32-lane
// workgroups cost as much for 1 token as for 32 there; from kRowLayoutTokensPerLane tokens on,
// each lane holds its rows' sums for that many tokens, so the weights are read once per that many.
// Steps of 1-4 tokens run as fused layers instead where the device has them (ops::DecodeLayerOp).
// Why and what it measured: decision 0011 (docs/decisions/0011-matmul-work-split-per-device.md).
constexpr uint32_t kRowLayoutMaxTokens = 24, kRowLayoutTokensPerLane = 4;
// On split-K devices (GPUs) a step of at least this many tokens runs the tiled GEMM (TILED in
// shaders/matmul.comp: 64 rows x 64 tokens per workgroup, weights dequantized once per tile into
// shared memory); shorter steps keep split-K's 8 tokens x 4 rows per workgroup, whose tiles a few
// tokens would leave mostly empty. Decision 0052.
constexpr uint32_t kTiledMinTokens = 32;

// How a matmul's lanes share the work (shaders/matmul.comp). ForDevice: lanes own whole rows
// (decode) or tokens (prefill) on CPU drivers, lanes split each row (split-K) on GPUs. Tests
// force SplitK on lavapipe, so the GPU kernels are checked on every machine.
enum class MatmulSplit { ForDevice, LanesOwnRows, SplitK };

// The Q/K/V matmul's epilogue (EPILOGUE_ROPE_KV in shaders/matmul.comp): y's rows are the stacked
// [Q | K | V] heads; Q and K row pairs rotate by RoPE at each token's position (tok_info, see
// ops/attention.h) after their bias where the model has one, Q goes to y, K and V into the layer's
// paged KV cache. Needs the Norm input and row parts that start at even rows.
struct RopeKvEpilogue {
    AttentionShape shape;  // heads, head and rotary dimensions, KV block size and element type
    vk::BufferRange tok_info, rope, k_cache, v_cache;
    // F32 biases of the stacked [Q | K | V] rows, added before RoPE (Qwen2); no buffer = none.
    vk::BufferRange qkv_bias;
};

struct MatmulOptions {
    MatmulSplit split = MatmulSplit::ForDevice;
    const RopeKvEpilogue* rope_kv = nullptr;  // copied; none = plain store
    // The gate/up matmul's epilogue (EPILOGUE_SWIGLU): the weight's rows are gate and up rows
    // interleaved (gate i = row 2i, up i = row 2i + 1) and y[t][i] = silu(gate) * up, so y has
    // half as many columns as the weight has rows (MatmulShape::y_offset still counts weight rows:
    // output column = (y_offset + row) / 2). Needs the Norm input and parts at even rows.
    bool swiglu = false;
    // The gate's activation wherever the matmul applies one (the SwiGLU epilogue, the Silu
    // input): GELU in its tanh form (GeGLU, Gemma) instead of SiLU.
    bool gelu = false;
};

// Rows per weight tile (DeviceWeight::tile_rows, see shaders/weights.glsl) that the matmul kernel
// wants for a matrix of `rows` rows on this device: CPU drivers stream one tile per decode
// workgroup (64 to 256 rows, sized so that the driver's threads share the work evenly), GPUs read
// rows whole (1).
uint32_t matmul_tile_rows(const vk::Context& ctx, uint64_t rows, MatmulSplit split = MatmulSplit::ForDevice);

// One call site of a matmul: binds its buffers once (descriptor sets built at model load) and
// records a dispatch per weight part each step.
class MatmulOp {
public:
    MatmulOp() = default;
    MatmulOp(vk::Context& ctx, const DeviceWeight& w, MatmulInput input, vk::BufferRange x, vk::BufferRange y,
             vk::BufferRange norm_weight, vk::BufferRange rowmap, const MatmulOptions& options = {});
    void record(VkCommandBuffer cmd, const MatmulShape& shape) const;
    uint32_t dispatches() const { return static_cast<uint32_t>(sets_.size()); }

private:
    vk::Context* ctx_ = nullptr;
    const DeviceWeight* w_ = nullptr;
    // The kernel variants, [vec4 input?][variant]: the vec4 variants fetch the input as vec4
    // texels, which needs rows of x and K to be multiples of 4 floats (true for every real model;
    // tests also cover odd shapes). Variants: one token per workgroup (decode); several tokens per
    // workgroup, one or (CPU drivers) two per lane (prefill: one per lane while a step has at most
    // one workgroup of tokens, so short prompts do not leave half the lanes idle); on CPU drivers
    // kRowLayoutTokensPerLane tokens per workgroup row (steps of a few tokens).
    // The construction makes the decode and prefill variants that K's alignment predicts, in
    // parallel; any other is made on first use (record): every pipeline made at load costs load
    // time, cold or warm, and the others are almost never used (decision 0012).
    // PrefillFourPerLane (CPU drivers): four tokens per lane for long steps, where a workgroup's 128
    // token slots fill (PrefillFourPerLane's choice: see record). PrefillTiled (split-K devices,
    // steps of kTiledMinTokens or more): the tiled GEMM, 64 rows x 64 tokens per workgroup.
    enum Variant : uint32_t {
        Decode,
        PrefillOnePerLane,
        PrefillTwoPerLane,
        DecodeFew,
        PrefillFourPerLane,
        PrefillTiled,
        Variants
    };
    const vk::Kernel& variant(uint32_t vec4, Variant v) const;
    mutable const vk::Kernel* kernels_[2][Variants] = {};
    std::vector<uint32_t> specs_[2][Variants];
    shaders::ShaderId id_{};
    std::vector<vk::BindingKind> kinds_;
    bool lane_per_row_ = false;
    bool tiled_ =
        false;  // steps of kTiledMinTokens+ run PrefillTiled (split-K devices with the shared memory)
    RopeKvEpilogue rope_kv_;  // shape.n_head 0 = none
    bool pairs_ = false;      // an epilogue that finishes rows in pairs (RoPE + KV store, SwiGLU)
    bool gelu_ = false;       // MatmulOptions::gelu
    // Lanes per workgroup (prefill, decode, and the CPU layouts' long-step prefill), rows per
    // workgroup or lane, tokens per lane.
    uint32_t group_ = 64, decode_group_ = 64, prefill_group_ = 32;
    uint32_t decode_rows_ = 4, prefill_rows_ = 4, prefill_tokens_per_lane_ = 1;
    std::vector<VkDescriptorSet> sets_;
};

// Whether a matmul multiplies its input in fixed point rather than as floats: the CPU layouts'
// decode steps (lanes own rows, at most kRowLayoutMaxTokens tokens) over quantized weights, whose
// integer products skip a convert per weight (shaders/matmul_rows.glsl, fixed_point_group). Each
// group of the weight's scale (32 input values; 16 for Q6_K), after the Norm input's weight and
// before its RMS scale, becomes integers of 15 bits and a sign times a power of two (so that
// x86 JIT code can multiply them as 16-bit values); see to_fixed_point.
// Returns that group's size, 0 for float products.
uint32_t fixed_point_input(bool lanes_own_rows, uint32_t ggml_type, uint32_t tokens);
uint32_t fixed_point_input(const vk::Context& ctx, MatmulSplit split, uint32_t ggml_type, uint32_t tokens);
// The device's rounding, in place: per group of `group` values (from index 0),
// v = clamp(round_half_even(v * 2^n), -32767, 32767) * 2^-n, n from the exponent of the group's
// max |v| so that |v| * 2^n < 2^15 (a group below 2^-111 becomes zeros). Exact in float, so
// references match the device's integers bit for bit.
void to_fixed_point(std::span<float> v, uint32_t group);

// CPU reference (double accumulation). W is rows x cols floats; x holds `tokens` rows of x_stride.
// `fixed_point`: the input as fixed_point_input matmuls take it (its group size; 0 = floats).
void reference_matmul(std::span<const float> W, uint32_t rows, uint32_t cols, MatmulInput input,
                      std::span<const float> x, std::span<float> y, std::span<const float> norm_weight,
                      std::span<const uint32_t> rowmap, const MatmulShape& shape, uint32_t fixed_point = 0,
                      bool gelu = false);

// GELU in its tanh form, as ggml_gelu computes it (in double): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
// x^3))).
double reference_gelu_tanh(double x);

// CPU reference of RMSNorm: out = x * rsqrt(mean(x^2) + eps) * w.
void reference_rms_norm(const float* x, const float* w, float* out, uint32_t n, float eps);

}  // namespace lantern::ops
