#include "ops/embed.h"

#include <algorithm>

#include "lantern/error.h"

namespace lantern::ops {

namespace {
struct Push {
    uint32_t K, T, rows, row_units, tile_rows, first_row, vocab;
    float scale;
};
constexpr uint32_t kGroup = 64;
}  // namespace

EmbedOp::EmbedOp(vk::Context& ctx, const DeviceWeight& table, vk::BufferRange tokens, vk::BufferRange out,
                 float scale)
    : ctx_(&ctx), w_(&table), scale_(scale) {
    if (table.parts.empty()) throw Error(ErrorCode::Internal, "an embedding table without rows");
    kernel_ = &ctx.kernel(table.format->embed,
                          {vk::BindingKind::TexelUint4, vk::BindingKind::TexelFloat, vk::BindingKind::Storage,
                           vk::BindingKind::Storage},
                          sizeof(Push), {kGroup});
    for (const auto& part : table.parts) {
        vk::BufferRange scales = part.scales.buffer ? part.scales : part.values;
        vk::BufferRange ranges[] = {part.values, scales, tokens, out};
        sets_.push_back(ctx.make_set(*kernel_, ranges));
    }
}

void EmbedOp::record(VkCommandBuffer cmd, uint32_t tokens) const {
    for (size_t i = 0; i < sets_.size(); ++i) {
        const auto& part = w_->parts[i];
        Push p{static_cast<uint32_t>(w_->cols),      tokens,        static_cast<uint32_t>(part.rows),
               static_cast<uint32_t>(w_->row_units), w_->tile_rows, static_cast<uint32_t>(part.first_row),
               static_cast<uint32_t>(w_->rows),      scale_};
        ctx_->dispatch(cmd, *kernel_, sets_[i], &p,
                       static_cast<uint32_t>((w_->row_units + kGroup - 1) / kGroup), tokens);
    }
}

void reference_embed(std::span<const float> table, uint32_t dim, std::span<const int32_t> tokens, float* out,
                     float scale) {
    for (size_t t = 0; t < tokens.size(); ++t)
        for (uint32_t k = 0; k < dim; ++k)
            out[t * dim + k] = table[static_cast<size_t>(tokens[t]) * dim + k] * scale;
}

}  // namespace lantern::ops
