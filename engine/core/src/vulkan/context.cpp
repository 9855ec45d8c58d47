#include "vulkan/context.h"

#include <sys/mman.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>

#include "lantern/error.h"
#include "vulkan/pipeline_cache.h"

namespace lantern::vk {

uint32_t cpu_driver_threads() {
    // LP_NUM_THREADS=0 runs every dispatch on the submitting thread: one thread.
    if (const char* env = std::getenv("LP_NUM_THREADS"); env && *env >= '0' && *env <= '9')
        return std::clamp(static_cast<uint32_t>(std::atoi(env)), 1u, 16u);
    return std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
}

void check(VkResult r, const char* what) {
    if (r == VK_SUCCESS) return;
    std::string msg = std::string(what) + " failed (VkResult " + std::to_string(static_cast<int>(r)) + ")";
    switch (r) {
        case VK_ERROR_DEVICE_LOST:
            throw Error(
                ErrorCode::DeviceLost,
                std::string(what) + ": the Vulkan device was lost (driver reset or crash); reload the model");
        case VK_ERROR_OUT_OF_DEVICE_MEMORY:
        case VK_ERROR_OUT_OF_HOST_MEMORY:
        case VK_ERROR_OUT_OF_POOL_MEMORY:
            throw Error(ErrorCode::OutOfDeviceMemory,
                        std::string(what) + ": out of memory on the Vulkan device");
        case VK_ERROR_INITIALIZATION_FAILED:
        case VK_ERROR_INCOMPATIBLE_DRIVER:
            throw Error(ErrorCode::NoVulkanDevice, msg);
        default:
            throw Error(ErrorCode::Internal, msg);
    }
}

namespace {

VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
    auto* fn = static_cast<std::function<void(const std::string&)>*>(user);
    std::string m = (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "[error] " : "[warning] ");
    m += data->pMessage ? data->pMessage : "(no message)";
    if (fn && *fn) (*fn)(m);
    return VK_FALSE;
}

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::strcmp(v, "0") != 0;
}

DeviceType to_device_type(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return DeviceType::DiscreteGpu;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return DeviceType::IntegratedGpu;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return DeviceType::VirtualGpu;
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return DeviceType::Cpu;
        default:
            return DeviceType::Other;
    }
}

DeviceInfo describe(VkPhysicalDevice pd, uint32_t index) {
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    subgroup.pNext = &driver;
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &subgroup;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p3.pNext = &m3;
    vkGetPhysicalDeviceProperties2(pd, &p3);

    DeviceInfo d;
    d.index = index;
    d.name = p2.properties.deviceName;
    d.type = to_device_type(p2.properties.deviceType);
    d.driver = std::string(driver.driverName) + " / " + driver.driverInfo;
    d.vendor_id = p2.properties.vendorID;
    d.device_id = p2.properties.deviceID;
    d.driver_version = p2.properties.driverVersion;
    d.api_version = p2.properties.apiVersion;
    for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
        if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
            d.device_local_bytes = std::max<uint64_t>(d.device_local_bytes, mem.memoryHeaps[i].size);
    d.max_storage_buffer_range = p2.properties.limits.maxStorageBufferRange;
    d.max_allocation_bytes = m3.maxMemoryAllocationSize;
    d.max_texel_buffer_elements = p2.properties.limits.maxTexelBufferElements;
    d.subgroup_size = subgroup.subgroupSize;
    d.max_shared_memory = p2.properties.limits.maxComputeSharedMemorySize;
    return d;
}

int preference(DeviceType t) {
    switch (t) {
        case DeviceType::DiscreteGpu:
            return 4;
        case DeviceType::IntegratedGpu:
            return 3;
        case DeviceType::VirtualGpu:
            return 2;
        case DeviceType::Cpu:
            return 1;
        default:
            return 0;
    }
}

bool has_compute_queue(VkPhysicalDevice pd, uint32_t* family) {
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
    std::vector<VkQueueFamilyProperties> q(n);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q.data());
    for (uint32_t i = 0; i < n; ++i) {
        if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            if (family) *family = i;
            return true;
        }
    }
    return false;
}

bool device_has_extension(VkPhysicalDevice pd, const char* name) {
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> e(n);
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, e.data());
    for (const auto& x : e)
        if (std::strcmp(x.extensionName, name) == 0) return true;
    return false;
}

