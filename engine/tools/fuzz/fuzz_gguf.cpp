// libFuzzer target for the GGUF reader. scripts/fuzz builds every target (clang-15,
// -DLANTERN_FUZZ=ON, build/fuzz) and runs each for a bounded time from seeds (here: the shared
// models); one alone: build/fuzz/engine/tools/fuzz_gguf -max_total_time=60 build/fuzz/seeds/gguf
//
// Any input must either parse or raise lantern::Error(InvalidModelFile); everything else (a crash,
// a sanitizer report, an out-of-memory, a timeout, another exception type) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "lantern/error.h"
#include "lantern/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto file = lantern::GgufFile::from_memory(std::span<const uint8_t>(data, size), "fuzz");
        // Walk what a loader walks: typed getters on every key, every tensor's data view.
        uint64_t sink = file->alignment() + file->version();
        for (const auto& [key, value] : file->metadata()) {
            if (auto i = value.as_int()) sink += static_cast<uint64_t>(*i);
            if (auto d = value.as_float()) sink += *d > 0 ? 1 : 0;
            if (const auto* s = value.as_string()) sink += s->size();
            if (const auto* a = value.as_array()) {
                sink += a->items.size();
                try {
                    sink += file->get_string_array(key).size();
                } catch (const lantern::Error&) {
                }
                try {
                    sink += file->get_int_array(key).size();
                } catch (const lantern::Error&) {
                }
                try {
                    sink += file->get_float_array(key).size();
                } catch (const lantern::Error&) {
                }
            }
        }
        for (const auto& t : file->tensors()) {
            auto bytes = file->tensor_data(t);
            if (bytes.size() != t.size_bytes || file->find_tensor(t.name) != &t) std::abort();
            if (!bytes.empty()) sink += bytes.front() + bytes.back();
        }
        volatile uint64_t keep = sink;
        (void)keep;
    } catch (const lantern::Error& e) {
        if (e.code() != lantern::ErrorCode::InvalidModelFile) std::abort();
    }
    return 0;
}
