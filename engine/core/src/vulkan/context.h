// Vulkan runtime: instance and device, memory, buffers, compute kernels, descriptor sets,
// pipeline cache and command submission. Internal to the engine (the app never sees Vulkan).
#pragma once
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "lantern/device.h"
#include "lantern_shaders/shaders.h"

namespace lantern::vk {

// Throws lantern::Error with a code derived from `r` (device lost, out of memory, ...).
void check(VkResult r, const char* what);

// Threads a CPU driver spreads a dispatch over: lavapipe uses one per CPU (at most 16) unless
// LP_NUM_THREADS says otherwise (0: dispatches run on the submitting thread, counted as one). Its
// unit of work is a workgroup, so kernels on CPU drivers size their grids to keep this many
// threads busy.
uint32_t cpu_driver_threads();

struct ContextOptions {
    std::string device_selector;  // see lantern/device.h; empty = env LANTERN_DEVICE, then preference
    // Enable VK_LAYER_KHRONOS_validation + a debug messenger. Also on when env LANTERN_VALIDATION=1.
    bool validation = false;
    // Receives every validation warning/error (tests turn these into failures). Called from any thread.
    std::function<void(const std::string&)> on_validation_message;
    // Directory for the on-disk pipeline cache; empty = $XDG_CACHE_HOME/lantern (or ~/.cache/lantern).
    // "-" disables the disk cache.
    std::string pipeline_cache_dir;
};

enum class MemoryUse {
    DeviceLocal,  // weights, activations, KV: fastest for the GPU; filled through staging if not mappable
    Readback,     // host-visible (cached if possible) for results the CPU reads every step
    Upload,       // host-visible, coherent: small per-step inputs written by the CPU
};

struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;  // owned only when `owns_memory`
    VkDeviceSize offset = 0;                 // offset inside `memory`
    VkDeviceSize size = 0;
    void* mapped = nullptr;  // non-null when host-visible
    bool owns_memory = false;
    bool coherent = true;
};

// A view of a buffer range bound to one descriptor binding.
struct BufferRange {
    const Buffer* buffer = nullptr;
    VkDeviceSize offset = 0;
    VkDeviceSize size = VK_WHOLE_SIZE;
};

// How a shader sees a binding. Storage buffers are the general case. Read-only data that a kernel
// streams (weights, the input of a matrix product) can instead be bound as a uniform texel buffer:
// on lavapipe a texel fetch compiles to one straight-line gather per SIMD group, where a storage
// buffer load is a loop over the lanes; GPUs read both at full speed. Figures:
// docs/decisions/0008-streamed-reads-through-texel-buffers.md.
enum class BindingKind : uint8_t {
    Storage,      // layout(std430) buffer
    TexelFloat,   // uniform samplerBuffer, VK_FORMAT_R32_SFLOAT (one float per texel)
    TexelFloat4,  // uniform samplerBuffer, VK_FORMAT_R32G32B32A32_SFLOAT (a vec4 per texel)
    TexelUint4,   // uniform usamplerBuffer, VK_FORMAT_R32G32B32A32_UINT (a uvec4 per texel)
    TexelUint,    // uniform usamplerBuffer, VK_FORMAT_R32_UINT (one uint per texel)
    ImageFloat4,  // readonly imageBuffer (rgba32f), a storage texel buffer (the read roofline only)
};

// A compute pipeline from an embedded shader, with one binding per entry of `kinds` (0..N-1) and a
// push constant block. Specialization constants are given as (constant_id = index, uint32 value).
struct Kernel {
    shaders::ShaderId shader{};
    std::vector<uint32_t> spec;
    std::vector<BindingKind> kinds;  // one per binding
    uint32_t push_bytes = 0;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
};

// What a kernel is made from (see Context::kernel).
struct KernelSpec {
    shaders::ShaderId shader{};
    std::vector<BindingKind> kinds;  // one binding per entry
    uint32_t push_bytes = 0;
    std::vector<uint32_t> spec;  // specialization constants
};

class Context {
public:
    explicit Context(const ContextOptions& options);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const DeviceInfo& info() const { return info_; }
    const VkPhysicalDeviceLimits& limits() const { return props_.limits; }
    VkDevice device() const { return device_; }
    uint32_t subgroup_size() const { return info_.subgroup_size; }
    bool unified_memory() const { return unified_memory_; }

    // Memory. Sizes are checked against maxMemoryAllocationSize; failures throw OutOfDeviceMemory.
    Buffer create_buffer(VkDeviceSize size, MemoryUse use);
    void destroy(Buffer& b);
    // Writes host bytes into a buffer (directly if mapped, else through a staging buffer).
    void upload(const Buffer& dst, VkDeviceSize dst_offset, const void* src, VkDeviceSize size);
    void download(const Buffer& src, VkDeviceSize src_offset, void* dst, VkDeviceSize size);
    uint64_t bytes_allocated() const { return bytes_allocated_; }

