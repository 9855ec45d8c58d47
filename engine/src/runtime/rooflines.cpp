#include "lantern/rooflines.h"

#include <algorithm>
#include <chrono>

#include "vulkan/context.h"

namespace lantern {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }
}  // namespace

Rooflines measure_rooflines(const std::string& selector, double budget) {
    vk::ContextOptions o;
    o.device_selector = selector;
    vk::Context ctx(o);
    Rooflines r;
    r.device = ctx.info().name;

    // Read roofline: a buffer well beyond any cache (256 MiB, capped by the binding ranges).
    uint64_t bytes = std::min<uint64_t>({256ull << 20, ctx.limits().maxStorageBufferRange,
                                         uint64_t(ctx.limits().maxTexelBufferElements) * 16}) &
                     ~uint64_t(15);
    // A CPU driver runs one workgroup per thread at a time: a few hundred keep every thread busy.
    // A GPU needs enough lanes in flight to cover its memory latency on every multiprocessor
    // (an H200 holds ~270k resident lanes): 8192 workgroups of 64.
    const bool cpu = ctx.info().type == DeviceType::Cpu;
    const uint32_t spread_groups = cpu ? 256 : 8192, uniform_groups = cpu ? 64 : 2048;
    auto src = ctx.create_buffer(bytes, vk::MemoryUse::DeviceLocal);
    auto dst = ctx.create_buffer(uint64_t(spread_groups) * 64 * 4, vk::MemoryUse::DeviceLocal);
    vk::BufferRange rr[] = {{&src}, {&dst}};
    uint32_t n_vec4 = static_cast<uint32_t>(bytes / 16);
    // Fill once so the pages exist (a never-written buffer may read as shared zero pages).
    {
        std::vector<uint8_t> ones(1 << 20, 1);
        for (uint64_t off = 0; off < bytes; off += ones.size())
            ctx.upload(src, off, ones.data(), std::min<uint64_t>(ones.size(), bytes - off));
    }
    // Access patterns of bench_read.comp: storage buffer modes 0-2, texel modes 0, 1 and 3, then
    // image (storage texel buffer) mode 3.
    // The roofline is the best of them, and each is reported so kernels can be designed for the
    // pattern this device does best. Workgroup-contiguous runs one-subgroup workgroups on CPU
    // drivers, as their matmuls do: on lavapipe it is the best texel pattern by far (37-43 GB/s
    // here against 25-30 for lane-contiguous, which was the roofline until it was measured), and
    // read through a storage texel buffer it is faster still (46-50 GB/s).
    auto t_all = Clock::now();
    for (int pattern = 0; pattern < Rooflines::kReadPatterns; ++pattern) {
        const bool image = pattern == 6, texel = pattern >= 3 && !image;
        const uint32_t mode = image || pattern == 5 ? 3 : texel ? pattern - 3 : pattern;
        const uint32_t lanes = mode == 3 && cpu ? ctx.subgroup_size() : 64;
        const auto& read =
            image   ? ctx.kernel(shaders::ShaderId::bench_read_image, {vk::BindingKind::ImageFloat4, vk::BindingKind::Storage},
                                 4, {lanes, mode})
            : texel ? ctx.kernel(shaders::ShaderId::bench_read_texel, {vk::BindingKind::TexelFloat4, vk::BindingKind::Storage},
                                 4, {lanes, mode})
                    : ctx.kernel(shaders::ShaderId::bench_read, 2, 4, {lanes, mode});
        auto set = ctx.make_set(read, rr);
        uint32_t groups = mode == 2 ? uniform_groups : spread_groups;
        // Timed on the device's clock where it has one: on a GPU the read takes ~60 us, the same
        // order as a submit + fence wait, which a host clock would count as read time.
        const bool gpu_clock = ctx.timestamps_supported() && !cpu;
        auto run_read = [&]() {
            VkCommandBuffer cmd = ctx.begin();
            if (gpu_clock) ctx.begin_timing(cmd);
            ctx.dispatch(cmd, read, set, &n_vec4, groups);
            if (gpu_clock) ctx.mark(cmd, 0);
            auto t = Clock::now();
            ctx.submit_and_wait(cmd);
            if (!gpu_clock) return seconds(t);
            double ns = 0;
            for (const auto& [label, dt] : ctx.read_timing()) ns += dt;
            return ns * 1e-9;
        };
        run_read();  // warm-up (and shader compile)
        double best = 1e30;
        t_all = Clock::now();
        do {
            best = std::min(best, run_read());
        } while (seconds(t_all) < budget / Rooflines::kReadPatterns);
        // Mode 2 reads each byte once per workgroup (all lanes share each load).
        r.read_gb_per_s_by_pattern[pattern] = bytes / best / 1e9;
        r.read_gb_per_s = std::max(r.read_gb_per_s, r.read_gb_per_s_by_pattern[pattern]);
    }

    // Dispatch overhead: a chain of N tiny dispatches, with and without barriers.
    const auto& empty = ctx.kernel(shaders::ShaderId::bench_empty, 1, 0, {});
    vk::BufferRange er[] = {{&dst}};
    auto eset = ctx.make_set(empty, er);
    auto chain = [&](uint32_t n, bool barriers) {
        VkCommandBuffer cmd = ctx.begin();
        for (uint32_t i = 0; i < n; ++i) {
            ctx.dispatch(cmd, empty, eset, nullptr, 1);
            if (barriers) ctx.barrier(cmd);
        }
        auto t = Clock::now();
        ctx.submit_and_wait(cmd);
        return seconds(t);
    };
    chain(8, true);
    const uint32_t N = 200;
    double with = 1e30, without = 1e30, empty_submit = 1e30;
    t_all = Clock::now();
    do {
        with = std::min(with, chain(N, true));
        without = std::min(without, chain(N, false));
        empty_submit = std::min(empty_submit, chain(0, false));
    } while (seconds(t_all) < budget);
    r.submit_wait_us = empty_submit * 1e6;
    r.dispatch_us = (with - empty_submit) / N * 1e6;
    r.dispatch_no_barrier_us = (without - empty_submit) / N * 1e6;
    ctx.destroy(src);
    ctx.destroy(dst);
    return r;
}

}  // namespace lantern
