#include "lantern/chat_template.h"

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>

#include "jinja_chat.h"
#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/tokenizer.h"

namespace lantern {

namespace {

std::string trim(std::string_view s) {
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return std::string(s);
}

// The token ids of a format marker standing on its own: its special token, or its text.
std::vector<int32_t> marker_tokens(const Tokenizer& tokenizer, std::string_view marker) {
    if (const auto id = tokenizer.special_token(marker)) return {*id};
    return tokenizer.encode_fragment(marker, false);
}

// Collects a prompt as a list of parts and encodes it. Adjacent text — fixed text of the format,
// markers the vocabulary has no token for, message content — is encoded as one fragment, the way
// llama.cpp and Hugging Face tokenize a rendered template, with one exception: an assistant reply
// always starts a fragment of its own. That boundary is what makes a prompt rendered with a
// generation prompt a token prefix of the next turn's prompt: the tokens before the reply cannot
// depend on what the reply says (sentencepiece could otherwise merge across the seam).
class PromptBuilder {
public:
    explicit PromptBuilder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

    void special(int32_t id) {
        if (id >= 0) parts_.push_back({Kind::Special, tokenizer_.piece(id), {id}});
    }
    void bos() {
        if (tokenizer_.add_bos()) special(tokenizer_.bos_id());
    }
    // Text: fixed text of the format or message content (which is never parsed for special
    // tokens). Continues the text right before it.
    void text(std::string_view s) {
        if (!parts_.empty() && parts_.back().kind == Kind::Text) {
            parts_.back().text += s;
        } else {
            parts_.push_back({Kind::Text, std::string(s), {}});
        }
    }
    // A format marker: its special token when the vocabulary has one, else text.
    void marker(std::string_view spelled) {
        if (const auto id = tokenizer_.special_token(spelled)) {
            special(*id);
        } else {
            text(spelled);
        }
    }
    // An assistant reply, shown as `display`: its generated ids when known, else `display`
    // encoded as a new fragment. Text after it continues that fragment.
    void reply(const ChatMessage& message, std::string_view display) {
        if (message.tokens.empty()) {
            parts_.push_back({Kind::Text, std::string(display), {}});
        } else {
            parts_.push_back({Kind::Tokens, std::string(display), message.tokens});
        }
        last_reply_ = parts_.size() - 1;
        last_reply_text_ = display.size();
    }

