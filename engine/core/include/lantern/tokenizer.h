// lantern/tokenizer.h — text to token ids and back, exactly as the model was trained.
//
// Lantern runs sentencepiece-style ("llama") vocabularies through the sentencepiece library. The
// vocabulary comes from the GGUF itself (tokenizer.ggml.tokens / scores / token_type, turned into a
// sentencepiece ModelProto) or from a tokenizer.model file. Byte-level BPE vocabularies ("gpt2":
// Llama 3's, Mistral's, SmolLM's) run on Lantern's own encoder (tokenizer/bpe.h) when their
// pre-tokenizer is one it knows ("llama-bpe", "tekken", "smollm", "gpt-2"). Other families
// (WordPiece, Unigram, other BPE pre-tokenizers) are refused with Error(UnsupportedTokenizer)
// naming them.
//
// Special tokens and prompt injection: control tokens (<s>, </s>, and chat markers such as
// <|im_start|> or <start_of_turn>) only ever enter a prompt by id, placed there by a ChatTemplate.
// encode() treats every character a user typed as text, so typing "<s>" or "[INST]" produces the
// tokens of those characters, never the control token.
//
// Decoding follows sentencepiece: control tokens are invisible, "▁" is a space, byte-fallback pieces
// <0xNN> are raw bytes joined into characters, and the space sentencepiece adds in front of a text
// ("dummy prefix") is dropped at the start. StreamingDetokenizer does the same one token at a time
// and only ever returns complete UTF-8, so a UI never shows half a character.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lantern {

class GgufFile;

// Token kinds, numbered as in sentencepiece's ModelProto and GGUF's tokenizer.ggml.token_type.
enum class TokenType : uint8_t {
    Normal = 1,       // an ordinary piece of text
    Unknown = 2,      // <unk>: what text maps to when no piece or byte fallback covers it
    Control = 3,      // <s>, </s>, chat markers: never produced from text, invisible when decoded
    UserDefined = 4,  // text matched as one piece wherever it occurs
    Unused = 5,       // reserved slot, never produced
    Byte = 6,         // <0xNN>: one raw byte (byte fallback for characters outside the vocabulary)
};