VkInstance make_bare_instance() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "Lantern";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkInstance inst = VK_NULL_HANDLE;
    VkResult r = vkCreateInstance(&ci, nullptr, &inst);
    if (r != VK_SUCCESS)
        throw Error(ErrorCode::NoVulkanDevice,
                    "no Vulkan driver found (vkCreateInstance returned " + std::to_string(r) +
                        "); install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers");
    return inst;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance inst) {
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(inst, &n, nullptr);
    std::vector<VkPhysicalDevice> v(n);
    vkEnumeratePhysicalDevices(inst, &n, v.data());
    return v;
}

}  // namespace
}  // namespace lantern::vk

namespace lantern {
using namespace vk;

const char* device_type_name(DeviceType type) {
    switch (type) {
        case DeviceType::DiscreteGpu:
            return "discrete GPU";
        case DeviceType::IntegratedGpu:
            return "integrated GPU";
        case DeviceType::VirtualGpu:
            return "virtual GPU";
        case DeviceType::Cpu:
            return "CPU (software Vulkan)";
        default:
            return "other";
    }
}

std::vector<DeviceInfo> list_devices() {
    VkInstance inst = make_bare_instance();
    std::vector<DeviceInfo> out;
    auto pds = physical_devices(inst);
    for (uint32_t i = 0; i < pds.size(); ++i)
        if (has_compute_queue(pds[i], nullptr)) out.push_back(describe(pds[i], i));
    vkDestroyInstance(inst, nullptr);
    return out;
}

uint32_t choose_device(const std::vector<DeviceInfo>& devices, const std::string& selector) {
    if (devices.empty())
        throw Error(ErrorCode::NoVulkanDevice, "no Vulkan device with a compute queue was found");
    if (!selector.empty()) {
        bool numeric =
            std::all_of(selector.begin(), selector.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (numeric) {
            uint32_t idx = static_cast<uint32_t>(std::stoul(selector));
            for (const auto& d : devices)
                if (d.index == idx) return d.index;
            throw Error(ErrorCode::NoVulkanDevice,
                        "device index " + selector + " does not exist (see --list-devices)");
        }
        auto lower = [](std::string s) {
            std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
            return s;
        };
        for (const auto& d : devices)
            if (lower(d.name).find(lower(selector)) != std::string::npos) return d.index;
        throw Error(ErrorCode::NoVulkanDevice,
                    "no Vulkan device name contains \"" + selector + "\" (see --list-devices)");
    }
    const DeviceInfo* best = &devices[0];
    for (const auto& d : devices)
        if (preference(d.type) > preference(best->type)) best = &d;
    return best->index;
}

}  // namespace lantern

namespace lantern::vk {

Context::Context(const ContextOptions& options) {
    create_instance(options);
    pick_device(options);
    create_device();
    std::string dir = options.pipeline_cache_dir;
    if (dir.empty()) {
        if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
            dir = std::string(x) + "/lantern";
        else if (const char* h = std::getenv("HOME"); h && *h)
            dir = std::string(h) + "/.cache/lantern";
    }
    load_pipeline_cache(dir == "-" ? std::string() : dir);
}

Context::~Context() {
    if (device_) {
        vkDeviceWaitIdle(device_);
        save_pipeline_cache();
        for (auto& [key, k] : kernels_) destroy_kernel(*k);
        for (auto p : desc_pools_) vkDestroyDescriptorPool(device_, p, nullptr);
        for (auto& [key, v] : views_) vkDestroyBufferView(device_, v, nullptr);
        if (query_pool_) vkDestroyQueryPool(device_, query_pool_, nullptr);
        if (pipeline_cache_) vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
        vkDestroyFence(device_, fence_, nullptr);
        vkDestroyCommandPool(device_, cmd_pool_, nullptr);
        vkDestroyDevice(device_, nullptr);
    }
    if (messenger_) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
        if (destroy) destroy(instance_, messenger_, nullptr);
    }
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

void Context::create_instance(const ContextOptions& o) {
    bool validation = o.validation || env_flag("LANTERN_VALIDATION");
    on_validation_ = o.on_validation_message;
    if (!on_validation_)
        on_validation_ = [](const std::string& m) { std::fprintf(stderr, "vulkan: %s\n", m.c_str()); };

    std::vector<const char*> layers, exts;
    if (validation) {
        uint32_t n = 0;
        vkEnumerateInstanceLayerProperties(&n, nullptr);
        std::vector<VkLayerProperties> props(n);
        vkEnumerateInstanceLayerProperties(&n, props.data());
        bool found = std::any_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
            return std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0;
        });
        if (!found)
            throw Error(ErrorCode::NoVulkanDevice,
                        "Vulkan validation was requested but VK_LAYER_KHRONOS_validation is not installed "
                        "(Debian package vulkan-validationlayers)");
        layers.push_back("VK_LAYER_KHRONOS_validation");
        exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "Lantern";
    app.pEngineName = "lantern_engine";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
    ci.ppEnabledLayerNames = layers.data();
    ci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
    ci.ppEnabledExtensionNames = exts.data();
    // Best-practices and synchronization checks catch missing barriers, not just API misuse.
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mci.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mci.pfnUserCallback = debug_callback;
    mci.pUserData = &on_validation_;
    if (validation) {
        features.pNext = &mci;
        ci.pNext = &features;
    }
    VkResult r = vkCreateInstance(&ci, nullptr, &instance_);
    if (r != VK_SUCCESS)
        throw Error(ErrorCode::NoVulkanDevice, "no Vulkan driver found (vkCreateInstance returned " +
                                                   std::to_string(r) + "); install a Vulkan driver");
    if (validation) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
        check(create ? create(instance_, &mci, nullptr, &messenger_) : VK_ERROR_EXTENSION_NOT_PRESENT,
              "vkCreateDebugUtilsMessengerEXT");
    }
}

