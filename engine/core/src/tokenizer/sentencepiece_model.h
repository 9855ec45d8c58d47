// A sentencepiece vocabulary as Lantern holds it, and its conversion to and from the serialized
// sentencepiece ModelProto that SentencePieceProcessor::LoadFromSerializedProto reads.
//
// The field numbers are those of sentencepiece_model.proto:
//   ModelProto      1 pieces (repeated SentencePiece), 2 trainer_spec, 3 normalizer_spec
//   SentencePiece   1 piece, 2 score (float), 3 type (NORMAL=1 UNKNOWN=2 CONTROL=3 USER_DEFINED=4
//                   UNUSED=5 BYTE=6)
//   TrainerSpec     3 model_type (UNIGRAM=1 BPE=2 WORD=3 CHAR=4), 4 vocab_size, 35 byte_fallback,
//                   40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id
//   NormalizerSpec  1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
//                   5 escape_whitespaces
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lantern/tokenizer.h"

namespace lantern::tokenizer {

enum class ModelType : int32_t { Unigram = 1, Bpe = 2, Word = 3, Char = 4 };

struct SentencePieceVocab {
    struct Piece {
        std::string text;
        float score = 0.0f;
        TokenType type = TokenType::Normal;
    };
    std::vector<Piece> pieces;

    // Defaults are sentencepiece_model.proto's (proto2 defaults apply to absent fields).
    ModelType model_type = ModelType::Unigram;
    bool byte_fallback = false;
    int32_t unk_id = 0;
    int32_t bos_id = 1;
    int32_t eos_id = 2;
    int32_t pad_id = -1;
    bool add_dummy_prefix = true;
    bool remove_extra_whitespaces = true;

    // Serialized TrainerSpec / NormalizerSpec of a .model file, passed on so that settings Lantern
    // does not interpret (a precompiled normalisation map, the unknown-piece surface) reach
    // sentencepiece unchanged. Empty for vocabularies from GGUF: built from the fields above.
    std::string trainer_spec;
    std::string normalizer_spec;
};

// Parses a serialized ModelProto (the content of a tokenizer.model file). `source` names the file
// in error messages. Throws Error(InvalidModelFile) when it is not a well-formed ModelProto.
SentencePieceVocab parse_model_proto(std::string_view serialized, const std::string& source);

// Serializes `vocab` as a ModelProto. The normalizer's add_dummy_prefix and
// remove_extra_whitespaces are taken from the arguments rather than from `vocab`, so that one
// vocabulary can be loaded both as written and in the variant that encodes a prompt fragment
// continuing earlier text (no dummy prefix, every space kept).
std::string serialize_model_proto(const SentencePieceVocab& vocab, bool add_dummy_prefix,
                                  bool remove_extra_whitespaces);

}  // namespace lantern::tokenizer
