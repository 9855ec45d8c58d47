#include "ops/embed.h"

#include <algorithm>

#include "lantern/error.h"

namespace lantern::ops {

namespace {
struct Push {
    uint32_t K, T, vocab, row_units, tile_rows;
};
constexpr uint32_t kGroup = 64;
}  // namespace

EmbedOp::EmbedOp(vk::Context& ctx, const DeviceWeight& table, vk::BufferRange tokens, vk::BufferRange out)
    : ctx_(&ctx), w_(&table) {
    // The lookup reads single rows anywhere in the table, so it must be one binding; a table too
    // large for one binding is rejected at load with a clear message (see LlamaModel).
    if (table.parts.size() != 1)
        throw Error(ErrorCode::ModelTooLarge,
                    "the token embedding table does not fit one texel-buffer binding");
    kernel_ = &ctx.kernel(table.format->embed,
                          {vk::BindingKind::TexelUint4, vk::BindingKind::TexelFloat, vk::BindingKind::Storage,
                           vk::BindingKind::Storage},
                          sizeof(Push), {kGroup});
    const auto& part = table.parts[0];
    vk::BufferRange scales = part.scales.buffer ? part.scales : part.values;
    vk::BufferRange ranges[] = {part.values, scales, tokens, out};
    set_ = ctx.make_set(*kernel_, ranges);
}

void EmbedOp::record(VkCommandBuffer cmd, uint32_t tokens) const {
    Push p{static_cast<uint32_t>(w_->cols), tokens, static_cast<uint32_t>(w_->rows),
           static_cast<uint32_t>(w_->row_units), w_->tile_rows};
    ctx_->dispatch(cmd, *kernel_, set_, &p, static_cast<uint32_t>((w_->row_units + kGroup - 1) / kGroup),
                   tokens);
}

void reference_embed(std::span<const float> table, uint32_t dim, std::span<const int32_t> tokens,
                     float* out) {
    for (size_t t = 0; t < tokens.size(); ++t)
        std::copy_n(table.data() + static_cast<size_t>(tokens[t]) * dim, dim, out + t * dim);
}

}  // namespace lantern::ops
