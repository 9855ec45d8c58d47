// On-disk Vulkan pipeline cache: compiled pipelines survive restarts, so a later start of the
// engine skips what the driver's cache covers of its shader compile (what that is on lavapipe:
// docs/decisions/0012-pipelines-made-on-demand-in-parallel.md).
//
// File = our header + the driver's blob. The header pins the exact device and driver (vendor id,
// device id, driver version, pipelineCacheUUID) and carries the blob's size and FNV-1a hash; any
// mismatch or corruption makes the whole file be ignored (never half-trusted, never a crash).
// Writes go to a temporary file that is renamed into place, so a crash mid-write leaves either the
// old file or the new one.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lantern::vk {

std::string pipeline_cache_file_name(const VkPhysicalDeviceProperties& props);
// Returns the driver blob, or empty when the file is missing, foreign or damaged.
std::vector<uint8_t> read_pipeline_cache(const std::string& path, const VkPhysicalDeviceProperties& props);
// Returns false (and leaves any old file in place) when the file cannot be written.
bool write_pipeline_cache(const std::string& path, const VkPhysicalDeviceProperties& props,
                          const std::vector<uint8_t>& blob);

}  // namespace lantern::vk
