// The OpenAI API's request and response shapes, mapped onto the engine: a /v1/chat/completions or
// /v1/completions body becomes a prompt (rendered with the model's own chat template) and sampling
// settings; results become the JSON bodies and stream chunks OpenAI clients read.
//
// What the request may carry (anything else is ignored, as OpenAI clients send many fields):
//   messages (chat: system/developer, user, assistant; content a string or text parts)
//   prompt (completions: a string, a one-string array, or token ids)
//   max_tokens / max_completion_tokens, temperature, top_p, seed, stop (string or array),
//   presence_penalty, frequency_penalty, stream, stream_options.include_usage, n (1 only),
//   logprobs + top_logprobs (chat: true and 0-20; completions: 0-20 top tokens)
//   and llama.cpp's extensions top_k, min_p, repeat_penalty, repeat_last_n, ignore_eos.
// A token's logprob is the natural log of the probability the sampler drew it with: after the
// penalties, at the request's temperature, renormalised over the tokens top_k/top_p/min_p kept —
// and for greedy requests (temperature 0) the model's own softmax of the penalised logits at
// temperature 1. The top_logprobs are the same distribution's most likely tokens.
// Refused with a 400 that names the field: tools, images, n > 1, response_format other than text
// — features this server does not have, rather than answers that quietly ignore them.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "lantern/sampling.h"
#include "server/json.h"

namespace lantern {
class Engine;
}

namespace lantern::server {

// An error answered in OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error {
    int status;
    std::string type, param, code;
    ApiError(int status_, std::string message, std::string param_ = {}, std::string code_ = {},
             std::string type_ = "invalid_request_error")
        : std::runtime_error(std::move(message)), status(status_), type(std::move(type_)),
          param(std::move(param_)), code(std::move(code_)) {}
};
Json error_body(const ApiError& e);

struct CompletionJob {
    bool chat = true;                  // /v1/chat/completions (else /v1/completions)
    std::vector<int32_t> prompt;       // token ids, BOS included where the model wants it
    SamplingSettings settings;         // stop strings in settings.stop
    std::vector<int32_t> stop_tokens;  // end of reply: EOS, the format's end-of-turn
    bool stream = false, include_usage = false;
    bool logprobs = false;       // report each token's logprob (and settings.n_probs alternatives)
    // Whether the reply begins a text (chat: the leading dummy-prefix space is dropped) or continues
    // the prompt's (completions keep it: "Once upon a time" + " there").
    bool text_start = true;
};

// Throws ApiError for a body that asks for something invalid or unsupported, or whose prompt
// does not fit the context (400, code "context_length_exceeded").
CompletionJob chat_job(const Json& body, const Engine& engine);
CompletionJob completion_job(const Json& body, const Engine& engine);

// "stop" (end of turn or a stop string) or "length" (max_tokens, or the context is full), from
// the scheduler's reason.
const char* finish_reason(const std::string& scheduler_reason);

}  // namespace lantern::server
