#include "vulkan/pipeline_cache.h"

#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace lantern::vk {
namespace {

constexpr char kMagic[8] = {'L', 'N', 'T', 'N', 'P', 'C', 'v', '1'};

struct FileHeader {
    char magic[8];
    uint32_t header_bytes;
    uint32_t vendor_id;
    uint32_t device_id;
    uint32_t driver_version;
    uint8_t cache_uuid[VK_UUID_SIZE];
    uint64_t blob_bytes;
    uint64_t blob_hash;
};

uint64_t fnv1a(const uint8_t* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

FileHeader expected_header(const VkPhysicalDeviceProperties& props) {
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.header_bytes = sizeof(FileHeader);
    h.vendor_id = props.vendorID;
    h.device_id = props.deviceID;
    h.driver_version = props.driverVersion;
    std::memcpy(h.cache_uuid, props.pipelineCacheUUID, VK_UUID_SIZE);
    return h;
}

}  // namespace

std::string pipeline_cache_file_name(const VkPhysicalDeviceProperties& props) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "pipelines-%04x-%04x-%08x.bin", props.vendorID, props.deviceID,
                  props.driverVersion);
    return buf;
}

std::vector<uint8_t> read_pipeline_cache(const std::string& path, const VkPhysicalDeviceProperties& props) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    FileHeader h{};
    if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return {};
    FileHeader want = expected_header(props);
    if (std::memcmp(h.magic, want.magic, sizeof h.magic) != 0 || h.header_bytes != want.header_bytes ||
        h.vendor_id != want.vendor_id || h.device_id != want.device_id ||
        h.driver_version != want.driver_version ||
        std::memcmp(h.cache_uuid, want.cache_uuid, VK_UUID_SIZE) != 0)
        return {};
    // Size sanity before allocating: the blob must be exactly the rest of the file.
    std::error_code ec;
    auto file_size = std::filesystem::file_size(path, ec);
    if (ec || file_size != sizeof h + h.blob_bytes || h.blob_bytes < 32) return {};
    std::vector<uint8_t> blob(h.blob_bytes);
    if (!in.read(reinterpret_cast<char*>(blob.data()), static_cast<std::streamsize>(blob.size()))) return {};
    if (fnv1a(blob.data(), blob.size()) != h.blob_hash) return {};
    // The driver's own header (VkPipelineCacheHeaderVersionOne) must agree too.
    uint32_t len, version, vendor, device;
    std::memcpy(&len, blob.data(), 4);
    std::memcpy(&version, blob.data() + 4, 4);
    std::memcpy(&vendor, blob.data() + 8, 4);
    std::memcpy(&device, blob.data() + 12, 4);
    if (len < 32 || version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || vendor != props.vendorID ||
        device != props.deviceID || std::memcmp(blob.data() + 16, props.pipelineCacheUUID, VK_UUID_SIZE) != 0)
        return {};
    return blob;
}

bool write_pipeline_cache(const std::string& path, const VkPhysicalDeviceProperties& props,
                          const std::vector<uint8_t>& blob) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    FileHeader h = expected_header(props);
    h.blob_bytes = blob.size();
    h.blob_hash = fnv1a(blob.data(), blob.size());
    std::string tmp = path + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) return false;
        out.write(reinterpret_cast<const char*>(&h), sizeof h);
        out.write(reinterpret_cast<const char*>(blob.data()), static_cast<std::streamsize>(blob.size()));
        out.flush();
        if (!out) {
            std::filesystem::remove(tmp, ec);
            return false;
        }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) std::filesystem::remove(tmp, ec);
    return !ec;
}

}  // namespace lantern::vk
