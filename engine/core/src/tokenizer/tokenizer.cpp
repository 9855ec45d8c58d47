// Tokenizer: a sentencepiece vocabulary (from GGUF metadata or a tokenizer.model file) loaded into
// sentencepiece through a ModelProto we serialize ourselves, plus the bookkeeping sentencepiece
// does not offer: which tokens are special, and what each token decodes to.
#include "lantern/tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <iterator>
#include <set>
#include <unordered_map>

#include "lantern/error.h"
#include "lantern/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/sentencepiece_model.h"

namespace lantern {

using tokenizer::ModelType;
using tokenizer::SentencePieceVocab;

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";       // "▁", sentencepiece's space
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";  // " ⁇ ", how <unk> decodes

// Chat-format markers our templates place by id. Some vocabularies type them USER_DEFINED, which
// sentencepiece would match inside any text — a user could then type "<start_of_turn>" and forge a
// turn. Such pieces are loaded as CONTROL instead, so that only a template can produce them. Other
// user-defined pieces (Gemma's "<table>", runs of spaces) stay matchable: they are ordinary text.
bool is_chat_marker(std::string_view text) {
    static const std::set<std::string_view> markers = {
        "<s>",      "</s>",          "<bos>",    "<eos>",         "<pad>",           "[INST]",
        "[/INST]",  "<<SYS>>",       "<</SYS>>", "<|im_start|>",  "<|im_end|>",      "<|system|>",
        "<|user|>", "<|assistant|>", "<|end|>",  "<|endoftext|>", "<start_of_turn>", "<end_of_turn>",
    };
    return markers.contains(text);
}

// "<0x0A>" → 0x0A; -1 if `text` is not a byte piece.
int parse_byte_piece(std::string_view text) {
    if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') return -1;
    unsigned value = 0;
    const auto [end, error] = std::from_chars(text.data() + 3, text.data() + 5, value, 16);
    if (error != std::errc() || end != text.data() + 5) return -1;
    return static_cast<int>(value);
}

std::string replace_space_markers(std::string_view piece) {
    std::string out;
    out.reserve(piece.size());
    for (size_t i = 0; i < piece.size();) {
        if (piece.substr(i).starts_with(kSpaceMarker)) {
            out.push_back(' ');
            i += kSpaceMarker.size();
        } else {
            out.push_back(piece[i++]);
        }
    }
    return out;
}

std::string unsupported_message(const std::string& type) {
    if (type == "bert") return "this model uses a WordPiece (bert) tokenizer, which is not supported yet";
    if (type == "t5") return "this model uses a Unigram (t5) tokenizer, which is not supported yet";
    if (type == "rwkv") return "this model uses the RWKV tokenizer, which is not supported yet";
    if (type == "plamo2") return "this model uses the PLaMo-2 tokenizer, which is not supported yet";
    if (type == "none" || type == "no_vocab")
        return "this model file has no vocabulary (tokenizer.ggml.model = \"" + type + "\")";
    return "this model uses a tokenizer of type \"" + type +
           "\", which is not supported; Lantern runs sentencepiece (\"llama\") and byte-level BPE (\"gpt2\") "
           "vocabularies";
}

}  // namespace

struct Tokenizer::Impl {
    std::string source;
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<TokenType> types;
    std::vector<std::string> texts;  // token_text()
    std::vector<uint8_t> special;    // is_special()
    std::unordered_map<std::string_view, int32_t> special_by_text;
    // Candidates for encode_with_specials, by first byte, longest first.
    std::array<std::vector<int32_t>, 256> specials_by_first_byte;

    int32_t bos = -1, eos = -1, unk = 0, pad = -1, eot = -1;
    std::vector<int32_t> end_of_generation;  // end_of_generation(), filled by index_specials
    bool add_bos = true;
    bool add_space_prefix = true;
    size_t longest_piece = 1;  // longest_piece_bytes(), filled by index_specials

