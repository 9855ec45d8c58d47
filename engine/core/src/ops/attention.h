// Attention family: causal GQA attention over the paged KV cache (shaders/attention.comp) and the
// CPU references of it and of RoPE + KV store (which the device runs as the Q/K/V matmul's
// epilogue, see RopeKvEpilogue in ops/matmul.h).
//
// Per-token step inputs (uvec4 per token): (position, offset of its sequence's block table in the
// flat table array, physical KV slot to write, batch item index).
#pragma once
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "lantern/rope.h"
#include "vulkan/context.h"

namespace lantern::ops {

struct AttentionShape {
    uint32_t n_head = 0, n_kv = 0, head_dim = 0, block = 16, n_rot = 0;
    uint32_t qkv_stride = 0, out_stride = 0;
    bool kv_f16 = true;
    float scale = 0;      // the scores' scale; 0 = 1 / sqrt(head_dim)
    float softcap = 0;    // > 0: each score s becomes softcap * tanh(s / softcap) (Gemma 2)
    uint32_t window = 0;  // > 0: a token at position p sees positions p - window + 1 .. p only
    double score_scale() const { return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim)); }
};

struct TokenInfo {
    uint32_t pos, table_offset, slot, item;
};

// cos/sin table [position][i] for i < n_rot/2, computed in double precision: angle
// p * freq_base^(-2i / n_rot), scaled as `scaling` says (lantern/rope.h).
std::vector<float> rope_table(uint32_t positions, uint32_t n_rot, double freq_base,
                              const RopeScaling& scaling = {});

// Steps of at least this many tokens per sequence, where lanes split keys (GPUs), run the tiled
// prefill kernel (shaders/attention_tiled.comp: 32 queries per workgroup, K and V streamed through
// shared memory once per block of queries) unless they capture a token's scores. Decision 0052.
constexpr uint32_t kTiledAttentionMinTokens = 16;

// How a workgroup's lanes share the work (see shaders/attention.comp): ForDevice picks LanesOwnHeads
// on CPU drivers (subgroup operations are lane loops there) for steps with a workgroup per driver
// thread, and LanesSplitKeys elsewhere; tests force one or the other so that both run everywhere.
enum class AttentionSplit { ForDevice, LanesOwnHeads, LanesSplitKeys };

class AttentionOp {
public:
    AttentionOp() = default;
    AttentionOp(vk::Context& ctx, const AttentionShape& shape, vk::BufferRange qkv, vk::BufferRange k_cache,
                vk::BufferRange v_cache, vk::BufferRange tok_info, vk::BufferRange tables,
                vk::BufferRange out, vk::BufferRange capture, uint32_t lanes = 0,
                AttentionSplit split = AttentionSplit::ForDevice, uint32_t heads_per_lane = 0);
    // lanes: workgroup size, at most 64; 0 = one subgroup (split keys: the lanes then merge with
    // subgroup operations alone; tests ask for more to run the merge across subgroups).
    // heads_per_lane (lanes owning heads): 1, 2 or 4 query heads of one KV head per lane; 0 = as
    // heads_per_lane_for picks it (tests ask for each).
    // capture_token < 0: no capture. Else the scores of that token (all heads) are written to the
    // capture buffer: [n_head][capture_stride] scores, then (max, sum) per head.
    // `sequences`: how many sequences the step's tokens belong to (see tiled_for).
    void record(VkCommandBuffer cmd, uint32_t tokens, int32_t capture_token, uint32_t capture_stride,
                uint32_t sequences = 1) const;
    // Whether a step of `tokens` tokens runs with lanes owning heads (else they split keys).
    bool lanes_own_heads(uint32_t tokens) const;
    // Lanes own heads: query heads per lane (of one KV head; see shaders/attention_heads.glsl).
    uint32_t heads_per_lane() const { return heads_per_lane_; }
    uint32_t lanes() const { return group_; }  // per workgroup
    // Whether a step of `tokens` tokens of `sequences` sequences runs the tiled prefill kernel: where
    // lanes split keys, with no capture, and at least kTiledAttentionMinTokens tokens per sequence
    // on average (a block of 32 queries walks the keys once per sequence among them, so a batched
    // decode step, one token per sequence, keeps the split-keys kernel).
    bool tiled_for(uint32_t tokens, int32_t capture_token = -1, uint32_t sequences = 1) const;

private:
    vk::Context* ctx_ = nullptr;
    AttentionShape shape_;
    struct Layout {
        const vk::Kernel* kernel = nullptr;  // null: not used on this device / by this split
        VkDescriptorSet set = VK_NULL_HANDLE;
    };
    Layout own_heads_, split_keys_;
    mutable Layout tiled_;  // made on first use (tiled)
    std::vector<vk::BufferRange> tiled_ranges_;
    std::vector<vk::BindingKind> tiled_kinds_;
    const Layout& tiled() const;
    uint32_t group_ = 64;  // lanes per workgroup
    uint32_t heads_per_lane_ = 1;
    uint32_t threads_ = 1;  // a CPU driver's threads (vk::cpu_driver_threads)
};

// Query heads per lane when lanes own heads (see shaders/attention_heads.glsl): two where a KV head
// serves an even number of query heads, two per lane fill whole workgroups of `lanes`, and a
// one-token step still has a workgroup for each of the driver's `threads` (else decode would
// split keys); otherwise one.
uint32_t heads_per_lane_for(const AttentionShape& shape, uint32_t lanes, uint32_t threads);

// CPU references over a float KV pool with the same paged layout as the device.
struct ReferenceKv {
    uint32_t n_kv, head_dim, block;
    std::vector<float> k, v;  // [block][kv_head][slot][d]
    size_t index(uint32_t slot, uint32_t kvh, uint32_t d) const {
        uint32_t b = slot / block, o = slot % block;
        return ((static_cast<size_t>(b) * n_kv + kvh) * block + o) * head_dim + d;
    }
};
// `neox`: rotate each head's pairs (i, i + n_rot / 2) as the model file means them (qwen2, qwen3;
// the engine reorders Q/K rows at load and rotates neighbours, model::interleave_rope_rows), rather
// than (2i, 2i + 1).
void reference_rope_store(const AttentionShape& s, std::span<float> qkv, std::span<const TokenInfo> tok,
                          std::span<const float> rope, ReferenceKv& kv, bool neox = false);
void reference_attention(const AttentionShape& s, std::span<const float> qkv, std::span<const TokenInfo> tok,
                         std::span<const uint32_t> tables, const ReferenceKv& kv, std::span<float> out);

}  // namespace lantern::ops
