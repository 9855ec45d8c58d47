// ChatSession: one conversation over one engine sequence. Each turn renders the whole
// conversation with the model's chat template; because the template guarantees that turn N's
// prompt plus the reply is a prefix of turn N+1's prompt, only the new tokens are computed (the
// sequence keeps its KV), and after a reset or regenerate the KV prefix cache supplies the shared
// blocks.
#include "lantern/chat.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "lantern/chat_template.h"
#include "lantern/error.h"
#include "lantern/tokenizer.h"

namespace lantern {

namespace {
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

struct ChatSession::Impl {
    Engine& engine;
    ChatTemplate chat_template;  // the engine's, with this session's thinking switch
    std::string system_prompt;
    ContextPolicy policy = ContextPolicy::Stop;
    std::vector<ChatMessage> messages;  // user/assistant turns (system prompt kept apart)
    std::vector<ChatTurn> turns;        // the same, as returned by history()
    SequenceId seq = 0;
    bool has_seq = false;
    std::function<void(uint32_t, uint32_t)> on_prompt_progress;
    DecodeStep decode_step;
    // The sequence holds the last turn's prompt and reply, so the next prompt should start with
    // them (false after reset, restore, regenerate and dropped turns).
    bool expect_prefix = false;

    explicit Impl(Engine& e) : engine(e), chat_template(ChatTemplate::for_engine(e)) {}

    // The system prompt and the messages from `first` on (the ones before it dropped).
    std::vector<ChatMessage> conversation(const std::vector<ChatMessage>& of, size_t first = 0) const {
        std::vector<ChatMessage> all;
        if (!system_prompt.empty()) all.push_back({ChatRole::System, system_prompt, {}});
        all.insert(all.end(), of.begin() + static_cast<long>(first), of.end());
        return all;
    }

    // The prompt of a turn (`continuing`: more of the last reply) with the oldest turns left out
    // as far as `p` allows and the context needs. Changes nothing, so that a turn that cannot
    // start loses nothing, and so that the end of a turn can ask whether Continue would fit.
    // A new reply needs room to be useful, so the oldest turns go until it has some; a reply
    // being continued was asked for more, and any room at all will do once nothing more can go.
    static uint32_t reply_room(uint32_t ctx) { return std::min<uint32_t>(64, ctx / 4); }
    struct Fit {
        RenderedPrompt prompt;
        size_t dropped = 0;  // messages left out at the front
        bool fits = false;
    };
    Fit fit_prompt(bool continuing, ContextPolicy p) const { return fit_prompt_of(messages, continuing, p); }
    Fit fit_prompt_of(const std::vector<ChatMessage>& messages, bool continuing, ContextPolicy p) const {
        const Tokenizer& tok = engine.tokenizer();
        const uint32_t ctx = engine.context_length();
        Fit f;
        while (true) {
            const auto kept = conversation(messages, f.dropped);
            f.prompt = continuing ? chat_template.render_open_reply(tok, kept)
                                  : chat_template.render(tok, kept, true);
            const size_t n = f.prompt.tokens.size();
            if (n + reply_room(ctx) <= ctx) break;
            // The turn being answered (and a reply being continued) always stays.
            const size_t left = messages.size() - f.dropped;
            if (p != ContextPolicy::DropOldestTurns || left <= (continuing ? 2u : 1u)) {
                f.fits = continuing && n + 1 <= ctx;
                return f;
            }
            // Drop the oldest user turn and the assistant reply that answered it.
            const bool pair = left >= 2 && messages[f.dropped + 1].role == ChatRole::Assistant;
            f.dropped += pair ? 2 : 1;
        }
        f.fits = true;
        return f;
    }

    void rebuild_turns() {
        turns.clear();
        for (const auto& m : messages) turns.push_back({chat_role_name(m.role), m.content});
    }

    void drop_sequence() {
        if (has_seq) engine.free_sequence(seq);
        has_seq = false;
    }