    // Two loadings of the same vocabulary: `starting` is the vocabulary as written (dummy prefix,
    // whitespace cleanup) for a text that begins; `continuing` keeps every byte as given, for a
    // prompt fragment that continues text before it.
    sentencepiece::SentencePieceProcessor starting;
    sentencepiece::SentencePieceProcessor continuing;
    // Byte-level BPE vocabularies (tokenizer.ggml.model "gpt2") run here instead of sentencepiece.
    std::unique_ptr<tokenizer::BpeEncoder> bpe;
    std::string bpe_pre_name;  // tokenizer.ggml.pre, for kind()
    // User-defined pieces that text matches as a whole wherever it contains them (as llama.cpp
    // does), by first byte, longest first: BPE vocabularies, and sentencepiece ones from GGUF.
    std::array<std::vector<int32_t>, 256> user_by_first_byte;
    bool has_user_pieces = false;

    void check_id(int32_t id) const {
        if (id < 0 || static_cast<size_t>(id) >= pieces.size())
            throw Error(ErrorCode::InvalidArgument, "token id " + std::to_string(id) +
                                                        " is outside the vocabulary (0.." +
                                                        std::to_string(pieces.size() - 1) + ")");
    }

    // Text (never special tokens) -> ids; `starting`: the text begins (sentencepiece's dummy prefix).
    std::vector<int32_t> run(bool text_starts, std::string_view text) const {
        if (bpe) return run_bpe(text);
        if (has_user_pieces) return run_sp_user(text_starts, text);
        return run_sp(text_starts ? starting : continuing, text);
    }

    // A GGUF sentencepiece vocabulary with user-defined pieces, as llama.cpp tokenizes it: the text
    // is cut at every user-defined piece it contains (matched on the text as typed), and each piece
    // of text between goes to sentencepiece, where the user-defined pieces are ordinary pieces
    // that merges reach by their scores (so "▁▁" forms from two spaces). Text after a user-defined
    // piece starts anew (the dummy prefix where the vocabulary has one).
    std::vector<int32_t> run_sp_user(bool text_starts, std::string_view text) const {
        std::vector<int32_t> ids;
        size_t start = 0;
        bool starts = text_starts;
        const auto flush = [&](size_t end) {
            if (end == start) return;
            const auto part = run_sp(starts ? starting : continuing, text.substr(start, end - start));
            ids.insert(ids.end(), part.begin(), part.end());
        };
        for (size_t pos = 0; pos < text.size();) {
            const auto match = piece_at(user_by_first_byte, text, pos);
            if (!match) {
                ++pos;
                continue;
            }
            flush(pos);
            ids.push_back(*match);
            pos += pieces[*match].size();
            start = pos;
            starts = true;
        }
        flush(text.size());
        return ids;
    }

    // The longest piece of `table` (ids by first byte, longest first) that `text` has at `pos`.
    std::optional<int32_t> piece_at(const std::array<std::vector<int32_t>, 256>& table, std::string_view text,
                                    size_t pos) const {
        for (int32_t id : table[static_cast<uint8_t>(text[pos])])
            if (text.substr(pos).starts_with(pieces[id])) return id;
        return std::nullopt;
    }

    std::vector<int32_t> run_bpe(std::string_view text) const {
        std::vector<int32_t> ids;
        size_t start = 0;
        for (size_t pos = 0; pos < text.size();) {
            const auto match = piece_at(user_by_first_byte, text, pos);
            if (!match) {
                ++pos;
                continue;
            }
            bpe->encode(text.substr(start, pos - start), ids);
            ids.push_back(*match);
            pos += pieces[*match].size();
            start = pos;
        }
        bpe->encode(text.substr(start), ids);
        return ids;
    }

