#include "lantern/stop_reason.h"

#include <array>
#include <utility>

namespace lantern {

namespace {
constexpr std::array<std::pair<StopReason, std::string_view>, 7> kNames{{
    {StopReason::None, ""},
    {StopReason::EndOfText, "eos"},
    {StopReason::StopString, "stop_string"},
    {StopReason::MaxTokens, "max_tokens"},
    {StopReason::User, "user"},
    {StopReason::ContextFull, "context_full"},
    {StopReason::Cancelled, "cancelled"},
}};
}  // namespace

std::string_view stop_reason_name(StopReason reason) {
    for (const auto& [r, name] : kNames)
        if (r == reason) return name;
    return "";
}

std::optional<StopReason> stop_reason_from_name(std::string_view name) {
    for (const auto& [r, n] : kNames)
        if (n == name) return r;
    return std::nullopt;
}

}  // namespace lantern
