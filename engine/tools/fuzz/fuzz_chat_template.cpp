// libFuzzer target for the Jinja interpreter (lantern/jinja.h): the input is a chat template,
// parsed and rendered with a conversation like the app's. Any input must end in output or a
// TemplateError — no crash, no sanitizer report, no hang past the step budget, no memory past the
// string and list caps (libFuzzer's -rss_limit_mb and -timeout catch what the limits would miss).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "lantern/jinja.h"

namespace {

const lantern::jinja::Value& context() {
    static const lantern::jinja::Value ctx =
        lantern::jinja::Value::from_json(nlohmann::ordered_json::parse(R"({
      "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|im_end|>"},
                   {"role": "assistant", "content": "<think>x</think>Hello!", "reasoning_content": "r",
                    "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
                   {"role": "tool", "content": "{\"ok\": true}"}, {"role": "user", "content": "多谢 🌍"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
      "documents": null, "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
      "enable_thinking": false})"));
    return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    lantern::jinja::RenderOptions options;
    options.limits.max_steps = 200'000;  // a fuzz run needs speed; the cap's behaviour is the same
    options.limits.max_string_bytes = 1 << 20;
    options.limits.max_list_items = 1 << 16;
    options.strftime_now = [](const std::string& format) { return format; };
    try {
        const auto t = lantern::jinja::Template::parse(source);
        const auto out = t.render(context(), options);
        if (out.text.size() > options.limits.max_string_bytes) __builtin_trap();
    } catch (const lantern::jinja::TemplateError&) {
    }
    return 0;
}