    std::vector<int32_t> run_sp(const sentencepiece::SentencePieceProcessor& sp,
                                std::string_view text) const {
        std::vector<int> ids;
        if (text.empty()) return {};
        const auto status = sp.Encode(text, &ids);
        if (!status.ok())
            throw Error(ErrorCode::Internal, std::string("sentencepiece: ") + status.ToString());
        return {ids.begin(), ids.end()};
    }

    static std::unique_ptr<Impl> build(SentencePieceVocab vocab, int32_t eot_id, bool add_bos,
                                       std::string source);
    static std::unique_ptr<Impl> build_bpe(const GgufFile& gguf);
    // The lookup tables of special tokens (encode_with_specials, special_token), once `special`
    // and `pieces` are set.
    void index_specials();
};

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::build(SentencePieceVocab vocab, int32_t eot_id,
                                                        bool add_bos, std::string source) {
    auto impl = std::make_unique<Impl>();
    impl->source = std::move(source);
    const auto n = static_cast<int32_t>(vocab.pieces.size());
    if (n == 0) throw Error(ErrorCode::InvalidModelFile, impl->source + ": the vocabulary is empty");
    const auto valid = [n](int32_t id) { return id >= 0 && id < n; };
    const auto invalid_file = [&](const std::string& what) {
        return Error(ErrorCode::InvalidModelFile, impl->source + ": " + what);
    };

    // sentencepiece needs exactly one UNKNOWN piece. Prefer one typed so; a vocabulary without
    // types (old GGUFs) names it only by id.
    auto& pieces = vocab.pieces;
    const auto first_unknown = std::find_if(pieces.begin(), pieces.end(),
                                            [](const auto& p) { return p.type == TokenType::Unknown; });
    if (first_unknown != pieces.end()) {
        if (!valid(vocab.unk_id) || pieces[vocab.unk_id].type != TokenType::Unknown)
            vocab.unk_id = static_cast<int32_t>(first_unknown - pieces.begin());
    } else if (valid(vocab.unk_id)) {
        pieces[vocab.unk_id].type = TokenType::Unknown;
    } else {
        throw invalid_file("the vocabulary has no unknown token (<unk>)");
    }
    impl->unk = vocab.unk_id;
    impl->bos = valid(vocab.bos_id) ? vocab.bos_id : -1;
    impl->eos = valid(vocab.eos_id) ? vocab.eos_id : -1;
    impl->pad = valid(vocab.pad_id) ? vocab.pad_id : -1;
    impl->eot = valid(eot_id) ? eot_id : -1;
    impl->add_bos = add_bos && impl->bos >= 0;
    impl->add_space_prefix = vocab.add_dummy_prefix;

    impl->pieces.reserve(n);
    impl->scores.reserve(n);
    impl->types.reserve(n);
    impl->texts.reserve(n);
    impl->special.assign(n, 0);
    for (int32_t id = 0; id < n; ++id) {
        const auto& p = pieces[id];
        impl->pieces.push_back(p.text);
        impl->scores.push_back(p.score);
        impl->types.push_back(p.type);
        const bool declared_special =
            id == impl->bos || id == impl->eos || id == impl->pad || id == impl->eot;
        impl->special[id] = id != impl->unk && (p.type == TokenType::Control ||
                                                p.type == TokenType::Unknown || declared_special ||
                                                (p.type == TokenType::UserDefined && is_chat_marker(p.text)));
    }

    // What sentencepiece loads: specials become CONTROL (never matched in text), and pieces it
    // would refuse (empty, duplicated) become unreachable UNUSED slots, so ids stay aligned.
    std::set<std::string_view> seen;
    bool has_byte_pieces = false;
    SentencePieceVocab loaded = vocab;
    for (int32_t id = 0; id < n; ++id) {
        auto& p = loaded.pieces[id];
        if (p.type == TokenType::Byte) {
            if (parse_byte_piece(p.text) < 0)
                throw invalid_file("token " + std::to_string(id) + " is typed BYTE but is \"" + p.text +
                                   "\", not <0xNN>");
            has_byte_pieces = true;
        }
        if (impl->special[id]) p.type = TokenType::Control;
        if (p.text.empty() || !seen.insert(impl->pieces[id]).second) {
            p.text = "<lantern-unreachable-" + std::to_string(id) + ">";
            p.type = TokenType::Unused;
        }
        // A GGUF vocabulary (no trainer spec: llama.cpp's reading, not sentencepiece's): a
        // user-defined piece is cut out of the text as typed (run_sp_user) and is otherwise an
        // ordinary piece with its score, where sentencepiece would match it longest-first in the
        // normalised text ("▁▁▁" before two "▁▁" for four spaces, unlike llama.cpp).
        if (vocab.trainer_spec.empty() && p.type == TokenType::UserDefined) {
            p.type = TokenType::Normal;
            impl->user_by_first_byte[static_cast<uint8_t>(p.text[0])].push_back(id);
            impl->has_user_pieces = true;
        }
    }
    if (loaded.trainer_spec.empty()) loaded.byte_fallback = has_byte_pieces;

    const auto load = [&](sentencepiece::SentencePieceProcessor& sp, bool dummy_prefix, bool remove_ws) {
        const auto status =
            sp.LoadFromSerializedProto(tokenizer::serialize_model_proto(loaded, dummy_prefix, remove_ws));
        if (!status.ok()) throw invalid_file("sentencepiece rejected the vocabulary: " + status.ToString());
    };
    load(impl->starting, vocab.add_dummy_prefix, vocab.remove_extra_whitespaces);
    load(impl->continuing, false, false);

    for (int32_t id = 0; id < n; ++id) {
        if (impl->special[id]) {
            impl->texts.emplace_back();  // special tokens decode to nothing
            continue;
        }
        std::string text;
        if (impl->types[id] == TokenType::Byte) {
            text.push_back(static_cast<char>(parse_byte_piece(impl->pieces[id])));
        } else if (id == impl->unk) {
            text = kUnknownSurface;
        } else if (impl->has_user_pieces && impl->types[id] == TokenType::UserDefined) {
            text =
                impl->pieces[id];  // as llama.cpp prints a GGUF vocabulary's user-defined piece: as written
        } else {
            text = replace_space_markers(impl->pieces[id]);
        }
        impl->texts.push_back(std::move(text));
    }

    impl->index_specials();
    return impl;
}

