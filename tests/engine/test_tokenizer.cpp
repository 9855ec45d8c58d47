// Tokenizer (issue 4): llama.cpp's tokenizer vectors for the Llama 2 vocabulary, loaded both from a
// vocab-only GGUF and from Meta's tokenizer.model; decoding back; stories260K's reference tokens;
// UTF-8-safe streaming; special tokens that users cannot type; clear errors for other tokenizers.
// Expected ids come from ../shared (llama.cpp and the float64 reference run), never from the code
// under test.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/synthetic.h"
#include "lantern/tokenizer.h"
#include "test_support.h"
#include "tokenizer/protobuf.h"
#include "tokenizer/sentencepiece_model.h"

// Readable failure messages for QCOMPARE on the standard types these tests compare.
namespace QTest {
template <>
inline char* toString(const std::string& s) {
    return toPrettyCString(s.data(), static_cast<qsizetype>(s.size()));
}
template <>
inline char* toString(const std::optional<int32_t>& v) {
    return qstrdup(v ? QByteArray::number(*v).constData() : "nullopt");
}
}  // namespace QTest

using namespace lantern;
using lantern::test::shared_path;
using lantern::test::split;

namespace {

constexpr int32_t kBos = 1;

QByteArray read_file(const std::string& path) {
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly)) throw Error(ErrorCode::Io, "cannot read " + path);
    return f.readAll();
}

std::string read_std(const std::string& path) {
    const QByteArray bytes = read_file(path);
    return std::string(bytes.constData(), static_cast<size_t>(bytes.size()));
}

struct VocabCase {
    std::string input;
    std::vector<int32_t> expected;
};

