// lantern/chat.h — one conversation with a loaded model: chat template, prefix-cache reuse across
// turns, the sampler chain with live settings, stop strings, context-full policy and honest timings.
//
// This is what the app's inference worker and `lantern-cli --chat` drive. One ChatSession owns one
// engine sequence at a time. respond() blocks until the turn ends; call it from a worker thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "lantern/sampling.h"
#include "lantern/stop_reason.h"

namespace lantern {

class ChatTemplate;

struct ChatTurn {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

enum class ContextPolicy {
    Stop,             // a turn that does not fit ends with StopReason::ContextFull
    DropOldestTurns,  // drop the oldest user/assistant pairs (the system prompt stays), say so
};

struct TokenCandidate {
    int32_t token = 0;
    std::string piece;
    float probability = 0;
};

// One generated token as the UI sees it. text may be empty (an incomplete UTF-8 sequence or text
// held back because it could be the start of a stop string). At the end of a turn, text that was
// held back and turned out to be ordinary is delivered in a last event with token == -1.
struct TokenEvent {
    int32_t token = 0;
    std::string text;
    std::vector<TokenCandidate> candidates;  // when settings.n_probs > 0
    double step_ms = 0;                      // wall time of its step (for the first token, the prompt's)
    uint32_t position = 0;                   // its position in the sequence
};

struct TurnStats {
    uint32_t prompt_tokens = 0;    // tokens of the whole rendered conversation
    uint32_t reused_tokens = 0;    // from the KV prefix cache / previous turn
    uint32_t computed_tokens = 0;  // prompt tokens actually run through the model
    uint32_t generated_tokens = 0;
    double ttft_ms = 0;  // from respond() call to the first token
    double prefill_ms = 0, decode_ms = 0;
    double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
    StopReason stop_reason = StopReason::None;
    uint64_t seed = 0;           // the seed actually used
    uint32_t dropped_turns = 0;  // turns removed by DropOldestTurns
    // After a turn that wrote its reply: whether continue_reply() has room for more of it as the
    // conversation stands, and whether it would have once the oldest turns are dropped
    // (DropOldestTurns), so that a front end offers Continue only when it can write something.
    bool can_continue = false;
    bool can_continue_dropping = false;
    // A turn that did not start — no room in the context (ContextFull) or stopped
    // during its prompt (User) — changed nothing: no token, respond() does not keep the user text
    // and no turn is dropped. Front ends undo what they showed for it. On ContextFull,
    // prompt_tokens is the shortest prompt the policy allowed and would_fit_dropping whether
    // DropOldestTurns would have made room (so a front end can say which of its choices helps).
    bool changed_nothing = false;
    bool would_fit_dropping = false;
    // The chat template rendered the earlier conversation differently this turn (Qwen3's and
    // DeepSeek-R1's leave out earlier replies' reasoning): what the sequence held before the
    // turn was not the start of this prompt, so only its first `prefix_break_at` tokens (where
    // they first differ) could be kept and the rest was computed again.
    bool template_broke_prefix = false;
    uint32_t prefix_break_at = 0;
};

// What a message would make of the conversation if it were sent now (ChatSession::measure), so
// that a front end can say before sending whether it fits.
struct MessageFit {
    uint32_t message_tokens = 0;  // the text alone, as the tokenizer splits it
    uint32_t prompt_tokens = 0;   // the whole prompt of its turn, without the turns it would leave out
    uint32_t context = 0;         // the context's length
    uint32_t dropped_turns = 0;   // earlier messages its turn would leave out (DropOldestTurns)
    bool fits = false;            // under the session's context policy, with room for a reply
    bool fits_dropping = false;   // once the oldest turns go (the same as fits under DropOldestTurns)
};

class ChatSession {
public:
    explicit ChatSession(Engine& engine);
    ~ChatSession();

