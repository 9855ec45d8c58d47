// The op tests' shared helpers (see op_check.h): NMSE comparison, guard-word buffers, test weights
// in every type and device layout, and a plain matmul on the device and its CPU reference.
#include "op_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <QtGlobal>

#include "test_support.h"

namespace lantern::test {

uint32_t whole_blocks(uint32_t type, uint32_t blocks) {
    return blocks * ops::find_weight_format(type)->block_elements;
}

float bits_to_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

Stats compare(std::span<const float> got, std::span<const float> want) {
    Stats s;
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i])) s.finite = false;
        double d = static_cast<double>(got[i]) - want[i];
        num += d * d;
        den += static_cast<double>(want[i]) * want[i];
        s.max_abs = std::max(s.max_abs, std::fabs(d));
    }
    s.nmse = den > 0 ? num / den : num;
    return s;
}

std::string check(const char* what, const Stats& s, double bound) {
    if (!s.finite) return std::string(what) + ": output holds NaN or Inf";
    if (!(s.nmse <= bound)) {
        char buf[160];
        std::snprintf(buf, sizeof buf, ": NMSE %.3g > %.3g (max |diff| %.3g)", s.nmse, bound, s.max_abs);
        return what + std::string(buf);
    }
    return {};
}

Guarded::Guarded(vk::Context& ctx, size_t words) : ctx_(ctx), words_(words) {
    front_ = std::max<size_t>(ctx.limits().minStorageBufferOffsetAlignment, 64) / 4;
    buf_ = ctx.create_buffer((front_ + words_ + kBack) * 4, vk::MemoryUse::DeviceLocal);
    std::vector<uint32_t> fill(front_ + words_ + kBack, kSentinel);
    ctx.upload(buf_, 0, fill.data(), fill.size() * 4);
}
Guarded::~Guarded() {
    ctx_.destroy(buf_);
}

void Guarded::write(const void* data, size_t bytes, size_t word_offset) {
    ctx_.upload(buf_, (front_ + word_offset) * 4, data, bytes);
}
std::vector<uint32_t> Guarded::read_words() {
    std::vector<uint32_t> all(front_ + words_ + kBack);
    ctx_.download(buf_, 0, all.data(), all.size() * 4);
    guards_ok_ = std::all_of(all.begin(), all.begin() + static_cast<ptrdiff_t>(front_),
                             [](uint32_t u) { return u == kSentinel; }) &&
                 std::all_of(all.end() - kBack, all.end(), [](uint32_t u) { return u == kSentinel; });
    return {all.begin() + static_cast<ptrdiff_t>(front_), all.end() - kBack};
}
std::vector<float> Guarded::read_floats() {
    auto w = read_words();
    std::vector<float> f(w.size());
    std::memcpy(f.data(), w.data(), w.size() * 4);
    return f;
}

DeviceBuffer::DeviceBuffer(vk::Context& c, const void* data, size_t bytes) : ctx(c) {
    buf = c.create_buffer(std::max<size_t>(bytes, 16), vk::MemoryUse::DeviceLocal);
    if (bytes) c.upload(buf, 0, data, bytes);
}
DeviceBuffer::~DeviceBuffer() {
    ctx.destroy(buf);
}

std::unique_ptr<TestWeight> make_weight_of(vk::Context& ctx, uint32_t type, uint64_t rows, uint64_t cols,
                                           const std::vector<float>& values,
                                           const std::vector<uint64_t>& part_rows, uint32_t tile_rows,
                                           ops::MatmulSplit split) {
    return make_weight_encoded(ctx, type, rows, cols, ops::quantize(type, values, cols), part_rows, tile_rows,
                               split);
}