void Tokenizer::Impl::index_specials() {
    for (size_t id = 0; id < pieces.size(); ++id)
        if (!special[id]) longest_piece = std::max(longest_piece, pieces[id].size());
    // Where generation ends, as llama.cpp decides it: EOS, EOT, and every token spelled as one of
    // the end markers families use (Qwen's instruct files end replies with <|im_end|> but declare
    // <|endoftext|> as EOS in their base models; a model may write either).
    static const std::set<std::string_view> end_markers = {
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "<|end_of_text|>",
        "<end_of_utterance>",
        "<\xEF\xBD\x9C"
        "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"};
    end_of_generation.clear();
    for (int32_t id : {eos, eot})
        if (id >= 0) end_of_generation.push_back(id);
    for (int32_t id = 0; id < static_cast<int32_t>(pieces.size()); ++id)
        if (end_markers.contains(pieces[id]) &&
            std::find(end_of_generation.begin(), end_of_generation.end(), id) == end_of_generation.end())
            end_of_generation.push_back(id);
    const auto longest_first = [&](std::vector<int32_t>& ids) {
        std::stable_sort(ids.begin(), ids.end(),
                         [&](int32_t a, int32_t b) { return pieces[a].size() > pieces[b].size(); });
    };
    for (int32_t id = 0; id < static_cast<int32_t>(pieces.size()); ++id) {
        if (!special[id] && id != unk) continue;
        const std::string& text = pieces[id];
        if (text.empty()) continue;
        special_by_text.emplace(text, id);
        specials_by_first_byte[static_cast<uint8_t>(text[0])].push_back(id);
    }
    for (auto& candidates : specials_by_first_byte) longest_first(candidates);
    for (auto& candidates : user_by_first_byte) longest_first(candidates);
}

