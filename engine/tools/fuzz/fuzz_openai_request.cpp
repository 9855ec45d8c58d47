// libFuzzer target for the OpenAI request layer (server/src/openai.h) on an engine that has only a
// tokenizer (fuzz_support.h): any body must become a job — a prompt within the context, token ids
// within the vocabulary, sampling settings the sampler accepts — or be refused with an ApiError of
// a 4xx status and a message. Any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz_support.h"
#include "json.h"
#include "openai.h"

namespace {

void check(const lantern::server::CompletionJob& job, const lantern::Engine& engine) {
    if (job.prompt.empty() || job.prompt.size() >= engine.context_length()) std::abort();
    for (const int32_t id : job.prompt)
        if (id < 0 || id >= engine.tokenizer().vocab_size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static lantern::fuzz::TokenizerOnlyEngine plain("llama-bpe", 256);
    static lantern::fuzz::TokenizerOnlyEngine chatml(
        "qwen2", 256,
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}");
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    lantern::server::Json body;
    try {
        body = lantern::server::parse_json(bytes);
    } catch (const lantern::server::JsonError&) {
        return 0;
    }
    for (const lantern::Engine* engine :
         {static_cast<const lantern::Engine*>(&plain), static_cast<const lantern::Engine*>(&chatml)}) {
        for (const bool chat : {true, false}) {
            try {
                check(chat ? lantern::server::chat_job(body, *engine)
                           : lantern::server::completion_job(body, *engine),
                      *engine);
            } catch (const lantern::server::ApiError& e) {
                if (e.status < 400 || e.status >= 500 || std::string_view(e.what()).empty()) std::abort();
            }
        }
        try {
            lantern::server::tokenize(body, *engine);
            lantern::server::detokenize(body, *engine);
        } catch (const lantern::server::ApiError& e) {
            if (e.status < 400 || e.status >= 500) std::abort();
        }
    }
    return 0;
}