void Context::pick_device(const ContextOptions& o) {
    auto pds = physical_devices(instance_);
    std::vector<DeviceInfo> infos;
    for (uint32_t i = 0; i < pds.size(); ++i)
        if (has_compute_queue(pds[i], nullptr)) infos.push_back(describe(pds[i], i));
    std::string selector = o.device_selector;
    if (selector.empty())
        if (const char* env = std::getenv("LANTERN_DEVICE"); env) selector = env;
    uint32_t idx = choose_device(infos, selector);
    phys_ = pds[idx];
    for (auto& d : infos)
        if (d.index == idx) info_ = d;
    has_compute_queue(phys_, &queue_family_);
    vkGetPhysicalDeviceProperties(phys_, &props_);
    vkGetPhysicalDeviceMemoryProperties(phys_, &mem_props_);
    // Unified memory: some memory type is both device-local and host-visible on the main heap, so
    // weights can be written in place without a staging copy (lavapipe, integrated GPUs, ReBAR).
    for (uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i) {
        auto f = mem_props_.memoryTypes[i].propertyFlags;
        if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
            (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) &&
            mem_props_.memoryHeaps[mem_props_.memoryTypes[i].heapIndex].size >= info_.device_local_bytes)
            unified_memory_ = true;
    }
    timestamp_period_ns_ = props_.limits.timestampComputeAndGraphics ? props_.limits.timestampPeriod : 0.0;
}

