#include "ops/qk_norm_rope.h"

#include <cmath>
#include <string>

#include "lantern/error.h"

namespace lantern::ops {

namespace {
struct Push {
    uint32_t T, n_head, n_kv, hd, n_rot, block, qkv_stride;
    float eps;
};
constexpr uint32_t kGroup = 64;  // local_size_x in the shader
}  // namespace

QkNormRopeOp::QkNormRopeOp(vk::Context& ctx, const AttentionShape& shape, float eps, vk::BufferRange qkv,
                           vk::BufferRange tok_info, vk::BufferRange rope, vk::BufferRange norm,
                           vk::BufferRange k_cache, vk::BufferRange v_cache)
    : ctx_(&ctx), shape_(shape), eps_(eps) {
    if (shape.n_head == 0 || shape.n_kv == 0 || shape.head_dim % 2 != 0 || shape.n_rot % 2 != 0 ||
        shape.n_rot > shape.head_dim || shape.block == 0 ||
        shape.qkv_stride < (shape.n_head + 2 * shape.n_kv) * shape.head_dim)
        throw Error(ErrorCode::Internal, "Q/K norm + RoPE: heads of " + std::to_string(shape.head_dim) +
                                             " with " + std::to_string(shape.n_rot) +
                                             " rotated do not fit the op");
    using vk::BindingKind;
    kernel_ =
        &ctx.kernel(shape.kv_f16 ? shaders::ShaderId::qk_norm_rope_f16 : shaders::ShaderId::qk_norm_rope_f32,
                    {BindingKind::Storage, BindingKind::TexelUint4, BindingKind::TexelFloat,
                     BindingKind::TexelFloat, BindingKind::Storage, BindingKind::Storage},
                    sizeof(Push), {});
    vk::BufferRange ranges[] = {qkv, tok_info, rope, norm, k_cache, v_cache};
    set_ = ctx.make_set(*kernel_, ranges);
}

void QkNormRopeOp::record(VkCommandBuffer cmd, uint32_t tokens) const {
    const auto& s = shape_;
    Push p{tokens, s.n_head, s.n_kv, s.head_dim, s.n_rot, s.block, s.qkv_stride, eps_};
    const uint32_t items = tokens * (s.n_head + 2 * s.n_kv);
    ctx_->dispatch(cmd, *kernel_, set_, &p, (items + kGroup - 1) / kGroup);
}

void reference_qk_norm(const AttentionShape& shape, std::span<float> qkv, size_t tokens,
                       std::span<const float> q_norm, std::span<const float> k_norm, float eps) {
    const uint32_t hd = shape.head_dim;
    for (size_t t = 0; t < tokens; ++t)
        for (uint32_t h = 0; h < shape.n_head + shape.n_kv; ++h) {
            float* x = qkv.data() + t * shape.qkv_stride + static_cast<size_t>(h) * hd;
            const float* w = h < shape.n_head ? q_norm.data() : k_norm.data();
            double ss = 0;
            for (uint32_t d = 0; d < hd; ++d) ss += static_cast<double>(x[d]) * x[d];
            const double scale = 1.0 / std::sqrt(ss / hd + eps);
            for (uint32_t d = 0; d < hd; ++d) x[d] = static_cast<float>(x[d] * scale * w[d]);
        }
}

}  // namespace lantern::ops