    // `open_last_reply`: the prompt ends with the last reply, without what follows it (its
    // end-of-turn, and text a vocabulary without that marker's token appended to the reply's part).
    RenderedPrompt finish(bool open_last_reply = false) const {
        RenderedPrompt out;
        size_t n_parts = parts_.size();
        if (open_last_reply) {
            if (last_reply_ == SIZE_MAX)
                throw Error(ErrorCode::InvalidArgument, "there is no reply to continue");
            n_parts = last_reply_ + 1;
        }
        for (size_t i = 0; i < n_parts; ++i) {
            Part part = parts_[i];
            if (open_last_reply && i == last_reply_) {
                part.text.resize(last_reply_text_);
                out.open_reply_start = out.tokens.size();
            }
            out.text += part.text;
            if (part.kind != Kind::Text) {
                out.tokens.insert(out.tokens.end(), part.ids.begin(), part.ids.end());
                continue;
            }
            // A text that starts the prompt or follows a special token gets sentencepiece's
            // dummy-prefix space, as llama.cpp and Hugging Face tokenize these prompts — unless
            // the format already put a space there, which then is that "▁" (two would be wrong).
            const bool starts_text = i == 0 || parts_[i - 1].kind == Kind::Special;
            const bool space_prefix = starts_text && !part.text.starts_with(' ');
            const auto ids = tokenizer_.encode_fragment(part.text, space_prefix);
            out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
        }
        return out;
    }

private:
    enum class Kind { Special, Text, Tokens };
    struct Part {
        Kind kind;
        std::string text;
        std::vector<int32_t> ids;
    };
    const Tokenizer& tokenizer_;
    std::vector<Part> parts_;
    size_t last_reply_ = SIZE_MAX;  // index of the last reply's part
    size_t last_reply_text_ = 0;    // its own text's length (later text may continue the part)
};

// System text for formats without a system turn: it goes in front of the next user message.
std::string with_pending_system(std::string& pending_system, std::string_view user) {
    if (pending_system.empty()) return trim(user);
    std::string merged = pending_system + "\n\n" + trim(user);
    pending_system.clear();
    return merged;
}

void append_system(std::string& pending_system, std::string_view system) {
    if (!pending_system.empty()) pending_system += "\n\n";
    pending_system += trim(system);
}

void render_completion(PromptBuilder& b, std::span<const ChatMessage> messages) {
    b.bos();
    for (const auto& m : messages) {
        if (m.role == ChatRole::Assistant) {
            b.reply(m, m.content);
        } else {
            b.text(m.content);
        }
    }
}

// Meta's Llama 2 chat layout: each [INST] block starts with BOS, the system prompt sits inside
// the first user turn between <<SYS>> markers, a reply is " {reply}</s>". (Meta also writes a
// space before </s>; we leave it out because models end their replies without one, and the prompt
// must continue exactly the tokens the model produced.) There is no separate generation prompt:
// a user turn already ends with the [/INST] the reply follows.
void render_llama2(PromptBuilder& b, const Tokenizer& t, std::span<const ChatMessage> messages,
                   bool mistral) {
    // Mistral's tekken (byte-level BPE) templates write no space after [INST] or before a reply;
    // with sentencepiece vocabularies that space is the word-start marker of the first word.
    const std::string space = mistral && !t.add_space_prefix() ? "" : " ";
    std::string pending_system;
    bool first = true;
    for (const auto& m : messages) {
        switch (m.role) {
            case ChatRole::System:
                append_system(pending_system, m.content);
                break;
            case ChatRole::User:
                if (first || !mistral) b.bos();
                first = false;
                b.marker("[INST]");
                if (!mistral && !pending_system.empty()) {
                    b.text(" <<SYS>>\n");
                    b.text(pending_system);
                    b.text("\n<</SYS>>\n\n");
                    b.text(trim(m.content));
                    pending_system.clear();
                } else {
                    b.text(space + with_pending_system(pending_system, m.content));
                }
                // "[INST] hi [/INST]" as text; vocabularies with [INST] control tokens (Mistral
                // v3) are trained on "[INST] hi[/INST]".
                if (!t.special_token("[/INST]")) b.text(" ");
                b.marker("[/INST]");
                break;
            case ChatRole::Assistant:
                if (first) b.bos();
                first = false;
                b.reply(m, space + trim(m.content));
                b.special(t.eos_id());
                break;
        }
    }
}

// DeepSeek-R1's layout (its distilled Llama models): BOS, the system prompt as bare text, then
// "<｜User｜>{user}<｜Assistant｜>{reply}<｜end▁of▁sentence｜>" per turn; the generation prompt opens
// the reply's reasoning with "<think>\n". As in DeepSeek's template, earlier replies are sent
// without their reasoning (the text after their last "</think>"), which is why those turns are
// re-encoded rather than taken from the ids the model produced.
void render_deepseek_r1(PromptBuilder& b, const Tokenizer& t, std::span<const ChatMessage> messages,
                        bool add_generation_prompt, bool open_last_reply) {
    b.bos();
    std::string system;
    for (const auto& m : messages)
        if (m.role == ChatRole::System) system = m.content;  // the last one, as DeepSeek's template
    b.text(system);
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (open_last_reply && i + 1 == messages.size() && m.role == ChatRole::Assistant) {
            // A reply being continued goes on from the generation prompt, reasoning and all.
            b.marker(
                "<\xEF\xBD\x9C"
                "Assistant\xEF\xBD\x9C>");
            b.marker("<think>");
            b.text("\n");
            b.reply(m, m.content);
            break;
        }
        if (m.role == ChatRole::User) {
            b.marker("<\xEF\xBD\x9CUser\xEF\xBD\x9C>");
            b.text(m.content);
        } else if (m.role == ChatRole::Assistant) {
            b.marker(
                "<\xEF\xBD\x9C"
                "Assistant\xEF\xBD\x9C>");
            const size_t end_of_thought = m.content.rfind("</think>");
            if (end_of_thought == std::string::npos) {
                b.reply(m, m.content);
            } else {
                ChatMessage answer{ChatRole::Assistant, m.content.substr(end_of_thought + 8), {}};
                b.reply(answer, answer.content);
            }
            b.special(t.eos_id());
        }
    }
    if (add_generation_prompt) {
        b.marker(
            "<\xEF\xBD\x9C"
            "Assistant\xEF\xBD\x9C>");
        b.marker("<think>");
        b.text("\n");
    }
}

// Qwen3: ChatML, with the replies before the last user message rendered without their reasoning
// (what follows the last "</think>", line breaks trimmed from its start), and, with thinking off,
// an empty reasoning section after the generation prompt, as Qwen3's template renders
// enable_thinking=false. Replies after the last user message (one being continued) stay as written.
void render_qwen3(PromptBuilder& b, std::span<const ChatMessage> messages, bool add_generation_prompt,
                  bool thinking) {
    size_t last_user = SIZE_MAX;
    for (size_t i = 0; i < messages.size(); ++i)
        if (messages[i].role == ChatRole::User) last_user = i;
    const auto header = [&](std::string_view role) {
        b.marker("<|im_start|>");
        b.text(role);
        b.text("\n");
    };
    const auto end_turn = [&] {
        b.marker("<|im_end|>");
        b.text("\n");
    };
    b.bos();
    for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        switch (m.role) {
            case ChatRole::System:
            case ChatRole::User:
                header(m.role == ChatRole::System ? "system" : "user");
                b.text(m.content);
                end_turn();
                break;
            case ChatRole::Assistant: {
                header("assistant");
                const size_t end_of_thought = m.content.rfind("</think>");
                if (last_user != SIZE_MAX && i < last_user && end_of_thought != std::string::npos) {
                    const size_t answer = m.content.find_first_not_of('\n', end_of_thought + 8);
                    ChatMessage stripped{
                        ChatRole::Assistant,
                        answer == std::string::npos ? std::string() : m.content.substr(answer),
                        {}};
                    b.reply(stripped, stripped.content);
                } else {
                    b.reply(m, m.content);
                }
                end_turn();
                break;
            }
        }
    }
    if (add_generation_prompt) {
        header("assistant");
        if (!thinking) b.text("<think>\n\n</think>\n\n");
    }
}

