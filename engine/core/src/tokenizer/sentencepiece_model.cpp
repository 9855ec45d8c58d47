#include "tokenizer/sentencepiece_model.h"

#include "lantern/error.h"
#include "tokenizer/protobuf.h"

namespace lantern::tokenizer {

namespace {

// ModelProto
constexpr uint32_t kPieces = 1;
constexpr uint32_t kTrainerSpec = 2;
constexpr uint32_t kNormalizerSpec = 3;
// ModelProto.SentencePiece
constexpr uint32_t kPieceText = 1;
constexpr uint32_t kPieceScore = 2;
constexpr uint32_t kPieceType = 3;
// TrainerSpec
constexpr uint32_t kModelType = 3;
constexpr uint32_t kVocabSize = 4;
constexpr uint32_t kByteFallback = 35;
constexpr uint32_t kUnkId = 40;
constexpr uint32_t kBosId = 41;
constexpr uint32_t kEosId = 42;
constexpr uint32_t kPadId = 43;
// NormalizerSpec
constexpr uint32_t kNormalizerName = 1;
constexpr uint32_t kAddDummyPrefix = 3;
constexpr uint32_t kRemoveExtraWhitespaces = 4;
constexpr uint32_t kEscapeWhitespaces = 5;

SentencePieceVocab::Piece parse_piece(std::string_view bytes, const std::string& what) {
    SentencePieceVocab::Piece piece;
    ProtoReader reader(bytes, what);
    ProtoField f;
    while (reader.next(f)) {
        if (f.number == kPieceText && f.type == WireType::LengthDelimited) {
            piece.text = std::string(f.bytes);
        } else if (f.number == kPieceScore && f.type == WireType::Fixed32) {
            piece.score = f.as_float();
        } else if (f.number == kPieceType && f.type == WireType::Varint) {
            if (f.value < 1 || f.value > 6)
                throw Error(ErrorCode::InvalidModelFile,
                            what + ": unknown piece type " + std::to_string(f.value));
            piece.type = static_cast<TokenType>(f.value);
        }
    }
    return piece;
}

void parse_trainer_spec(std::string_view bytes, SentencePieceVocab& vocab, const std::string& what) {
    ProtoReader reader(bytes, what);
    ProtoField f;
    while (reader.next(f)) {
        if (f.type != WireType::Varint) continue;
        switch (f.number) {
            case kModelType:
                vocab.model_type = static_cast<ModelType>(f.as_int32());
                break;
            case kByteFallback:
                vocab.byte_fallback = f.value != 0;
                break;
            case kUnkId:
                vocab.unk_id = f.as_int32();
                break;
            case kBosId:
                vocab.bos_id = f.as_int32();
                break;
            case kEosId:
                vocab.eos_id = f.as_int32();
                break;
            case kPadId:
                vocab.pad_id = f.as_int32();
                break;
            default:
                break;
        }
    }
}

void parse_normalizer_spec(std::string_view bytes, SentencePieceVocab& vocab, const std::string& what) {
    ProtoReader reader(bytes, what);
    ProtoField f;
    while (reader.next(f)) {
        if (f.type != WireType::Varint) continue;
        if (f.number == kAddDummyPrefix) vocab.add_dummy_prefix = f.value != 0;
        if (f.number == kRemoveExtraWhitespaces) vocab.remove_extra_whitespaces = f.value != 0;
    }
}

// The TrainerSpec of a vocabulary that came without one (GGUF). llama.cpp runs these vocabularies
// as BPE over the piece scores, so model_type must say BPE: the default (unigram) would segment
// differently.
std::string make_trainer_spec(const SentencePieceVocab& vocab) {
    ProtoWriter w;
    w.int32(kModelType, static_cast<int32_t>(ModelType::Bpe));
    w.int32(kVocabSize, static_cast<int32_t>(vocab.pieces.size()));
    w.boolean(kByteFallback, vocab.byte_fallback);
    w.int32(kUnkId, vocab.unk_id);
    w.int32(kBosId, vocab.bos_id);
    w.int32(kEosId, vocab.eos_id);
    w.int32(kPadId, vocab.pad_id);
    return w.data();
}

}  // namespace

SentencePieceVocab parse_model_proto(std::string_view serialized, const std::string& source) {
    SentencePieceVocab vocab;
    ProtoReader reader(serialized, source);
    ProtoField f;
    while (reader.next(f)) {
        if (f.type != WireType::LengthDelimited) continue;
        if (f.number == kPieces) {
            vocab.pieces.push_back(
                parse_piece(f.bytes, source + ": piece " + std::to_string(vocab.pieces.size())));
        } else if (f.number == kTrainerSpec) {
            vocab.trainer_spec = std::string(f.bytes);
            parse_trainer_spec(f.bytes, vocab, source + ": trainer_spec");
        } else if (f.number == kNormalizerSpec) {
            vocab.normalizer_spec = std::string(f.bytes);
            parse_normalizer_spec(f.bytes, vocab, source + ": normalizer_spec");
        }
        // self_test_data (4) and denormalizer_spec (5) are dropped: Lantern decodes by itself and
        // the self test only checks the training run.
    }
    if (vocab.pieces.empty())
        throw Error(ErrorCode::InvalidModelFile,
                    source + ": not a sentencepiece model (no pieces in the ModelProto)");
    return vocab;
}

std::string serialize_model_proto(const SentencePieceVocab& vocab, bool add_dummy_prefix,
                                  bool remove_extra_whitespaces) {
    ProtoWriter model;
    for (const auto& piece : vocab.pieces) {
        ProtoWriter p;
        p.bytes(kPieceText, piece.text);
        p.float32(kPieceScore, piece.score);
        // NORMAL is the proto default; real models leave it out, and so do we.
        if (piece.type != TokenType::Normal) p.varint(kPieceType, static_cast<uint64_t>(piece.type));
        model.message(kPieces, p);
    }

    if (!vocab.trainer_spec.empty()) {
        model.bytes(kTrainerSpec, vocab.trainer_spec);
    } else {
        model.bytes(kTrainerSpec, make_trainer_spec(vocab));
    }

    ProtoWriter normalizer;
    if (!vocab.normalizer_spec.empty()) {
        // Keep every setting of the file except the two this function decides.
        ProtoReader reader(vocab.normalizer_spec, "normalizer_spec");
        ProtoField f;
        while (reader.next(f)) {
            if (f.number != kAddDummyPrefix && f.number != kRemoveExtraWhitespaces) normalizer.copy(f);
        }
    } else {
        // "identity" with no precompiled map: text is used as is, only spaces become "▁".
        normalizer.bytes(kNormalizerName, "identity");
        normalizer.boolean(kEscapeWhitespaces, true);
    }
    normalizer.boolean(kAddDummyPrefix, add_dummy_prefix);
    normalizer.boolean(kRemoveExtraWhitespaces, remove_extra_whitespaces);
    model.message(kNormalizerSpec, normalizer);
    return model.data();
}

}  // namespace lantern::tokenizer
