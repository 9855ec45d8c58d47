// lantern/chat_template.h — turning a conversation into the prompt a chat model was trained on.
//
// A GGUF describes its chat format as a Jinja template (tokenizer.chat_template). Lantern renders
// that template itself with its Jinja interpreter (lantern/jinja.h), as Hugging Face's transformers
// does, and tokenizes the result as llama.cpp does — with two guarantees: only the template's own
// text is scanned for special tokens (nothing a user types can become a control token), and a
// reply goes back into the next prompt by the ids the model generated, so that turn N's prompt
// plus its reply is a token prefix of turn N+1's wherever the template renders the reply as
// written (the KV prefix cache relies on it; ChatSession says when a template breaks it).
//
// When a model has no template (a base model: plain completion), or its template cannot be used
// (it does not parse, fails on a plain conversation, or does not show the messages' text), one of
// the families below renders natively, chosen by the template's markers — the reason is kept
// (fallback_reason()) so that front ends can say which renderer runs and why:
//
//   Llama2   <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {reply}</s><s>[INST] ...
//   Mistral  <s>[INST] {user} [/INST] {reply}</s>[INST] ...   (no system role: folded into the
//            next user turn; "[INST] {user}[/INST]" where [INST] is a control token, as in v3;
//            "[INST]{user}[/INST]{reply}</s>" with byte-level BPE (tekken) vocabularies)
//   MistralV7 <s>[SYSTEM_PROMPT]{system}[/SYSTEM_PROMPT][INST]{user}[/INST]{reply}</s> ...
//            (Mistral Small 3; a space after each marker with sentencepiece vocabularies)
//   DeepSeekR1 <｜begin▁of▁sentence｜>{system}<｜User｜>{user}<｜Assistant｜>{answer}<｜end▁of▁sentence｜>
//            ... <｜Assistant｜><think>\n   (DeepSeek-R1-Distill-Llama; earlier replies without their
//            reasoning, so those turns are not a token prefix of the next prompt)
//   DeepSeekLlm <bos>{system}\n\nUser: {user}\n\nAssistant: {reply}<eos>User: ... Assistant:
//            (DeepSeek LLM chat)
//   DeepSeekCoder <bos>{system, or the model's own}### Instruction:\n{user}\n### Response:\n{reply}
//            \n<|EOT|>\n ... ### Response:\n   (DeepSeek Coder instruct)
//   ChatML   <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
//   Qwen3    ChatML, and earlier replies (before the last user message) without their reasoning
//            ("<think>...</think>" and the line breaks after it), as Qwen3's template; with thinking
//            off (enable_thinking=false) the generation prompt is followed by "<think>\n\n</think>\n\n"
//   Zephyr   <|{role}|>\n{content}</s>\n ... <|assistant|>\n            (TinyLlama chat)
//   Falcon3  <|{role}|>\n{content}\n ... <|assistant|>\n{reply}<|endoftext|>\n ... <|assistant|>\n
//            (Zephyr's markers; only replies end with EOS)
//   Phi3     <|{role}|>\n{content}<|end|>\n ... <|assistant|>\n
//   Gemma    <start_of_turn>{user|model}\n{content}<end_of_turn>\n ... <start_of_turn>model\n
//            (no system role: folded into the next user turn)
//   Llama3   <|begin_of_text|><|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|> ...
//            <|start_header_id|>assistant<|end_header_id|>\n\n   (content trimmed, as Meta's)
//
// and Completion for base models without a template (stories260K): the messages are one
// continuous text after BOS.
//
// Rendering produces token ids directly. A marker becomes its single special token when the
// vocabulary has one, and is encoded as plain text otherwise (TinyLlama spells <|user|> in ordinary
// pieces). Message content is always encoded as text, so nothing a user types can become a
// control token. Text is tokenized the way llama.cpp tokenizes a rendered template (a dummy-prefix
// space at the start and after each special token), except that an assistant reply always starts
// a fragment of its own. That gives the property the KV prefix cache relies on: the prompt for
// turn N (with its generation prompt), followed by the reply's tokens, is exactly the start of the
// prompt for turn N+1 — and so is the reply followed by end_of_turn_tokens() when the end-of-turn
// marker is a special token (always, except when a vocabulary spells <|im_end|> and the like in
// ordinary pieces; then generation stops on the text and the tokens after the reply may differ).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lantern {

class Engine;
class GgufFile;
class JinjaChat;
class Tokenizer;

enum class ChatRole { System, User, Assistant };
const char* chat_role_name(ChatRole role);  // "system", "user", "assistant"

struct ChatMessage {
    ChatRole role = ChatRole::User;
    std::string content;
    // Assistant replies only, optional: the ids the model generated for this reply (without the
    // end-of-turn token). When present they are used instead of encoding `content` again, so the
    // next prompt starts with exactly the tokens already in the KV cache — re-encoding the text
    // could split it differently than the model did.
    std::vector<int32_t> tokens;
};

