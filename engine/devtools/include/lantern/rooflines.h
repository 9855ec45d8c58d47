// lantern/rooflines.h — what the Vulkan device can physically do, measured in the same run as a
// benchmark, so speed figures can be given as fractions of the device's own limits.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace lantern {

struct Rooflines {
    std::string device;
    // Streaming read throughput (bench_read.comp): the best of the patterns below. Every pattern is
    // a way a kernel could read the weights; the roofline is the best the device offers, so a
    // kernel's fraction of it is judged against what is physically possible, not against the
    // pattern the kernel happens to use.
    double read_gb_per_s = 0;
    static constexpr int kReadPatterns = 7;
    static constexpr const char* kReadPatternNames[kReadPatterns] = {
        "storage grid-stride",       "storage lane-contiguous", "storage uniform",
        "texel grid-stride",         "texel lane-contiguous",   "texel workgroup-contiguous",
        "image workgroup-contiguous"};
    double read_gb_per_s_by_pattern[kReadPatterns] = {};
    // Arithmetic roofline per weight layout (bench_dot.comp): bytes per second of weights that a
    // kernel doing only the layout's decode arithmetic (unpack, multiply, add, scale) streams at
    // the lane-contiguous texel pattern. What a decode kernel of that type can reach at best here;
    // on a CPU driver far below the read roofline for 8- and 4-bit types (their unpack is work per
    // weight), on a GPU close to it. 0 = not measured.
    static constexpr int kDotTypes = 7;
    static constexpr const char* kDotTypeNames[kDotTypes] = {"f32",  "f16",  "q8_0", "q4_0",
                                                             "q4_k", "q5_k", "q6_k"};
    static constexpr int kDotTypeNumbers[kDotTypes] = {0, 1, 8, 2, 12, 13, 14};  // the layouts' ggml types
    double dot_gb_per_s[kDotTypes] = {};
    // The arithmetic roofline of a layout by its ggml type number (0 if not measured).
    double dot_gb_per_s_of(uint32_t layout) const {
        for (int i = 0; i < kDotTypes; ++i)
            if (uint32_t(kDotTypeNumbers[i]) == layout) return dot_gb_per_s[i];
        return 0;
    }
    // Multiply-add roofline (bench_fma.comp): billions of float operations a second (a multiply
    // and an add count two) that lanes computing from registers alone reach. Prefill's matmuls
    // and attention are judged against it (their work per token does not depend on bandwidth
    // once each weight serves many tokens). 0 = not measured.
    double fma_gflop_s = 0;
    double dispatch_us = 0;             // per dispatch in a chain with a barrier after each
    double dispatch_no_barrier_us = 0;  // per dispatch in a chain without barriers
    double submit_wait_us = 0;          // one empty submit + fence wait
    // CPU devices (x86-64 hosts): the host core's effective clock in GHz, lowest and highest of
    // the samples taken before, between and after the probes (host_clock_ghz). Tells a throttled
    // or contended core from noise in memory. 0 = not measured (GPUs, other hosts).
    double host_clock_ghz_min = 0, host_clock_ghz_max = 0;
};

// The calling core's effective clock in GHz (x86-64; 0 elsewhere): a ~15 ms chain of dependent
// 32-bit multiplies divided by their 3-cycle latency. Why not adds, and where 3 cycles holds:
// docs/decisions/0001-host-clock-probe.md. Any thread; no errors.
double host_clock_ghz();

// Runs the microbenchmarks on the device chosen by `device_selector` (see lantern/device.h): each
// family (read patterns, arithmetic per layout, dispatch overhead) for about `seconds_per_family`,
// its probes interleaved in rounds, each keeping its best time. Validation messages
// (LANTERN_VALIDATION=1) go to `on_validation_message` when given, else to stderr.
Rooflines measure_rooflines(const std::string& device_selector, double seconds_per_family = 1.0,
                            std::function<void(const std::string&)> on_validation_message = {});

}  // namespace lantern
