// libFuzzer target for the tokenizers' text paths (scripts/fuzz builds and runs it). The first
// byte picks a byte-level BPE pre-tokenizer, the rest is the text. Its words must cover the text
// exactly, in order; a whole tokenizer of that kind (a small vocabulary) must give back a valid
// UTF-8 text's exact bytes from its ids (decode writes other bytes as U+FFFD), and its
// special-token reading must stay within the vocabulary.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "tokenizer/bpe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using lantern::tokenizer::BpePreTokenizer;
    if (size == 0) return 0;
    static const std::pair<BpePreTokenizer, const char*> kinds[] = {
        {BpePreTokenizer::Llama3, "llama-bpe"},
        {BpePreTokenizer::SmolLm, "smollm"},
        {BpePreTokenizer::Gpt2, "gpt-2"},
        {BpePreTokenizer::Qwen2, "qwen2"},
        {BpePreTokenizer::Tekken, "tekken"},
        {BpePreTokenizer::Gpt4o, "gpt-4o"},
        {BpePreTokenizer::DeepSeekLlm, "deepseek-llm"},
        {BpePreTokenizer::DeepSeekCoder, "deepseek-coder"},
    };
    const auto& [pre, name] = kinds[data[0] % std::size(kinds)];
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

    std::string joined;
    for (const std::string_view word : lantern::tokenizer::bpe_split_words(text, pre)) {
        if (word.empty() || word.data() != text.data() + joined.size()) std::abort();  // in order, no gaps
        joined += word;
    }
    if (joined != text) std::abort();

    const lantern::Tokenizer& tok = lantern::fuzz::small_bpe_tokenizer(name);
    const std::vector<int32_t> ids = tok.encode(text, false);
    if (lantern::fuzz::valid_utf8(text) && tok.decode(ids) != text) std::abort();
    for (const int32_t id : tok.encode_with_specials(text, true))
        if (id < 0 || id >= tok.vocab_size()) std::abort();
    return 0;
}
