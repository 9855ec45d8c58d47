// The OpenAI API's request and response shapes, mapped onto the engine: a /v1/chat/completions or
// /v1/completions body becomes a prompt (rendered with the model's own chat template) and sampling
// settings; results become the JSON bodies and stream chunks OpenAI clients read.
//
// What the request may carry (anything else is ignored, as OpenAI clients send many fields):
//   messages (chat: system/developer, user, assistant; content a string or text parts)
//   prompt (completions: a string, a one-string array, or token ids)
//   max_tokens / max_completion_tokens, temperature, top_p, seed, stop (string or array),
//   presence_penalty, frequency_penalty, stream, stream_options.include_usage, n (1 only),
//   logprobs + top_logprobs (chat: true and 0-20; completions: 0-20 top tokens),
//   logit_bias ({"token id": -100..100}; -100 bans the token)
//   and llama.cpp's extensions top_k, min_p, repeat_penalty, repeat_last_n, ignore_eos,
//   reasoning_format ("none" keeps a reasoning model's "<think>" section in content).
// A token's logprob is the natural log of the probability the sampler drew it with: after the
// penalties, at the request's temperature, renormalised over the tokens top_k/top_p/min_p kept —
// and for greedy requests (temperature 0) the model's own softmax of the penalised logits at
// temperature 1. The top_logprobs are the same distribution's most likely tokens.
// response_format {"type": "json_object"} constrains the reply to one JSON object (json_mode.h).
// Refused with a 400 that names the field: tools, images, n > 1, JSON schemas — features this
// server does not have, rather than answers that quietly ignore them.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json.h"
#include "lantern/sampling.h"
#include "lantern/stop_reason.h"

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
        : std::runtime_error(std::move(message)),
          status(status_),
          type(std::move(type_)),
          param(std::move(param_)),
          code(std::move(code_)) {}
};
Json error_body(const ApiError& e);

struct CompletionJob {
    bool chat = true;                  // /v1/chat/completions (else /v1/completions)
    std::vector<int32_t> prompt;       // token ids, BOS included where the model wants it
    SamplingSettings settings;         // stop strings in settings.stop
    std::vector<int32_t> stop_tokens;  // end of reply: EOS, the format's end-of-turn
    bool stream = false, include_usage = false;
    bool logprobs = false;  // report each token's logprob (and settings.n_probs alternatives)
    // Chat: split "<think>" reasoning from the answer (ReasoningSplitter; the request's
    // "reasoning_format": "none" keeps the raw text), and whether the prompt already opened it.
    bool split_reasoning = false, opens_in_reasoning = false;
    // response_format {"type": "json_object"}: the reply is constrained to be one JSON object and
    // ends when it closes (server/json_mode.h).
    bool json_mode = false;
    // logit_bias: added to those tokens' logits before sampling (-100 bans a token).
    std::vector<std::pair<int32_t, float>> logit_bias;
    // Whether the reply begins a text (chat: the leading dummy-prefix space is dropped) or continues
    // the prompt's (completions keep it: "Once upon a time" + " there").
    bool text_start = true;
};

// Throws ApiError for a body that asks for something invalid or unsupported, or whose prompt
// does not fit the context (400, code "context_length_exceeded").
CompletionJob chat_job(const Json& body, const Engine& engine);
CompletionJob completion_job(const Json& body, const Engine& engine);

// llama-server's token endpoints, for clients that count or inspect tokens:
//   POST /tokenize {"content": TEXT, "add_special": false, "with_pieces": false}
//        -> {"tokens": [ids]} (with_pieces: [{"id", "piece"}]; add_special: BOS as prompts get it)
//   POST /detokenize {"tokens": [ids]} -> {"content": TEXT}
// llama-server's /tokenize: content of at most kMaxTokenizeBytes (413 past it).
constexpr size_t kMaxTokenizeBytes = 1u << 20;
Json tokenize(const Json& body, const Engine& engine);
Json detokenize(const Json& body, const Engine& engine);

// llama-server's /apply-template: the prompt text the model's chat template renders for a chat
// request's messages (and tools, chat_template_kwargs.enable_thinking), as transformers'
// apply_chat_template(tokenize=False) would — {"prompt": TEXT}. 400 when the template refuses.
Json apply_template(const Json& body, const Engine& engine);

// The most body bytes a request to `path` can use with this engine; the server refuses a longer
// Content-Length (413) before reading the body. Completions: the longest text the context could
// hold (context x the tokenizer's longest piece, each byte written as a 6-byte escape), a token id
// per context position, a logit_bias entry per vocabulary token, message overhead per context
// position, and 64 KiB for the rest. /tokenize: kMaxTokenizeBytes escaped; /detokenize: an id per
// JSON value the parser takes; anything else (bodies it ignores): 64 KiB.
size_t useful_body_bytes(std::string_view path, const Engine& engine);

// "stop" (end of turn or a stop string) or "length" (max_tokens, or the context is full), from
// the scheduler's reason.
const char* finish_reason(StopReason scheduler_reason);

// The reply of a model that reasons before it answers (DeepSeek-R1 and its distilled Llama models:
// "<think>...</think>" and then the answer), split as it streams into the reasoning (OpenAI
// clients read it as DeepSeek's API sends it: message.reasoning_content, delta.reasoning_content)
// and the answer (content, without the blank lines after "</think>"). Text that could be the start
// of a tag is held back until it is known not to be.
class ReasoningSplitter {
public:
    // `opens_in_reasoning`: the prompt ended with "<think>" (ChatFormat::DeepSeekR1), so the
    // reply starts inside the reasoning; otherwise a reply that starts with "<think>" opens it.
    explicit ReasoningSplitter(bool opens_in_reasoning);
    struct Parts {
        std::string reasoning, answer;
    };
    Parts feed(std::string_view text);
    Parts flush();  // the end of the reply: whatever was held back

private:
    enum class State { Start, Reasoning, AnswerStart, Answer } state_;
    std::string held_;
};

}  // namespace lantern::server
