// Embedding lookup: x[t] = dequant(token_embd[token[t]]). Kernel: shaders/embed.comp.
#pragma once
#include <cstdint>
#include <span>

#include "ops/device_weight.h"

namespace lantern::ops {

class EmbedOp {
public:
    EmbedOp() = default;
    EmbedOp(vk::Context& ctx, const DeviceWeight& table, vk::BufferRange tokens, vk::BufferRange out);
    void record(VkCommandBuffer cmd, uint32_t tokens) const;

private:
    vk::Context* ctx_ = nullptr;
    const DeviceWeight* w_ = nullptr;
    const vk::Kernel* kernel_ = nullptr;
    VkDescriptorSet set_ = VK_NULL_HANDLE;
};

// CPU reference: `table` is vocab x dim floats.
void reference_embed(std::span<const float> table, uint32_t dim, std::span<const int32_t> tokens, float* out);

}  // namespace lantern::ops
