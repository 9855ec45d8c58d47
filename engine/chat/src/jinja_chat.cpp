#include "jinja_chat.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "lantern/error.h"
#include "lantern/tokenizer.h"

namespace lantern {

namespace {

constexpr uint32_t kFirstMessageTag = 2;

// Whether the text of message `index` appears in `out` (tagged as that message).
bool shows_message(const jinja::TaggedText& out, size_t index) {
    const uint32_t tag = kFirstMessageTag + static_cast<uint32_t>(index);
    return std::any_of(out.runs.begin(), out.runs.end(),
                       [&](const jinja::TaggedText::Run& r) { return r.tag == tag; });
}

// System text folded into the first user message, for templates without a system role.
std::vector<ChatMessage> fold_system(std::span<const ChatMessage> messages) {
    std::vector<ChatMessage> out;
    std::string pending;
    for (const ChatMessage& m : messages) {
        if (m.role == ChatRole::System) {
            if (!pending.empty()) pending += "\n\n";
            pending += m.content;
            continue;
        }
        if (m.role == ChatRole::User && !pending.empty()) {
            out.push_back({ChatRole::User, pending + "\n\n" + m.content, {}});
            pending.clear();
            continue;
        }
        out.push_back(m);
    }
    if (!pending.empty()) out.push_back({ChatRole::User, pending, {}});
    return out;
}

}  // namespace

JinjaChat::JinjaChat(std::string source)
    : source_(std::move(source)), template_(jinja::Template::parse(source_)) {
    thinking_switch_ = source_.find("enable_thinking") != std::string::npos;
    // Every user message must be shown, and a reply at least as the conversation's last message
    // (templates may rewrite earlier replies: Qwen3 and DeepSeek-R1 drop their reasoning).
    const std::vector<ChatMessage> plain = {
        {ChatRole::User, "Hello.", {}}, {ChatRole::Assistant, "Hi there.", {}}, {ChatRole::User, "Bye.", {}}};
    const jinja::TaggedText out = render_text(plain, true, true, "<s>", "</s>");
    for (const size_t i : {size_t{0}, size_t{2}}) {
        if (!shows_message(out, i))
            throw jinja::TemplateError("the template does not show the text of a user message", 0, 0);
    }
    const std::vector<ChatMessage> replied(plain.begin(), plain.begin() + 2);
    if (!shows_message(render_text(replied, false, true, "<s>", "</s>"), 1))
        throw jinja::TemplateError("the template does not show the text of an assistant reply", 0, 0);
    const std::vector<ChatMessage> with_system = {{ChatRole::System, "Be brief.", {}},
                                                  {ChatRole::User, "Hello.", {}}};
    try {
        system_role_ = shows_message(render_text(with_system, true, true, "<s>", "</s>"), 0);
    } catch (const jinja::TemplateError&) {
        system_role_ = false;  // "System role not supported"
    }
}

jinja::TaggedText JinjaChat::render_text(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                         bool thinking, const std::string& bos,
                                         const std::string& eos) const {
    std::vector<ChatMessage> folded;
    if (!system_role_) {
        folded = fold_system(messages);
        messages = folded;
    }
    jinja::Value list = jinja::Value::list();
    for (size_t i = 0; i < messages.size(); ++i) {
        jinja::Value m = jinja::Value::dict();
        m.set("role", jinja::Value(chat_role_name(messages[i].role), jinja::kData));
        m.set("content", jinja::Value(messages[i].content, kFirstMessageTag + static_cast<uint32_t>(i)));
        list.push_back(m);
    }
    jinja::Value ctx = jinja::Value::dict();
    ctx.set("messages", jinja::Value::list(list.items()));
    ctx.set("tools", jinja::Value::none());
    ctx.set("documents", jinja::Value::none());
    ctx.set("add_generation_prompt", jinja::Value(add_generation_prompt));
    ctx.set("bos_token", jinja::Value(bos, jinja::kTrusted));
    ctx.set("eos_token", jinja::Value(eos, jinja::kTrusted));
    if (thinking_switch_) ctx.set("enable_thinking", jinja::Value(thinking));
    return template_.render(ctx);
}

std::string JinjaChat::render_json(const nlohmann::ordered_json& messages,
                                   const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                   bool thinking, const std::string& bos, const std::string& eos) const {
    jinja::Value ctx = jinja::Value::dict();
    ctx.set("messages", jinja::Value::from_json(messages));
    ctx.set("tools", jinja::Value::from_json(tools));
    ctx.set("documents", jinja::Value::none());
    ctx.set("add_generation_prompt", jinja::Value(add_generation_prompt));
    ctx.set("bos_token", jinja::Value(bos, jinja::kTrusted));
    ctx.set("eos_token", jinja::Value(eos, jinja::kTrusted));
    if (thinking_switch_) ctx.set("enable_thinking", jinja::Value(thinking));
    return template_.render(ctx).text;
}

RenderedPrompt JinjaChat::render(const Tokenizer& tokenizer, std::span<const ChatMessage> all,
                                 bool add_generation_prompt, bool thinking, bool open_last_reply) const {
    std::span<const ChatMessage> messages = all;
    if (open_last_reply) {
        if (all.empty() || all.back().role != ChatRole::Assistant)
            throw Error(ErrorCode::InvalidArgument,
                        "there is no reply to continue: the conversation does not end with one");
        messages = all.first(all.size() - 1);
        add_generation_prompt = true;
    }
    std::vector<ChatMessage> folded;
    if (!system_role_) {
        folded = fold_system(messages);
        messages = folded;
    }
    const std::string bos = tokenizer.bos_id() >= 0 ? tokenizer.piece(tokenizer.bos_id()) : std::string();
    const std::string eos = tokenizer.eos_id() >= 0 ? tokenizer.piece(tokenizer.eos_id()) : std::string();
    jinja::TaggedText text;
    try {
        text = render_text(messages, add_generation_prompt, thinking, bos, eos);
    } catch (const jinja::TemplateError& e) {
        throw Error(ErrorCode::InvalidArgument,
                    std::string("the model's chat template refused this conversation: ") + e.what());
    }

    RenderedPrompt out;
    out.text = text.text;
    bool after_special = true;
    size_t fragment_start = 0;
    const auto flush = [&](size_t end) {
        if (end <= fragment_start) return;
        const std::string_view part =
            std::string_view(text.text).substr(fragment_start, end - fragment_start);
        // A text that starts the prompt or follows a special token gets sentencepiece's dummy-prefix
        // space, unless the template already put a space there (as the native renderer does).
        const auto ids = tokenizer.encode_fragment(part, after_special && !part.starts_with(' '));
        out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
        after_special = false;
    };
    for (size_t r = 0; r < text.runs.size(); ++r) {
        const size_t run_start = text.runs[r].start;
        const size_t run_end = r + 1 < text.runs.size() ? text.runs[r + 1].start : text.text.size();
        const uint32_t tag = text.runs[r].tag;
        if (tag >= kFirstMessageTag) {
            // A reply shown exactly as generated goes in by its own ids, as a fragment of its own.
            const ChatMessage& m = messages[tag - kFirstMessageTag];
            if (m.role == ChatRole::Assistant && !m.tokens.empty() &&
                std::string_view(text.text).substr(run_start, run_end - run_start) == m.content) {
                flush(run_start);
                out.tokens.insert(out.tokens.end(), m.tokens.begin(), m.tokens.end());
                after_special = false;
                fragment_start = run_end;
            }
            continue;
        }
        if (tag != jinja::kTrusted) continue;
        for (size_t i = run_start; i < run_end;) {
            const auto id = tokenizer.special_at(text.text, i);
            if (!id || !text.all_tagged(i, tokenizer.piece(*id).size(), jinja::kTrusted)) {
                ++i;
                continue;
            }
            flush(i);
            out.tokens.push_back(*id);
            after_special = true;
            i += tokenizer.piece(*id).size();
            fragment_start = i;
        }
    }
    flush(text.text.size());
    // llama.cpp drops a template's leading BOS text when the vocabulary adds BOS itself, then adds
    // it: one BOS either way.
    if (tokenizer.add_bos() && tokenizer.bos_id() >= 0 &&
        (out.tokens.empty() || out.tokens.front() != tokenizer.bos_id())) {
        out.tokens.insert(out.tokens.begin(), tokenizer.bos_id());
        out.text.insert(0, bos);
    }

    if (open_last_reply) {
        const ChatMessage& reply = all.back();
        out.open_reply_start = out.tokens.size();
        out.text += reply.content;
        if (!reply.tokens.empty()) {
            out.tokens.insert(out.tokens.end(), reply.tokens.begin(), reply.tokens.end());
        } else {
            const bool prev_special = !out.tokens.empty() && tokenizer.is_special(out.tokens.back());
            const auto ids =
                tokenizer.encode_fragment(reply.content, prev_special && !reply.content.starts_with(' '));
            out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
        }
    }
    return out;
}

std::vector<int32_t> JinjaChat::end_of_turn_tokens(const Tokenizer& tokenizer) const {
    const std::string bos = tokenizer.bos_id() >= 0 ? tokenizer.piece(tokenizer.bos_id()) : std::string();
    const std::string eos = tokenizer.eos_id() >= 0 ? tokenizer.piece(tokenizer.eos_id()) : std::string();
    const std::vector<ChatMessage> probe = {
        {ChatRole::User, "Hello.", {}}, {ChatRole::Assistant, "Hi there.", {}}, {ChatRole::User, "Bye.", {}}};
    jinja::TaggedText text;
    try {
        text = render_text(probe, false, true, bos, eos);
    } catch (const jinja::TemplateError&) {
        return {};
    }
    const uint32_t reply_tag = kFirstMessageTag + 1;  // the probe's assistant message
    for (size_t r = 0; r < text.runs.size(); ++r) {
        if (text.runs[r].tag != reply_tag) continue;
        const size_t after = r + 1 < text.runs.size() ? text.runs[r + 1].start : text.text.size();
        if (after < text.text.size() && text.tag_at(after) == jinja::kTrusted) {
            if (const auto id = tokenizer.special_at(text.text, after)) return {*id};
        }
    }
    return {};
}

}  // namespace lantern
