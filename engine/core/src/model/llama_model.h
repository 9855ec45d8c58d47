// The llama network on the device: weights uploaded once, activation buffers sized for the largest
// step, every dispatch's descriptor set built at load, and forward() recording one step (any mix of
// sequences and token counts) into one command buffer with one submit and one wait.
#pragma once
#include <array>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "lantern/engine.h"
#include "lantern/gguf.h"
#include "model/weight_placement.h"
#include "ops/attention.h"
#include "ops/decode_layer.h"
#include "ops/embed.h"
#include "ops/matmul.h"
#include "ops/norm_add.h"
#include "ops/qk_norm_rope.h"
#include "vulkan/context.h"

namespace lantern::model {

// NEOX-style RoPE (pairs (i, i + n_rot / 2) of each head) as the interleaved pairs (2i, 2i + 1)
// the kernels rotate: `data` holds heads x head_dim rows of row_bytes each, and each head's first
// n_rot rows are reordered, new row 2i + s = old row i + s * n_rot / 2. Applied to Q and K alike
// (weights, biases, per-head norms), Q.K products are unchanged: only the cache's order of a
// head's dimensions differs from the file's.
std::vector<uint8_t> interleave_rope_rows(std::span<const uint8_t> data, uint64_t row_bytes, uint32_t heads,
                                          uint32_t head_dim, uint32_t n_rot);

struct ModelLimits {
    uint32_t max_step_tokens = 256;  // tokens per forward
    uint32_t max_logit_rows = 8;     // sequences per step that want logits
    uint32_t context_length = 2048;  // per sequence
    uint32_t kv_blocks = 0;          // pool size
    // The sliding-window layers' own pool (ModelInfo::local_layers): blocks; 0 = they use the main
    // pool's blocks and tables like every layer.
    uint32_t kv_blocks_local = 0;
    uint32_t block_tokens = 16;
    bool kv_f16 = true;
    uint64_t weight_slab_bytes = 256ull << 20;  // weights are sub-allocated from slabs of this size
    bool fused_decode = true;  // fused layers for steps of a few tokens where possible (ops/decode_layer.h)
    // Test hooks (runtime/engine_test_hooks.h).
    int32_t fused_stall_layer_for_test = -1;
    uint32_t kv_layers_per_buffer_for_test = 0;
    bool gpu_layouts = false;
};

// Host-side description of one step.
struct StepInput {
    std::vector<int32_t> tokens;
    std::vector<ops::TokenInfo> info;  // per token
    std::vector<uint32_t> tables;      // block tables of the step's sequences, concatenated
    // With a local pool (ModelLimits::kv_blocks_local): the same for the sliding-window layers
    // (position and item as in `info`, slot and table offset in the local pool).
    std::vector<ops::TokenInfo> info_local;
    std::vector<uint32_t> tables_local;
    std::vector<uint32_t> logit_rows;  // token indices whose logits are returned
    int32_t capture_layer = -1;        // attention capture for the last logit row's token
};

class LlamaModel {
public:
    LlamaModel(vk::Context& ctx, const GgufFile& gguf, const ModelInfo& info, const ModelLimits& limits);
    ~LlamaModel();

    // Runs one step; logits gets logit_rows.size() x vocab floats.
    void forward(const StepInput& in, std::vector<float>& logits, bool profile, StepProfile* prof,
                 AttentionSnapshot* capture);