// DeepSeek LLM chat (and DeepSeek-V2's layout): "{system}\n\nUser: {user}\n\nAssistant: {reply}<eos>",
// BOS once, "Assistant:" as the generation prompt — the model writes the space before its reply,
// so a reply known only as text gets that space back when it is rendered.
void render_deepseek_llm(PromptBuilder& b, const Tokenizer& t, std::span<const ChatMessage> messages,
                         bool add_generation_prompt) {
    b.bos();
    for (const auto& m : messages) {
        switch (m.role) {
            case ChatRole::System:
                b.text(m.content + "\n\n");
                break;
            case ChatRole::User:
                b.text("User: " + m.content + "\n\n");
                break;
            case ChatRole::Assistant:
                b.text("Assistant:");
                b.reply(m, m.content.starts_with(' ') ? m.content : " " + m.content);
                b.special(t.eos_id());
                break;
        }
    }
    if (add_generation_prompt) b.text("Assistant:");
}

// DeepSeek Coder instruct: "{system}### Instruction:\n{user}\n### Response:\n{reply}\n<|EOT|>\n", with the
// model's own system prompt when the conversation has none (as its template does); "### Response:\n"
// opens a reply (as llama.cpp renders it, so that a reply's turn is a prefix of the next prompt).
void render_deepseek_coder(PromptBuilder& b, std::span<const ChatMessage> messages,
                           bool add_generation_prompt) {
    b.bos();
    const bool has_system = std::any_of(messages.begin(), messages.end(),
                                        [](const ChatMessage& m) { return m.role == ChatRole::System; });
    if (!has_system)
        b.text(
            "You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek "
            "Company, "
            "and you only answer questions related to computer science. For politically sensitive questions, "
            "security and privacy issues, and other non-computer science questions, you will refuse to "
            "answer\n");
    for (const auto& m : messages) {
        switch (m.role) {
            case ChatRole::System:
                b.text(m.content);
                break;
            case ChatRole::User:
                b.text("### Instruction:\n" + m.content + "\n");
                break;
            case ChatRole::Assistant:
                b.text("### Response:\n");
                b.reply(m, m.content);
                b.text("\n");
                b.marker("<|EOT|>");
                b.text("\n");
                break;
        }
    }
    if (add_generation_prompt) b.text("### Response:\n");
}

