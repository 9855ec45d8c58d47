// Post-norm residual add: x[t] += RMSNorm(y[t]) * w, for a step's tokens (Gemma 2 and 3 normalise
// each attention and FFN output before adding it to the residual stream: post_attention_norm,
// post_ffw_norm). Kernel: shaders/norm_add.comp, one workgroup per token. x and y hold `dim`
// floats per token; w is the F32 norm weight. Recorded on the model's thread like every op.
#pragma once
#include <cstdint>
#include <span>

#include "vulkan/context.h"

namespace lantern::ops {

class NormAddOp {
public:
    NormAddOp() = default;
    NormAddOp(vk::Context& ctx, uint32_t dim, float eps, vk::BufferRange x, vk::BufferRange y,
              vk::BufferRange norm_weight);
    void record(VkCommandBuffer cmd, uint32_t tokens) const;
    bool valid() const { return kernel_ != nullptr; }

private:
    vk::Context* ctx_ = nullptr;
    const vk::Kernel* kernel_ = nullptr;
    VkDescriptorSet set_ = VK_NULL_HANDLE;
    uint32_t dim_ = 0;
    float eps_ = 0;
};

// CPU reference (double sums): x[t] += y[t] * rsqrt(mean(y[t]^2) + eps) * w.
void reference_norm_add(std::span<float> x, std::span<const float> y, std::span<const float> w, uint32_t dim,
                        uint32_t tokens, float eps);

}  // namespace lantern::ops