    // Kernels are created once per (shader, spec constants) and cached in memory and on disk.
    // `bindings` storage buffers, or one binding per entry of `kinds`.
    const Kernel& kernel(shaders::ShaderId shader, uint32_t bindings, uint32_t push_bytes,
                         std::vector<uint32_t> spec = {});
    const Kernel& kernel(shaders::ShaderId shader, std::vector<BindingKind> kinds, uint32_t push_bytes,
                         std::vector<uint32_t> spec = {});
    // Several kernels at once, in the order asked: those not made yet are made in parallel, one
    // per thread (up to the machine's hardware threads), and joined before it returns. Making a
    // pipeline is CPU work inside the driver, even with a warm pipeline cache, so an op that needs
    // several variants asks for them together (docs/decisions/0012-pipelines-made-on-demand-in-parallel.md).
    std::vector<const Kernel*> kernels(std::span<const KernelSpec> specs);
    // Tests: called on the thread that makes each new kernel, before it starts (so a test can hold
    // two threads there and make them race for the same kernel). Empty = none.
    void set_kernel_build_hook_for_test(std::function<void()> hook) {
        build_hook_for_test_ = std::move(hook);
    }
    // Descriptor sets live as long as the context (the engine builds them once per model).
    VkDescriptorSet make_set(const Kernel& k, std::span<const BufferRange> buffers);

    // Command buffers. begin() records into the context's one-time buffer; submit_and_wait ends,
    // submits and waits for it.
    VkCommandBuffer begin();
    void submit_and_wait(VkCommandBuffer cmd);
    // A command buffer that keeps its commands, to be submitted again and again: a decode step
    // records the same commands every token (only buffer contents change), so it records them once
    // (docs/decisions/0015-decode-resubmits-recorded-command-buffer.md). Freed with the context.
    VkCommandBuffer create_reusable_command_buffer();
    void begin_reusable(VkCommandBuffer cmd);  // resets it and starts recording
    void end(VkCommandBuffer cmd);
    void submit_recorded_and_wait(VkCommandBuffer cmd);  // an ended buffer, as often as wanted
    void dispatch(VkCommandBuffer cmd, const Kernel& k, VkDescriptorSet set, const void* push, uint32_t gx,
                  uint32_t gy = 1, uint32_t gz = 1);
    // Full compute->compute (and compute->host) memory barrier: later dispatches see earlier writes.
    void barrier(VkCommandBuffer cmd);

    // Timestamp queries (per-op GPU timing). begin_timing resets; mark() writes a timestamp.
    bool timestamps_supported() const { return timestamp_period_ns_ > 0; }
    // A shader may read the device clock (VK_KHR_shader_clock's shaderDeviceClock, enabled when the
    // device has it): the fused decode layer's profiled variant times its ops with it.
    bool shader_device_clock() const { return shader_device_clock_; }
    void begin_timing(VkCommandBuffer cmd);
    void mark(VkCommandBuffer cmd, uint32_t label);
    // After submit_and_wait: (label, ns since previous mark) per mark.
    std::vector<std::pair<uint32_t, double>> read_timing();

    // Pipeline cache statistics (for start-up reports).
    bool pipeline_cache_loaded() const { return pipeline_cache_loaded_; }
    const std::string& pipeline_cache_path() const { return pipeline_cache_path_; }
    void save_pipeline_cache();

private:
    void create_instance(const ContextOptions& o);
    void pick_device(const ContextOptions& o);
    void create_device();
    void load_pipeline_cache(const std::string& dir);
    uint32_t find_memory_type(uint32_t bits, MemoryUse use, bool* coherent) const;

    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    std::function<void(const std::string&)> on_validation_;
    VkPhysicalDevice phys_ = VK_NULL_HANDLE;
    VkPhysicalDeviceProperties props_{};
    VkPhysicalDeviceMemoryProperties mem_props_{};
    DeviceInfo info_;
    bool unified_memory_ = false;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    std::vector<VkDescriptorPool> desc_pools_;
    // Texel views made by make_set, shared by every set that binds the same range the same way and
    // destroyed with their buffer. Key: (buffer, offset, range, format).
    std::map<std::tuple<VkBuffer, VkDeviceSize, VkDeviceSize, VkFormat>, VkBufferView> views_;
    VkBufferView texel_view(const BufferRange& br, VkDeviceSize range, VkFormat format);
    VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
    std::string pipeline_cache_path_;
    bool pipeline_cache_loaded_ = false;
    std::unique_ptr<Kernel> build_kernel(const KernelSpec& spec);  // thread-safe: touches no map
    void destroy_kernel(Kernel& k);
    std::function<void()> build_hook_for_test_;
    std::map<std::pair<uint32_t, std::vector<uint32_t>>, std::unique_ptr<Kernel>> kernels_;
    std::mutex kernels_mutex_;
    std::atomic<uint64_t> bytes_allocated_{0};
    // timing
    VkQueryPool query_pool_ = VK_NULL_HANDLE;
    uint32_t query_capacity_ = 0;
    std::vector<uint32_t> query_labels_;
    double timestamp_period_ns_ = 0;
    uint64_t timestamp_mask_ = ~0ull;
    bool shader_device_clock_ = false;
};

}  // namespace lantern::vk
