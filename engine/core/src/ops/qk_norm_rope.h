// Per-head Q/K RMSNorm, RoPE and the KV-cache store for models that normalise each head of Q and
// K before rotating it (Qwen3), run after a Q/K/V matmul that stored its rows plainly: the
// matmul's own RoPE + KV-store epilogue finishes rows in pairs and cannot see a whole head.
// Kernel: shaders/qk_norm_rope.comp. Recorded on the model's command buffer; errors at
// construction (Error(Internal) for shapes the kernel does not take).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "ops/attention.h"

namespace lantern::ops {

class QkNormRopeOp {
public:
    QkNormRopeOp() = default;
    // `qkv`: rows of shape.qkv_stride floats, [Q | K | V] heads of shape.head_dim; `norm`: the
    // layer's Q norm then K norm weights, head_dim F32 each; `tok_info`, `rope`: as the attention
    // op reads them; `k_cache`, `v_cache`: the layer's paged caches.
    QkNormRopeOp(vk::Context& ctx, const AttentionShape& shape, float eps, vk::BufferRange qkv,
                 vk::BufferRange tok_info, vk::BufferRange rope, vk::BufferRange norm,
                 vk::BufferRange k_cache, vk::BufferRange v_cache);
    void record(VkCommandBuffer cmd, uint32_t tokens) const;

private:
    vk::Context* ctx_ = nullptr;
    AttentionShape shape_;
    float eps_ = 1e-6f;
    const vk::Kernel* kernel_ = nullptr;
    VkDescriptorSet set_ = VK_NULL_HANDLE;
};

// CPU reference, in place on `qkv` (tokens rows of shape.qkv_stride): each Q and K head becomes
// x * rsqrt(mean(x^2) + eps) * w, w = q_norm or k_norm (head_dim values each). Run before
// reference_rope_store, which then rotates and stores as for any model.
void reference_qk_norm(const AttentionShape& shape, std::span<float> qkv, size_t tokens,
                       std::span<const float> q_norm, std::span<const float> k_norm, float eps);

}  // namespace lantern::ops
