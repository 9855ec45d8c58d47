// Fused decode layers (shaders/decode_layer.comp): on lavapipe a decode step (one token, or a few:
// batched decode, short prompts) runs a run of consecutive transformer layers — all of a model's,
// where their weights share a slab and their caches a buffer — as one dispatch instead of five per
// layer; its workgroups (one per driver thread) claim each op's work from atomic counters and wait
// for the op to finish before the next. What it saves is lavapipe's per-dispatch thread hand-off.
// A wait that gives up makes the step run again on the separate kernels (three in a row turn the
// fused layers off for the model). Why, and what it measured: docs/decisions/0017-fused-decode-layer.md.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ops/attention.h"
#include "ops/device_weight.h"

namespace lantern::ops {

// One layer's weights as the model uploaded them: Q/K/V stacked (or in two stacks where their
// types differ: `qkv` holds the first rows of [Q | K | V], `qkv_b` the rest), gate/up interleaved
// (SwiGLU fused), each a single part. The matrices may be of different types (a Q4_K_M file's
// layers have attn_v and ffn_down in Q6_K).
struct DecodeLayerWeights {
    const DeviceWeight *qkv = nullptr, *qkv_b = nullptr, *o = nullptr, *gate_up = nullptr, *down = nullptr;
    const DeviceWeight *attn_norm = nullptr, *ffn_norm = nullptr;
    const DeviceWeight* qkv_bias = nullptr;  // F32 biases of the [Q | K | V] rows (Qwen2), or none
    const DeviceWeight* qk_norm = nullptr;   // F32 per-head Q norm then K norm (Qwen3), or none
};

// Where the activations are: one arena buffer, each activation at a float offset (a multiple of
// 4) with rows of the model's widths.
struct DecodeLayerActivations {
    vk::BufferRange arena;
    uint32_t x = 0, qkv = 0, attn = 0, ffn = 0;  // first float of each
};

// One layer of a run: its weights, its K and V caches and its counter slot in `sync` (its index in
// the model).
struct DecodeLayerInput {
    DecodeLayerWeights weights;
    vk::BufferRange k_cache, v_cache;
    uint32_t slot = 0;
};

struct DecodeLayerShape {
    AttentionShape attention;  // heads, head dim, KV block and type; qkv_stride = Q/K/V rows
    uint32_t dim = 0, ffn_dim = 0;
    uint32_t q_dim = 0;  // Q's and the attention output's width (heads x head dim); 0 = dim
    float eps = 1e-5f;
    bool lanes_own_heads = true;  // attention's layout (see shaders/attention.comp), as AttentionOp picks it
    uint32_t heads_per_lane = 1;  // with lanes owning heads, as AttentionOp picks it
};

// Where the time of fused layers goes, from the profiled variant's clocks (shaders/decode_layer.comp,
// mark()): per op of the layer — Q/K/V with RoPE and the KV store, attention, the output
// projection, gate/up with SwiGLU, down — summed over the layers of a step.
struct FusedOpTimes {
    static constexpr uint32_t kOps = 5;
    // Each op's time: from the end of the previous op (the first workgroup's start for Q/K/V) to
    // the moment the first workgroup saw its last item finished (the last workgroup's end for down).
    std::array<double, kOps> ns{};
    // Of the workgroups' time in each op (workgroups x its time), what was not spent on its items:
    // waiting for another workgroup's last item, or not started yet. 0 = perfect balance.
    std::array<double, kOps> idle_ns{};
    double span_ns = 0;   // first start to last end, summed over the layers
    uint32_t layers = 0;  // layers whose clocks were complete
};

class DecodeLayerOp {
public:
    // The profiled variant's clock events (mark() in the shader): 10 per workgroup and layer, 2 uints each.
    static constexpr uint32_t kClockEvents = 10;
    static uint32_t clock_words(uint32_t layers, uint32_t workgroups) {
        return layers * workgroups * kClockEvents * 2;
    }
    // Reads the clock words of a step of `layers` fused layers run by `workgroups` workgroups each.
    // The clock counts nanoseconds on lavapipe (the only driver that runs fused layers).
    static FusedOpTimes op_times(std::span<const uint32_t> clock, uint32_t layers, uint32_t workgroups);
    // Workgroups of a fused layer on this device: one per driver thread.
    static uint32_t workgroups_for(const vk::Context& ctx);
    // Empty when a layer with these weights can run fused on this device, else why not (a GPU,
    // weights split in parts or spread over several slabs, gate and up of different types, ...):
    // the model then runs the separate kernels.
    static std::string unsupported(const vk::Context& ctx, const DecodeLayerWeights& w,
                                   const DecodeLayerShape& s);
    // Whether the device runs fused layers at all (lavapipe).
    static bool device_supported(const vk::Context& ctx);
    // Whether `next` (supported on its own) can join the run `run` (consecutive layers, `next`
    // following the last): the same kernel, its weights in the run's slab as far after the last
    // layer's as those are after the one before (every matrix and norm), and its caches right
    // after the last layer's in the same buffers, all within one view of each.
    static bool joins(const vk::Context& ctx, std::span<const DecodeLayerInput> run,
                      const DecodeLayerInput& next);

