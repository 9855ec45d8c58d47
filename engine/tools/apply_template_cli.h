// lantern-cli --apply-template: the prompt a model's chat template makes of a conversation.
//
// Only the GGUF's metadata is read (tokenizer and template; vocab-only files work): no device.
#pragma once
#include <iostream>
#include <string>

namespace lantern {

// Prints on `out`, and nothing else, the text the model's chat template renders for the
// conversation in `conversation_path`: an OpenAI-style messages array, or an object with
// "messages" and optionally "tools" and "chat_template_kwargs" ({"enable_thinking": false}) —
// exactly as transformers' apply_chat_template(tokenize=False) would, bos_token/eos_token being the
// vocabulary's own texts. `add_generation_prompt` as the template reads it. When the model's
// template cannot be used, says so on `err` and prints the native renderer's text. Returns 0, or 1
// after printing the error (unreadable files, invalid JSON, a template that refuses) to `err`.
int run_apply_template_command(const std::string& model_path, const std::string& conversation_path,
                               bool add_generation_prompt, std::ostream& out = std::cout,
                               std::ostream& err = std::cerr);

}  // namespace lantern