    // The weights' device memory: the slabs that hold them.
    uint64_t weight_bytes() const { return weight_bytes_; }
    // What the constructor worked out the weights would take before it uploaded any (the memory
    // plan's weight bytes); the same as weight_bytes(), which test_memory_plan holds.
    uint64_t planned_weight_bytes() const { return planned_weight_bytes_; }
    // Where the weights' pieces lie (for tests of the slabs: their sizes, layers kept whole).
    const WeightPlacement& weight_placement() const { return placement_; }
    uint64_t matmul_weight_bytes() const { return matmul_bytes_; }
    // The same bytes by device layout (ggml type number of ops::WeightFormat::device_type).
    const std::map<uint32_t, uint64_t>& matmul_weight_bytes_by_layout() const {
        return matmul_bytes_by_layout_;
    }
    uint64_t kv_bytes() const { return kv_bytes_; }
    static uint64_t kv_bytes_per_token(const ModelInfo& m, bool f16) {
        return 2ull * m.n_layers * m.n_kv_heads * m.head_dim * (f16 ? 2 : 4);
    }
    uint32_t dispatches_per_step() const { return dispatches_; }
    // Whether decode steps run fused layers, a run of layers per dispatch (ops::DecodeLayerOp), and if not
    // all of them do, why the first that does not cannot.
    bool fused_decode() const { return fused_ok_; }
    const std::string& fused_decode_unsupported() const { return fused_why_; }
    // Steps whose fused layers gave up waiting for an op and ran again with the separate kernels.
    uint32_t fused_decode_fallbacks() const { return fused_fallbacks_; }
    static constexpr size_t kProfileLabels = 8;  // at least llama_model.cpp's OpLabel count

private:
    // `sequences`: how many sequences the step's T tokens belong to (attention's choice of kernel).
    void record_step(VkCommandBuffer cmd, uint32_t T, uint32_t S, bool timing, int32_t capture_layer,
                     int32_t capture_token, bool fused, uint32_t sequences);
    void record_lm_head(VkCommandBuffer cmd, uint32_t S);
    struct Layer {
        const ops::DeviceWeight *attn_norm = nullptr, *ffn_norm = nullptr;
        // Gemma: the attention and FFN outputs, RMS-normalised, are added to x (ModelInfo::post_norms):
        // the O and down matmuls write post_, these add it.
        const ops::DeviceWeight *post_attn_norm = nullptr, *post_ffn_norm = nullptr;
        ops::NormAddOp post_attn, post_ffn;
        const ops::DeviceWeight* qkv_bias = nullptr;  // [Q | K | V] biases as F32 (ModelInfo::qkv_bias)
        const ops::DeviceWeight* qk_norm = nullptr;   // [Q norm | K norm] as F32 (ModelInfo::qk_norm)
        ops::QkNormRopeOp qk_norm_op;                 // after a plain Q/K/V matmul, where qk_norm is set
        std::vector<ops::MatmulOp> qkv, o, gate_up, down;
        std::vector<uint32_t> qkv_offsets, gate_up_offsets;
        bool swiglu_fused = false;         // gate/up rows interleaved, SwiGLU in their matmul's epilogue
        vk::BufferRange k_cache, v_cache;  // in kv_buffers_
        ops::AttentionOp attention;
        bool has_fused = false;
        int32_t fused_run = -1;  // its run in fused_runs_ (when has_fused)
    };