enum class ChatFormat {
    Completion,
    Llama2,
    Mistral,
    ChatML,
    Zephyr,
    Phi3,
    Gemma,
    Llama3,
    MistralV7,
    DeepSeekR1,
    Falcon3,
    DeepSeekLlm,
    DeepSeekCoder,
    Qwen3,
    Phi4  // Phi-4-mini: Phi-3's markers with no line breaks ("<|user|>Hi<|end|><|assistant|>")
};
const char* chat_format_name(ChatFormat format);  // "llama2", "chatml", ...

struct RenderedPrompt {
    std::vector<int32_t> tokens;
    std::string text;             // the same prompt for display and debugging, special tokens spelled out
    size_t open_reply_start = 0;  // render_open_reply: where the open reply's ids begin in tokens
};

class ChatTemplate {
public:
    // A native family renderer (no Jinja).
    explicit ChatTemplate(ChatFormat format = ChatFormat::Completion) : format_(format) {}
    // The renderer for a model whose tokenizer.chat_template is `source`: its own template when
    // the interpreter can use it, else the native family its markers name (Completion when none).
    static ChatTemplate from_source(std::string source);

    // The family a Jinja chat template belongs to, judged by its markers; nullopt when the template
    // is empty or not one we know.
    static std::optional<ChatFormat> detect(std::string_view jinja_template);
    // from_source() with a model file's template, or a loaded model's (Engine::chat_template_source).
    static ChatTemplate from_gguf(const GgufFile& gguf);
    static ChatTemplate for_engine(const Engine& engine);

    // The family the template's markers name (Completion when none): the native renderer's format,
    // and a hint for front ends (DeepSeek-R1 replies open in reasoning) whichever renderer runs.
    ChatFormat format() const { return format_; }
    // Whether the model's own Jinja template renders the prompts (else a native family does).
    bool uses_model_template() const { return jinja_ != nullptr; }
    // Whether prompts are chat turns at all (false: plain completion of a base model).
    bool renders_chat() const { return jinja_ != nullptr || format_ != ChatFormat::Completion; }
    // The model's template text ("" when it has none).
    const std::string& source() const { return source_; }
    // Why the model's template is not used (parse error with line and column, the error a plain
    // conversation gave, ...); "" when it is, or when there is none.
    const std::string& fallback_reason() const { return fallback_reason_; }
    // For people: "the model's own template (Jinja; chatml family)", "chatml (native)", "completion".
    std::string description() const;
    // Whether the template takes enable_thinking (Qwen3), and its value for render: with
    // thinking off the model is told to answer without reasoning. On by default, as in the template.
    bool has_thinking_switch() const;
    bool thinking() const { return thinking_; }
    void set_thinking(bool on) { thinking_ = on; }
    // False where the format has no system turn and system text joins the next user message.
    bool has_system_role() const;

    // Renders the conversation. With `add_generation_prompt`, ends with the header that makes the
    // model write the assistant's next reply (for Llama2/Mistral that is already the user turn's
    // "[/INST]"). Messages may come in any order; a system message is rendered where the format
    // puts it (for formats without a system role, in front of the next user message).
    RenderedPrompt render(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                          bool add_generation_prompt) const;
    // The prompt to continue the last message, an assistant reply, from where it stopped: the
    // conversation before it with the generation prompt, then the reply without its end-of-turn.
    // The rest of the reply generated from here makes, with these tokens, the same prompt for the
    // next turn as if the reply had been written in one go (the reply's ids when it has them).
    RenderedPrompt render_open_reply(const Tokenizer& tokenizer, std::span<const ChatMessage> messages) const;

    // The prompt text for an OpenAI-style `messages` array (and `tools`, null for none), exactly
    // as transformers' apply_chat_template(tokenize=False) renders the model's template: every
    // message field passed as it is, bos_token/eos_token the vocabulary's texts, enable_thinking
    // as set_thinking(). A native renderer gives its prompt's text (string contents only). Throws
    // Error(InvalidArgument) with the template's own message when it refuses the conversation.
    std::string apply(const Tokenizer& tokenizer, const nlohmann::ordered_json& messages,
                      const nlohmann::ordered_json& tools, bool add_generation_prompt) const;

    // Whether a prompt's text ends inside an opened reasoning block ("<think>" and line breaks):
    // the reply starts with reasoning (DeepSeek-R1's generation prompt, QwQ's).
    static bool opens_reasoning(std::string_view prompt_text);

    // The tokens that close an assistant reply in this format (</s>, <|im_end|>, <|end|>,
    // <end_of_turn>, <|eot_id|>); empty for Completion.
    std::vector<int32_t> end_of_turn_tokens(const Tokenizer& tokenizer) const;
    // Token ids at which generation of a reply stops: the vocabulary's end of generation
    // (Tokenizer::end_of_generation: EOS, EOT, end markers) and the format's end-of-turn marker
    // when it is a single token.
    std::vector<int32_t> stop_tokens(const Tokenizer& tokenizer) const;

private:
    RenderedPrompt render(const Tokenizer& tokenizer, std::span<const ChatMessage> messages,
                          bool add_generation_prompt, bool open_last_reply) const;
    ChatFormat format_;
    bool thinking_ = true;
    std::shared_ptr<const JinjaChat> jinja_;
    std::string source_;
    std::string fallback_reason_;
};

}  // namespace lantern
