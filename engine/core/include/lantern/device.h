// lantern/device.h — which Vulkan devices exist and how one is chosen.
//
// Preference: discrete GPU > integrated GPU > virtual GPU > CPU (e.g. Mesa's lavapipe). A selector
// (CLI --device, env LANTERN_DEVICE, or an app setting) overrides it: a decimal index into
// list_devices(), or a case-insensitive substring of the device name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lantern {

enum class DeviceType { Other, IntegratedGpu, DiscreteGpu, VirtualGpu, Cpu };
const char* device_type_name(DeviceType type);

struct DeviceInfo {
    uint32_t index = 0;
    std::string name;
    DeviceType type = DeviceType::Other;
    std::string driver;  // driver name + info, e.g. "llvmpipe / Mesa 22.3.6 (LLVM 15.0.6)"
    uint32_t vendor_id = 0, device_id = 0, driver_version = 0, api_version = 0;
    uint64_t device_local_bytes = 0;  // largest device-local heap
    uint64_t max_storage_buffer_range = 0;
    uint64_t max_allocation_bytes = 0;
    uint64_t max_texel_buffer_elements = 0;
    uint32_t subgroup_size = 0;
    uint32_t max_shared_memory = 0;
};

// Lists the Vulkan devices that can run compute. Throws Error(NoVulkanDevice) if there is no loader.
std::vector<DeviceInfo> list_devices();

// Picks a device index for `selector` ("" = by preference). Throws Error(NoVulkanDevice).
uint32_t choose_device(const std::vector<DeviceInfo>& devices, const std::string& selector);

}  // namespace lantern
