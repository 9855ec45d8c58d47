// A weight matrix as it lives on the device: repacked values + scales, split by rows into parts
// when it is larger than one texel view may be (maxTexelBufferElements: 2^27 16-byte texels on
// lavapipe and most desktop GPUs, but as few as 65536 where the spec minimum applies).
#pragma once
#include <cstdint>
#include <vector>

#include "ops/weight_format.h"
#include "vulkan/context.h"

namespace lantern::ops {

struct DeviceWeight {
    const WeightFormat* format = nullptr;
    uint64_t rows = 0, cols = 0;
    uint64_t row_units = 0;  // 16-byte units per row (see shaders/weights.glsl)
    uint32_t tile_rows = 1;  // device layout: rows per tile (matmul_tile_rows); each part is tiled on its own
    struct Part {
        vk::BufferRange values, scales;
        uint64_t first_row = 0, rows = 0;
        // Tiled parts: the zero bytes at the end of `values` (ops::kTiledSlackWords), not weights.
        uint64_t slack_bytes = 0;
    };
    std::vector<Part> parts;
};

}  // namespace lantern::ops