    void release();  // destroys every buffer (destructor, and a constructor that throws)
    // A norm weight (n floats): the kernels read it as F32, so any other type is converted on load.
    const ops::DeviceWeight& upload_norm(const GgufFile& gguf, const std::string& name, uint64_t n);
    // 1-D tensors uploaded one after another as one F32 vector (`label`): a layer's Q, K and V
    // biases, or its Q and K norms. Any stored type is converted; `rope_heads` > 0 reorders the
    // piece's RoPE pairs as the Q/K rows are (interleave_rope_rows, head_dim values a head).
    struct VectorPiece {
        std::string name;
        uint64_t n = 0;
        uint32_t rope_heads = 0;
    };
    std::vector<VectorPiece> qkv_bias_pieces(const std::string& prefix) const;
    std::vector<VectorPiece> qk_norm_pieces(const std::string& prefix) const;
    const ops::DeviceWeight& upload_vectors(const GgufFile& gguf, const std::string& label,
                                            const std::vector<VectorPiece>& pieces);
    const ops::DeviceWeight& upload(const GgufFile& gguf, const std::string& name, uint64_t rows_expected,
                                    uint64_t cols_expected);
    // Uploads several matrices that read the same input (Q/K/V, gate/up). Each run of neighbours
    // that share a format becomes one matrix (rows stacked), so one dispatch computes all of them:
    // Q/K/V in one type -> one weight; Q and K in one, V in another (Q4_K_M) -> two. Returns the
    // weights in order.
    // `rope_heads[i]` > 0: matrix i holds that many heads of head_dim rows whose RoPE pairs are
    // reordered for the kernels (ModelInfo::rope_neox, interleave_rope_rows).
    std::vector<const ops::DeviceWeight*> upload_stacked(const GgufFile& gguf,
                                                         const std::vector<std::string>& names,
                                                         const std::vector<uint64_t>& rows, uint64_t cols,
                                                         const std::vector<uint32_t>& rope_heads = {});
    const ops::DeviceWeight& upload_repacked(const std::string& name, const ops::WeightFormat& fmt,
                                             const ops::Repacked& r, uint64_t rows, uint64_t cols);
    // How upload_repacked lays out rows x cols of fmt on this device: rows per tile (1: row-major,
    // scales in their own array) and rows per part (each part a matrix of its own, so no texel
    // view passes maxTexelBufferElements).
    struct Layout {
        uint32_t tile_rows = 1;
        uint64_t rows_per_part = 0;
    };
    Layout layout_for(const std::string& name, const ops::WeightFormat& fmt, uint64_t rows,
                      uint64_t cols) const;
    // The pieces upload_repacked reserves for it, in its order (`layer`: whose weights, -1 none).
    void add_pieces(const std::string& name, const ops::WeightFormat& fmt, uint64_t rows, uint64_t cols,
                    int32_t layer, std::vector<WeightPiece>& out) const;
    // Every weight's pieces, the matrices stacked and interleaved as the constructor uploads
    // them, placed in slabs (placement_) before anything is uploaded; returns the slabs' bytes,
    // what the memory plan counts. Refuses a missing or misshapen tensor, an unsupported type or a
    // piece past the device's largest allocation as the upload would.
    uint64_t plan_weights(const GgufFile& gguf, const ModelInfo& m);
    // The format a tensor is uploaded in (ops::weight_format_for_data), decided once per load.
    const ops::WeightFormat& format_of(const GgufFile& gguf, const GgufTensorInfo& t,
                                       const std::string& name);
    const GgufTensorInfo& checked_tensor(const GgufFile& gguf, const std::string& name, uint64_t rows,
                                         uint64_t cols);
    // The next piece's room in its weight slab (where placement_ put it), and where to write it
    // directly when the slab is mapped and coherent (nullptr: write through place() /
    // Context::upload).
    // The matmul layout: the device's own, or a GPU's for tests (ModelLimits::gpu_layouts).
    ops::MatmulSplit matmul_split() const {
        return limits_.gpu_layouts ? ops::MatmulSplit::SplitK : ops::MatmulSplit::ForDevice;
    }
    std::pair<vk::BufferRange, uint8_t*> reserve(uint64_t bytes);
    // The load's repack buffer, sized for rows x cols of fmt (see scratch_).
    ops::Repacked& scratch(const ops::WeightFormat& fmt, uint64_t rows, uint64_t cols);
    vk::BufferRange place(const void* data, uint64_t bytes);
    void build_linear(std::vector<ops::MatmulOp>& ops, std::vector<uint32_t>& offsets,
                      const std::vector<const ops::DeviceWeight*>& weights, ops::MatmulInput input,
                      vk::BufferRange x, vk::BufferRange y, vk::BufferRange norm,
                      const ops::RopeKvEpilogue* rope_kv = nullptr, bool swiglu = false, bool gelu = false);
    // Two tensors of the same type with rows interleaved (row 2i = first's row i, 2i + 1 = second's);
    // nullptr when their types differ.
    const ops::DeviceWeight* upload_interleaved(const GgufFile& gguf, const std::string& first,
                                                const std::string& second, uint64_t rows, uint64_t cols);

