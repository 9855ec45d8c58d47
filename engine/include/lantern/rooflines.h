// lantern/rooflines.h — what the Vulkan device can physically do, measured in the same run as a
// benchmark, so speed figures can be given as fractions of the device's own limits.
#pragma once
#include <string>

namespace lantern {

struct Rooflines {
    std::string device;
    double read_gb_per_s = 0;        // streaming storage-buffer read throughput (bench_read.comp), best pattern
    double read_gb_per_s_by_pattern[3] = {0, 0, 0};  // grid-stride, lane-contiguous, uniform
    double dispatch_us = 0;          // per dispatch in a chain with a barrier after each
    double dispatch_no_barrier_us = 0;  // per dispatch in a chain without barriers
    double submit_wait_us = 0;       // one empty submit + fence wait
};

// Runs the microbenchmarks on the device chosen by `device_selector` (see lantern/device.h).
Rooflines measure_rooflines(const std::string& device_selector, double seconds_per_probe = 0.5);

}  // namespace lantern
