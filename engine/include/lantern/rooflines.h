// lantern/rooflines.h — what the Vulkan device can physically do, measured in the same run as a
// benchmark, so speed figures can be given as fractions of the device's own limits.
#pragma once
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
        "storage grid-stride", "storage lane-contiguous", "storage uniform", "texel grid-stride",
        "texel lane-contiguous", "texel workgroup-contiguous", "image workgroup-contiguous"};
    double read_gb_per_s_by_pattern[kReadPatterns] = {};
    double dispatch_us = 0;          // per dispatch in a chain with a barrier after each
    double dispatch_no_barrier_us = 0;  // per dispatch in a chain without barriers
    double submit_wait_us = 0;       // one empty submit + fence wait
};

// Runs the microbenchmarks on the device chosen by `device_selector` (see lantern/device.h).
Rooflines measure_rooflines(const std::string& device_selector, double seconds_per_probe = 1.0);

}  // namespace lantern