    vk::Context& ctx_;
    ModelInfo info_;
    ModelLimits limits_;
    ops::Repacked scratch_;  // reused by every matrix of the load, released at its end
    std::map<std::string, const ops::WeightFormat*> formats_;  // format_of's decisions, during the load
    std::deque<vk::Buffer> slabs_;  // deque: BufferRanges point at slabs, so they must never move
    WeightPlacement placement_;     // plan_weights' placement of every piece
    size_t next_piece_ = 0;         // the piece reserve() places next
    std::deque<ops::DeviceWeight> weights_;
    uint64_t weight_bytes_ = 0, kv_bytes_ = 0, matmul_bytes_ = 0, planned_weight_bytes_ = 0;
    std::map<uint32_t, uint64_t> matmul_bytes_by_layout_;
    // Weight bytes per step of each profile label: a step on the separate kernels, a fused step.
    std::array<uint64_t, kProfileLabels> label_bytes_{}, fused_label_bytes_{};
    std::array<uint64_t, kProfileLabels> inside_fused_bytes_{};  // of the fused layers, per op family
    uint32_t qkv_width_ = 0;
    // Activations: one arena (the fused decode layer reads them all through one view), each at
    // an aligned offset. Step inputs and outputs in buffers of their own.
    vk::Buffer act_;
    vk::BufferRange x_, qkv_, attn_, gate_up_, post_;  // post_: ModelInfo::post_norms only
    // rope_local_: the local (sliding-window) layers' RoPE table where it differs (Gemma 3).
    vk::Buffer logits_, tokens_, tok_info_, tables_, rowmap_, capture_, rope_, rope_local_, dummy_;
    // The sliding-window layers' step inputs when they have a pool of their own (kv_blocks_local).
    vk::Buffer tok_info_local_, tables_local_;
    // Fused decode: counters (sync_[0]: a wait gave up; then per layer and op, items claimed and
    // finished; see shaders/decode_layer.comp), zeroed by the host before each fused step.
    vk::Buffer sync_;
    // Runs of consecutive fused layers, one dispatch each: all of a model's layers where their
    // weights share a slab and their caches a KV buffer (ops::DecodeLayerOp::joins).
    std::vector<ops::DecodeLayerOp> fused_runs_;
    // The KV caches: each buffer holds the K (or V) caches of consecutive layers, as many as one
    // storage-buffer view reaches, so that a run of fused layers reads all of its own through one.
    std::vector<vk::Buffer> kv_buffers_;
    VkDeviceSize sync_counter_bytes_ = 0;  // the counters; the clock events follow (clock_base_, in uints)
    uint32_t clock_base_ = 0, fused_groups_ = 1;
    void fused_op_times(StepProfile& prof, uint64_t kv_read) const;
    bool fused_ok_ = false;
    std::string fused_why_;
    uint32_t fused_fallbacks_ = 0, fused_fallbacks_in_a_row_ = 0, fused_dispatches_ = 0;
    static constexpr uint32_t kFusedFallbackLimit = 3;
    bool step_fused_ = false;  // the recorded step (step_cmd_) is fused
    const ops::DeviceWeight *embed_ = nullptr, *out_norm_ = nullptr, *lm_head_ = nullptr;
    ops::EmbedOp embed_op_;
    std::vector<ops::MatmulOp> lm_head_op_;
    std::vector<Layer> layers_;
    uint32_t dispatches_ = 0;
    // The last step recorded for resubmission (any step without profiling or attention capture):
    // its command buffer depends only on the step's token and logit-row counts.
    VkCommandBuffer step_cmd_ = VK_NULL_HANDLE;
    bool step_recorded_ = false;
    uint32_t step_tokens_ = 0, step_logit_rows_ = 0;
    uint32_t step_sequences_ = 0;  // the recorded step's sequences (attention's tiled choice)
};

}  // namespace lantern::model
