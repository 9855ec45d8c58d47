#include "ops/norm_add.h"

#include <cmath>
#include <string>

#include "lantern/error.h"

namespace lantern::ops {

namespace {
struct Push {
    uint32_t dim;
    float eps;
};
}  // namespace

NormAddOp::NormAddOp(vk::Context& ctx, uint32_t dim, float eps, vk::BufferRange x, vk::BufferRange y,
                     vk::BufferRange norm_weight)
    : ctx_(&ctx), dim_(dim), eps_(eps) {
    if (dim == 0) throw Error(ErrorCode::Internal, "a post-norm over rows of 0 values");
    using vk::BindingKind;
    kernel_ =
        &ctx.kernel(shaders::ShaderId::norm_add,
                    {BindingKind::Storage, BindingKind::Storage, BindingKind::TexelFloat}, sizeof(Push), {});
    vk::BufferRange ranges[] = {x, y, norm_weight};
    set_ = ctx.make_set(*kernel_, ranges);
}

void NormAddOp::record(VkCommandBuffer cmd, uint32_t tokens) const {
    Push p{dim_, eps_};
    ctx_->dispatch(cmd, *kernel_, set_, &p, tokens);
}

void reference_norm_add(std::span<float> x, std::span<const float> y, std::span<const float> w, uint32_t dim,
                        uint32_t tokens, float eps) {
    for (uint32_t t = 0; t < tokens; ++t) {
        const float* yr = y.data() + static_cast<size_t>(t) * dim;
        double ss = 0;
        for (uint32_t i = 0; i < dim; ++i) ss += static_cast<double>(yr[i]) * yr[i];
        const double scale = 1.0 / std::sqrt(ss / dim + eps);
        for (uint32_t i = 0; i < dim; ++i)
            x[static_cast<size_t>(t) * dim + i] += static_cast<float>(yr[i] * scale * w[i]);
    }
}

}  // namespace lantern::ops
