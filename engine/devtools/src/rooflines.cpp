#include "lantern/rooflines.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "ops/weight_format.h"
#include "vulkan/context.h"

namespace lantern {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
}
}  // namespace

namespace {
// k^n mod 2^32: what a chain of n multiplies by k leaves in a 32-bit register starting from 1.
uint32_t power_mod_2_32(uint32_t k, uint64_t n) {
    uint32_t result = 1;
    for (; n; n >>= 1, k *= k)
        if (n & 1) result *= k;
    return result;
}
}  // namespace

double host_clock_ghz() {
#if defined(__x86_64__)
    // A chain of dependent 32-bit multiplies, eight per iteration, divided by the multiply's
    // latency of 3 cycles (decision 0001). Adds are not a clock: recent cores execute immediate
    // adds at rename, several per cycle. The counter and branch run beside the chain on other
    // ports; one asm block keeps compiler-made moves out of it. Best of three runs, against a
    // preempted one; a run whose product is wrong is not counted.
    constexpr double kImulLatencyCycles = 3;
    constexpr uint32_t kFactor = 0x9E3779B1u;  // odd, so the product never collapses to 0
    constexpr uint64_t kIterations = 2'000'000;
    const uint32_t expected = power_mod_2_32(kFactor, 8 * kIterations);
    double best = 0;
    for (int run = 0; run < 3; ++run) {
        uint32_t x = 1, k = kFactor;
        uint64_t n = kIterations;
        const auto t = Clock::now();
        asm volatile(
            "1:\n\t"
            "imull %2, %0\n\timull %2, %0\n\timull %2, %0\n\timull %2, %0\n\t"
            "imull %2, %0\n\timull %2, %0\n\timull %2, %0\n\timull %2, %0\n\t"
            "subq $1, %1\n\tjnz 1b"
            : "+r"(x), "+r"(n)
            : "r"(k)
            : "cc");
        const double s = seconds(t);
        if (x == expected && s > 0)
            best = std::max(best, static_cast<double>(8 * kIterations) * kImulLatencyCycles / s / 1e9);
    }
    return best;
#else
    return 0;
#endif
}