// Immutable once built: all methods are const and may be called from several threads at once.
class Tokenizer {
public:
    // Builds the tokenizer described by a GGUF's tokenizer.ggml.* metadata (tensors are not needed:
    // vocab-only files work). Throws Error(UnsupportedTokenizer) for non-sentencepiece types and
    // Error(InvalidModelFile) for an inconsistent vocabulary.
    static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& gguf);
    // Loads a sentencepiece tokenizer.model file. Throws Error(Io) / Error(InvalidModelFile).
    static std::unique_ptr<Tokenizer> from_model_file(const std::string& path);
    ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // Text a user typed → ids, with BOS in front when `add_bos` (and the vocabulary has one).
    // Special-token spellings inside `text` stay ordinary text.
    std::vector<int32_t> encode(std::string_view text, bool add_bos) const;

    // One fragment of a prompt assembled piece by piece (what ChatTemplate uses). `space_prefix`
    // says whether this fragment starts a text, i.e. comes first or right after a special token:
    // only then does it get sentencepiece's dummy-prefix space (when the vocabulary uses one).
    // A fragment that continues earlier text is encoded exactly as written. Never yields special
    // tokens.
    std::vector<int32_t> encode_fragment(std::string_view text, bool space_prefix) const;

    // Trusted text in which the spellings of special tokens ("<s>", "<|im_end|>") become those
    // single tokens, the text between them encoded as llama.cpp does with parse_special (a
    // dummy-prefix space at the start and after each special token). For prompts written by the
    // program, tests and debugging — never for what a user typed.
    std::vector<int32_t> encode_with_specials(std::string_view text, bool add_bos) const;

    // Ids → text (sentencepiece rules, see the top of this file). Throws Error(InvalidArgument) for
    // an id outside the vocabulary.
    std::string decode(std::span<const int32_t> ids) const;

    int32_t vocab_size() const;
    int32_t bos_id() const;  // -1 when the vocabulary has none
    int32_t eos_id() const;  // -1 when the vocabulary has none
    int32_t unk_id() const;
    int32_t pad_id() const;  // -1 when the vocabulary has none
    // End-of-turn token declared by tokenizer.ggml.eot_token_id, -1 when not declared.
    int32_t eot_id() const;
    // The tokens at which generation ends, as llama.cpp's end-of-generation set: EOS, EOT, and
    // the vocabulary's special tokens spelled as an end marker (<|im_end|>, <|endoftext|>,
    // <|eot_id|>, <end_of_turn>, <|end|>, ...), EOS first.
    const std::vector<int32_t>& end_of_generation() const;
    // Whether prompts start with BOS (tokenizer.ggml.add_bos_token; always for .model files).
    bool add_bos() const;
    // Whether a text gets sentencepiece's dummy-prefix space (tokenizer.ggml.add_space_prefix).
    bool add_space_prefix() const;

    // The most bytes of text one token of encode() stands for, bounded by the longest spelling of
    // a piece that is not special: a text of n bytes encodes to at least n / this many tokens, so a
    // caller can refuse a text too long for a context without encoding it.
    size_t longest_piece_bytes() const;
    // The piece as stored in the vocabulary ("▁the", "<0x0A>", "<s>"). Throws for a bad id.
    const std::string& piece(int32_t id) const;
    TokenType type(int32_t id) const;
    float score(int32_t id) const;
    bool is_control(int32_t id) const { return type(id) == TokenType::Control; }
    // Control tokens plus user-defined chat markers and the BOS/EOS/pad tokens: never produced by
    // encode(), only placed by id; invisible in decoded text.
    bool is_special(int32_t id) const;
    // The id of the special token spelled `text` ("<|im_end|>"), if this vocabulary has one.
    std::optional<int32_t> special_token(std::string_view text) const;
    // The longest special token spelled at `pos` of `text`, as encode_with_specials() finds them
    // (what a rendered chat template's own text is scanned for).
    std::optional<int32_t> special_at(std::string_view text, size_t pos) const;
    // The text `id` contributes to decoded output before the leading-space rule: empty for special
    // tokens, one raw byte for <0xNN>, " ⁇ " for unknown, otherwise the piece with "▁" as " ".
    const std::string& token_text(int32_t id) const;
    // The token as a person should see it in a list of candidates (always valid UTF-8):
    // sentencepiece pieces as stored ("▁the", "<0x0A>", "<s>"); byte-level BPE pieces as the text
    // they stand for (" the", not "Ġthe"), bytes that are no whole character as <0xNN>.
    std::string display_piece(int32_t id) const;

    // Where the vocabulary came from (a file path), for messages.
    const std::string& source() const;
    // What kind of tokenizer this is, for people: "sentencepiece" or "byte-level BPE (llama-bpe)"
    // with the pre-tokenizer's GGUF name.
    std::string kind() const;

    struct Impl;  // opaque: keeps sentencepiece out of this header

private:
    explicit Tokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Turns a stream of generated tokens into text deltas. push() returns the text that became
// complete with this token — possibly empty, when the token ends in the middle of a UTF-8
// character (byte-fallback pieces) or is invisible — and never a partial character. flush() ends
// the stream: bytes that never formed a character come out as U+FFFD, one per byte, as
// sentencepiece decodes them. One per stream; the tokenizer must outlive it.
class StreamingDetokenizer {
public:
    // `at_text_start`: the first visible token begins a text, so the dummy-prefix space in front
    // of it is dropped (what decode() does; right for a model reply). Pass false to continue a text
    // that already has output, e.g. when a reply is resumed.
    explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool at_text_start = true);

    std::string push(int32_t token);
    std::string flush();
    // Starts a new text (as if freshly constructed with the same arguments).
    void reset();

private:
    const Tokenizer* tokenizer_;
    bool strip_leading_space_;
    bool at_text_start_;
    std::string pending_;  // bytes of a character that is not complete yet
};

}  // namespace lantern
