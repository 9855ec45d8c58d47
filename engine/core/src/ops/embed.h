// Embedding lookup: x[t] = dequant(token_embd[token[t]]) * scale (1, or Gemma's sqrt(width)). Kernel:
// shaders/embed.comp. A table split in row parts (larger than one texel view: Phi-4-mini's 200k x 3072, tied
// with the LM head) takes one dispatch per part, each writing the tokens whose rows it holds. Token ids are
// validated by the caller; an id past the table reads its last row.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "ops/device_weight.h"

namespace lantern::ops {

class EmbedOp {
public:
    EmbedOp() = default;
    EmbedOp(vk::Context& ctx, const DeviceWeight& table, vk::BufferRange tokens, vk::BufferRange out,
            float scale = 1.0f);
    void record(VkCommandBuffer cmd, uint32_t tokens) const;

private:
    vk::Context* ctx_ = nullptr;
    const DeviceWeight* w_ = nullptr;
    const vk::Kernel* kernel_ = nullptr;
    float scale_ = 1.0f;
    std::vector<VkDescriptorSet> sets_;  // one per part of the table
};

// CPU reference: `table` is vocab x dim floats.
void reference_embed(std::span<const float> table, uint32_t dim, std::span<const int32_t> tokens, float* out,
                     float scale = 1.0f);

}  // namespace lantern::ops