// llama.cpp's test-tokenizer-0 format: inputs separated by "\n__ggml_vocab_test__\n" (the file ends
// with one), one line of space-separated ids per input.
std::vector<VocabCase> load_vocab_cases() {
    auto inputs = split(read_std(shared_path("reference/tokenizer/ggml-vocab-llama-spm.gguf.inp")),
                        "\n__ggml_vocab_test__\n");
    auto outputs = split(read_std(shared_path("reference/tokenizer/ggml-vocab-llama-spm.gguf.out")), "\n");
    if (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
    if (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
    if (inputs.size() != outputs.size())
        throw Error(ErrorCode::Internal, "tokenizer vectors: " + std::to_string(inputs.size()) +
                                             " inputs but " + std::to_string(outputs.size()) +
                                             " expected outputs");
    std::vector<VocabCase> cases;
    for (size_t i = 0; i < inputs.size(); ++i) {
        VocabCase c{inputs[i], {}};
        for (const auto& item : split(outputs[i], " "))
            if (!item.empty()) c.expected.push_back(std::stoi(item));
        cases.push_back(std::move(c));
    }
    return cases;
}

QString ids_text(const std::vector<int32_t>& ids) {
    QStringList items;
    for (int32_t id : ids) items << QString::number(id);
    return "[" + items.join(' ') + "]";
}

QString visible(const std::string& s) {
    QString out = QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
    out.replace('\n', "\\n").replace('\t', "\\t");
    return out;
}

// Strict UTF-8 check (no overlongs, surrogates or code points past U+10FFFF; nothing cut short).
bool is_valid_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const auto lead = static_cast<uint8_t>(s[i]);
        size_t length = 0;
        uint32_t cp = 0;
        if (lead < 0x80) {
            length = 1;
            cp = lead;
        } else if ((lead & 0xE0) == 0xC0) {
            length = 2;
            cp = lead & 0x1F;
        } else if ((lead & 0xF0) == 0xE0) {
            length = 3;
            cp = lead & 0x0F;
        } else if ((lead & 0xF8) == 0xF0) {
            length = 4;
            cp = lead & 0x07;
        } else {
            return false;
        }
        if (i + length > s.size()) return false;
        for (size_t k = 1; k < length; ++k) {
            const auto b = static_cast<uint8_t>(s[i + k]);
            if ((b & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (b & 0x3F);
        }
        const uint32_t min_for_length[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_for_length[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += length;
    }
    return true;
}

// A GGUF holding only tokenizer metadata, the vocabulary of stories260K plus `extra` pieces.
struct ExtraPiece {
    std::string text;
    TokenType type;
};

std::vector<uint8_t> vocab_gguf(const std::string& tokenizer_model, const std::vector<ExtraPiece>& extra,
                                bool add_space_prefix = true) {
    const auto base = GgufFile::open(shared_path("models/stories260K.gguf"));
    auto tokens = base->get_string_array("tokenizer.ggml.tokens");
    auto scores = base->get_float_array("tokenizer.ggml.scores");
    std::vector<int32_t> types;
    for (int64_t t : base->get_int_array("tokenizer.ggml.token_type"))
        types.push_back(static_cast<int32_t>(t));
    for (const auto& p : extra) {
        tokens.push_back(p.text);
        scores.push_back(0.0f);
        types.push_back(static_cast<int32_t>(p.type));
    }
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", tokenizer_model);
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_space_prefix", add_space_prefix);
    return w.serialize();
}

// The code of the lantern::Error `f` throws; nullopt when it throws nothing.
std::optional<ErrorCode> error_code_of(const std::function<void()>& f, std::string* message = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.code();
    }
    return std::nullopt;
}

}  // namespace

class TokenizerTest : public QObject {
    Q_OBJECT

    std::unique_ptr<Tokenizer> from_gguf_;   // ggml-vocab-llama-spm.gguf
    std::unique_ptr<Tokenizer> from_model_;  // llama2-tokenizer.model
    std::unique_ptr<Tokenizer> stories_;     // stories260K.gguf
    std::vector<VocabCase> cases_;

private slots:
    void initTestCase() {
        // Missing or unreadable test data is a failure, reported with the path (never a skip).
        try {
            from_gguf_ =
                Tokenizer::from_gguf(*GgufFile::open(shared_path("models/ggml-vocab-llama-spm.gguf")));
            from_model_ = Tokenizer::from_model_file(shared_path("models/llama2-tokenizer.model"));
            stories_ = Tokenizer::from_gguf(*GgufFile::open(shared_path("models/stories260K.gguf")));
            cases_ = load_vocab_cases();
            QCOMPARE(cases_.size(), size_t(46));
        } catch (const Error& e) {
            QFAIL(e.what());
        }
    }

    void llamaVocabularyMetadataIsRead() {
        QCOMPARE(from_gguf_->kind(), std::string("sentencepiece"));
        QCOMPARE(from_model_->kind(), std::string("sentencepiece"));
        for (const Tokenizer* t : {from_gguf_.get(), from_model_.get()}) {
            QCOMPARE(t->vocab_size(), 32000);
            QCOMPARE(t->bos_id(), 1);
            QCOMPARE(t->eos_id(), 2);
            QCOMPARE(t->unk_id(), 0);
            QCOMPARE(t->pad_id(), -1);
            QVERIFY(t->add_bos());
            QVERIFY(t->add_space_prefix());
            QCOMPARE(t->piece(29871), std::string("\xE2\x96\x81"));
            QCOMPARE(t->piece(13), std::string("<0x0A>"));
            QVERIFY(t->type(13) == TokenType::Byte);
            QVERIFY(t->type(0) == TokenType::Unknown);
            QVERIFY(t->is_control(1) && t->is_control(2) && t->is_special(1));
            QVERIFY(!t->is_special(15043));
            QCOMPARE(t->token_text(15043), std::string(" Hello"));
            QCOMPARE(t->token_text(13), std::string("\n"));
            QCOMPARE(t->token_text(1), std::string());
            QCOMPARE(t->special_token("</s>"), std::optional<int32_t>(2));
            QCOMPARE(t->special_token("Hello"), std::optional<int32_t>());
        }
    }

    void ggufAndModelFileHoldTheSameVocabulary() {
        for (int32_t id = 0; id < 32000; ++id) {
            if (from_gguf_->piece(id) != from_model_->piece(id) ||
                from_gguf_->type(id) != from_model_->type(id) ||
                from_gguf_->score(id) != from_model_->score(id))
                QFAIL(qPrintable(QString("token %1 differs between the GGUF and tokenizer.model").arg(id)));
        }
    }

    void llamaVectorsTokenizeExactly_data() {
        QTest::addColumn<int>("index");
        for (size_t i = 0; i < cases_.size(); ++i)
            QTest::newRow(qPrintable(QString("%1: \"%2\"").arg(i).arg(visible(cases_[i].input).left(40))))
                << int(i);
    }
    // Both loadings must give llama.cpp's ids, and decoding must give the input back: the Llama 2
    // normaliser is "identity" without whitespace cleanup and byte fallback covers every character,
    // so no case is changed by normalisation (leading spaces, tabs, newlines and the empty input
    // all round-trip; the dummy-prefix space is dropped again on decode).
    void llamaVectorsTokenizeExactly() {
        QFETCH(int, index);
        const VocabCase& c = cases_[static_cast<size_t>(index)];
        const auto gguf_ids = from_gguf_->encode(c.input, false);
        const auto model_ids = from_model_->encode(c.input, false);
        if (gguf_ids != c.expected)
            QFAIL(qPrintable("GGUF vocabulary: got " + ids_text(gguf_ids) + ", llama.cpp " +
                             ids_text(c.expected)));
        if (model_ids != c.expected)
            QFAIL(qPrintable("tokenizer.model: got " + ids_text(model_ids) + ", llama.cpp " +
                             ids_text(c.expected)));

        const auto with_bos = from_gguf_->encode(c.input, true);
        QCOMPARE(with_bos.front(), kBos);
        QVERIFY(std::equal(with_bos.begin() + 1, with_bos.end(), c.expected.begin(), c.expected.end()));

        QCOMPARE(from_gguf_->decode(c.expected), c.input);
        QCOMPARE(from_model_->decode(with_bos), c.input);
    }

    // Gemma's vocabulary layout (Lantern's writer: <pad> <eos> <bos> <unk> first, user-defined runs
    // of "▁" and tags, merged pieces, no space prefix) gives llama.cpp's ids for every input of
    // tests/data/spm_gemma_vectors.inp (scripts/spm-tokenizer-vectors), and decodes back to it.
    void gemmaLayoutVectorsTokenizeExactly() {
        GgufWriter w;
        add_synthetic_vocabulary(w, 1024, {}, true);
        const std::vector<uint8_t> bytes = w.serialize();
        auto tok = Tokenizer::from_gguf(*GgufFile::from_memory(bytes, "gemma-layout"));
        QVERIFY(!tok->add_space_prefix());
        QCOMPARE(tok->bos_id(), 2);
        QCOMPARE(tok->eos_id(), 1);
        const auto read = [](const std::string& path) {
            std::ifstream f(test::source_path(path), std::ios::binary);
            if (!f) throw std::runtime_error(path + " is missing");
            return std::string(std::istreambuf_iterator<char>(f), {});
        };
        auto inputs = split(read("tests/data/spm_gemma_vectors.inp"), "\n__ggml_vocab_test__\n");
        auto outputs = split(read("tests/data/spm_gemma_vectors.out"), "\n");
        if (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
        if (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
        QCOMPARE(inputs.size(), outputs.size());
        QVERIFY2(inputs.size() >= 120, "the llama.cpp vectors are incomplete");
        for (size_t i = 0; i < inputs.size(); ++i) {
            std::vector<int32_t> expected;
            for (const auto& item : split(outputs[i], " "))
                if (!item.empty()) expected.push_back(std::stoi(item));
            const auto got = tok->encode(inputs[i], false);
            if (got != expected)
                QFAIL(qPrintable(QString("input %1 \"%2\": got ").arg(i).arg(visible(inputs[i])) +
                                 ids_text(got) + ", llama.cpp " + ids_text(expected)));
            // llama.cpp prints a user-defined piece as written ("▁▁" stays "▁▁"), so text that
            // became one decodes to its spelling, not back to the spaces typed.
            const bool spelled = std::any_of(expected.begin(), expected.end(), [&](int32_t id) {
                return tok->type(id) == TokenType::UserDefined &&
                       tok->token_text(id).find("\xE2\x96\x81") != std::string::npos;
            });
            if (!spelled) QCOMPARE(tok->decode(expected), inputs[i]);
        }
    }

    // Our decoder against sentencepiece's own Decode on random id sequences that mix BOS/EOS,
    // <unk>, byte pieces (including ones that cannot form characters) and ordinary pieces.
    void decodeMatchesSentencepieceOnRandomIds() {
        sentencepiece::SentencePieceProcessor reference;
        QVERIFY(reference.Load(shared_path("models/llama2-tokenizer.model")).ok());
        std::mt19937 rng(1234);
        for (int round = 0; round < 5000; ++round) {
            std::vector<int> ids(1 + rng() % 8);
            for (int& id : ids) {
                const unsigned kind = rng() % 10;
                id = kind < 2   ? static_cast<int>(rng() % 3)
                     : kind < 6 ? static_cast<int>(3 + rng() % 256)
                                : static_cast<int>(rng() % 32000);
            }
            std::string expected;
            QVERIFY(reference.Decode(ids, &expected).ok());
            const std::vector<int32_t> ours(ids.begin(), ids.end());
            if (from_gguf_->decode(ours) != expected)
                QFAIL(qPrintable("ids " + ids_text(ours) + " decode to \"" +
                                 visible(from_gguf_->decode(ours)) + "\", sentencepiece says \"" +
                                 visible(expected) + "\""));
        }
    }

    void storiesPromptMatchesReference() {
        const QJsonObject ref =
            QJsonDocument::fromJson(read_file(shared_path("reference/stories260K_reference.json"))).object();
        std::vector<int32_t> expected;
        for (const auto v : ref["prompt_once_upon_a_time_tokens"].toArray()) expected.push_back(v.toInt());
        QCOMPARE(expected.size(), size_t(5));
        QCOMPARE(stories_->encode("Once upon a time", true), expected);
        // tok512.model is the same vocabulary.
        const auto model = Tokenizer::from_model_file(shared_path("models/tok512.model"));
        QCOMPARE(model->encode("Once upon a time", true), expected);
    }

    void storiesGreedyTokensDecodeToReferenceText() {
        const QJsonObject ref =
            QJsonDocument::fromJson(read_file(shared_path("reference/stories260K_reference.json"))).object();
        std::vector<int32_t> tokens;
        for (const auto v : ref["greedy_from_bos_tokens"].toArray()) tokens.push_back(v.toInt());
        const std::string expected = ref["greedy_from_bos_text"].toString().toStdString();
        QCOMPARE(tokens.size(), size_t(200));
        QCOMPARE(stories_->decode(tokens), expected);

        StreamingDetokenizer stream(*stories_);
        std::string streamed;
        for (int32_t t : tokens) streamed += stream.push(t);
        streamed += stream.flush();
        QCOMPARE(streamed, expected);
    }

    // tok512.model leaves remove_extra_whitespaces at sentencepiece's default (on), so it collapses
    // runs of spaces; the same vocabulary from the GGUF keeps them, as llama.cpp does.
    void modelFileNormaliserIsHonoured() {
        const auto model = Tokenizer::from_model_file(shared_path("models/tok512.model"));
        QCOMPARE(model->decode(model->encode("  Once   upon a time ", false)),
                 std::string("Once upon a time"));
        QCOMPARE(stories_->decode(stories_->encode("  Once   upon a time ", false)),
                 std::string("  Once   upon a time "));
    }

    void streamingNeverEmitsPartialUtf8() {
        const std::string text =
            "你好，世界！🦙 Lantern 在本地运行 😶‍🌫️ emoji 🚀✨ 中文和 English "
            "混合 "
            "🇨🇳 "
            "测试。";
        for (const Tokenizer* t : {from_gguf_.get(), stories_.get()}) {
            const auto ids = t->encode(text, true);
            StreamingDetokenizer stream(*t);
            std::string joined;
            int held_back = 0;  // tokens that ended inside a character
            for (int32_t id : ids) {
                const std::string chunk = stream.push(id);
                if (!is_valid_utf8(chunk))
                    QFAIL(qPrintable(QString("token %1 produced invalid UTF-8").arg(id)));
                if (chunk.empty() && !t->is_special(id)) ++held_back;
                joined += chunk;
            }
            const std::string rest = stream.flush();
            QVERIFY(rest.empty());
            QCOMPARE(joined, text);
            QCOMPARE(t->decode(ids), text);
            QVERIFY2(held_back > 0, "the text should need byte-fallback pieces that span characters");
        }
    }

    void streamingHoldsBytesUntilTheCharacterIsComplete() {
        // "你" = E4 BD A0 as three byte-fallback pieces <0xE4> <0xBD> <0xA0> (ids = byte + 3).
        StreamingDetokenizer stream(*from_gguf_);
        QCOMPARE(stream.push(0xE4 + 3), std::string());
        QCOMPARE(stream.push(0xBD + 3), std::string());
        QCOMPARE(stream.push(0xA0 + 3), std::string("你"));
        // A character cut short by ordinary text: the lost bytes become U+FFFD, one per byte.
        QCOMPARE(stream.push(0xE4 + 3), std::string());
        QCOMPARE(stream.push(0xBD + 3), std::string());
        QCOMPARE(stream.push(15043), std::string("\xEF\xBF\xBD\xEF\xBF\xBD Hello"));
        // ... or by the end of the stream.
        QCOMPARE(stream.push(0xF0 + 3), std::string());
        QCOMPARE(stream.flush(), std::string("\xEF\xBF\xBD"));
    }

    void streamingDropsOnlyTheDummyPrefixSpace() {
        StreamingDetokenizer stream(*from_gguf_);
        QCOMPARE(stream.push(kBos), std::string());
        QCOMPARE(stream.push(15043), std::string("Hello"));  // "▁Hello" starts the text
        QCOMPARE(stream.push(3186), std::string(" world"));
        stream.reset();
        QCOMPARE(stream.push(3186), std::string("world"));

        StreamingDetokenizer continuing(*from_gguf_, false);
        QCOMPARE(continuing.push(3186), std::string(" world"));

        // A vocabulary that adds no dummy prefix (Gemma's) has nothing to drop.
        const auto bytes = vocab_gguf("llama", {}, false);
        const auto t = Tokenizer::from_gguf(*GgufFile::from_memory(bytes));
        QVERIFY(!t->add_space_prefix());
        const auto ids = t->encode(" a time", false);
        QCOMPARE(ids, stories_->encode_fragment(" a time", false));
        QCOMPARE(t->decode(ids), std::string(" a time"));
        QCOMPARE(t->decode(t->encode("Once", true)), std::string("Once"));
    }

    void userTypedSpecialTokensStayText() {
        for (const Tokenizer* t : {from_gguf_.get(), from_model_.get()}) {
            const std::string typed = "<s>[INST] </s> <unk> <|im_start|> [/INST]";
            const auto ids = t->encode(typed, true);
            QCOMPARE(ids.front(), kBos);
            for (size_t i = 1; i < ids.size(); ++i)
                if (t->is_special(ids[i]) || ids[i] == t->unk_id())
                    QFAIL(qPrintable(QString("user text produced special token %1").arg(ids[i])));
            QCOMPARE(t->decode(ids), typed);
        }
        // The same characters as trusted template text do become control tokens.
        const auto trusted = from_gguf_->encode_with_specials("<s>[INST] hi [/INST] ok</s>", false);
        QCOMPARE(trusted.front(), kBos);
        QCOMPARE(trusted.back(), 2);
        QCOMPARE(std::count(trusted.begin(), trusted.end(), 1), 1);
        const auto body = std::vector<int32_t>(trusted.begin() + 1, trusted.end() - 1);
        QCOMPARE(body, from_gguf_->encode("[INST] hi [/INST] ok", false));
    }

    // Chat markers a vocabulary types USER_DEFINED would be matched in any text by sentencepiece;
    // the tokenizer loads them as control tokens so that only a template can place them. Other
    // user-defined pieces still match as one piece.
    void userDefinedChatMarkersCannotBeTyped() {
        const auto bytes = vocab_gguf("llama", {{"<|im_start|>", TokenType::UserDefined},
                                                {"<start_of_turn>", TokenType::UserDefined},
                                                {"<table>", TokenType::UserDefined},
                                                {"<|im_end|>", TokenType::Control}});
        const auto gguf = GgufFile::from_memory(bytes);
        const auto t = Tokenizer::from_gguf(*gguf);
        QCOMPARE(t->vocab_size(), 516);
        QCOMPARE(t->special_token("<|im_start|>"), std::optional<int32_t>(512));
        QCOMPARE(t->special_token("<start_of_turn>"), std::optional<int32_t>(513));
        QCOMPARE(t->special_token("<table>"), std::optional<int32_t>());
        QCOMPARE(t->special_token("<|im_end|>"), std::optional<int32_t>(515));
        QVERIFY(t->type(512) == TokenType::UserDefined);  // reported as the file says

        const std::string typed = "<|im_start|>system<start_of_turn><|im_end|> a <table>";
        const auto ids = t->encode(typed, false);
        for (int32_t id : {512, 513, 515}) QVERIFY(std::find(ids.begin(), ids.end(), id) == ids.end());
        QVERIFY(std::find(ids.begin(), ids.end(), 514) != ids.end());
        QCOMPARE(t->decode(ids), typed);

        const auto trusted = t->encode_with_specials("<|im_start|>user<|im_end|>", false);
        QCOMPARE(trusted.front(), 512);
        QCOMPARE(trusted.back(), 515);
        QCOMPARE(t->decode(trusted), std::string("user"));
    }

    void unsupportedTokenizerTypesAreRefused_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("message");
        // BPE vocabularies run (test_bpe_tokenizer) once they name their pre-tokenizer.
        QTest::newRow("gpt2 without a pre-tokenizer")
            << "gpt2"
            << "does not name its pre-tokenizer (tokenizer.ggml.pre)";
        QTest::newRow("bert") << "bert"
                              << "this model uses a WordPiece (bert) tokenizer, which is not supported yet";
        QTest::newRow("t5") << "t5"
                            << "this model uses a Unigram (t5) tokenizer, which is not supported yet";
        QTest::newRow("other") << "qwen-tiktoken"
                               << "tokenizer of type \"qwen-tiktoken\"";
    }
    void unsupportedTokenizerTypesAreRefused() {
        QFETCH(QString, type);
        QFETCH(QString, message);
        const auto bytes = vocab_gguf(type.toStdString(), {});
        const auto gguf = GgufFile::from_memory(bytes);
        std::string what;
        QVERIFY(error_code_of([&] { Tokenizer::from_gguf(*gguf); }, &what) ==
                ErrorCode::UnsupportedTokenizer);
        QVERIFY2(what.find(message.toStdString()) != std::string::npos, what.c_str());
    }

    void missingTokenizerIsRefused() {
        GgufWriter w;
        w.set_string("general.architecture", "llama");
        const auto bytes = w.serialize();
        const auto gguf = GgufFile::from_memory(bytes);
        std::string what;
        QVERIFY(error_code_of([&] { Tokenizer::from_gguf(*gguf); }, &what) ==
                ErrorCode::UnsupportedTokenizer);
        QVERIFY2(what.find("tokenizer.ggml.model is missing") != std::string::npos, what.c_str());
    }

    void inconsistentVocabularyIsReported() {
        GgufWriter w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
        w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0});
        const auto bytes = w.serialize();
        const auto gguf = GgufFile::from_memory(bytes);
        std::string what;
        QVERIFY(error_code_of([&] { Tokenizer::from_gguf(*gguf); }, &what) == ErrorCode::InvalidModelFile);
        QVERIFY2(what.find("tokenizer.ggml.scores has 3 entries for 4 tokens") != std::string::npos,
                 what.c_str());

        // A truncated tokenizer.model.
        const std::string model = read_std(shared_path("models/tok512.model"));
        const std::string path = lantern::test::temp_dir() + "/truncated.model";
        {
            QFile f(QString::fromStdString(path));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(model.data(), 1000);
        }
        QVERIFY(error_code_of([&] { Tokenizer::from_model_file(path); }, &what) ==
                ErrorCode::InvalidModelFile);
        QVERIFY(error_code_of([&] { Tokenizer::from_model_file(path + ".absent"); }) == ErrorCode::Io);
        QVERIFY(error_code_of([&] { from_gguf_->decode(std::vector<int32_t>{32000}); }) ==
                ErrorCode::InvalidArgument);
    }

    // Old GGUFs carry no token types: byte pieces, BOS/EOS and <unk> are recognised by id and name.
    void vocabularyWithoutTypesStillWorks() {
        const auto base = GgufFile::open(shared_path("models/stories260K.gguf"));
        GgufWriter w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", base->get_string_array("tokenizer.ggml.tokens"));
        w.set_f32_array("tokenizer.ggml.scores", base->get_float_array("tokenizer.ggml.scores"));
        const auto bytes = w.serialize();
        const auto t = Tokenizer::from_gguf(*GgufFile::from_memory(bytes));
        QCOMPARE(t->encode("Once upon a time", true), stories_->encode("Once upon a time", true));
        QVERIFY(t->type(3 + 0xE4) == TokenType::Byte && t->is_control(1) && t->type(0) == TokenType::Unknown);
        const std::string emoji = "🦙";
        QCOMPARE(t->decode(t->encode(emoji, false)), emoji);
    }

    // The ModelProto we write for a vocabulary is what sentencepiece itself writes: the piece
    // records of Meta's tokenizer.model come out byte for byte (score always, type unless NORMAL).
    void modelProtoPiecesMatchARealModelFile() {
        const std::string file = read_std(shared_path("models/llama2-tokenizer.model"));
        const auto vocab = tokenizer::parse_model_proto(file, "llama2-tokenizer.model");
        QCOMPARE(vocab.pieces.size(), size_t(32000));
        QVERIFY(vocab.model_type == tokenizer::ModelType::Bpe);
        QVERIFY(vocab.byte_fallback);
        QVERIFY(vocab.add_dummy_prefix);
        QVERIFY(!vocab.remove_extra_whitespaces);
        const std::string ours = tokenizer::serialize_model_proto(vocab, true, false);

        // The pieces are the leading fields of both; compare everything before trainer_spec.
        const auto pieces_length = [](const std::string& proto) {
            tokenizer::ProtoReader reader(proto, "model");
            tokenizer::ProtoField f;
            size_t length = 0;
            while (reader.next(f) && f.number == 1)
                length = static_cast<size_t>(f.bytes.data() + f.bytes.size() - proto.data());
            return length;
        };
        const size_t length = pieces_length(file);
        QVERIFY(length > 32000 * 8);
        QCOMPARE(pieces_length(ours), length);
        QVERIFY(ours.compare(0, length, file, 0, length) == 0);

        // And what we build from GGUF metadata parses back to the same vocabulary and settings.
        tokenizer::SentencePieceVocab from_gguf;
        for (int32_t id = 0; id < 32000; ++id)
            from_gguf.pieces.push_back({from_gguf_->piece(id), from_gguf_->score(id), from_gguf_->type(id)});
        from_gguf.byte_fallback = true;
        const auto reparsed =
            tokenizer::parse_model_proto(tokenizer::serialize_model_proto(from_gguf, true, false), "ours");
        QVERIFY(reparsed.model_type == tokenizer::ModelType::Bpe);
        QVERIFY(reparsed.byte_fallback && reparsed.add_dummy_prefix && !reparsed.remove_extra_whitespaces);
        QCOMPARE(reparsed.unk_id, 0);
        QCOMPARE(reparsed.bos_id, 1);
        QCOMPARE(reparsed.eos_id, 2);
        QCOMPARE(reparsed.pad_id, -1);
        for (size_t i = 0; i < 32000; ++i)
            QVERIFY(reparsed.pieces[i].text == vocab.pieces[i].text &&
                    reparsed.pieces[i].type == vocab.pieces[i].type &&
                    reparsed.pieces[i].score == vocab.pieces[i].score);
    }

    void protobufWriterEncodesTheWireFormat() {
        tokenizer::ProtoWriter w;
        w.varint(1, 300);
        w.int32(2, -1);
        w.float32(3, 1.0f);
        w.bytes(4, "hi");
        QCOMPARE(w.data(), std::string("\x08\xAC\x02"
                                       "\x10\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01"
                                       "\x1D\x00\x00\x80\x3F"
                                       "\x22\x02hi",
                                       3 + 11 + 5 + 4));
        tokenizer::ProtoReader r(w.data(), "test");
        tokenizer::ProtoField f;
        QVERIFY(r.next(f) && f.number == 1 && f.value == 300);
        QVERIFY(r.next(f) && f.number == 2 && f.as_int32() == -1);
        QVERIFY(r.next(f) && f.number == 3 && f.as_float() == 1.0f);
        QVERIFY(r.next(f) && f.number == 4 && f.bytes == "hi");
        QVERIFY(!r.next(f));

        const std::string truncated = w.data().substr(0, w.data().size() - 1);
        tokenizer::ProtoReader bad(truncated, "test");
        QVERIFY(error_code_of([&] {
                    while (bad.next(f)) {
                    }
                }) == ErrorCode::InvalidModelFile);
    }
};

QTEST_APPLESS_MAIN(TokenizerTest)
#include "test_tokenizer.moc"
