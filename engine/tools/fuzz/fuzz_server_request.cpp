// libFuzzer target for what the API server reads from the network (scripts/fuzz builds and runs
// it, as fuzz_gguf.cpp says).
//
// Each input is split at its first byte: the HTTP request parser gets it all, the JSON parser its
// body (what parse_http_request found, else the bytes after the first). Any input must parse, be
// refused with a status (HTTP), or raise JsonError (JSON), and parsed JSON must write back to text
// that parses to the same text; anything else (a crash, a sanitizer report, a hang, another
// exception, a round trip that differs) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "http.h"
#include "json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    lantern::server::HttpLimits limits;
    limits.max_header_bytes = 1024;
    limits.max_body_bytes = 4096;
    // A per-path limit, as the server's (useful_body_bytes): asked with the head only.
    limits.body_limit = [](const lantern::server::HttpRequest& head) { return head.path().size() * 256; };
    const auto request = lantern::server::parse_http_request(bytes, limits);
    if (request.state == lantern::server::HttpParse::State::Bad &&
        (request.status < 400 || request.message.empty()))
        std::abort();
    if (request.state == lantern::server::HttpParse::State::Complete && request.consumed > size) std::abort();
    const std::string_view body = request.state == lantern::server::HttpParse::State::Complete
                                      ? std::string_view(request.request.body)
                                      : bytes.substr(size > 0 ? 1 : 0);
    try {
        const auto json = lantern::server::parse_json(body);
        const std::string text = lantern::server::dump_json(json);
        if (lantern::server::dump_json(lantern::server::parse_json(text)) != text) std::abort();
    } catch (const lantern::server::JsonError&) {
    }
    return 0;
}