// Mistral's v7 layout (Mistral Large 2411, Mistral Small 3): the system prompt between its own
// markers, "[INST]{user}[/INST]{reply}</s>", BOS once. Spaces after the markers as in render_llama2.
void render_mistral_v7(PromptBuilder& b, const Tokenizer& t, std::span<const ChatMessage> messages) {
    const std::string space = t.add_space_prefix() ? " " : "";
    b.bos();
    for (const auto& m : messages) {
        switch (m.role) {
            case ChatRole::System:
                b.marker("[SYSTEM_PROMPT]");
                b.text(space + m.content);
                b.marker("[/SYSTEM_PROMPT]");
                break;
            case ChatRole::User:
                b.marker("[INST]");
                b.text(space + m.content);
                b.marker("[/INST]");
                break;
            case ChatRole::Assistant:
                b.reply(m, space + m.content);
                b.special(t.eos_id());
                break;
        }
    }
}

// Formats whose every turn is "<header for role>\n{content}<end marker>\n" (Llama 3: the role
// between two markers, a blank line after the header, nothing after the end marker).
struct TurnStyle {
    std::string_view start;         // marker before the role name ("<|im_start|>") or empty
    bool role_in_marker;            // Zephyr/Phi-3: the role is the marker itself ("<|user|>")
    std::string_view role_end;      // marker after the role name ("<|end_header_id|>") or empty
    std::string_view header_break;  // text after the header
    std::string_view end;           // end-of-turn marker; empty = the vocabulary's EOS
    std::string_view end_break;     // text after the end-of-turn marker
    std::string_view assistant_name;
    bool system_role;
    bool trim_content;
    bool end_replies_only;  // Falcon 3: only replies close with `end`; other turns end with end_break
};

void render_turns(PromptBuilder& b, const Tokenizer& t, std::span<const ChatMessage> messages,
                  bool add_generation_prompt, const TurnStyle& style) {
    const auto header = [&](std::string_view role) {
        if (style.role_in_marker) {
            b.marker("<|" + std::string(role) + "|>");
        } else {
            b.marker(style.start);
            b.text(role);
            if (!style.role_end.empty()) b.marker(style.role_end);
        }
        b.text(style.header_break);
    };
    const auto end_turn = [&](bool reply = false) {
        if (style.end_replies_only && !reply) {
            b.text(style.end_break);
            return;
        }
        if (style.end.empty()) {
            b.special(t.eos_id());
        } else {
            b.marker(style.end);
        }
        if (!style.end_break.empty()) b.text(style.end_break);
    };
    const auto body = [&](std::string_view s) { return style.trim_content ? trim(s) : std::string(s); };

    b.bos();
    std::string pending_system;
    for (const auto& m : messages) {
        switch (m.role) {
            case ChatRole::System:
                if (style.system_role) {
                    header("system");
                    b.text(body(m.content));
                    end_turn();
                } else {
                    append_system(pending_system, m.content);
                }
                break;
            case ChatRole::User:
                header("user");
                b.text(style.system_role ? body(m.content) : with_pending_system(pending_system, m.content));
                end_turn();
                break;
            case ChatRole::Assistant:
                header(style.assistant_name);
                b.reply(m, body(m.content));
                end_turn(true);
                break;
        }
    }
    if (add_generation_prompt) header(style.assistant_name);
}

constexpr TurnStyle kChatML{"<|im_start|>", false,       "",   "\n",  "<|im_end|>",
                            "\n",           "assistant", true, false, false};
constexpr TurnStyle kZephyr{"", true, "", "\n", "", "\n", "assistant", true, false, false};
// Zephyr's markers, but only replies end with EOS (Falcon 3 Instruct, as Tulu's template).
constexpr TurnStyle kFalcon3{"", true, "", "\n", "", "\n", "assistant", true, false, true};
constexpr TurnStyle kPhi3{"", true, "", "\n", "<|end|>", "\n", "assistant", true, false, false};
constexpr TurnStyle kPhi4{"", true, "", "", "<|end|>", "", "assistant", true, false, false};
constexpr TurnStyle kGemma{"<start_of_turn>", false, "",   "\n", "<end_of_turn>", "\n",
                           "model",           false, true, false};