// A byte-level BPE vocabulary (tokenizer.ggml.model = "gpt2"): pieces spelled in GPT-2's byte
// alphabet, merges in rank order, and a pre-tokenizer named by tokenizer.ggml.pre.
std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::build_bpe(const GgufFile& gguf) {
    auto impl = std::make_unique<Impl>();
    impl->source = gguf.path();
    const auto invalid_file = [&](const std::string& what) {
        return Error(ErrorCode::InvalidModelFile, impl->source + ": " + what);
    };
    const auto pre_name = gguf.get_string("tokenizer.ggml.pre");
    tokenizer::BpePreTokenizer pre;
    // Falcon 3 and Mi:dm 2.0 (llama architecture) reuse Llama 3's pre-tokenizer under their own names.
    if (pre_name && (*pre_name == "llama-bpe" || *pre_name == "llama3" || *pre_name == "llama-v3" ||
                     *pre_name == "falcon3" || *pre_name == "midm-2.0")) {
        pre = tokenizer::BpePreTokenizer::Llama3;
    } else if (pre_name && (*pre_name == "qwen2" || *pre_name == "deepseek-r1-qwen")) {
        pre = tokenizer::BpePreTokenizer::Qwen2;
    } else if (pre_name && *pre_name == "smollm") {
        pre = tokenizer::BpePreTokenizer::SmolLm;
    } else if (pre_name && *pre_name == "gpt-2") {
        pre = tokenizer::BpePreTokenizer::Gpt2;
    } else if (pre_name && *pre_name == "tekken") {
        pre = tokenizer::BpePreTokenizer::Tekken;
    } else if (pre_name && (*pre_name == "gpt-4o" || *pre_name == "llama4" || *pre_name == "kanana2" ||
                            *pre_name == "talkie")) {
        pre = tokenizer::BpePreTokenizer::Gpt4o;
    } else if (pre_name && *pre_name == "deepseek-llm") {
        pre = tokenizer::BpePreTokenizer::DeepSeekLlm;
    } else if (pre_name && *pre_name == "deepseek-coder") {
        pre = tokenizer::BpePreTokenizer::DeepSeekCoder;
    } else {
        // Each family splits text by its own expression; guessing one would tokenize differently
        // from how the model was trained, quietly.
        throw Error(
            ErrorCode::UnsupportedTokenizer,
            pre_name ? "this model's BPE pre-tokenizer \"" + *pre_name +
                           "\" is not supported yet (\"llama-bpe\", \"qwen2\", \"tekken\", \"gpt-4o\", "
                           "\"smollm\", "
                           "\"deepseek-llm\", "
                           "\"deepseek-coder\" and \"gpt-2\" are)"
                     : "this BPE vocabulary does not name its pre-tokenizer (tokenizer.ggml.pre), so how it "
                       "splits text is unknown; files converted before May 2024 lack it — a newer conversion "
                       "of the model will load");
    }
    auto tokens = gguf.get_string_array("tokenizer.ggml.tokens");
    const auto types = gguf.get_int_array("tokenizer.ggml.token_type");
    const auto merges = gguf.get_string_array("tokenizer.ggml.merges");
    if (tokens.empty()) throw invalid_file("tokenizer.ggml.tokens is missing or empty");
    if (merges.empty())
        throw invalid_file("tokenizer.ggml.merges is missing or empty (a BPE vocabulary needs them)");
    if (!types.empty() && types.size() != tokens.size())
        throw invalid_file("tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " +
                           std::to_string(tokens.size()) + " tokens");
    const auto n = static_cast<int32_t>(tokens.size());
    const auto id_or = [&](std::string_view key) -> int32_t {
        const int64_t v = gguf.get_int(key).value_or(-1);
        return v >= 0 && v < n ? static_cast<int32_t>(v) : -1;
    };
    impl->bos = id_or("tokenizer.ggml.bos_token_id");
    impl->eos = id_or("tokenizer.ggml.eos_token_id");
    impl->pad = id_or("tokenizer.ggml.padding_token_id");
    impl->unk = id_or("tokenizer.ggml.unknown_token_id");  // byte-level BPE needs none: -1
    impl->eot = id_or("tokenizer.ggml.eot_token_id");
    // Without the key, BOS as llama.cpp decides it: Llama 3's and tekken vocabularies start with
    // one, others not.
    const bool bos_by_default =
        pre == tokenizer::BpePreTokenizer::Llama3 || pre == tokenizer::BpePreTokenizer::Tekken;
    impl->add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token").value_or(bos_by_default) && impl->bos >= 0;
    impl->add_space_prefix = false;

    impl->pieces = std::move(tokens);
    impl->scores.assign(n, 0.0f);
    impl->types.resize(n);
    impl->special.assign(n, 0);
    impl->texts.resize(n);
    std::vector<uint8_t> matchable(n, 0);
    for (int32_t id = 0; id < n; ++id) {
        TokenType type = TokenType::Normal;
        if (!types.empty()) {
            const int64_t t = types[id];
            if (t < 0 || t > 6)
                throw invalid_file("token " + std::to_string(id) + " has unknown token_type " +
                                   std::to_string(t));
            type = t == 0 ? TokenType::Normal : static_cast<TokenType>(t);
        }
        impl->types[id] = type;
        const bool declared = id == impl->bos || id == impl->eos || id == impl->pad || id == impl->eot;
        const std::string& piece = impl->pieces[id];
        impl->special[id] = type == TokenType::Control || type == TokenType::Unknown ||
                            type == TokenType::Unused || declared ||
                            (type == TokenType::UserDefined && is_chat_marker(piece));
        if (impl->special[id]) continue;  // decodes to nothing, never produced by text
        if (type == TokenType::UserDefined) {
            // Added by hand in plain spelling; text containing it becomes this token.
            if (!piece.empty()) impl->user_by_first_byte[static_cast<uint8_t>(piece[0])].push_back(id);
            impl->texts[id] = piece;
        } else {
            matchable[id] = 1;
            impl->texts[id] = tokenizer::bpe_piece_bytes(piece);
        }
    }
    impl->bpe = std::make_unique<tokenizer::BpeEncoder>(impl->pieces, matchable, merges, pre, impl->source);
    impl->bpe_pre_name = *pre_name;
    impl->index_specials();
    return impl;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& gguf) {
    const auto type = gguf.get_string("tokenizer.ggml.model");
    if (!type)
        throw Error(ErrorCode::UnsupportedTokenizer,
                    gguf.path() + ": the model has no tokenizer (tokenizer.ggml.model is missing)");
    if (*type == "gpt2") return std::unique_ptr<Tokenizer>(new Tokenizer(Impl::build_bpe(gguf)));
    if (*type != "llama") throw Error(ErrorCode::UnsupportedTokenizer, unsupported_message(*type));

    const auto invalid_file = [&](const std::string& what) {
        return Error(ErrorCode::InvalidModelFile, gguf.path() + ": " + what);
    };
    auto tokens = gguf.get_string_array("tokenizer.ggml.tokens");
    const auto scores = gguf.get_float_array("tokenizer.ggml.scores");
    const auto types = gguf.get_int_array("tokenizer.ggml.token_type");
    if (tokens.empty()) throw invalid_file("tokenizer.ggml.tokens is missing or empty");
    if (!scores.empty() && scores.size() != tokens.size())
        throw invalid_file("tokenizer.ggml.scores has " + std::to_string(scores.size()) + " entries for " +
                           std::to_string(tokens.size()) + " tokens");
    if (!types.empty() && types.size() != tokens.size())
        throw invalid_file("tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " +
                           std::to_string(tokens.size()) + " tokens");

    const auto id_or = [&](std::string_view key, int64_t fallback) -> int32_t {
        const int64_t v = gguf.get_int(key).value_or(fallback);
        // Absent ids are written as -1 or as 0xFFFFFFFF by some converters: both mean "none".
        return v >= 0 && v < static_cast<int64_t>(tokens.size()) ? static_cast<int32_t>(v) : -1;
    };

    SentencePieceVocab vocab;
    vocab.model_type = ModelType::Bpe;
    vocab.unk_id = id_or("tokenizer.ggml.unknown_token_id", 0);
    vocab.bos_id = id_or("tokenizer.ggml.bos_token_id", 1);
    vocab.eos_id = id_or("tokenizer.ggml.eos_token_id", 2);
    vocab.pad_id = id_or("tokenizer.ggml.padding_token_id", -1);
    vocab.add_dummy_prefix = gguf.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    // llama.cpp never collapses whitespace for these vocabularies, and the GGUF does not say.
    vocab.remove_extra_whitespaces = gguf.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false);

    vocab.pieces.resize(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        auto& p = vocab.pieces[i];
        p.text = std::move(tokens[i]);
        p.score = scores.empty() ? 0.0f : scores[i];
        if (!types.empty()) {
            const int64_t t = types[i];
            if (t < 0 || t > 6)
                throw invalid_file("token " + std::to_string(i) + " has unknown token_type " +
                                   std::to_string(t));
            // GGUF's 0 ("undefined") is an ordinary piece; 1..6 are sentencepiece's numbers.
            p.type = t == 0 ? TokenType::Normal : static_cast<TokenType>(t);
        } else if (parse_byte_piece(p.text) >= 0) {
            p.type = TokenType::Byte;
        } else if (static_cast<int32_t>(i) == vocab.bos_id || static_cast<int32_t>(i) == vocab.eos_id) {
            p.type = TokenType::Control;
        }
    }

    const bool add_bos = gguf.get_bool("tokenizer.ggml.add_bos_token").value_or(true);
    const int32_t eot = id_or("tokenizer.ggml.eot_token_id", -1);
    return std::unique_ptr<Tokenizer>(
        new Tokenizer(Impl::build(std::move(vocab), eot, add_bos, gguf.path())));
}

