// lantern/stop_reason.h — why a reply ended, for a chat turn (ChatSession) and a scheduled
// request (Scheduler) alike. The names are stable: reply details stored by the app and the CLI's
// statistics line carry them; the OpenAI layer maps them to its finish_reason.
#pragma once
#include <optional>
#include <string_view>

namespace lantern {

enum class StopReason {
    None,         // still running, or not started
    EndOfText,    // the model wrote an end-of-generation token        "eos"
    StopString,   // a stop string appeared in the text                 "stop_string"
    MaxTokens,    // the reply reached its token limit                  "max_tokens"
    User,         // stopped by the user (or the prompt was abandoned)  "user"
    ContextFull,  // no room left in the context (or the KV cache)      "context_full"
    Cancelled,    // a scheduled request cancelled by its client        "cancelled"
};

// "eos", "stop_string", ...; "" for None.
std::string_view stop_reason_name(StopReason reason);
// The reverse, for names read back from storage; nullopt for an unknown name.
std::optional<StopReason> stop_reason_from_name(std::string_view name);

}  // namespace lantern