// Meta's Llama 3 template trims every message.
constexpr TurnStyle kLlama3{"<|start_header_id|>",
                            false,
                            "<|end_header_id|>",
                            "\n\n",
                            "<|eot_id|>",
                            "",
                            "assistant",
                            true,
                            true,
                            false};

}  // namespace

const char* chat_role_name(ChatRole role) {
    switch (role) {
        case ChatRole::System:
            return "system";
        case ChatRole::User:
            return "user";
        case ChatRole::Assistant:
            return "assistant";
    }
    return "user";
}

const char* chat_format_name(ChatFormat format) {
    switch (format) {
        case ChatFormat::Completion:
            return "completion";
        case ChatFormat::Llama2:
            return "llama2";
        case ChatFormat::Mistral:
            return "mistral";
        case ChatFormat::ChatML:
            return "chatml";
        case ChatFormat::Zephyr:
            return "zephyr";
        case ChatFormat::Falcon3:
            return "falcon3";
        case ChatFormat::Phi3:
            return "phi3";
        case ChatFormat::Phi4:
            return "phi4";
        case ChatFormat::Gemma:
            return "gemma";
        case ChatFormat::Llama3:
            return "llama3";
        case ChatFormat::MistralV7:
            return "mistral-v7";
        case ChatFormat::DeepSeekR1:
            return "deepseek-r1";
        case ChatFormat::DeepSeekLlm:
            return "deepseek-llm";
        case ChatFormat::DeepSeekCoder:
            return "deepseek-coder";
        case ChatFormat::Qwen3:
            return "qwen3";
    }
    return "unknown";
}

std::optional<ChatFormat> ChatTemplate::detect(std::string_view jinja) {
    const auto has = [&](std::string_view marker) { return jinja.find(marker) != std::string_view::npos; };
    if (has("<|start_header_id|>")) return ChatFormat::Llama3;
    if (has("<\xEF\xBD\x9C"
            "Assistant\xEF\xBD\x9C>"))
        return ChatFormat::DeepSeekR1;
    if (has("### Instruction:") && has("<|EOT|>")) return ChatFormat::DeepSeekCoder;
    if (has("'Assistant: ' + message['content'] + eos_token")) return ChatFormat::DeepSeekLlm;
    // Qwen3's template takes enable_thinking and drops earlier replies' reasoning; other ChatML
    // templates (Qwen2.5, SmolLM2, Hermes) render every turn as written.
    if (has("<|im_start|>") && has("enable_thinking")) return ChatFormat::Qwen3;
    if (has("<|im_start|>")) return ChatFormat::ChatML;
    if (has("<start_of_turn>")) return ChatFormat::Gemma;
    // Phi-4-mini builds every marker from the role ('<|' + message['role'] + '|>') and writes no
    // line breaks; it closes turns with <|end|> as Phi-3 does.
    if (has("'<|' + message['role'] + '|>'") && has("<|end|>")) return ChatFormat::Phi4;
    // Phi-3, Zephyr and Falcon 3 share <|user|>. Phi-3 closes turns with <|end|>; Zephyr closes
    // every turn with EOS, Falcon 3 only replies: its user turn is "'<|user|>\n' + content + '\n'".
    if (has("<|user|>")) {
        if (has("<|end|>")) return ChatFormat::Phi3;
        const size_t user = jinja.find("<|user|>");
        const size_t user_end = jinja.find("}}", user);
        const std::string_view user_turn =
            jinja.substr(user, user_end == std::string_view::npos ? user_end : user_end - user);
        const bool user_closes_with_eos = user_turn.find("eos_token") != std::string_view::npos ||
                                          user_turn.find("</s>") != std::string_view::npos;
        return user_closes_with_eos ? ChatFormat::Zephyr : ChatFormat::Falcon3;
    }
    if (has("[SYSTEM_PROMPT]")) return ChatFormat::MistralV7;
    if (has("[INST]")) return has("<<SYS>>") ? ChatFormat::Llama2 : ChatFormat::Mistral;
    return std::nullopt;
}

ChatTemplate ChatTemplate::from_source(std::string source) {
    ChatTemplate t(detect(source).value_or(ChatFormat::Completion));
    if (source.empty()) return t;
    try {
        t.jinja_ = std::make_shared<const JinjaChat>(source);
    } catch (const jinja::TemplateError& e) {
        t.fallback_reason_ = e.what();
    }
    t.source_ = std::move(source);
    return t;
}