    void set_system_prompt(const std::string& text);
    // Told while a turn's prompt is computed, after each chunk but the last: `done` of the
    // `total` prompt tokens it computes (Engine::prefill's progress), so that a front end can show
    // how far a long prompt is. A turn's `stop` is polled there too: a turn stopped during its
    // prompt ends with StopReason::User and no token, and changes nothing (as a turn that
    // cannot fit: respond() does not keep the user text); what was computed stays in the KV.
    void set_prompt_progress(std::function<void(uint32_t done, uint32_t total)> on_progress);
    void set_context_policy(ContextPolicy policy);
    // Runs each decode step of a reply (the item: the session's sequence, one token) and returns
    // its logits. By default Engine::step with that item alone; a host serving other sequences
    // on the same engine passes one that runs the item in a step shared with theirs (the desktop
    // app: ApiServer::serve_once_beside), so that they advance together. Empty: the default.
    using DecodeStep = std::function<std::vector<float>(const StepItem& item)>;
    void set_decode_step(DecodeStep step);
    // Base models (no chat template in the GGUF) run in completion mode: the user text is
    // continued directly. True when the model has a recognised chat template.
    bool has_chat_template() const;
    std::string template_name() const;  // the template's family ("chatml", "completion", ...)
    // The renderer: the model's own Jinja template, or a native family and why (chat_template.h).
    const ChatTemplate& chat_template() const;
    // Models whose template takes enable_thinking (Qwen3): whether the next turns' prompts let the
    // model reason first (on, the default) or tell it to answer at once. Applies from the next turn.
    bool has_thinking_switch() const;
    void set_thinking(bool on);

    // Runs one assistant turn. Reads `settings` at every step (changes apply from the next token).
    // on_token returns false to stop. `stop` is also polled between steps.
    TurnStats respond(const std::string& user_text, const SettingsSlot& settings,
                      const std::function<bool(const TokenEvent&)>& on_token,
                      const std::atomic<bool>* stop = nullptr);
    // Generates a different assistant reply to the last user turn (forks the prefix); when the
    // conversation ends with the user's turn (a regenerate that was stopped during its prompt, or
    // had no room), the reply it lacks.
    TurnStats regenerate(const SettingsSlot& settings, const std::function<bool(const TokenEvent&)>& on_token,
                         const std::atomic<bool>* stop = nullptr);
    // Writes more of the last assistant reply, from where it stopped (a token limit, Stop, or a
    // reply reopened from disk): the events carry only the new text, the reply in history() grows,
    // and the next turn's prompt is what it would be had the reply been written in one go.
    TurnStats continue_reply(const SettingsSlot& settings,
                             const std::function<bool(const TokenEvent&)>& on_token,
                             const std::atomic<bool>* stop = nullptr);

    // The turn respond(user_text) would run, worked out and not run (the same dry run respond()
    // starts with: rendering and tokenizing the conversation, no model step). `keep_messages`:
    // how many of history()'s messages stay before it (an edited message replaces the rest);
    // all of them by default.
    MessageFit measure(const std::string& user_text, size_t keep_messages = SIZE_MAX) const;

    // Whether continue_reply() has room for more of the last reply as the conversation stands,
    // and once the oldest turns are dropped — what the turn that wrote it said in TurnStats
    // (can_continue, can_continue_dropping), worked out again (a dry run, as measure() is) for a
    // conversation restored since or a context of another length. Both false without a last reply.
    struct ContinueRoom {
        bool fits = false;
        bool fits_dropping = false;
    };
    ContinueRoom continue_room() const;

    const std::vector<ChatTurn>& history() const;
    void reset();  // forget the conversation (cached KV blocks stay reusable)
    // Replaces the conversation with `turns` ("user"/"assistant"; other roles are ignored — the
    // system prompt is set apart), e.g. a conversation reopened from disk. Nothing is computed
    // now: the next respond() renders the whole history, and the prefix cache supplies whatever
    // an earlier sequence already computed.
    void restore(const std::vector<ChatTurn>& turns);
    SequenceId sequence() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lantern
