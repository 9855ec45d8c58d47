#include "ops/matmul.h"

#include <cmath>

#include "lantern/error.h"

namespace lantern::ops {

namespace {
struct Push {
    uint32_t K, N, T, x_stride, y_stride, y_offset, flags;
    float eps;
    uint32_t row_units;
};
constexpr uint32_t kTokensPerGroup = 8;  // MAX_T in matmul.comp
}  // namespace

MatmulOp::MatmulOp(vk::Context& ctx, const DeviceWeight& w, MatmulInput input, vk::BufferRange x,
                   vk::BufferRange y, vk::BufferRange norm_weight, vk::BufferRange rowmap)
    : ctx_(&ctx), w_(&w) {
    shaders::ShaderId id = input == MatmulInput::Norm   ? w.format->matmul_norm
                           : input == MatmulInput::Silu ? w.format->matmul_silu
                                                        : w.format->matmul;
    // CPU drivers (lavapipe) run a workgroup's lanes as SIMD lanes of one thread, and every
    // per-lane memory access costs a scalar load: there each lane owns a whole row and the input
    // is read by uniform (broadcast) loads. GPUs want coalesced weight reads: lanes split the row.
    lane_per_row_ = ctx.info().type == DeviceType::Cpu;
    const uint32_t cpu = lane_per_row_ ? 1 : 0;
    if (lane_per_row_) {
        // Decode: each lane owns 16 rows, so one (uniform) load of the input serves 16 weight rows.
        // Prefill: each lane owns a token and 16 rows; weights are uniform loads shared by the
        // workgroup's tokens.
        group_ = 8;
        decode_rows_ = 16;
        prefill_rows_ = 16;
        decode_ = &ctx.kernel(id, 6, sizeof(Push), {group_, decode_rows_, 1, cpu, 0});
        prefill_ = &ctx.kernel(id, 6, sizeof(Push), {prefill_group_, prefill_rows_, 1, 0, cpu});
    } else {
        group_ = 64;
        decode_rows_ = prefill_rows_ = 4;
        decode_ = &ctx.kernel(id, 6, sizeof(Push), {group_, decode_rows_, 1, 0, 0});
        prefill_ = &ctx.kernel(id, 6, sizeof(Push), {group_, prefill_rows_, kTokensPerGroup, 0, 0});
    }
    for (const auto& part : w.parts) {
        vk::BufferRange scales = part.scales.buffer ? part.scales : part.values;  // float types: unused
        vk::BufferRange ranges[] = {part.values, scales, x, y, norm_weight, rowmap};
        sets_.push_back(ctx.make_set(*decode_, ranges));
    }
}

void MatmulOp::record(VkCommandBuffer cmd, const MatmulShape& s) const {
    for (size_t i = 0; i < sets_.size(); ++i) {
        const auto& part = w_->parts[i];
        Push p{static_cast<uint32_t>(w_->cols),
               static_cast<uint32_t>(part.rows),
               s.tokens,
               s.x_stride,
               s.y_stride,
               s.y_offset + static_cast<uint32_t>(part.first_row),
               (s.accumulate ? 1u : 0u) | (s.use_rowmap ? 2u : 0u),
               s.eps,
               static_cast<uint32_t>(w_->row_units)};
        const bool one = s.tokens == 1;
        if (s.x_stride % 4 == 0 && w_->cols % 4 == 0) p.flags |= 4u;  // vec4 input loads
        uint32_t gx, gy;
        if (one) {
            uint64_t rows_per_group = decode_rows_ * (lane_per_row_ ? group_ : 1);
            gx = static_cast<uint32_t>((part.rows + rows_per_group - 1) / rows_per_group);
            gy = 1;
        } else {
            gx = static_cast<uint32_t>((part.rows + prefill_rows_ - 1) / prefill_rows_);
            uint32_t tokens_per_group = lane_per_row_ ? prefill_group_ : kTokensPerGroup;
            gy = (s.tokens + tokens_per_group - 1) / tokens_per_group;
        }
        ctx_->dispatch(cmd, one ? *decode_ : *prefill_, sets_[i], &p, gx, gy);
    }
}

void reference_rms_norm(const float* x, const float* w, float* out, uint32_t n, float eps) {
    double ss = 0;
    for (uint32_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    double inv = 1.0 / std::sqrt(ss / n + eps);
    for (uint32_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] * inv * w[i]);
}

void reference_matmul(std::span<const float> W, uint32_t rows, uint32_t cols, MatmulInput input,
                      std::span<const float> x, std::span<float> y, std::span<const float> norm_weight,
                      std::span<const uint32_t> rowmap, const MatmulShape& s) {
    std::vector<float> in(cols);
    for (uint32_t t = 0; t < s.tokens; ++t) {
        uint32_t xr = s.use_rowmap ? rowmap[t] : t;
        const float* xp = x.data() + static_cast<size_t>(xr) * s.x_stride;
        switch (input) {
            case MatmulInput::Plain:
                for (uint32_t k = 0; k < cols; ++k) in[k] = xp[k];
                break;
            case MatmulInput::Norm: reference_rms_norm(xp, norm_weight.data(), in.data(), cols, s.eps); break;
            case MatmulInput::Silu:
                for (uint32_t k = 0; k < cols; ++k) {
                    double g = xp[k];
                    in[k] = static_cast<float>(g / (1.0 + std::exp(-g)) * xp[cols + k]);
                }
                break;
        }
        for (uint32_t n = 0; n < rows; ++n) {
            double acc = 0;
            const float* wr = W.data() + static_cast<size_t>(n) * cols;
            for (uint32_t k = 0; k < cols; ++k) acc += static_cast<double>(wr[k]) * in[k];
            float& out = y[static_cast<size_t>(t) * s.y_stride + s.y_offset + n];
            out = s.accumulate ? out + static_cast<float>(acc) : static_cast<float>(acc);
        }
    }
}

}  // namespace lantern::ops