ChatTemplate ChatTemplate::from_gguf(const GgufFile& gguf) {
    const auto source = gguf.get_string("tokenizer.chat_template");
    return from_source(source ? std::string(*source) : std::string());
}

ChatTemplate ChatTemplate::for_engine(const Engine& engine) {
    // The API server asks once per request: the last template parsed is kept (copies share it).
    static std::mutex mutex;
    static std::string last_source;
    static std::optional<ChatTemplate> last;
    std::lock_guard lock(mutex);
    if (!last || last_source != engine.chat_template_source()) {
        last_source = engine.chat_template_source();
        last = from_source(last_source);
    }
    return *last;
}

std::string ChatTemplate::apply(const Tokenizer& tokenizer, const nlohmann::ordered_json& messages,
                                const nlohmann::ordered_json& tools, bool add_generation_prompt) const {
    if (!messages.is_array()) throw Error(ErrorCode::InvalidArgument, "messages must be an array");
    const std::string bos = tokenizer.bos_id() >= 0 ? tokenizer.piece(tokenizer.bos_id()) : std::string();
    const std::string eos = tokenizer.eos_id() >= 0 ? tokenizer.piece(tokenizer.eos_id()) : std::string();
    if (jinja_) {
        try {
            return jinja_->render_json(messages, tools, add_generation_prompt, thinking_, bos, eos);
        } catch (const jinja::TemplateError& e) {
            throw Error(ErrorCode::InvalidArgument,
                        std::string("the model's chat template refused this conversation: ") + e.what());
        }
    }
    std::vector<ChatMessage> converted;
    for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            throw Error(ErrorCode::InvalidArgument, where + " needs a role");
        const std::string role = m["role"].get<std::string>();
        if (role != "system" && role != "user" && role != "assistant")
            throw Error(ErrorCode::InvalidArgument,
                        where + ": the " + std::string(chat_format_name(format_)) +
                            " renderer knows system, user and assistant messages, not " + role);
        if (!m.contains("content") || !m["content"].is_string())
            throw Error(ErrorCode::InvalidArgument, where + " needs text content");
        converted.push_back({role == "system" ? ChatRole::System
                             : role == "user" ? ChatRole::User
                                              : ChatRole::Assistant,
                             m["content"].get<std::string>(),
                             {}});
    }
    return render(tokenizer, converted, add_generation_prompt).text;
}

std::string ChatTemplate::description() const {
    if (jinja_) {
        return format_ == ChatFormat::Completion ? "the model's own template (Jinja)"
                                                 : std::string("the model's own template (Jinja; ") +
                                                       chat_format_name(format_) + " family)";
    }
    if (source_.empty()) return chat_format_name(format_);
    return std::string(chat_format_name(format_)) +
           " (native; the model's template could not be used: " + fallback_reason_ + ")";
}

bool ChatTemplate::opens_reasoning(std::string_view prompt_text) {
    while (!prompt_text.empty() && (prompt_text.back() == '\n' || prompt_text.back() == ' '))
        prompt_text.remove_suffix(1);
    return prompt_text.ends_with("<think>");
}

bool ChatTemplate::has_thinking_switch() const {
    return jinja_ ? jinja_->has_thinking_switch() : format_ == ChatFormat::Qwen3;
}

bool ChatTemplate::has_system_role() const {
    if (jinja_) return jinja_->has_system_role();
    switch (format_) {
        case ChatFormat::Llama2:
        case ChatFormat::ChatML:
        case ChatFormat::Zephyr:
        case ChatFormat::Falcon3:
        case ChatFormat::Phi3:
        case ChatFormat::Phi4:
        case ChatFormat::Llama3:
        case ChatFormat::MistralV7:
        case ChatFormat::DeepSeekR1:
        case ChatFormat::DeepSeekLlm:
        case ChatFormat::DeepSeekCoder:
        case ChatFormat::Qwen3:
            return true;
        case ChatFormat::Completion:
        case ChatFormat::Mistral:
        case ChatFormat::Gemma:
            return false;
    }
    return false;
}

RenderedPrompt ChatTemplate::render(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                                    bool add_generation_prompt) const {
    return render(tokenizer, messages, add_generation_prompt, false);
}