    DecodeLayerOp() = default;
    // `layers`: a run (each joins the ones before it). `sync`: every layer's counters (1 + 10 x
    // model layers uints, zeroed before each step); `clock_base`: where the clock events of
    // profiled steps start in it (clock_words(model layers, workgroups()) uints from there; 0 = no
    // clocked steps).
    DecodeLayerOp(vk::Context& ctx, std::span<const DecodeLayerInput> layers, const DecodeLayerShape& s,
                  const DecodeLayerActivations& act, vk::BufferRange tok_info, vk::BufferRange rope,
                  vk::BufferRange tables, vk::BufferRange sync, uint32_t clock_base = 0);
    // A step of `tokens` tokens (at most kRowLayoutMaxTokens: the matmuls run the decode layout);
    // `clocked`: the variant that records its op clocks (only where clocks() is true).
    void record(VkCommandBuffer cmd, uint32_t tokens, bool clocked = false) const;
    bool clocks() const { return clocks_; }
    uint32_t workgroups() const { return groups_; }
    uint32_t first_layer() const { return push_.slot; }
    uint32_t layers() const { return push_.layers; }
    bool lanes_own_heads() const { return own_heads_; }  // attention's layout (DecodeLayerShape)

private:
    struct Push {
        uint32_t T, slot, layers, dim, ffn, qdim, qkv_rows, qkv_a_rows;
        uint32_t w_qkv, w_qkv_b, w_o, w_gu, w_down;
        uint32_t norm_attn, norm_ffn, bias_qkv, norm_qk;  // bias_qkv, norm_qk ~0u: none
        uint32_t layer_units, layer_kv;
        uint32_t act_x, act_qkv, act_attn, act_ffn;
        uint32_t n_head, n_kv, n_rot, block;
        float eps, scale;
        uint32_t clock_base;
    };
    // Vulkan promises 128 bytes of push constants (lavapipe gives no more).
    static_assert(sizeof(Push) <= 128, "the fused layers' push constants exceed 128 bytes");
    // Variants by tokens per lane (1-4: a step of T tokens runs min(T, 4)), each built at its
    // first step: only batched decoding (several sequences) needs more than one, and each costs a
    // long compile (decisions 0012 and 0017; the warm-ups make them ahead, decision 0013).
    static constexpr uint32_t kMaxTokensPerLane = 4;
    std::pair<const vk::Kernel*, VkDescriptorSet> variant(uint32_t tokens_per_lane, bool clocked) const;
    vk::Context* ctx_ = nullptr;
    shaders::ShaderId shader_{}, clock_shader_{};
    std::vector<vk::BindingKind> kinds_;
    std::vector<uint32_t> spec_;  // without the tokens- and heads-per-lane constants (appended per variant)
    std::vector<vk::BufferRange> ranges_;
    mutable std::array<const vk::Kernel*, 2 * kMaxTokensPerLane> kernels_{};  // [clocked][tokens/lane - 1]
    mutable std::array<VkDescriptorSet, 2 * kMaxTokensPerLane> sets_{};
    Push push_{};
    uint32_t groups_ = 1;
    bool own_heads_ = true;
    uint32_t heads_per_lane_ = 1;
    bool clocks_ = false;  // the device has a shader clock and sync has room for the events
};

}  // namespace lantern::ops
