#include "json.h"

#include <limits>

namespace lantern::server {

namespace {

// nlohmann's messages start "[json.exception.parse_error.101] parse error at line 1, column 4: ";
// the client gets what follows (the byte offset is added from the exception).
std::string describe(const Json::exception& e) {
    std::string what = e.what();
    if (const size_t bracket = what.find("] ");
        what.rfind("[json.exception.", 0) == 0 && bracket != std::string::npos)
        what.erase(0, bracket + 2);
    if (what.rfind("parse error", 0) == 0)
        if (const size_t colon = what.find(": "); colon != std::string::npos) what.erase(0, colon + 2);
    // "; last read: '<token>'" would echo up to a whole body (and its invalid bytes) back to the
    // client: the byte offset says where.
    if (const size_t echo = what.find("; last read: '"); echo != std::string::npos) {
        const size_t expected = what.rfind("'; expected ");
        what = what.substr(0, echo) +
               (expected != std::string::npos && expected > echo ? what.substr(expected + 1) : "");
    }
    return what;
}

}  // namespace

Json parse_json(std::string_view text) {
    size_t values = 0;
    // The callback sees every value as it is read, before the document holds it: refusing there
    // bounds both the parser's stack and the memory a hostile body can make the server allocate.
    const Json::parser_callback_t limits = [&values](int depth, Json::parse_event_t event, Json&) {
        if (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) {
            if (depth >= kJsonMaxDepth)
                throw JsonError("invalid JSON: nesting deeper than " + std::to_string(kJsonMaxDepth) +
                                " levels");
        } else if (event != Json::parse_event_t::value) {
            return true;
        }
        if (++values > kJsonMaxValues)
            throw JsonError("invalid JSON: more than " + std::to_string(kJsonMaxValues) + " values");
        return true;
    };
    try {
        return Json::parse(text.begin(), text.end(), limits, /*allow_exceptions=*/true,
                           /*ignore_comments=*/false);
    } catch (const Json::parse_error& e) {
        // e.byte counts from 1 (0 when nothing was read): report the offset of the byte at fault.
        throw JsonError("invalid JSON: " + describe(e) + " at byte " +
                        std::to_string(e.byte ? e.byte - 1 : 0));
    } catch (const Json::exception& e) {  // out_of_range: a number too large for a double
        throw JsonError("invalid JSON: " + describe(e));
    }
}

std::string dump_json(const Json& value) {
    return value.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

std::string json_quote(std::string_view text) {
    return dump_json(Json(text));
}

const Json* json_find(const Json& value, std::string_view key) {
    if (!value.is_object()) return nullptr;
    const auto it = value.find(key);
    return it == value.end() ? nullptr : &*it;
}

std::optional<int64_t> json_integer(const Json& value) {
    if (value.is_number_unsigned()) {
        const uint64_t u = value.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
        return static_cast<int64_t>(u);
    }
    if (value.is_number_integer()) return value.get<int64_t>();
    return std::nullopt;
}

}  // namespace lantern::server