RenderedPrompt ChatTemplate::render_open_reply(const Tokenizer& tokenizer,
                                               std::span<const ChatMessage> messages) const {
    if (messages.empty() || messages.back().role != ChatRole::Assistant)
        throw Error(ErrorCode::InvalidArgument,
                    "there is no reply to continue: the conversation does not end with one");
    return render(tokenizer, messages, false, true);
}

RenderedPrompt ChatTemplate::render(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                                    bool add_generation_prompt, bool open_last_reply) const {
    if (jinja_) return jinja_->render(tokenizer, messages, add_generation_prompt, thinking_, open_last_reply);
    PromptBuilder b(tokenizer);
    switch (format_) {
        case ChatFormat::Completion:
            render_completion(b, messages);
            break;
        case ChatFormat::Llama2:
            render_llama2(b, tokenizer, messages, false);
            break;
        case ChatFormat::Mistral:
            render_llama2(b, tokenizer, messages, true);
            break;
        case ChatFormat::ChatML:
            render_turns(b, tokenizer, messages, add_generation_prompt, kChatML);
            break;
        case ChatFormat::Zephyr:
            render_turns(b, tokenizer, messages, add_generation_prompt, kZephyr);
            break;
        case ChatFormat::Falcon3:
            render_turns(b, tokenizer, messages, add_generation_prompt, kFalcon3);
            break;
        case ChatFormat::Phi3:
            render_turns(b, tokenizer, messages, add_generation_prompt, kPhi3);
            break;
        case ChatFormat::Phi4:
            render_turns(b, tokenizer, messages, add_generation_prompt, kPhi4);
            break;
        case ChatFormat::Gemma:
            render_turns(b, tokenizer, messages, add_generation_prompt, kGemma);
            break;
        case ChatFormat::Llama3:
            render_turns(b, tokenizer, messages, add_generation_prompt, kLlama3);
            break;
        case ChatFormat::MistralV7:
            render_mistral_v7(b, tokenizer, messages);
            break;
        case ChatFormat::DeepSeekR1:
            render_deepseek_r1(b, tokenizer, messages, add_generation_prompt, open_last_reply);
            break;
        case ChatFormat::DeepSeekLlm:
            render_deepseek_llm(b, tokenizer, messages, add_generation_prompt);
            break;
        case ChatFormat::DeepSeekCoder:
            render_deepseek_coder(b, messages, add_generation_prompt);
            break;
        case ChatFormat::Qwen3:
            render_qwen3(b, messages, add_generation_prompt, thinking_);
            break;
    }
    return b.finish(open_last_reply);
}

std::vector<int32_t> ChatTemplate::end_of_turn_tokens(const Tokenizer& tokenizer) const {
    if (jinja_) return jinja_->end_of_turn_tokens(tokenizer);
    switch (format_) {
        case ChatFormat::Completion:
            return {};
        case ChatFormat::Llama2:
        case ChatFormat::Mistral:
        case ChatFormat::MistralV7:
        case ChatFormat::DeepSeekR1:
        case ChatFormat::DeepSeekLlm:
        case ChatFormat::Zephyr:
        case ChatFormat::Falcon3:
            if (tokenizer.eos_id() < 0) return {};
            return {tokenizer.eos_id()};
        case ChatFormat::ChatML:
        case ChatFormat::Qwen3:
            return marker_tokens(tokenizer, "<|im_end|>");
        case ChatFormat::Phi3:
        case ChatFormat::Phi4:
            return marker_tokens(tokenizer, "<|end|>");
        case ChatFormat::Gemma:
            return marker_tokens(tokenizer, "<end_of_turn>");
        case ChatFormat::Llama3:
            return marker_tokens(tokenizer, "<|eot_id|>");
        case ChatFormat::DeepSeekCoder:
            return marker_tokens(tokenizer, "<|EOT|>");
    }
    return {};
}

std::vector<int32_t> ChatTemplate::stop_tokens(const Tokenizer& tokenizer) const {
    std::vector<int32_t> stops;
    const auto add = [&](int32_t id) {
        if (id >= 0 && std::find(stops.begin(), stops.end(), id) == stops.end()) stops.push_back(id);
    };
    for (int32_t id : tokenizer.end_of_generation()) add(id);
    if (const auto end = end_of_turn_tokens(tokenizer); end.size() == 1) add(end.front());
    return stops;
}

}  // namespace lantern
