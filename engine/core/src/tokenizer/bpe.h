// Byte-level BPE, the tokenizer family of GPT-2 and Llama 3 (GGUF tokenizer.ggml.model = "gpt2").
//
// Text is first split into words by a pre-tokenizer (a fixed regular expression per model family,
// named by tokenizer.ggml.pre), each word's bytes are spelled in GPT-2's byte alphabet (every byte
// one printable code point: "Ġ" for a space, "Ċ" for a newline), and the word's symbols are merged
// pair by pair in the order of tokenizer.ggml.merges. Every byte has a token, so any text — even
// invalid UTF-8 — encodes, and decoding gives the bytes back exactly.
//
// Private to the engine: lantern/tokenizer.h wraps it (special tokens, BOS, decoding tables).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lantern::tokenizer {

// The pre-tokenizers Lantern knows, by the family that uses them.
enum class BpePreTokenizer {
    Llama3,  // tokenizer.ggml.pre "llama-bpe" (also "llama3", "llama-v3"): Llama 3, 3.1, 3.2, 3.3;
             // "falcon3" (Falcon 3), "midm-2.0"
    SmolLm,  // "smollm": SmolLM and SmolLM2 (llama architecture): GPT-2's, every digit on its own
    Gpt2,    // "gpt-2": GPT-2's own expression
    Qwen2,   // "qwen2", "deepseek-r1-qwen": Qwen2, Qwen2.5, Qwen3 and the R1 distills: Llama 3's
             // expression with every digit on its own
    Tekken,  // "tekken": Mistral NeMo, Mistral Small 3 (llama architecture): words split at case changes
    Gpt4o,   // "gpt-4o", "llama4", "kanana2", "talkie": Phi-4-mini, Llama 4: tekken's expression with
             // English contractions kept on the word ("don't") and digits in runs of up to three
    // DeepSeek's first models (llama architecture): a sequence of expressions, each splitting the
    // pieces of the ones before it (line breaks, letter runs, punctuation runs, CJK runs, digits)
    DeepSeekLlm,    // "deepseek-llm": DeepSeek LLM 7B/67B
    DeepSeekCoder,  // "deepseek-coder": DeepSeek Coder 1.3B/6.7B/33B
};

// The words `text` splits into under `pre`, as byte ranges of `text` (they cover it exactly, in
// order). Code points are decoded from UTF-8; a byte that is not part of valid UTF-8 counts as one
// code point of its own, neither letter, digit nor space.
std::vector<std::string_view> bpe_split_words(std::string_view text, BpePreTokenizer pre);

// GPT-2's byte alphabet: the code point that spells byte b in vocabulary pieces, UTF-8 encoded.
const std::string& bpe_byte_symbol(uint8_t b);
// The bytes a piece spells: each code point of the byte alphabet back to its byte; a code point
// outside the alphabet (a piece added by hand) stays as its own UTF-8.
std::string bpe_piece_bytes(std::string_view piece);

class BpeEncoder {
public:
    // `pieces[id]`: the vocabulary, spelled in the byte alphabet; `matchable[id]`: whether text may
    // produce that id (false for special tokens, which only enter a prompt by id). `merges`: "left
    // right" in rank order. Throws Error(InvalidModelFile) for a malformed merge.
    BpeEncoder(const std::vector<std::string>& pieces, const std::vector<uint8_t>& matchable,
               const std::vector<std::string>& merges, BpePreTokenizer pre, const std::string& source);

    // Appends the ids of `text` to `out`. Throws Error(InvalidArgument) if the vocabulary cannot
    // spell one of its bytes (a vocabulary without the full byte alphabet).
    void encode(std::string_view text, std::vector<int32_t>& out) const;

private:
    void encode_word(std::string_view word, std::vector<int32_t>& out) const;

    BpePreTokenizer pre_;
    // Llama 3's and tekken's pre-tokenizers take a whole word that is a token as that token before
    // merging (what llama.cpp and Hugging Face's `ignore_merges` do); merging could reach a
    // different split.
    bool whole_words_first_;
    std::unordered_map<std::string, int32_t> ids_;         // matchable pieces
    std::unordered_map<std::string, int32_t> merge_rank_;  // "left right" -> rank
};

}  // namespace lantern::tokenizer