    // Makes the sequence hold exactly the start of `prompt` it can keep, feeds the rest, and
    // returns the logits of the prompt's last token — none when `stop` was set while it ran (the
    // sequence then holds the part computed, a prefix of the prompt).
    std::vector<float> feed_prompt(const std::vector<int32_t>& prompt, TurnStats& stats,
                                   const std::atomic<bool>* stop) {
        const Engine::PrefillProgress progress = [&](uint32_t done, uint32_t total) {
            if (on_prompt_progress) on_prompt_progress(done, total);
            return !(stop && stop->load());
        };
        if (has_seq) {
            auto have = engine.sequence_tokens(seq);
            bool prefix = have.size() < prompt.size() && std::equal(have.begin(), have.end(), prompt.begin());
            if (!prefix && expect_prefix) {
                const auto diverge = std::mismatch(have.begin(), have.end(), prompt.begin(), prompt.end());
                stats.template_broke_prefix = true;
                stats.prefix_break_at = static_cast<uint32_t>(diverge.first - have.begin());
            }
            if (prefix) {
                std::span<const int32_t> rest(prompt.data() + have.size(), prompt.size() - have.size());
                auto logits = engine.prefill(seq, rest, progress);
                stats.reused_tokens = static_cast<uint32_t>(have.size());
                stats.computed_tokens = engine.sequence_length(seq) - stats.reused_tokens;
                return logits;
            }
        }
        // Start over on a fresh sequence: the prefix cache still supplies every full block that
        // an earlier sequence (this conversation's previous one included) computed. The old one
        // goes first, its full blocks into that cache, so a KV pool sized for one conversation
        // (the app's while its API server is off) has room for the new one.
        drop_sequence();
        SequenceId fresh = engine.create_sequence();
        try {
            auto logits = engine.prefill(fresh, prompt, progress);
            seq = fresh;
            has_seq = true;
            stats.reused_tokens = engine.last_reused_tokens();
            stats.computed_tokens = engine.sequence_length(seq) - stats.reused_tokens;
            return logits;
        } catch (...) {
            engine.free_sequence(fresh);
            throw;
        }
    }