Rooflines measure_rooflines(const std::string& selector, double budget,
                            std::function<void(const std::string&)> on_validation_message) {
    vk::ContextOptions o;
    o.device_selector = selector;
    o.on_validation_message = std::move(on_validation_message);
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
    auto sample_clock = [&] {
        if (!cpu) return;
        const double ghz = host_clock_ghz();
        if (ghz <= 0) return;
        r.host_clock_ghz_min = r.host_clock_ghz_min > 0 ? std::min(r.host_clock_ghz_min, ghz) : ghz;
        r.host_clock_ghz_max = std::max(r.host_clock_ghz_max, ghz);
    };
    sample_clock();
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
    // pattern this device does best. On CPU drivers the lane-contiguous and workgroup-contiguous
    // patterns run one-subgroup workgroups, as their matmuls do (lavapipe runs the subgroups of a
    // wider workgroup one after another).
    // Timed on the device's clock where it has one: on a GPU the read takes ~60 us, the same order
    // as a submit + fence wait, which a host clock would count as read time.
    const bool gpu_clock = ctx.timestamps_supported() && !cpu;
    // The best time of one dispatch, run again and again for `seconds`.
    auto best_time = [&](const vk::Kernel& k, VkDescriptorSet set, const void* push, uint32_t groups,
                         double seconds_) {
        auto run = [&]() {
            VkCommandBuffer cmd = ctx.begin();
            if (gpu_clock) ctx.begin_timing(cmd);
            ctx.dispatch(cmd, k, set, push, groups);
            if (gpu_clock) ctx.mark(cmd, 0);
            auto t = Clock::now();
            ctx.submit_and_wait(cmd);
            if (!gpu_clock) return seconds(t);
            double ns = 0;
            for (const auto& [label, dt] : ctx.read_timing()) ns += dt;
            return ns * 1e-9;
        };
        double best = 1e30;
        const auto t0 = Clock::now();
        do {
            best = std::min(best, run());
        } while (seconds(t0) < seconds_);
        return best;
    };
    // Every probe of a family is measured in kRounds interleaved rounds and keeps its best time.
    // Probed one after the other, a dip of the host (a VM's noisy neighbour, a clock ramp) that
    // lasted a second took the probes that ran during it down by up to 2x and left the rest, so
    // the layouts' arithmetic rooflines disagreed from run to run by more than the layouts differ
    // (stop 36, 2-core EPYC VM: f16 14.2, 27.4 and 20.2 GB/s in three runs a minute apart, and a
    // decode at "135 % of its arithmetic roofline"); interleaved, a dip costs each probe one round.
    constexpr int kRounds = 4;
    struct Probe {
        const vk::Kernel* kernel;
        VkDescriptorSet set;
        uint32_t push[2];
        uint32_t groups;
        double best = 1e30;
    };
    auto measure_all = [&](std::vector<Probe>& probes, double seconds_) {
        for (Probe& p : probes) best_time(*p.kernel, p.set, p.push, p.groups, 0);  // warm-up (and compile)
        for (int round = 0; round < kRounds; ++round)
            for (Probe& p : probes)
                p.best = std::min(p.best, best_time(*p.kernel, p.set, p.push, p.groups,
                                                    seconds_ / (kRounds * double(probes.size()))));
    };
    std::vector<Probe> reads;
    for (int pattern = 0; pattern < Rooflines::kReadPatterns; ++pattern) {
        const bool image = pattern == 6, texel = pattern >= 3 && !image;
        const uint32_t mode = image || pattern == 5 ? 3 : texel ? pattern - 3 : pattern;
        const uint32_t lanes = (mode == 1 || mode == 3) && cpu ? ctx.subgroup_size() : 64;
        const auto& read =
            image   ? ctx.kernel(shaders::ShaderId::bench_read_image,
                                 {vk::BindingKind::ImageFloat4, vk::BindingKind::Storage}, 4, {lanes, mode})
            : texel ? ctx.kernel(shaders::ShaderId::bench_read_texel,
                                 {vk::BindingKind::TexelFloat4, vk::BindingKind::Storage}, 4, {lanes, mode})
                    : ctx.kernel(shaders::ShaderId::bench_read, 2, 4, {lanes, mode});
        reads.push_back(
            {&read, ctx.make_set(read, rr), {n_vec4, 0}, mode == 2 ? uniform_groups : spread_groups});
    }
    measure_all(reads, budget);
    for (int pattern = 0; pattern < Rooflines::kReadPatterns; ++pattern) {
        // Mode 2 reads each byte once per workgroup (all lanes share each load).
        r.read_gb_per_s_by_pattern[pattern] = bytes / reads[pattern].best / 1e9;
        r.read_gb_per_s = std::max(r.read_gb_per_s, r.read_gb_per_s_by_pattern[pattern]);
    }

    // Arithmetic rooflines: each weight layout's decode arithmetic over the same buffer
    // (bench_dot.comp). CPU drivers: one-subgroup workgroups, each lane its own stream, as decode
    // runs there; GPUs: grid-stride, so that neighbouring lanes' loads coalesce.
    const uint32_t dot_lanes = cpu ? ctx.subgroup_size() : 64, dot_groups = spread_groups;
    std::vector<Probe> dots;
    vk::BufferRange dr[] = {{&src}, {&src}, {&dst}};
    for (int t = 0; t < Rooflines::kDotTypes; ++t) {
        const auto& dot =
            ctx.kernel(shaders::ShaderId::bench_dot,
                       {vk::BindingKind::TexelUint4, vk::BindingKind::TexelFloat, vk::BindingKind::Storage},
                       8, {dot_lanes, uint32_t(Rooflines::kDotTypeNumbers[t]), cpu ? 0u : 1u});
        dots.push_back({&dot, ctx.make_set(dot, dr), {n_vec4, 0}, dot_groups});
    }
    measure_all(dots, budget);
    for (int t = 0; t < Rooflines::kDotTypes; ++t) {
        // Each lane reads whole blocks (bench_dot.comp): the scale texel (and the mins' texel)
        // and 4 rows' units of one group.
        const ops::WeightFormat* f = ops::find_weight_format(uint32_t(Rooflines::kDotTypeNumbers[t]));
        const uint64_t all_lanes = uint64_t(dot_lanes) * dot_groups,
                       block = f->scales_per_group + 4ull * f->group_units;
        const uint64_t read = n_vec4 / block / all_lanes * block * all_lanes * 16;
        r.dot_gb_per_s[t] = read / dots[t].best / 1e9;
    }

    // Multiply-add roofline (bench_fma.comp): as many lanes as the read probes spread, each doing
    // 32 multiply-adds per iteration; a few ms a dispatch on a 2-core CPU driver or a GPU.
    {
        const uint32_t fma_lanes = cpu ? ctx.subgroup_size() : 64;
        const uint32_t iterations = cpu ? 512 : 4096;
        const auto& fma =
            ctx.kernel(shaders::ShaderId::bench_fma, {vk::BindingKind::Storage}, 8, {fma_lanes});
        vk::BufferRange fr[] = {{&dst}};
        const float m = 0.999999f;
        uint32_t m_bits;
        std::memcpy(&m_bits, &m, 4);
        std::vector<Probe> fmas = {{&fma, ctx.make_set(fma, fr), {iterations, m_bits}, spread_groups}};
        measure_all(fmas, budget / 2);
        r.fma_gflop_s = 2.0 * 32 * iterations * double(fma_lanes) * spread_groups / fmas[0].best / 1e9;
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
    sample_clock();
    chain(8, true);
    const uint32_t N = 200;
    double with = 1e30, without = 1e30, empty_submit = 1e30;
    const auto t_all = Clock::now();
    do {
        with = std::min(with, chain(N, true));
        without = std::min(without, chain(N, false));
        empty_submit = std::min(empty_submit, chain(0, false));
    } while (seconds(t_all) < budget);
    r.submit_wait_us = empty_submit * 1e6;
    r.dispatch_us = (with - empty_submit) / N * 1e6;
    r.dispatch_no_barrier_us = (without - empty_submit) / N * 1e6;
    sample_clock();
    ctx.destroy(src);
    ctx.destroy(dst);
    return r;
}

}  // namespace lantern