std::unique_ptr<TestWeight> make_weight_encoded(vk::Context& ctx, uint32_t type, uint64_t rows, uint64_t cols,
                                                std::vector<uint8_t> encoded,
                                                const std::vector<uint64_t>& part_rows, uint32_t tile_rows,
                                                ops::MatmulSplit split) {
    if (tile_rows == 0) tile_rows = ops::matmul_tile_rows(ctx, rows, split);
    auto w = std::make_unique<TestWeight>();
    w->format = ops::find_weight_format(type);
    w->rows = rows;
    w->cols = cols;
    w->encoded = std::move(encoded);
    w->dequantized = ops::dequantize(type, w->encoded, rows * cols);
    w->device.format = w->format;
    w->device.rows = rows;
    w->device.cols = cols;
    const uint64_t row_bytes = ggml_row_bytes(type, cols);
    std::vector<uint64_t> parts = part_rows.empty() ? std::vector<uint64_t>{rows} : part_rows;
    uint64_t first = 0;
    for (uint64_t n : parts) {
        auto src = std::span<const uint8_t>(w->encoded).subspan(first * row_bytes, n * row_bytes);
        ops::Repacked r =
            ops::tile_rows_of(ops::repack(*w->format, src, n, cols), 0, n, tile_rows, w->format->group_units);
        w->device.row_units = r.row_units;
        w->device.tile_rows = tile_rows;
        ops::DeviceWeight::Part part;
        part.first_row = first;
        part.rows = n;
        w->buffers.push_back(std::make_unique<DeviceBuffer>(ctx, r.values.data(), r.values.size() * 4));
        part.values = w->buffers.back()->range();
        if (!r.scales.empty()) {
            w->buffers.push_back(std::make_unique<DeviceBuffer>(ctx, r.scales.data(), r.scales.size() * 4));
            part.scales = w->buffers.back()->range();
        }
        w->device.parts.push_back(part);
        first += n;
    }
    return w;
}

std::unique_ptr<TestWeight> make_weight(vk::Context& ctx, uint32_t type, uint64_t rows, uint64_t cols,
                                        Rng& rng, const std::vector<uint64_t>& part_rows, uint32_t tile_rows,
                                        ops::MatmulSplit split) {
    return make_weight_of(ctx, type, rows, cols, rng.floats(rows * cols), part_rows, tile_rows, split);
}

std::vector<uint32_t> run_plain_matmul(vk::Context& ctx, const TestWeight& w, const std::vector<float>& x,
                                       uint32_t T, ops::MatmulSplit split) {
    const uint32_t K = static_cast<uint32_t>(w.cols), N = static_cast<uint32_t>(w.rows);
    DeviceBuffer xb(ctx, x.data(), x.size() * 4), unused(ctx, x.data(), 4);
    Guarded yb(ctx, static_cast<size_t>(T) * N);
    ops::MatmulOp op(ctx, w.device, ops::MatmulInput::Plain, xb.range(), yb.range(), unused.range(),
                     unused.range(), {split});
    ops::MatmulShape s;
    s.tokens = T;
    s.x_stride = K;
    s.y_stride = N;
    VkCommandBuffer cmd = ctx.begin();
    op.record(cmd, s);
    ctx.barrier(cmd);
    ctx.submit_and_wait(cmd);
    auto words = yb.read_words();
    if (!yb.guards_ok()) words.clear();
    return words;
}

std::vector<float> reference_plain_matmul(std::span<const float> W, uint32_t rows, uint32_t cols,
                                          const std::vector<float>& x, uint32_t T, uint32_t fixed_point) {
    ops::MatmulShape s;
    s.tokens = T;
    s.x_stride = cols;
    s.y_stride = rows;
    std::vector<float> y(static_cast<size_t>(T) * rows);
    ops::reference_matmul(W, rows, cols, ops::MatmulInput::Plain, x, y, {}, {}, s, fixed_point);
    return y;
}

ops::MatmulSplit other_split_of(const vk::Context& ctx) {
    return ctx.info().type == DeviceType::Cpu ? ops::MatmulSplit::SplitK : ops::MatmulSplit::LanesOwnRows;
}

void log_op_device() {
    auto& ctx = context();
    qInfo("device: %s, subgroup %u, minStorageBufferOffsetAlignment %llu", ctx.info().name.c_str(),
          ctx.subgroup_size(), static_cast<unsigned long long>(ctx.limits().minStorageBufferOffsetAlignment));
}

}  // namespace lantern::test
