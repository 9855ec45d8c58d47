#include "openai.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "lantern/chat_template.h"
#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/tokenizer.h"

namespace lantern::server {

Json error_body(const ApiError& e) {
    return Json{{"error",
                 {{"message", e.what()},
                  {"type", e.type},
                  {"param", e.param.empty() ? Json() : Json(e.param)},
                  {"code", e.code.empty() ? Json() : Json(e.code)}}}};
}

const char* finish_reason(StopReason reason) {
    return reason == StopReason::MaxTokens || reason == StopReason::ContextFull ? "length" : "stop";
}

namespace {

// A present, non-null member (null counts as absent, as OpenAI's API treats it).
const Json* member(const Json& body, const char* key) {
    const Json* v = json_find(body, key);
    return v && !v->is_null() ? v : nullptr;
}

// A bound as a person writes it: "0" and "100" rather than JSON's "0.0" and "100.0".
std::string number_text(double d) {
    return d == std::trunc(d) && std::fabs(d) < 1e15 ? std::to_string(static_cast<int64_t>(d)) : dump_json(d);
}

std::optional<double> number(const Json& body, const char* key, double lo, double hi) {
    const Json* v = member(body, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw ApiError(400, std::string(key) + " must be a number", key);
    const double d = v->get<double>();
    if (d < lo || d > hi)
        throw ApiError(
            400, std::string(key) + " must be between " + number_text(lo) + " and " + number_text(hi), key);
    return d;
}

std::optional<int64_t> integer(const Json& body, const char* key, int64_t lo, int64_t hi) {
    const Json* v = member(body, key);
    if (!v) return std::nullopt;
    if (!v->is_number() || !json_integer(*v))
        throw ApiError(400, std::string(key) + " must be an integer", key);
    const int64_t i = *json_integer(*v);
    if (i < lo || i > hi)
        throw ApiError(
            400, std::string(key) + " must be between " + std::to_string(lo) + " and " + std::to_string(hi),
            key);
    return i;
}

bool flag(const Json& body, const char* key) {
    const Json* v = member(body, key);
    if (!v) return false;
    if (!v->is_boolean()) throw ApiError(400, std::string(key) + " must be true or false", key);
    return v->get<bool>();
}

void refuse_unsupported(const Json& body) {
    if (const Json* n = member(body, "n"); n && !(n->is_number() && json_integer(*n) == 1))
        throw ApiError(400, "n must be 1: this server writes one choice per request", "n");
    for (const char* key : {"tools", "functions", "tool_choice", "function_call"})
        if (const Json* v = member(body, key);
            v && !(v->is_array() && v->empty()) && !(v->is_string() && json_string(*v) == "none"))
            throw ApiError(400, std::string(key) + ": tool calling is not supported by this server", key);
}

// response_format: {"type": "text"} (the default) or {"type": "json_object"} (JSON mode).
bool json_mode_of(const Json& body) {
    const Json* rf = member(body, "response_format");
    if (!rf) return false;
    const Json* type = rf->is_object() ? json_find(*rf, "type") : nullptr;
    if (type && type->is_string() && json_string(*type) == "text") return false;
    if (type && type->is_string() && json_string(*type) == "json_object") return true;
    throw ApiError(
        400,
        "response_format: {\"type\": \"text\"} or {\"type\": \"json_object\"} (JSON schemas are not "
        "supported)",
        "response_format");
}

// The sampling fields shared by both endpoints. Fields a client leaves out keep Lantern's
// defaults (llama.cpp's: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05).
void read_common(const Json& body, CompletionJob& job, int32_t vocab_size) {
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    refuse_unsupported(body);
    SamplingSettings& s = job.settings;
    if (auto v = number(body, "temperature", 0, 100)) s.temperature = static_cast<float>(*v);
    if (auto v = number(body, "top_p", 0, 1)) s.top_p = static_cast<float>(*v);
    if (auto v = number(body, "min_p", 0, 1)) s.min_p = static_cast<float>(*v);
    if (auto v = integer(body, "top_k", 0, std::numeric_limits<int32_t>::max()))
        s.top_k = static_cast<int32_t>(*v);
    if (auto v = number(body, "presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
    if (auto v = number(body, "frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
    if (auto v = number(body, "repeat_penalty", 1e-6, 100)) s.repeat_penalty = static_cast<float>(*v);
    if (auto v = integer(body, "repeat_last_n", -1, std::numeric_limits<int32_t>::max()))
        s.penalty_last_n = static_cast<int32_t>(*v);
    if (auto v =
            integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
        s.seed = static_cast<uint64_t>(*v);
    s.ignore_eos = flag(body, "ignore_eos");
    s.max_new_tokens = 0;  // no limit but the context, as OpenAI's default
    for (const char* key : {"max_tokens", "max_completion_tokens"})
        if (auto v = integer(body, key, 1, std::numeric_limits<int32_t>::max()))
            s.max_new_tokens = static_cast<int32_t>(*v);
    if (const Json* stop = member(body, "stop")) {
        std::vector<std::string> list;
        if (stop->is_string()) {
            list.push_back(json_string(*stop));
        } else if (stop->is_array()) {
            for (const Json& item : *stop) {
                if (!item.is_string())
                    throw ApiError(400, "stop must be a string or an array of strings", "stop");
                list.push_back(json_string(item));
            }
        } else {
            throw ApiError(400, "stop must be a string or an array of strings", "stop");
        }
        if (list.size() > 16) throw ApiError(400, "stop holds at most 16 strings", "stop");
        for (const auto& text : list) {
            if (text.empty()) throw ApiError(400, "stop strings must not be empty", "stop");
            // Matched against the text at every token (StopStringMatcher holds back as much).
            if (text.size() > 256) throw ApiError(400, "stop strings are at most 256 bytes", "stop");
        }
        s.stop = std::move(list);
    }
    // Chat: "logprobs": true with "top_logprobs": 0-20. Completions (the legacy shape): "logprobs":
    // the number of top tokens, 0-20 (null: none).
    if (job.chat) {
        job.logprobs = flag(body, "logprobs");
        if (auto v = integer(body, "top_logprobs", 0, 20)) {
            if (!job.logprobs) throw ApiError(400, "top_logprobs needs logprobs: true", "top_logprobs");
            s.n_probs = static_cast<int32_t>(*v);
        }
    } else if (auto v = integer(body, "logprobs", 0, 20)) {
        job.logprobs = true;
        s.n_probs = static_cast<int32_t>(*v);
    }
    job.json_mode = json_mode_of(body);
    if (const Json* bias = member(body, "logit_bias")) {
        if (!bias->is_object()) throw ApiError(400, "logit_bias must map token ids to numbers", "logit_bias");
        for (const auto& [key, value] : bias->items()) {
            int64_t id = -1;
            const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
            if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id >= vocab_size)
                throw ApiError(400,
                               "logit_bias: \"" + key + "\" is not a token id of this model (0 to " +
                                   std::to_string(vocab_size - 1) + ")",
                               "logit_bias");
            if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100)
                throw ApiError(400, "logit_bias values must be numbers from -100 to 100", "logit_bias");
            // Spelled twice ("5" and "05", or a repeated key) the biases would add up past +-100.
            for (const auto& [other, ignored] : job.logit_bias)
                if (other == id)
                    throw ApiError(400, "logit_bias names token " + std::to_string(id) + " more than once",
                                   "logit_bias");
            job.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(value.get<double>()));
        }
    }
    job.stream = flag(body, "stream");
    if (const Json* opts = member(body, "stream_options")) {
        if (!opts->is_object()) throw ApiError(400, "stream_options must be an object", "stream_options");
        job.include_usage = flag(*opts, "include_usage");
    }
    try {
        validate(s);
    } catch (const Error& e) {
        throw ApiError(400, e.what());
    }
}

void check_fits(const CompletionJob& job, const Engine& engine) {
    if (job.prompt.size() >= engine.context_length())
        throw ApiError(400,
                       "this model's context holds " + std::to_string(engine.context_length()) +
                           " tokens, but the prompt takes " + std::to_string(job.prompt.size()) +
                           " (and the reply needs at least one more); shorten the " +
                           (job.chat ? "messages" : "prompt"),
                       job.chat ? "messages" : "prompt", "context_length_exceeded");
}

// Before encoding: a text longer than the context could hold even at the longest piece per token
// is refused unread, so a huge body costs no tokenizer time on the engine's thread.
void check_text_fits(size_t text_bytes, const Engine& engine, bool chat) {
    const size_t per_token = engine.tokenizer().longest_piece_bytes();
    if (text_bytes / per_token < engine.context_length()) return;
    throw ApiError(400,
                   "this model's context holds " + std::to_string(engine.context_length()) +
                       " tokens, and a text of " + std::to_string(text_bytes) +
                       " bytes is more than that (no token "
                       "of this model stands for more than " +
                       std::to_string(per_token) + " bytes); shorten the " + (chat ? "messages" : "prompt"),
                   chat ? "messages" : "prompt", "context_length_exceeded");
}

std::string message_text(const Json& content, size_t index) {
    const std::string where = "messages[" + std::to_string(index) + "].content";
    if (content.is_string()) return json_string(content);
    if (content.is_null()) return {};
    if (!content.is_array()) throw ApiError(400, where + " must be a string or an array of parts", where);
    std::string text;
    for (const Json& part : content) {
        const Json* type = part.is_object() ? json_find(part, "type") : nullptr;
        const Json* t = part.is_object() ? json_find(part, "text") : nullptr;
        if (!type || !type->is_string()) throw ApiError(400, where + ": each part needs a type", where);
        if (json_string(*type) != "text")
            throw ApiError(
                400, where + ": only text parts are supported (got \"" + json_string(*type) + "\")", where);
        if (!t || !t->is_string()) throw ApiError(400, where + ": a text part needs its text", where);
        if (!text.empty()) text += '\n';
        text += json_string(*t);
    }
    return text;
}

}  // namespace

CompletionJob chat_job(const Json& body, const Engine& engine) {
    CompletionJob job;
    job.chat = true;
    read_common(body, job, engine.tokenizer().vocab_size());
    const Json* msgs = json_find(body, "messages");
    if (!msgs || !msgs->is_array() || msgs->empty())
        throw ApiError(400, "messages must be a non-empty array", "messages");
    std::vector<ChatMessage> messages;
    for (size_t i = 0; i < msgs->size(); ++i) {
        const Json& m = (*msgs)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        const Json* role = m.is_object() ? json_find(m, "role") : nullptr;
        if (!role || !role->is_string()) throw ApiError(400, where + " needs a role", where + ".role");
        ChatMessage cm;
        const std::string& r = json_string(*role);
        if (r == "system" || r == "developer")
            cm.role = ChatRole::System;
        else if (r == "user")
            cm.role = ChatRole::User;
        else if (r == "assistant")
            cm.role = ChatRole::Assistant;
        else
            throw ApiError(
                400, where + ".role \"" + r + "\" is not supported (system, developer, user, assistant)",
                where + ".role");
        if (const Json* calls = member(m, "tool_calls"); calls && !(calls->is_array() && calls->empty()))
            throw ApiError(400, where + ": tool calls are not supported by this server",
                           where + ".tool_calls");
        const Json* content = json_find(m, "content");
        if (!content) throw ApiError(400, where + " needs content", where + ".content");
        cm.content = message_text(*content, i);
        messages.push_back(std::move(cm));
    }
    size_t text_bytes = 0;
    for (const ChatMessage& m : messages) text_bytes += m.content.size();
    check_text_fits(text_bytes, engine, true);
    ChatTemplate tmpl = ChatTemplate::for_engine(engine);
    // chat_template_kwargs, as llama-server takes them: enable_thinking (Qwen3) is the one this
    // renderer has; other keys are refused by name rather than ignored.
    if (const Json* kwargs = member(body, "chat_template_kwargs")) {
        if (!kwargs->is_object())
            throw ApiError(400, "chat_template_kwargs must be an object", "chat_template_kwargs");
        for (const auto& [key, value] : kwargs->items()) {
            if (key != "enable_thinking")
                throw ApiError(400, "chat_template_kwargs." + key + " is not supported (enable_thinking is)",
                               "chat_template_kwargs." + key);
            if (!value.is_boolean())
                throw ApiError(400, "chat_template_kwargs.enable_thinking must be true or false",
                               "chat_template_kwargs.enable_thinking");
            tmpl.set_thinking(value.get<bool>());
        }
    }
    // vLLM's fields for a reply to go on from the last message: continue_final_message renders
    // that message (an assistant's) open, without its end of turn; add_generation_prompt false
    // renders the conversation closed, with no new reply begun.
    const bool continue_final = flag(body, "continue_final_message");
    const Json* generation = member(body, "add_generation_prompt");
    if (generation && !generation->is_boolean())
        throw ApiError(400, "add_generation_prompt must be true or false", "add_generation_prompt");
    const bool add_generation = generation ? generation->get<bool>() : !continue_final;
    if (continue_final && add_generation)
        throw ApiError(400, "continue_final_message needs add_generation_prompt false",
                       "add_generation_prompt");
    if (continue_final && messages.back().role != ChatRole::Assistant)
        throw ApiError(400, "continue_final_message needs the last message to be the assistant's",
                       "continue_final_message");
    const RenderedPrompt rendered = continue_final
                                        ? tmpl.render_open_reply(engine.tokenizer(), messages)
                                        : tmpl.render(engine.tokenizer(), messages, add_generation);
    job.prompt = rendered.tokens;
    job.split_reasoning = true;
    if (const Json* rf = member(body, "reasoning_format")) {
        if (!rf->is_string() || (json_string(*rf) != "none" && json_string(*rf) != "deepseek"))
            throw ApiError(400, "reasoning_format must be \"deepseek\" (reasoning_content apart) or \"none\"",
                           "reasoning_format");
        job.split_reasoning = json_string(*rf) != "none";
    }
    // The generation prompt opened the reasoning itself (DeepSeek-R1's "<think>\n").
    job.opens_in_reasoning = ChatTemplate::opens_reasoning(rendered.text);
    job.stop_tokens = tmpl.stop_tokens(engine.tokenizer());
    // A base model (no chat template) continues the conversation's text: its reply goes on from the
    // last message (keeping the space in front of its first word), unless there is no text yet.
    // A continued reply goes on mid-text too (the space in front of its next word is kept).
    job.text_start =
        (tmpl.renders_chat() && !continue_final) || engine.tokenizer().decode(job.prompt).empty();
    check_fits(job, engine);
    return job;
}

CompletionJob completion_job(const Json& body, const Engine& engine) {
    CompletionJob job;
    job.chat = false;
    read_common(body, job, engine.tokenizer().vocab_size());
    const Tokenizer& tok = engine.tokenizer();
    const Json* prompt = json_find(body, "prompt");
    if (prompt && prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string())
        prompt = &(*prompt)[0];
    if (!prompt || prompt->is_null()) throw ApiError(400, "prompt is required", "prompt");
    if (prompt->is_string()) {
        check_text_fits(json_string(*prompt).size(), engine, false);
        job.prompt = tok.encode(json_string(*prompt), tok.add_bos());
    } else if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number()) {
        for (const Json& id : *prompt) {
            if (!id.is_number() || !json_integer(id) || *json_integer(id) < 0 ||
                *json_integer(id) >= tok.vocab_size())
                throw ApiError(
                    400, "prompt token ids must be integers in [0, " + std::to_string(tok.vocab_size()) + ")",
                    "prompt");
            job.prompt.push_back(static_cast<int32_t>(*json_integer(id)));
        }
    } else {
        throw ApiError(400, "prompt must be a string, an array of one string, or an array of token ids",
                       "prompt");
    }
    if (job.prompt.empty()) job.prompt.push_back(tok.bos_id() >= 0 ? tok.bos_id() : 0);
    job.stop_tokens = ChatTemplate::for_engine(engine).stop_tokens(tok);
    job.text_start = tok.decode(job.prompt).empty();  // from BOS alone the reply starts the text
    check_fits(job, engine);
    return job;
}

size_t useful_body_bytes(std::string_view path, const Engine& engine) {
    constexpr size_t kRest = 64 * 1024, kEscaped = 6, kIdBytes = 12, kBiasEntryBytes = 24, kMessageBytes = 64;
    if (path == "/v1/completions" || path == "/v1/chat/completions" || path == "/apply-template") {
        const size_t context = engine.context_length();
        const size_t text = context * engine.tokenizer().longest_piece_bytes();
        return kRest + kEscaped * text + (kIdBytes + kMessageBytes) * context +
               kBiasEntryBytes * static_cast<size_t>(engine.tokenizer().vocab_size());
    }
    if (path == "/tokenize") return kRest + kEscaped * kMaxTokenizeBytes;
    if (path == "/detokenize") return kRest + kIdBytes * kJsonMaxValues;
    return kRest;
}

Json tokenize(const Json& body, const Engine& engine) {
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    const Json* content = json_find(body, "content");
    if (!content || !content->is_string()) throw ApiError(400, "content must be a string", "content");
    if (json_string(*content).size() > kMaxTokenizeBytes)
        throw ApiError(413, "content is at most " + std::to_string(kMaxTokenizeBytes) + " bytes", "content");
    const Tokenizer& tok = engine.tokenizer();
    const std::vector<int32_t> ids =
        tok.encode(json_string(*content), flag(body, "add_special") && tok.add_bos());
    Json out = Json::array();
    const bool pieces = flag(body, "with_pieces");
    for (const int32_t id : ids) {
        if (pieces)
            out.push_back({{"id", id}, {"piece", tok.display_piece(id)}});
        else
            out.push_back(id);
    }
    return Json{{"tokens", std::move(out)}};
}

Json apply_template(const Json& body, const Engine& engine) {
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    const Json* messages = json_find(body, "messages");
    if (!messages || !messages->is_array()) throw ApiError(400, "messages must be an array", "messages");
    const Json* tools = json_find(body, "tools");
    ChatTemplate tmpl = ChatTemplate::for_engine(engine);
    if (const Json* kwargs = member(body, "chat_template_kwargs")) {
        if (!kwargs->is_object())
            throw ApiError(400, "chat_template_kwargs must be an object", "chat_template_kwargs");
        if (const Json* thinking = json_find(*kwargs, "enable_thinking")) {
            if (!thinking->is_boolean())
                throw ApiError(400, "chat_template_kwargs.enable_thinking must be true or false",
                               "chat_template_kwargs.enable_thinking");
            tmpl.set_thinking(thinking->get<bool>());
        }
    }
    const Json* generation = json_find(body, "add_generation_prompt");
    if (generation && !generation->is_boolean())
        throw ApiError(400, "add_generation_prompt must be true or false", "add_generation_prompt");
    try {
        return Json{{"prompt", tmpl.apply(engine.tokenizer(), *messages, tools ? *tools : Json(nullptr),
                                          !generation || generation->get<bool>())}};
    } catch (const Error& e) {
        throw ApiError(400, e.what(), "messages");
    }
}

Json detokenize(const Json& body, const Engine& engine) {
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    const Json* tokens = json_find(body, "tokens");
    if (!tokens || !tokens->is_array()) throw ApiError(400, "tokens must be an array of token ids", "tokens");
    const Tokenizer& tok = engine.tokenizer();
    std::vector<int32_t> ids;
    for (const Json& id : *tokens) {
        if (!id.is_number() || !json_integer(id) || *json_integer(id) < 0 ||
            *json_integer(id) >= tok.vocab_size())
            throw ApiError(400, "tokens must be integers in [0, " + std::to_string(tok.vocab_size()) + ")",
                           "tokens");
        ids.push_back(static_cast<int32_t>(*json_integer(id)));
    }
    return Json{{"content", tok.decode(ids)}};
}

namespace {
constexpr std::string_view kOpen = "<think>", kClose = "</think>";
bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
// Length of the longest end of `text` that is a proper start of `tag`.
size_t partial_tag(std::string_view text, std::string_view tag) {
    for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
        if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
    return 0;
}
}  // namespace

ReasoningSplitter::ReasoningSplitter(bool opens_in_reasoning)
    : state_(opens_in_reasoning ? State::Reasoning : State::Start) {}

ReasoningSplitter::Parts ReasoningSplitter::feed(std::string_view text) {
    held_ += text;
    Parts out;
    while (true) {
        if (state_ == State::Start) {
            // Leading whitespace, then "<think>" or anything else (then there is no reasoning).
            size_t i = 0;
            while (i < held_.size() && is_space(held_[i])) ++i;
            const std::string_view rest = std::string_view(held_).substr(i);
            if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return out;  // undecided
            if (rest.substr(0, kOpen.size()) == kOpen) {
                held_.erase(0, i + kOpen.size());
                state_ = State::Reasoning;
            } else {
                state_ = State::Answer;
            }
            continue;
        }
        if (state_ == State::Reasoning) {
            const size_t close = held_.find(kClose);
            if (close == std::string::npos) {
                const size_t keep = partial_tag(held_, kClose);
                out.reasoning += held_.substr(0, held_.size() - keep);
                held_.erase(0, held_.size() - keep);
                return out;
            }
            out.reasoning += held_.substr(0, close);
            held_.erase(0, close + kClose.size());
            state_ = State::AnswerStart;
            continue;
        }
        if (state_ == State::AnswerStart) {
            size_t i = 0;
            while (i < held_.size() && is_space(held_[i])) ++i;
            held_.erase(0, i);
            if (held_.empty()) return out;
            state_ = State::Answer;
        }
        out.answer += held_;
        held_.clear();
        return out;
    }
}

ReasoningSplitter::Parts ReasoningSplitter::flush() {
    Parts out;
    if (state_ == State::Reasoning)
        out.reasoning = std::move(held_);  // cut off while reasoning
    else if (state_ != State::AnswerStart)
        out.answer = std::move(held_);
    held_.clear();
    return out;
}

}  // namespace lantern::server