void Context::create_device() {
    float prio = 1.0f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = queue_family_;
    q.queueCount = 1;
    q.pQueuePriorities = &prio;
    VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &q;
    // The device clock in shaders, for profiling only (the fused decode layer's per-op times): on
    // where the device has it, and nothing else needs an extension.
    std::vector<const char*> exts;
    VkPhysicalDeviceShaderClockFeaturesKHR clock{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR};
    if (props_.apiVersion >= VK_API_VERSION_1_1 &&
        device_has_extension(phys_, VK_KHR_SHADER_CLOCK_EXTENSION_NAME)) {
        VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        f2.pNext = &clock;
        vkGetPhysicalDeviceFeatures2(phys_, &f2);
        if (clock.shaderDeviceClock) {
            clock.shaderSubgroupClock = VK_FALSE;
            exts.push_back(VK_KHR_SHADER_CLOCK_EXTENSION_NAME);
            ci.pNext = &clock;
            shader_device_clock_ = true;
        }
    }
    ci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
    ci.ppEnabledExtensionNames = exts.data();
    check(vkCreateDevice(phys_, &ci, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = queue_family_;
    check(vkCreateCommandPool(device_, &pci, nullptr, &cmd_pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = cmd_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(device_, &ai, &cmd_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(device_, &fci, nullptr, &fence_), "vkCreateFence");
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, nullptr);
    std::vector<VkQueueFamilyProperties> qf(n);
    vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, qf.data());
    uint32_t bits = qf[queue_family_].timestampValidBits;
    if (bits == 0) timestamp_period_ns_ = 0;
    timestamp_mask_ = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
}

uint32_t Context::find_memory_type(uint32_t type_bits, MemoryUse use, bool* coherent) const {
    auto pick = [&](VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) -> int {
        for (uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i) {
            auto f = mem_props_.memoryTypes[i].propertyFlags;
            if ((type_bits & (1u << i)) && (f & want) == want && !(f & avoid)) return static_cast<int>(i);
        }
        return -1;
    };
    const auto HV = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, HC = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
               DL = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, CA = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    int t = -1;
    switch (use) {
        case MemoryUse::DeviceLocal:
            if (unified_memory_) t = pick(DL | HV | HC, 0);
            if (t < 0) t = pick(DL, 0);
            break;
        case MemoryUse::Readback:
            t = pick(HV | HC | CA, 0);
            if (t < 0) t = pick(HV | CA, 0);
            if (t < 0) t = pick(HV | HC, 0);
            break;
        case MemoryUse::Upload:
            t = pick(HV | HC | DL, 0);
            if (t < 0) t = pick(HV | HC, 0);
            break;
    }
    if (t < 0) t = pick(0, 0);
    if (t < 0) throw Error(ErrorCode::Internal, "no Vulkan memory type fits the buffer");
    *coherent = mem_props_.memoryTypes[t].propertyFlags & HC;
    return static_cast<uint32_t>(t);
}

Buffer Context::create_buffer(VkDeviceSize size, MemoryUse use) {
    if (size == 0) size = 4;
    if (info_.max_allocation_bytes && size > info_.max_allocation_bytes)
        throw Error(ErrorCode::ModelTooLarge, "a buffer of " + std::to_string(size) +
                                                  " bytes exceeds the device's maxMemoryAllocationSize (" +
                                                  std::to_string(info_.max_allocation_bytes) + ")");
    Buffer b;
    b.size = size;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
               VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    check(vkCreateBuffer(device_, &bi, nullptr, &b.buffer), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_, b.buffer, &req);
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = find_memory_type(req.memoryTypeBits, use, &b.coherent);
    VkResult r = vkAllocateMemory(device_, &ai, nullptr, &b.memory);
    if (r != VK_SUCCESS) {
        vkDestroyBuffer(device_, b.buffer, nullptr);
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
            throw Error(ErrorCode::OutOfDeviceMemory,
                        "the Vulkan device has no room for " + std::to_string(size >> 20) + " MiB more (" +
                            std::to_string(bytes_allocated_ >> 20) + " MiB already in use)");
        check(r, "vkAllocateMemory");
    }
    b.owns_memory = true;
    check(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (mem_props_.memoryTypes[ai.memoryTypeIndex].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        check(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
        // On a CPU device the "device memory" is ordinary process memory, and kernels stream
        // weights through it: ask for transparent huge pages (fewer TLB misses) before the
        // memory is first written. Only a hint; the kernel may ignore it.
        if (info_.type == DeviceType::Cpu && size >= (4u << 20)) {
            const uintptr_t huge = 2u << 20;
            uintptr_t begin = (reinterpret_cast<uintptr_t>(b.mapped) + huge - 1) & ~(huge - 1);
            uintptr_t end = (reinterpret_cast<uintptr_t>(b.mapped) + size) & ~(huge - 1);
            if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
        }
    }
    bytes_allocated_ += req.size;
    return b;
}

void Context::destroy(Buffer& b) {
    for (auto it = views_.begin(); it != views_.end();) {
        if (std::get<0>(it->first) == b.buffer) {
            vkDestroyBufferView(device_, it->second, nullptr);
            it = views_.erase(it);
        } else {
            ++it;
        }
    }
    if (b.buffer) vkDestroyBuffer(device_, b.buffer, nullptr);
    if (b.owns_memory && b.memory) {
        VkMemoryRequirements req{};
        bytes_allocated_ -= std::min<uint64_t>(bytes_allocated_, b.size);
        vkFreeMemory(device_, b.memory, nullptr);
        (void)req;
    }
    b = Buffer{};
}

void Context::upload(const Buffer& dst, VkDeviceSize off, const void* src, VkDeviceSize size) {
    if (off + size > dst.size) throw Error(ErrorCode::Internal, "upload out of buffer bounds");
    if (dst.mapped) {
        std::memcpy(static_cast<uint8_t*>(dst.mapped) + off, src, size);
        if (!dst.coherent) {
            VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
            range.memory = dst.memory;
            range.size = VK_WHOLE_SIZE;
            vkFlushMappedMemoryRanges(device_, 1, &range);
        }
        return;
    }
    // Staging copy in chunks so a large tensor never needs a second full-size allocation.
    const VkDeviceSize chunk = std::min<VkDeviceSize>(size, 64ull << 20);
    Buffer staging = create_buffer(chunk, MemoryUse::Upload);
    for (VkDeviceSize done = 0; done < size; done += chunk) {
        VkDeviceSize n = std::min(chunk, size - done);
        std::memcpy(staging.mapped, static_cast<const uint8_t*>(src) + done, n);
        VkCommandBuffer cmd = begin();
        VkBufferCopy c{0, off + done, n};
        vkCmdCopyBuffer(cmd, staging.buffer, dst.buffer, 1, &c);
        submit_and_wait(cmd);
    }
    destroy(staging);
}

void Context::download(const Buffer& src, VkDeviceSize off, void* dst, VkDeviceSize size) {
    if (off + size > src.size) throw Error(ErrorCode::Internal, "download out of buffer bounds");
    if (src.mapped) {
        if (!src.coherent) {
            VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
            range.memory = src.memory;
            range.size = VK_WHOLE_SIZE;
            vkInvalidateMappedMemoryRanges(device_, 1, &range);
        }
        std::memcpy(dst, static_cast<const uint8_t*>(src.mapped) + off, size);
        return;
    }
    Buffer staging = create_buffer(size, MemoryUse::Readback);
    VkCommandBuffer cmd = begin();
    VkBufferCopy c{off, 0, size};
    vkCmdCopyBuffer(cmd, src.buffer, staging.buffer, 1, &c);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                         nullptr, 0, nullptr);
    submit_and_wait(cmd);
    download(staging, 0, dst, size);
    destroy(staging);
}

const Kernel& Context::kernel(shaders::ShaderId shader, uint32_t bindings, uint32_t push_bytes,
                              std::vector<uint32_t> spec) {
    return kernel(shader, std::vector<BindingKind>(bindings, BindingKind::Storage), push_bytes,
                  std::move(spec));
}

namespace {
VkDescriptorType descriptor_type(BindingKind k) {
    if (k == BindingKind::ImageFloat4) return VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
    return k == BindingKind::Storage ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                     : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
}
VkFormat texel_format(BindingKind k) {
    switch (k) {
        case BindingKind::TexelFloat:
            return VK_FORMAT_R32_SFLOAT;
        case BindingKind::TexelFloat4:
        case BindingKind::ImageFloat4:
            return VK_FORMAT_R32G32B32A32_SFLOAT;
        case BindingKind::TexelUint4:
            return VK_FORMAT_R32G32B32A32_UINT;
        case BindingKind::TexelUint:
            return VK_FORMAT_R32_UINT;
        case BindingKind::Storage:
            break;
    }
    return VK_FORMAT_UNDEFINED;
}
VkDeviceSize texel_bytes(BindingKind k) {
    return k == BindingKind::TexelFloat || k == BindingKind::TexelUint ? 4 : 16;
}
}  // namespace

std::unique_ptr<Kernel> Context::build_kernel(const KernelSpec& ks) {
    if (build_hook_for_test_) build_hook_for_test_();
    const auto& [shader, kinds, push_bytes, spec] = ks;
    const auto bindings = static_cast<uint32_t>(kinds.size());
    if (push_bytes > props_.limits.maxPushConstantsSize)
        throw Error(ErrorCode::Internal, "push constants exceed the device limit");
    auto k = std::make_unique<Kernel>();
    k->shader = shader;
    k->spec = spec;
    k->kinds = kinds;
    k->push_bytes = push_bytes;
    std::vector<VkDescriptorSetLayoutBinding> b(bindings);
    for (uint32_t i = 0; i < bindings; ++i)
        b[i] = {i, descriptor_type(kinds[i]), 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.bindingCount = bindings;
    dl.pBindings = b.data();
    // From here on a failure destroys what was made so far (the kernel is in no map yet).
    struct Undo {
        Context* ctx;
        Kernel* k;
        ~Undo() {
            if (k) ctx->destroy_kernel(*k);
        }
    } undo{this, k.get()};
    check(vkCreateDescriptorSetLayout(device_, &dl, nullptr, &k->set_layout), "vkCreateDescriptorSetLayout");
    VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &k->set_layout;
    pl.pushConstantRangeCount = push_bytes ? 1 : 0;
    pl.pPushConstantRanges = &pr;
    check(vkCreatePipelineLayout(device_, &pl, nullptr, &k->layout), "vkCreatePipelineLayout");

    const auto& src = shaders::embedded(shader);
    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = src.words * 4;
    smi.pCode = src.code;
    VkShaderModule module;
    check(vkCreateShaderModule(device_, &smi, nullptr, &module), "vkCreateShaderModule");
    std::vector<VkSpecializationMapEntry> entries(spec.size());
    for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4, 4};
    VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(), spec.size() * 4,
                            spec.data()};
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
    ci.layout = k->layout;
    VkResult r = vkCreateComputePipelines(device_, pipeline_cache_, 1, &ci, nullptr, &k->pipeline);
    vkDestroyShaderModule(device_, module, nullptr);
    check(r, (std::string("vkCreateComputePipelines(") + src.name + ")").c_str());
    undo.k = nullptr;
    return k;
}

void Context::destroy_kernel(Kernel& k) {
    if (k.pipeline) vkDestroyPipeline(device_, k.pipeline, nullptr);
    if (k.layout) vkDestroyPipelineLayout(device_, k.layout, nullptr);
    if (k.set_layout) vkDestroyDescriptorSetLayout(device_, k.set_layout, nullptr);
    k.pipeline = VK_NULL_HANDLE;
    k.layout = VK_NULL_HANDLE;
    k.set_layout = VK_NULL_HANDLE;
}

const Kernel& Context::kernel(shaders::ShaderId shader, std::vector<BindingKind> kinds, uint32_t push_bytes,
                              std::vector<uint32_t> spec) {
    const KernelSpec one{shader, std::move(kinds), push_bytes, std::move(spec)};
    return *kernels(std::span(&one, 1))[0];
}

std::vector<const Kernel*> Context::kernels(std::span<const KernelSpec> specs) {
    auto key_of = [](const KernelSpec& s) { return std::make_pair(static_cast<uint32_t>(s.shader), s.spec); };
    std::vector<size_t> missing;  // the first request of each kernel not made yet
    {
        std::lock_guard lock(kernels_mutex_);
        for (size_t i = 0; i < specs.size(); ++i) {
            const auto key = key_of(specs[i]);
            if (kernels_.count(key)) continue;
            if (std::none_of(missing.begin(), missing.end(),
                             [&](size_t m) { return key_of(specs[m]) == key; }))
                missing.push_back(i);
        }
    }
    // Made outside the lock, each on its own thread (the first on this one); vkCreateComputePipelines
    // may run concurrently, and the pipeline cache synchronizes itself.
    std::vector<std::unique_ptr<Kernel>> made(missing.size());
    std::vector<std::exception_ptr> failed(missing.size());
    auto make = [&](size_t j) {
        try {
            made[j] = build_kernel(specs[missing[j]]);
        } catch (...) {
            failed[j] = std::current_exception();
        }
    };
    const size_t threads =
        std::min<size_t>(missing.size(), std::max(1u, std::thread::hardware_concurrency()));
    for (size_t first = 0; first < missing.size(); first += threads) {
        std::vector<std::thread> helpers;
        const size_t end = std::min(missing.size(), first + threads);
        for (size_t j = first + 1; j < end; ++j) helpers.emplace_back(make, j);
        make(first);
        for (auto& t : helpers) t.join();
    }
    std::vector<const Kernel*> out(specs.size());
    std::lock_guard lock(kernels_mutex_);
    for (size_t j = 0; j < missing.size(); ++j) {
        if (!made[j]) continue;
        auto key = key_of(specs[missing[j]]);
        if (kernels_.count(key))
            destroy_kernel(*made[j]);  // another thread made the same kernel meanwhile
        else
            kernels_.emplace(std::move(key), std::move(made[j]));
    }
    for (auto& e : failed)
        if (e) std::rethrow_exception(e);
    for (size_t i = 0; i < specs.size(); ++i) out[i] = kernels_.at(key_of(specs[i])).get();
    return out;
}

VkDescriptorSet Context::make_set(const Kernel& k, std::span<const BufferRange> buffers) {
    if (buffers.size() != k.kinds.size())
        throw Error(ErrorCode::Internal, "descriptor set: wrong number of buffers");
    VkDescriptorSet set = VK_NULL_HANDLE;
    auto try_alloc = [&]() -> VkResult {
        if (desc_pools_.empty()) return VK_ERROR_OUT_OF_POOL_MEMORY;
        VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        ai.descriptorPool = desc_pools_.back();
        ai.descriptorSetCount = 1;
        ai.pSetLayouts = &k.set_layout;
        return vkAllocateDescriptorSets(device_, &ai, &set);
    };
    if (try_alloc() != VK_SUCCESS) {
        VkDescriptorPoolSize ps[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4096},
                                     {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 4096},
                                     {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, 64}};
        VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        pci.maxSets = 1024;
        pci.poolSizeCount = 3;
        pci.pPoolSizes = ps;
        VkDescriptorPool pool;
        check(vkCreateDescriptorPool(device_, &pci, nullptr, &pool), "vkCreateDescriptorPool");
        desc_pools_.push_back(pool);
        check(try_alloc(), "vkAllocateDescriptorSets");
    }
    std::vector<VkDescriptorBufferInfo> infos(buffers.size());
    std::vector<VkBufferView> views(buffers.size());
    std::vector<VkWriteDescriptorSet> writes(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
        const auto& br = buffers[i];
        const BindingKind kind = k.kinds[i];
        VkDeviceSize range = br.size == VK_WHOLE_SIZE ? br.buffer->size - br.offset : br.size;
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = static_cast<uint32_t>(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = descriptor_type(kind);
        if (kind == BindingKind::Storage) {
            if (range > props_.limits.maxStorageBufferRange)
                throw Error(ErrorCode::Internal,
                            "binding of " + std::to_string(range) +
                                " bytes exceeds maxStorageBufferRange (split the tensor)");
            infos[i] = {br.buffer->buffer, br.offset, range};
            writes[i].pBufferInfo = &infos[i];
        } else {
            // Whole texels only: a view's range is a multiple of its texel size, and shaders never
            // read a partial texel (kernels that bind vec4 views use them only for whole vec4s).
            const VkDeviceSize texel = texel_bytes(kind);
            range -= range % texel;
            if (range == 0) range = texel;  // an empty binding still needs a valid view
            if (range / texel > props_.limits.maxTexelBufferElements)
                throw Error(ErrorCode::Internal,
                            "binding of " + std::to_string(range) +
                                " bytes exceeds maxTexelBufferElements (split the tensor)");
            if (br.offset % props_.limits.minTexelBufferOffsetAlignment != 0)
                throw Error(ErrorCode::Internal, "texel binding offset " + std::to_string(br.offset) +
                                                     " is not a multiple of minTexelBufferOffsetAlignment");
            views[i] = texel_view(br, range, texel_format(kind));
            writes[i].pTexelBufferView = &views[i];
        }
    }
    vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    return set;
}

VkBufferView Context::texel_view(const BufferRange& br, VkDeviceSize range, VkFormat format) {
    auto key = std::make_tuple(br.buffer->buffer, br.offset, range, format);
    if (auto it = views_.find(key); it != views_.end()) return it->second;
    VkBufferViewCreateInfo vi{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    vi.buffer = br.buffer->buffer;
    vi.format = format;
    vi.offset = br.offset;
    vi.range = range;
    VkBufferView view;
    check(vkCreateBufferView(device_, &vi, nullptr, &view), "vkCreateBufferView");
    views_.emplace(key, view);
    return view;
}

VkCommandBuffer Context::begin() {
    check(vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
    query_labels_.clear();
    return cmd_;
}

void Context::submit_and_wait(VkCommandBuffer cmd) {
    end(cmd);
    submit_recorded_and_wait(cmd);
}

VkCommandBuffer Context::create_reusable_command_buffer() {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = cmd_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    check(vkAllocateCommandBuffers(device_, &ai, &cmd), "vkAllocateCommandBuffers");
    return cmd;
}

void Context::begin_reusable(VkCommandBuffer cmd) {
    check(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
}

void Context::end(VkCommandBuffer cmd) {
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

void Context::submit_recorded_and_wait(VkCommandBuffer cmd) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    check(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
    check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(device_, 1, &fence_), "vkResetFences");
}

void Context::dispatch(VkCommandBuffer cmd, const Kernel& k, VkDescriptorSet set, const void* push,
                       uint32_t gx, uint32_t gy, uint32_t gz) {
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, 1, &set, 0, nullptr);
    if (k.push_bytes) vkCmdPushConstants(cmd, k.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k.push_bytes, push);
    vkCmdDispatch(cmd, gx, gy, gz);
}

void Context::barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(
        cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
        1, &mb, 0, nullptr, 0, nullptr);
}

void Context::begin_timing(VkCommandBuffer cmd) {
    if (!timestamps_supported()) return;
    const uint32_t want = 1024;
    if (!query_pool_) {
        VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = want;
        check(vkCreateQueryPool(device_, &qi, nullptr, &query_pool_), "vkCreateQueryPool");
        query_capacity_ = want;
    }
    vkCmdResetQueryPool(cmd, query_pool_, 0, query_capacity_);
    query_labels_.clear();
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_, 0);
    query_labels_.push_back(~0u);
}

void Context::mark(VkCommandBuffer cmd, uint32_t label) {
    if (!query_pool_ || query_labels_.empty() || query_labels_.size() >= query_capacity_) return;
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_,
                        static_cast<uint32_t>(query_labels_.size()));
    query_labels_.push_back(label);
}

std::vector<std::pair<uint32_t, double>> Context::read_timing() {
    std::vector<std::pair<uint32_t, double>> out;
    if (!query_pool_ || query_labels_.size() < 2) return out;
    std::vector<uint64_t> ts(query_labels_.size());
    check(vkGetQueryPoolResults(device_, query_pool_, 0, static_cast<uint32_t>(ts.size()), ts.size() * 8,
                                ts.data(), 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    for (size_t i = 1; i < ts.size(); ++i) {
        uint64_t d = (ts[i] - ts[i - 1]) & timestamp_mask_;
        out.emplace_back(query_labels_[i], static_cast<double>(d) * timestamp_period_ns_);
    }
    query_labels_.clear();
    return out;
}

void Context::load_pipeline_cache(const std::string& dir) {
    std::vector<uint8_t> initial;
    if (!dir.empty()) {
        pipeline_cache_path_ = dir + "/" + pipeline_cache_file_name(props_);
        initial = read_pipeline_cache(pipeline_cache_path_, props_);
        pipeline_cache_loaded_ = !initial.empty();
    }
    VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = initial.size();
    ci.pInitialData = initial.empty() ? nullptr : initial.data();
    if (vkCreatePipelineCache(device_, &ci, nullptr, &pipeline_cache_) != VK_SUCCESS) {
        // A driver that rejects the blob must not stop start-up: start with an empty cache.
        ci.initialDataSize = 0;
        ci.pInitialData = nullptr;
        pipeline_cache_loaded_ = false;
        check(vkCreatePipelineCache(device_, &ci, nullptr, &pipeline_cache_), "vkCreatePipelineCache");
    }
}

void Context::save_pipeline_cache() {
    if (!pipeline_cache_ || pipeline_cache_path_.empty()) return;
    size_t n = 0;
    if (vkGetPipelineCacheData(device_, pipeline_cache_, &n, nullptr) != VK_SUCCESS || n == 0) return;
    std::vector<uint8_t> data(n);
    if (vkGetPipelineCacheData(device_, pipeline_cache_, &n, data.data()) != VK_SUCCESS) return;
    data.resize(n);
    write_pipeline_cache(pipeline_cache_path_, props_, data);
}

}  // namespace lantern::vk
