// A model's own Jinja chat template turned into prompt token ids (private to lantern_chat; used by
// ChatTemplate). Rendering follows transformers (messages, tools=None, documents=None,
// add_generation_prompt, bos_token, eos_token, enable_thinking where the template reads it); the
// text is then tokenized as llama.cpp tokenizes a rendered template, except that only the
// template's own text is scanned for special tokens — a user's "<|im_end|>" stays text — and a
// reply whose generated ids are known goes in by those ids, so that turn N's prompt plus its reply
// is a token prefix of turn N+1's wherever the template renders the reply as written.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lantern/chat_template.h"
#include "lantern/jinja.h"

namespace lantern {

class Tokenizer;

class JinjaChat {
public:
    // Parses `source` and renders probe conversations: throws jinja::TemplateError when the
    // template does not parse, fails on a plain user/assistant conversation, or does not show the
    // messages' text (then it is no chat template Lantern can use).
    explicit JinjaChat(std::string source);

    const std::string& source() const { return source_; }
    // False when the template refuses a system message or drops its text (Gemma): system text
    // then joins the first user message, as the native families do.
    bool has_system_role() const { return system_role_; }
    bool has_thinking_switch() const { return thinking_switch_; }

    // The rendered text, each message's content tagged 2 + its index (jinja::TaggedText).
    jinja::TaggedText render_text(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                  bool thinking, const std::string& bos, const std::string& eos) const;
    // The template rendered for JSON messages and tools as they are (apply_chat_template's text).
    std::string render_json(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                            bool add_generation_prompt, bool thinking, const std::string& bos,
                            const std::string& eos) const;
    RenderedPrompt render(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                          bool add_generation_prompt, bool thinking, bool open_last_reply) const;
    // The special token the template writes right after a reply (<|im_end|>, <end_of_turn>,
    // </s>...); empty when it writes none.
    std::vector<int32_t> end_of_turn_tokens(const Tokenizer& tokenizer) const;

private:
    std::string source_;
    jinja::Template template_;
    bool system_role_ = true;
    bool thinking_switch_ = false;
};

}  // namespace lantern
