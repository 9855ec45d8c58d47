#include "fuzz_support.h"

#include <map>
#include <vector>

#include "lantern/gguf.h"
#include "tokenizer/bpe.h"

namespace lantern::fuzz {

const Tokenizer& small_bpe_tokenizer(const std::string& pre) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> built;
    auto& slot = built[pre];
    if (slot) return *slot;
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(tokenizer::bpe_byte_symbol(static_cast<uint8_t>(b)));
        types.push_back(1);
    }
    const std::vector<std::string> merges = {"Ġ t", "h e", "Ġt he", "i n", "Ġ a", "e r", "1 2", "Ġ Ġ"};
    for (const std::string& m : merges) {
        tokens.push_back(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
        types.push_back(1);
    }
    const auto bos = static_cast<uint32_t>(tokens.size());
    for (const char* special : {"<|begin_of_text|>", "<|eot_id|>", "<|im_start|>", "<|im_end|>"}) {
        tokens.push_back(special);
        types.push_back(3);
    }
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", merges);
    w.set_u32("tokenizer.ggml.bos_token_id", bos);
    w.set_u32("tokenizer.ggml.eos_token_id", bos + 1);
    const std::vector<uint8_t> bytes = w.serialize();
    slot = Tokenizer::from_gguf(*GgufFile::from_memory(bytes));
    return *slot;
}

// Well-formed UTF-8 (Unicode's table 3-7: no overlong forms, surrogates or code points past 10FFFF).
bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        size_t n = 0;
        unsigned char lo = 0x80, hi = 0xbf;
        if (b < 0x80)
            n = 0;
        else if (b >= 0xc2 && b <= 0xdf)
            n = 1;
        else if (b == 0xe0)
            n = 2, lo = 0xa0;
        else if (b >= 0xe1 && b <= 0xec)
            n = 2;
        else if (b == 0xed)
            n = 2, hi = 0x9f;
        else if (b >= 0xee && b <= 0xef)
            n = 2;
        else if (b == 0xf0)
            n = 3, lo = 0x90;
        else if (b >= 0xf1 && b <= 0xf3)
            n = 3;
        else if (b == 0xf4)
            n = 3, hi = 0x8f;
        else
            return false;
        for (size_t k = 1; k <= n; ++k) {
            if (i + k >= s.size()) return false;
            const auto c = static_cast<unsigned char>(s[i + k]);
            if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xbf)) return false;
        }
        i += n + 1;
    }
    return true;
}

TokenizerOnlyEngine::TokenizerOnlyEngine(const std::string& pre, uint32_t context, std::string chat_template)
    : tokenizer_(small_bpe_tokenizer(pre)), context_(context), template_(std::move(chat_template)) {
    model_.name = "fuzz";
    model_.architecture = "llama";
    model_.vocab = static_cast<uint32_t>(tokenizer_.vocab_size());
    model_.context_length = context;
}

}  // namespace lantern::fuzz