std::unique_ptr<Tokenizer> Tokenizer::from_model_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorCode::Io, "cannot open tokenizer model " + path);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw Error(ErrorCode::Io, "cannot read tokenizer model " + path);
    auto vocab = tokenizer::parse_model_proto(bytes, path);
    return std::unique_ptr<Tokenizer>(new Tokenizer(Impl::build(std::move(vocab), -1, true, path)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
    std::vector<int32_t> ids;
    if (add_bos && impl_->bos >= 0) ids.push_back(impl_->bos);
    const auto body = impl_->run(true, text);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

std::vector<int32_t> Tokenizer::encode_fragment(std::string_view text, bool space_prefix) const {
    return impl_->run(space_prefix, text);
}

std::vector<int32_t> Tokenizer::encode_with_specials(std::string_view text, bool add_bos) const {
    std::vector<int32_t> ids;
    if (add_bos && impl_->bos >= 0) ids.push_back(impl_->bos);
    bool after_special = true;
    size_t fragment_start = 0;
    const auto flush_fragment = [&](size_t end) {
        if (end == fragment_start) return;
        const auto part = encode_fragment(text.substr(fragment_start, end - fragment_start), after_special);
        ids.insert(ids.end(), part.begin(), part.end());
        after_special = false;
    };
    for (size_t pos = 0; pos < text.size();) {
        const auto match = impl_->piece_at(impl_->specials_by_first_byte, text, pos);
        if (!match) {
            ++pos;
            continue;
        }
        flush_fragment(pos);
        ids.push_back(*match);
        after_special = true;
        pos += impl_->pieces[*match].size();
        fragment_start = pos;
    }
    flush_fragment(text.size());
    return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
    StreamingDetokenizer detokenizer(*this);
    std::string text;
    for (int32_t id : ids) text += detokenizer.push(id);
    text += detokenizer.flush();
    return text;
}

int32_t Tokenizer::vocab_size() const {
    return static_cast<int32_t>(impl_->pieces.size());
}
int32_t Tokenizer::bos_id() const {
    return impl_->bos;
}
int32_t Tokenizer::eos_id() const {
    return impl_->eos;
}
int32_t Tokenizer::unk_id() const {
    return impl_->unk;
}
int32_t Tokenizer::pad_id() const {
    return impl_->pad;
}
int32_t Tokenizer::eot_id() const {
    return impl_->eot;
}
const std::vector<int32_t>& Tokenizer::end_of_generation() const {
    return impl_->end_of_generation;
}
bool Tokenizer::add_bos() const {
    return impl_->add_bos;
}
bool Tokenizer::add_space_prefix() const {
    return impl_->add_space_prefix;
}
const std::string& Tokenizer::source() const {
    return impl_->source;
}
std::string Tokenizer::kind() const {
    return impl_->bpe ? "byte-level BPE (" + impl_->bpe_pre_name + ")" : "sentencepiece";
}

size_t Tokenizer::longest_piece_bytes() const {
    return impl_->longest_piece;
}

const std::string& Tokenizer::piece(int32_t id) const {
    impl_->check_id(id);
    return impl_->pieces[id];
}

TokenType Tokenizer::type(int32_t id) const {
    impl_->check_id(id);
    return impl_->types[id];
}

float Tokenizer::score(int32_t id) const {
    impl_->check_id(id);
    return impl_->scores[id];
}

bool Tokenizer::is_special(int32_t id) const {
    impl_->check_id(id);
    return impl_->special[id] != 0;
}

std::optional<int32_t> Tokenizer::special_token(std::string_view text) const {
    const auto it = impl_->special_by_text.find(text);
    if (it == impl_->special_by_text.end() || !impl_->special[it->second]) return std::nullopt;
    return it->second;
}

std::optional<int32_t> Tokenizer::special_at(std::string_view text, size_t pos) const {
    if (pos >= text.size()) return std::nullopt;
    return impl_->piece_at(impl_->specials_by_first_byte, text, pos);
}

const std::string& Tokenizer::token_text(int32_t id) const {
    impl_->check_id(id);
    return impl_->texts[id];
}

std::string Tokenizer::display_piece(int32_t id) const {
    impl_->check_id(id);
    if (!impl_->bpe || impl_->special[id]) return impl_->pieces[id];
    // The token's bytes: whole UTF-8 characters as themselves, any other byte as <0xNN>.
    const std::string& bytes = impl_->texts[id];
    std::string out;
    for (size_t i = 0; i < bytes.size();) {
        const auto b0 = static_cast<uint8_t>(bytes[i]);
        const size_t len = b0 < 0x80           ? 1
                           : (b0 >> 5) == 0x6  ? 2
                           : (b0 >> 4) == 0xE  ? 3
                           : (b0 >> 3) == 0x1E ? 4
                                               : 0;
        bool whole = len > 0 && i + len <= bytes.size();
        for (size_t k = 1; whole && k < len; ++k) whole = (static_cast<uint8_t>(bytes[i + k]) & 0xC0) == 0x80;
        if (whole) {
            out.append(bytes, i, len);
            i += len;
        } else {
            static constexpr char kHex[] = "0123456789ABCDEF";
            out += "<0x";
            out += kHex[b0 >> 4];
            out += kHex[b0 & 15];
            out += '>';
            ++i;
        }
    }
    return out;
}

}  // namespace lantern