    // One reply: a new one after the last user turn, or (`continuing`) more of the last reply,
    // which then grows in place.
    TurnStats run_turn(const SettingsSlot& slot, const std::function<bool(const TokenEvent&)>& on_token,
                       const std::atomic<bool>* stop, bool continuing = false) {
        const auto t0 = Clock::now();
        const Tokenizer& tok = engine.tokenizer();
        TurnStats stats;
        const uint32_t ctx = engine.context_length();
        Fit fit = fit_prompt(continuing, policy);
        if (!fit.fits) {
            stats.prompt_tokens = static_cast<uint32_t>(fit.prompt.tokens.size());
            stats.stop_reason = StopReason::ContextFull;
            stats.changed_nothing = true;
            stats.would_fit_dropping =
                policy == ContextPolicy::Stop && fit_prompt(continuing, ContextPolicy::DropOldestTurns).fits;
            return stats;
        }
        RenderedPrompt prompt = std::move(fit.prompt);
        stats.prompt_tokens = static_cast<uint32_t>(prompt.tokens.size());
        if (fit.dropped > 0) expect_prefix = false;  // the front of the conversation changed on purpose

        auto settings = slot.load();
        stats.seed = settings->seed ? *settings->seed : Sampler::random_seed();
        Sampler sampler(stats.seed);
        auto stop_ids = chat_template.stop_tokens(tok);
        sampler.set_eos_tokens(stop_ids);
        StopStringMatcher matcher(settings->stop);
        // A continued reply goes on from text already shown: no dummy-prefix space to drop.
        StreamingDetokenizer detok(tok, !(continuing && !messages.back().content.empty()));

        const auto t_prefill = Clock::now();
        std::vector<float> logits = feed_prompt(prompt.tokens, stats, stop);
        const auto t_prefill_end = Clock::now();
        stats.prefill_ms = ms_between(t_prefill, t_prefill_end);
        stats.prefill_tokens_per_s =
            stats.computed_tokens ? stats.computed_tokens / (stats.prefill_ms / 1e3) : 0;
        if (logits.empty()) {       // stopped during the prompt: no reply, nothing changed
            expect_prefix = false;  // the sequence holds part of a prompt that may not come back
            stats.stop_reason = StopReason::User;
            stats.changed_nothing = true;
            return stats;
        }
        // The turns left out of the prompt leave the conversation only now that the prompt is in
        // (a turn stopped or failed before that keeps them).
        if (fit.dropped > 0) {
            messages.erase(messages.begin(), messages.begin() + static_cast<long>(fit.dropped));
            stats.dropped_turns = static_cast<uint32_t>(fit.dropped);
            rebuild_turns();
        }

        std::vector<int32_t> reply;
        std::string reply_text;
        auto t_step =
            t_prefill;  // the first token's step is the prompt's (it was timed as sampling only, ~2 ms)
        double decode_ms = 0;
        while (true) {
            settings = slot.load();  // live settings: a change applies from this token on
            auto recent = engine.sequence_tokens(seq);
            Sample s = sampler.sample(logits, *settings, recent);
            const auto t_sampled = Clock::now();
            if (stats.generated_tokens == 0) stats.ttft_ms = ms_between(t0, t_sampled);
            bool is_stop = std::find(stop_ids.begin(), stop_ids.end(), s.token) != stop_ids.end();
            if (is_stop && !settings->ignore_eos) {
                stats.stop_reason = StopReason::EndOfText;
                break;
            }
            reply.push_back(s.token);
            ++stats.generated_tokens;
            auto shown = matcher.feed(detok.push(s.token));
            reply_text += shown.text;
            TokenEvent ev;
            ev.token = s.token;
            ev.text = shown.text;
            ev.step_ms = ms_between(t_step, t_sampled);
            ev.position = engine.sequence_length(seq);
            for (const auto& c : s.candidates)
                ev.candidates.push_back({c.id, tok.display_piece(c.id), c.probability});
            bool go_on = on_token(ev);
            if (shown.stopped) {
                stats.stop_reason = StopReason::StopString;
                break;
            }
            if (!go_on || (stop && stop->load())) {
                stats.stop_reason = StopReason::User;
                break;
            }
            if (settings->max_new_tokens > 0 &&
                stats.generated_tokens >= static_cast<uint32_t>(settings->max_new_tokens)) {
                stats.stop_reason = StopReason::MaxTokens;
                break;
            }
            if (engine.sequence_length(seq) + 1 > ctx) {
                stats.stop_reason = StopReason::ContextFull;
                break;
            }
            t_step = Clock::now();
            StepItem item{seq, {s.token}, true, false};
            logits = decode_step ? decode_step(item)
                                 : std::move(engine.step(std::span<const StepItem>(&item, 1))[0]);
            decode_ms += ms_between(t_step, Clock::now());
        }
        if (!matcher.stopped()) {
            std::string tail = matcher.feed(detok.flush()).text;
            tail += matcher.flush();
            if (!tail.empty()) {
                reply_text += tail;
                TokenEvent ev;
                ev.token = -1;
                ev.text = tail;
                on_token(ev);
            }
        }
        stats.decode_ms = decode_ms;
        uint32_t decoded =
            stats.generated_tokens > 0 ? stats.generated_tokens - 1 : 0;  // steps after the first token
        stats.decode_tokens_per_s = decode_ms > 0 ? decoded / (decode_ms / 1e3) : 0;
        if (continuing) {
            // The reply's ids as the sequence holds them (those of its text when it had none),
            // then the new ones: the next prompt goes on from exactly these.
            ChatMessage& open = messages.back();
            open.tokens.assign(prompt.tokens.begin() + static_cast<long>(prompt.open_reply_start),
                               prompt.tokens.end());
            open.tokens.insert(open.tokens.end(), reply.begin(), reply.end());
            open.content += reply_text;
        } else {
            messages.push_back({ChatRole::Assistant, reply_text, reply});
        }
        rebuild_turns();
        expect_prefix = true;
        // Whether Continue has room. Its prompt is the sequence plus the reply's last token (the
        // open reply keeps the ids the sequence holds), so with room to spare that is certain; near
        // the end a dry run of the fit decides (a render and tokenization of the conversation,
        // a few ms per 1000 tokens, not worth paying after every turn).
        const uint32_t held = has_seq ? engine.sequence_length(seq) : 0;
        if (has_seq && held + 1 + reply_room(ctx) + 16 <= ctx) {
            stats.can_continue = stats.can_continue_dropping = true;
        } else {
            try {
                stats.can_continue = fit_prompt(true, ContextPolicy::Stop).fits;
                stats.can_continue_dropping =
                    stats.can_continue || fit_prompt(true, ContextPolicy::DropOldestTurns).fits;
            } catch (const Error&) {
                stats.can_continue = stats.can_continue_dropping = false;  // a template refusing it
            }
        }
        return stats;
    }
};

ChatSession::ChatSession(Engine& engine) : impl_(std::make_unique<Impl>(engine)) {}
ChatSession::~ChatSession() {
    try {
        impl_->drop_sequence();
    } catch (...) {
        // A lost device cannot free anything; the engine is being torn down anyway.
    }
}

void ChatSession::set_system_prompt(const std::string& text) {
    impl_->system_prompt = text;
}
void ChatSession::set_thinking(bool on) {
    impl_->chat_template.set_thinking(on);
}
bool ChatSession::has_thinking_switch() const {
    return impl_->chat_template.has_thinking_switch();
}
void ChatSession::set_context_policy(ContextPolicy policy) {
    impl_->policy = policy;
}
void ChatSession::set_decode_step(DecodeStep step) {
    impl_->decode_step = std::move(step);
}
void ChatSession::set_prompt_progress(std::function<void(uint32_t, uint32_t)> on_progress) {
    impl_->on_prompt_progress = std::move(on_progress);
}
bool ChatSession::has_chat_template() const {
    return impl_->chat_template.renders_chat();
}
const ChatTemplate& ChatSession::chat_template() const {
    return impl_->chat_template;
}
std::string ChatSession::template_name() const {
    return chat_format_name(impl_->chat_template.format());
}

TurnStats ChatSession::respond(const std::string& user_text, const SettingsSlot& settings,
                               const std::function<bool(const TokenEvent&)>& on_token,
                               const std::atomic<bool>* stop) {
    impl_->messages.push_back({ChatRole::User, user_text, {}});
    impl_->rebuild_turns();
    TurnStats stats;
    try {
        stats = impl_->run_turn(settings, on_token, stop);
    } catch (...) {
        // A turn that failed before its reply (a template that refuses the conversation, a lost
        // device) leaves the conversation as it was; the caller still has the text.
        if (!impl_->messages.empty() && impl_->messages.back().role == ChatRole::User) {
            impl_->messages.pop_back();
            impl_->rebuild_turns();
        }
        throw;
    }
    if (stats.changed_nothing) {  // the conversation stays as it was (the caller still has the text)
        impl_->messages.pop_back();
        impl_->rebuild_turns();
    }
    return stats;
}

TurnStats ChatSession::regenerate(const SettingsSlot& settings,
                                  const std::function<bool(const TokenEvent&)>& on_token,
                                  const std::atomic<bool>* stop) {
    auto& m = impl_->messages;
    if (m.empty()) throw Error(ErrorCode::InvalidArgument, "there is no assistant reply to regenerate");
    // (A conversation that ends with the user's turn — a regenerate stopped during its prompt or
    // without room — gets its reply written now.)
    std::optional<ChatMessage> replaced;
    if (m.back().role == ChatRole::Assistant) {
        replaced = std::move(m.back());
        m.pop_back();
    }
    impl_->rebuild_turns();
    impl_->expect_prefix = false;  // the sequence holds the reply being replaced
    try {
        return impl_->run_turn(settings, on_token, stop);
    } catch (...) {
        // The reply being replaced stays when no new one was written.
        if (replaced && !m.empty() && m.back().role == ChatRole::User) {
            m.push_back(std::move(*replaced));
            impl_->rebuild_turns();
        }
        throw;
    }
}

TurnStats ChatSession::continue_reply(const SettingsSlot& settings,
                                      const std::function<bool(const TokenEvent&)>& on_token,
                                      const std::atomic<bool>* stop) {
    const auto& m = impl_->messages;
    if (m.empty() || m.back().role != ChatRole::Assistant)
        throw Error(ErrorCode::InvalidArgument, "there is no assistant reply to continue");
    return impl_->run_turn(settings, on_token, stop, true);
}

MessageFit ChatSession::measure(const std::string& user_text, size_t keep_messages) const {
    const auto& m = impl_->messages;
    std::vector<ChatMessage> with(m.begin(),
                                  m.begin() + static_cast<long>(std::min(keep_messages, m.size())));
    with.push_back({ChatRole::User, user_text, {}});
    MessageFit out;
    out.message_tokens = static_cast<uint32_t>(impl_->engine.tokenizer().encode(user_text, false).size());
    out.context = impl_->engine.context_length();
    const Impl::Fit fit = impl_->fit_prompt_of(with, false, impl_->policy);
    out.prompt_tokens = static_cast<uint32_t>(fit.prompt.tokens.size());
    out.dropped_turns = static_cast<uint32_t>(fit.dropped);
    out.fits = fit.fits;
    out.fits_dropping = fit.fits || (impl_->policy == ContextPolicy::Stop &&
                                     impl_->fit_prompt_of(with, false, ContextPolicy::DropOldestTurns).fits);
    return out;
}

ChatSession::ContinueRoom ChatSession::continue_room() const {
    ContinueRoom room;
    if (impl_->messages.empty() || impl_->messages.back().role != ChatRole::Assistant) return room;
    room.fits = impl_->fit_prompt(true, ContextPolicy::Stop).fits;
    room.fits_dropping = room.fits || impl_->fit_prompt(true, ContextPolicy::DropOldestTurns).fits;
    return room;
}

const std::vector<ChatTurn>& ChatSession::history() const {
    return impl_->turns;
}

void ChatSession::reset() {
    impl_->expect_prefix = false;
    impl_->messages.clear();
    impl_->turns.clear();
    impl_->drop_sequence();
}

void ChatSession::restore(const std::vector<ChatTurn>& turns) {
    impl_->messages.clear();
    for (const auto& t : turns) {
        if (t.role == "user")
            impl_->messages.push_back({ChatRole::User, t.content, {}});
        else if (t.role == "assistant")
            impl_->messages.push_back({ChatRole::Assistant, t.content, {}});
    }
    impl_->rebuild_turns();
    impl_->drop_sequence();
    impl_->expect_prefix = false;
}

SequenceId ChatSession::sequence() const {
    return impl_->seq;
}

}  // namespace lantern
