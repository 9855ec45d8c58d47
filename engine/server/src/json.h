// JSON for the API server, on nlohmann/json (Debian's nlohmann-json3-dev, header only; what
// llama-server uses). The value type is nlohmann::ordered_json, so members are written in the order
// they were set. What a server that reads bodies from the network needs on top of the library:
//
// - parse_json: strict RFC 8259 (no comments, valid UTF-8, no lone surrogates), at most
//   kJsonMaxDepth levels of nesting and kJsonMaxValues values, one error type (JsonError) whose
//   message says what was wrong and at which byte. Numbers are read and written with a '.' whatever
//   the process's locale (the library's own reader and writer).
// - dump_json: compact text that is always valid JSON: bytes that are not UTF-8 (a model can emit
//   anything) are written as U+FFFD, numbers that are not finite as null.
// Thread: all functions are reentrant.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lantern::server {

using Json = nlohmann::ordered_json;

class JsonError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

inline constexpr int kJsonMaxDepth = 64;
// Values one document may hold (parse throws past it): a request's token ids and logit_bias entries
// fit many times over, and the parsed document stays under ~10 MB.
inline constexpr size_t kJsonMaxValues = 256 * 1024;

// Exactly one JSON value (whitespace around it allowed). Throws JsonError("invalid JSON: ...").
Json parse_json(std::string_view text);
std::string dump_json(const Json& value);
// `text` as a JSON string literal, quotes included (what dump_json writes for a string).
std::string json_quote(std::string_view text);

// The member `key` of an object; nullptr when absent or when `value` is not an object.
const Json* json_find(const Json& value, std::string_view key);
// The number as an int64 when it was written as an integer (no fraction or exponent) and fits;
// nullopt for anything else, non-numbers included.
std::optional<int64_t> json_integer(const Json& value);
// The string of a string value (check is_string() first; throws nlohmann's type_error otherwise).
inline const std::string& json_string(const Json& value) {
    return value.get_ref<const std::string&>();
}

}  // namespace lantern::server
