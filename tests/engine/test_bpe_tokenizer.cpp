// Byte-level BPE (GGUF tokenizer.ggml.model = "gpt2": Llama 3's, Mistral's tekken, SmolLM's and
// GPT-2's pre-tokenizers): llama.cpp's own ids for a trained test vocabulary (tests/data/bpe_*,
// written by scripts/bpe-tokenizer-vectors with llama.cpp's tokenizer, never by Lantern), the
// pre-tokenizers' word splits written out from their regular expressions, merge order, whole-word
// tokens, bytes that are not UTF-8, special tokens that users cannot type, streaming decode, chat
// templates of these families, and clear errors for vocabularies Lantern cannot run.
#include <QTest>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lantern/chat_template.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/tokenizer.h"
#include "test_support.h"
#include "tokenizer/bpe.h"

namespace QTest {
template <>
inline char* toString(const std::string& s) {
    return toPrettyCString(s.data(), static_cast<qsizetype>(s.size()));
}
template <>
inline char* toString(const std::vector<std::string>& v) {
    QByteArray out = "[";
    for (size_t i = 0; i < v.size(); ++i)
        out += (i ? "|" : "") + QByteArray(v[i].data(), static_cast<qsizetype>(v[i].size()));
    out += "]";
    return qstrdup(out.replace('\n', "\\n").constData());
}
template <>
inline char* toString(const std::vector<int32_t>& v) {
    QByteArray out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + QByteArray::number(v[i]);
    return qstrdup((out + "]").constData());
}
}  // namespace QTest

using namespace lantern;
using lantern::test::source_path;
using lantern::test::split;
using tokenizer::BpePreTokenizer;

namespace {

std::string read_std(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(ErrorCode::Io, "cannot read " + path);
    std::string out;
    char buf[1 << 16];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    std::fclose(f);
    return out;
}

// The words `text` splits into under `pre`, as comparable strings.
std::vector<std::string> words(std::string_view text, BpePreTokenizer pre = BpePreTokenizer::Llama3) {
    std::vector<std::string> out;
    for (auto w : tokenizer::bpe_split_words(text, pre)) out.emplace_back(w);
    return out;
}

// A byte-level vocabulary written with Lantern's GGUF writer: the 256 byte symbols (ids 0-255),
// then `extra` pieces (in the byte alphabet), then <|begin_of_text|> and <|eot_id|> as control
// tokens; `merges` in rank order.
struct SmallVocab {
    std::vector<std::string> extra;
    std::vector<std::string> merges;
    std::string pre = "llama-bpe";
    std::vector<std::pair<std::string, int32_t>> typed_extra;  // more pieces with a token type
};

std::vector<uint8_t> small_vocab_gguf(const SmallVocab& v) {
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(tokenizer::bpe_byte_symbol(static_cast<uint8_t>(b)));
        types.push_back(1);
    }
    for (const auto& e : v.extra) {
        tokens.push_back(e);
        types.push_back(1);
    }
    for (const auto& [piece, type] : v.typed_extra) {
        tokens.push_back(piece);
        types.push_back(type);
    }
    const auto bos = static_cast<uint32_t>(tokens.size());
    tokens.push_back("<|begin_of_text|>");
    types.push_back(3);
    tokens.push_back("<|eot_id|>");
    types.push_back(3);
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "gpt2");
    if (!v.pre.empty()) w.set_string("tokenizer.ggml.pre", v.pre);
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", v.merges);
    w.set_u32("tokenizer.ggml.bos_token_id", bos);
    w.set_u32("tokenizer.ggml.eos_token_id", bos + 1);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    return w.serialize();
}

std::unique_ptr<Tokenizer> small_tokenizer(const SmallVocab& v) {
    const auto bytes = small_vocab_gguf(v);
    return Tokenizer::from_gguf(*GgufFile::from_memory(bytes));
}

ErrorCode error_of(const std::function<void()>& f, std::string* what) {
    try {
        f();
    } catch (const Error& e) {
        *what = e.what();
        return e.code();
    }
    return ErrorCode::Internal;
}

int32_t byte_id(char c) {
    return static_cast<uint8_t>(c);
}

// Expected words, as comparable strings.
std::vector<std::string> strings_of(const QStringList& list) {
    std::vector<std::string> out;
    for (const auto& e : list) out.push_back(e.toStdString());
    return out;
}

}  // namespace

class BpeTokenizerTest : public QObject {
    Q_OBJECT

    struct Case {
        std::string input;
        std::vector<int32_t> expected;
    };
    struct Suite {
        std::unique_ptr<Tokenizer> tokenizer;
        std::vector<Case> cases;
    };
    // One vocabulary under every pre-tokenizer: llama3 ("llama-bpe"), tekken, gpt4o ("gpt-4o"),
    // smollm, qwen2, gpt2 ("gpt-2"), deepseek_llm, deepseek_coder.
    std::map<std::string, Suite> suites_;
    Tokenizer* trained_ = nullptr;  // the llama3 one

private slots:
    void initTestCase() {
        // Missing test data is a failure with its path, never a skip.
        try {
            struct Variant {
                const char* name;
                const char* pre;
                bool add_bos;
            };
            // As scripts/bpe-tokenizer-vectors wrote them for llama.cpp (VARIANTS there).
            for (const Variant v : {Variant{"llama3", "llama-bpe", true}, Variant{"tekken", "tekken", true},
                                    Variant{"gpt4o", "gpt-4o", false}, Variant{"smollm", "smollm", false},
                                    Variant{"qwen2", "qwen2", false}, Variant{"gpt2", "gpt-2", false},
                                    Variant{"deepseek_llm", "deepseek-llm", false},
                                    Variant{"deepseek_coder", "deepseek-coder", false}}) {
                Suite& suite = suites_[v.name];
                const auto bytes = test::bpe_test_vocab(v.pre, v.add_bos);
                suite.tokenizer = Tokenizer::from_gguf(*GgufFile::from_memory(bytes));
                auto inputs =
                    split(read_std(source_path("tests/data/bpe_vectors.inp")), "\n__ggml_vocab_test__\n");
                auto outputs = split(
                    read_std(source_path("tests/data/bpe_" + std::string(v.name) + "_vectors.out")), "\n");
                if (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
                if (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
                QCOMPARE(inputs.size(), outputs.size());
                for (size_t i = 0; i < inputs.size(); ++i) {
                    Case c{inputs[i], {}};
                    for (const auto& item : split(outputs[i], " "))
                        if (!item.empty()) c.expected.push_back(std::stoi(item));
                    suite.cases.push_back(std::move(c));
                }
                QVERIFY2(suite.cases.size() >= 100, "the llama.cpp vectors are incomplete");
            }
            trained_ = suites_["llama3"].tokenizer.get();
        } catch (const Error& e) {
            QFAIL(e.what());
        }
    }

    void llamaCppVectorsTokenizeExactly_data() {
        QTest::addColumn<QString>("suite");
        QTest::addColumn<int>("index");
        for (const auto& [name, suite] : suites_)
            for (size_t i = 0; i < suite.cases.size(); ++i) {
                const std::string& in = suite.cases[i].input;
                QString shown = QString::fromUtf8(in.data(), static_cast<qsizetype>(in.size()));
                shown.replace('\n', "\\n").replace('\t', "\\t").replace('\r', "\\r");
                QTest::newRow(qPrintable(
                    QString("%1 %2: \"%3\"").arg(QString::fromStdString(name)).arg(i).arg(shown.left(40))))
                    << QString::fromStdString(name) << static_cast<int>(i);
            }
    }
    // llama.cpp's ids for every input, BOS in front only when the vocabulary adds one, and the
    // input back from them.
    void llamaCppVectorsTokenizeExactly() {
        QFETCH(QString, suite);
        QFETCH(int, index);
        const Suite& s = suites_.at(suite.toStdString());
        const Tokenizer& t = *s.tokenizer;
        const Case& c = s.cases[static_cast<size_t>(index)];
        QCOMPARE(t.encode(c.input, false), c.expected);
        const auto with_bos = t.encode(c.input, true);
        if (t.add_bos()) {
            QVERIFY(!with_bos.empty());
            QCOMPARE(with_bos.front(), t.bos_id());
            QCOMPARE(std::vector<int32_t>(with_bos.begin() + 1, with_bos.end()), c.expected);
        }
        QCOMPARE(t.decode(c.expected), c.input);
        QCOMPARE(t.decode(with_bos), c.input);  // BOS decodes to nothing
    }

    void vocabularyMetadataIsRead() {
        QVERIFY(trained_->vocab_size() > 256);
        QCOMPARE(trained_->piece(trained_->bos_id()), std::string("<|begin_of_text|>"));
        QCOMPARE(trained_->piece(trained_->eos_id()), std::string("<|eot_id|>"));
        QCOMPARE(trained_->eot_id(), trained_->eos_id());
        QVERIFY(trained_->add_bos());
        QVERIFY(!trained_->add_space_prefix());
        QVERIFY(!suites_["smollm"].tokenizer->add_bos());  // add_bos_token = false in those files
        QVERIFY(!suites_["gpt2"].tokenizer->add_bos());
        QVERIFY(suites_["tekken"].tokenizer->add_bos());
        QCOMPARE(trained_->kind(), std::string("byte-level BPE (llama-bpe)"));
        QCOMPARE(suites_["tekken"].tokenizer->kind(), std::string("byte-level BPE (tekken)"));
        QCOMPARE(trained_->unk_id(), -1);
        QVERIFY(trained_->is_special(trained_->bos_id()));
        QCOMPARE(trained_->special_token("<|start_header_id|>").has_value(), true);
        // The space byte is spelled "Ġ" in the vocabulary and decodes to a space.
        QCOMPARE(trained_->piece(' '), std::string("\xC4\xA0"));
        QCOMPARE(trained_->token_text(' '), std::string(" "));
        // Candidates are shown as text: " world", not "Ġworld"; a byte that is no whole character
        // as <0xNN>; special tokens by name.
        const auto world = trained_->encode(" world", false);
        QCOMPARE(world.size(), size_t(1));
        QCOMPARE(trained_->piece(world[0]), std::string("\xC4\xA0world"));
        QCOMPARE(trained_->display_piece(world[0]), std::string(" world"));
        QCOMPARE(trained_->display_piece(0xE4), std::string("<0xE4>"));
        QCOMPARE(trained_->display_piece(trained_->eos_id()), std::string("<|eot_id|>"));
        // Every token shows as valid UTF-8 (invalid bytes would not survive a round trip).
        for (int32_t id = 0; id < trained_->vocab_size(); ++id) {
            const std::string shown = trained_->display_piece(id);
            const QByteArray round =
                QString::fromUtf8(shown.data(), static_cast<qsizetype>(shown.size())).toUtf8();
            QVERIFY2(round == QByteArray(shown.data(), static_cast<qsizetype>(shown.size())), shown.c_str());
        }
    }

    // Word splits written out from Llama 3's expression (see llama3_word_end in bpe.cpp).
    void llama3PreTokenizerSplits_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("expected");
        const auto row = [](const char* name, const char* text, QStringList expected) {
            QTest::newRow(name) << QString::fromUtf8(text) << expected;
        };
        row("words", "Hello world", {"Hello", " world"});
        row("leading spaces", "  hello", {" ", " hello"});
        row("contractions any case", "I'm you'LL it'S we've",
            {"I", "'m", " you", "'LL", " it", "'S", " we", "'ve"});
        row("apostrophe without contraction", "O'Neil 'x", {"O", "'Neil", " '", "x"});
        row("digits in threes", "12345 1234567", {"123", "45", " ", "123", "456", "7"});
        row("space before digits", " 42", {" ", "42"});
        row("letters after a symbol", "(hello)", {"(hello", ")"});
        row("punctuation keeps its line breaks", "end!!\n\nnext", {"end", "!!\n\n", "next"});
        row("space then punctuation", "a ...b", {"a", " ...", "b"});
        row("whitespace up to its last line break", "a \n \n  b", {"a", " \n \n", " ", " b"});
        row("whitespace at the end", "x   ", {"x", "   "});
        row("tab before a word", "\thello", {"\thello"});
        row("line break never leads a word", "\nhello", {"\n", "hello"});
        row("CJK", "你好，世界！", {"你好", "，世界", "！"});
        row("accented", "Größe über", {"Größe", " über"});
        row("no-break space is whitespace",
            "a\xC2\xA0\xC2\xA0"
            "b",
            {"a", "\xC2\xA0",
             "\xC2\xA0"
             "b"});
        row("combining mark is a symbol", "e\xCC\x81x", {"e", "\xCC\x81x"});
        row("empty", "", {});
    }
    void llama3PreTokenizerSplits() {
        QFETCH(QString, text);
        QFETCH(QStringList, expected);
        std::vector<std::string> want;
        for (const auto& e : expected) want.push_back(e.toStdString());
        QCOMPARE(words(text.toStdString()), want);
    }

    // GPT-2's expression, and SmolLM's (the same, every digit a word of its own).
    void gpt2AndSmolLmPreTokenizerSplits_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("gpt2");
        QTest::addColumn<QStringList>("smollm");
        const auto row = [](const char* name, const char* text, QStringList gpt2, QStringList smollm) {
            QTest::newRow(name) << QString::fromUtf8(text) << gpt2 << smollm;
        };
        row("words", "Hello world", {"Hello", " world"}, {"Hello", " world"});
        row("lower-case contractions only", "I'm it'S", {"I", "'m", " it", "'", "S"},
            {"I", "'m", " it", "'", "S"});
        row("digits", "x 12345y", {"x", " 12345", "y"}, {"x", " ", "1", "2", "3", "4", "5", "y"});
        row("symbol after letters", "(hello)", {"(", "hello", ")"}, {"(", "hello", ")"});
        row("line breaks are whitespace", "a\n\n b", {"a", "\n\n", " b"}, {"a", "\n\n", " b"});
        row("tab before a word", "\thello", {"\t", "hello"}, {"\t", "hello"});
        row("whitespace at the end", "x  ", {"x", "  "}, {"x", "  "});
        row("punctuation then line break", "end!!\nnext", {"end", "!!", "\n", "next"},
            {"end", "!!", "\n", "next"});
    }
    // Inputs that made a pre-tokenizer quadratic (a request of a few MiB stalled the engine's
    // thread for hours): 1 MiB of words without digits (SmolLM rescanned to the next digit for
    // every word), of whitespace before a digit (DeepSeek LLM tried "\s+$" at every code point),
    // one 1 MiB word and 1 MiB of digits, under every pre-tokenizer. Each round-trips; ctest's
    // time limit is what a regression would hit, not an assertion on the time.
    void hostileInputsTokenizeInLinearTime() {
        const size_t mib = 1u << 20;
        std::string words;
        while (words.size() < mib) words += "ab ";
        const std::vector<std::string> inputs = {words, std::string(mib, ' ') + "1", std::string(mib, 'a'),
                                                 std::string(mib, '7')};
        for (const auto& [name, suite] : suites_)
            for (const std::string& input : inputs) {
                const auto ids = suite.tokenizer->encode(input, false);
                QVERIFY2(!ids.empty() && suite.tokenizer->decode(ids) == input, name.c_str());
            }
    }

    void gpt2AndSmolLmPreTokenizerSplits() {
        QFETCH(QString, text);
        QFETCH(QStringList, gpt2);
        QFETCH(QStringList, smollm);
        QCOMPARE(words(text.toStdString(), BpePreTokenizer::Gpt2), strings_of(gpt2));
        QCOMPARE(words(text.toStdString(), BpePreTokenizer::SmolLm), strings_of(smollm));
    }

    // DeepSeek's sequences of expressions, worked out by hand from them: each splits the pieces of
    // the ones before. Coder: line breaks, \s?\p{L}+, \s?\p{P}+ (symbols such as + and = are not
    // \p{P}), CJK runs, single digits. LLM: line breaks, \s? + its own letter list, \s? + ASCII
    // punctuation and letters past '9' (so "Größe" loses its ASCII letters to that one), trailing
    // whitespace, CJK runs, digit runs.
    void deepSeekPreTokenizerSplits_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("coder");
        QTest::addColumn<QStringList>("llm");
        const auto row = [](const char* name, const char* text, QStringList coder, QStringList llm) {
            QTest::newRow(name) << QString::fromUtf8(text) << coder << llm;
        };
        row("words", "Hello world", {"Hello", " world"}, {"Hello", " world"});
        row("symbols are no punctuation for coder", "a+b=c; x", {"a", "+", "b", "=", "c", ";", " x"},
            {"a", "+", "b", "=", "c", ";", " x"});
        row("punctuation after a space", "x, y!", {"x", ",", " y", "!"}, {"x", ",", " y", "!"});
        row("digits", "12 345", {"1", "2", " ", "3", "4", "5"}, {"12", " ", "345"});
        row("letters outside ASCII", "Größe", {"Größe"}, {"Gr", "öß", "e"});
        row("ideographs, kana and Hangul", "漢字かな카나", {"漢字かな카나"}, {"漢字かな카나"});
        row("fullwidth brackets", "（全角）", {"（", "全角", "）"}, {"（", "全角", "）"});
        row("ideographic space before a letter", "a　b", {"a", "　b"}, {"a", "　b"});
        row("line breaks and trailing whitespace", "x  \n  y  ", {"x", "  ", "\n", " ", " y", "  "},
            {"x", "  ", "\n", " ", " y", "  "});
    }
    void deepSeekPreTokenizerSplits() {
        QFETCH(QString, text);
        QFETCH(QStringList, coder);
        QFETCH(QStringList, llm);
        QCOMPARE(words(text.toStdString(), BpePreTokenizer::DeepSeekCoder), strings_of(coder));
        QCOMPARE(words(text.toStdString(), BpePreTokenizer::DeepSeekLlm), strings_of(llm));
    }

    // The case-splitting expressions as llama.cpp runs them (its std::regex has no \p{Lu}).
    // Mistral's tekken: words split where lower case turns upper, an upper run keeps the lower run
    // after it, letters outside ASCII count as both cases, one digit at a time, slashes and line
    // breaks stay with punctuation. GPT-4o's (Phi-4-mini, Llama 4): the same splits, an English
    // contraction in any case stays on its word, digits in runs of up to three.
    void caseSplittingPreTokenizers_data() {
        QTest::addColumn<int>("pre");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("expected");
        const auto row = [](const char* name, BpePreTokenizer pre, const char* text, QStringList expected) {
            QTest::newRow(name) << int(pre) << QString::fromUtf8(text) << expected;
        };
        const auto tekken = BpePreTokenizer::Tekken, gpt4o = BpePreTokenizer::Gpt4o;
        row("tekken: camel case", tekken, "helloWorld HTTPServer", {"hello", "World", " HTTPServer"});
        row("tekken: upper run then lower", tekken, "HELLOworld", {"HELLOworld"});
        row("tekken: all upper", tekken, "HELLO", {"HELLO"});
        row("tekken: digits one by one", tekken, "x 123", {"x", " ", "1", "2", "3"});
        row("tekken: no contractions", tekken, "it's you'LL", {"it", "'s", " you", "'LL"});
        // "É" is upper and lower at once: U*W+ gives back the upper run down to it (llama.cpp agrees).
        row("tekken: outside ASCII both cases", tekken, "ÉCOLE élève", {"É", "COLE", " élève"});
        row("tekken: slashes after punctuation", tekken, "a!!/\nb", {"a", "!!/\n", "b"});
        row("tekken: whitespace", tekken, "a \n \n  b", {"a", " \n \n", " ", " b"});
        row("gpt-4o: camel case", gpt4o, "helloWorld HTTPServer", {"hello", "World", " HTTPServer"});
        row("gpt-4o: contractions kept", gpt4o, "it's you'LL don't WE'RE",
            {"it's", " you'LL", " don't", " WE'RE"});
        row("gpt-4o: not a contraction", gpt4o, "O'Neil it'x", {"O", "'Neil", " it", "'x"});
        row("gpt-4o: upper word and contraction", gpt4o, "HELLO's", {"HELLO's"});
        row("gpt-4o: digits by three", gpt4o, "x 1234567", {"x", " ", "123", "456", "7"});
        row("gpt-4o: outside ASCII both cases", gpt4o, "ÉCOLE élève", {"É", "COLE", " élève"});
        row("gpt-4o: slashes after punctuation", gpt4o, "a!!/\nb", {"a", "!!/\n", "b"});
    }
    void caseSplittingPreTokenizers() {
        QFETCH(int, pre);
        QFETCH(QString, text);
        QFETCH(QStringList, expected);
        QCOMPARE(words(text.toStdString(), static_cast<BpePreTokenizer>(pre)), strings_of(expected));
    }

    // Bytes that are not UTF-8 are words of their own, encode through the byte alphabet and come
    // back exactly.
    void invalidUtf8RoundTrips() {
        const std::string text = std::string("ab\xFF\xC3(x\xE4\xBD", 8) + "\xF0\x9F\x91\x8B";
        std::string joined;
        for (const auto& w : words(text)) joined += w;
        QCOMPARE(joined, text);
        const auto ids = trained_->encode(text, false);
        // Shown: one U+FFFD per byte that forms no character, as sentencepiece decodes them.
        const std::string fffd = "\xEF\xBF\xBD";
        QCOMPARE(trained_->decode(ids), "ab" + fffd + fffd + "(x" + fffd + fffd + "\xF0\x9F\x91\x8B");
        std::string raw;
        for (int32_t id : ids) raw += trained_->token_text(id);
        QCOMPARE(raw, text);  // the bytes themselves; decode() shows the broken ones as U+FFFD
    }

    // Merges apply lowest rank first, the leftmost of equal pairs first, and a merge whose result
    // is no token falls back to its bytes.
    void mergesApplyInRankOrder() {
        SmallVocab v;
        v.extra = {"ab", "bc", "aa", "aaa"};
        v.merges = {"b c", "a b", "a a", "aa a"};
        const auto t = small_tokenizer(v);
        const int32_t ab = 256, bc = 257, aa = 258, aaa = 259;
        QCOMPARE(t->encode("abc", false), (std::vector<int32_t>{byte_id('a'), bc}));  // "b c" outranks "a b"
        QCOMPARE(t->encode("abab", false), (std::vector<int32_t>{ab, ab}));
        QCOMPARE(t->encode("aaaa", false),
                 (std::vector<int32_t>{aa, aa}));  // leftmost first, then "aa aa" has no merge
        QCOMPARE(t->encode("aaa", false), (std::vector<int32_t>{aaa}));
        QCOMPARE(t->encode("a b", false), (std::vector<int32_t>{byte_id('a'), byte_id(' '), byte_id('b')}));
        // A merge the vocabulary has no token for: the merged symbol is spelled by its bytes.
        SmallVocab missing;
        missing.merges = {"x y"};
        QCOMPARE(small_tokenizer(missing)->encode("xy", false),
                 (std::vector<int32_t>{byte_id('x'), byte_id('y')}));
    }

    // Llama 3 takes a word that is a token as that token, whatever the merges would have made.
    void wholeWordTokensComeFirst() {
        SmallVocab v;
        v.extra = {"ab", "abc"};
        v.merges = {"a b"};  // merging alone stops at "ab" + "c"
        const auto t = small_tokenizer(v);
        QCOMPARE(t->encode("abc", false), (std::vector<int32_t>{257}));
        QCOMPARE(t->encode("abcc", false), (std::vector<int32_t>{256, byte_id('c'), byte_id('c')}));
    }

    // A long run of one character is one word: the merge heap keeps it fast and exact.
    void longRunsEncode() {
        SmallVocab v;
        v.extra = {"ĠĠ", "ĠĠĠĠ"};
        v.merges = {"Ġ Ġ", "ĠĠ ĠĠ"};
        const auto t = small_tokenizer(v);
        const std::string spaces(100001, ' ');
        const auto ids = t->encode(spaces, false);
        QCOMPARE(ids.size(), size_t(25001));  // 25 000 runs of four, then one
        QCOMPARE(ids.front(), 257);
        QCOMPARE(ids.back(), byte_id(' '));
        QCOMPARE(t->decode(ids), spaces);
    }

    // What a user types never becomes a control token; a template can still place one by id, and
    // trusted text (encode_with_specials) turns the spelling into the token.
    void userTypedSpecialTokensStayText() {
        const std::string typed = "<|eot_id|>";
        const auto ids = trained_->encode(typed, false);
        QVERIFY(ids.size() > 1);
        for (int32_t id : ids) QVERIFY(!trained_->is_special(id));
        QCOMPARE(trained_->decode(ids), typed);
        const auto trusted = trained_->encode_with_specials("<|start_header_id|>user<|end_header_id|>", true);
        QCOMPARE(trusted.front(), trained_->bos_id());
        QCOMPARE(trusted[1], *trained_->special_token("<|start_header_id|>"));
        QCOMPARE(trusted.back(), *trained_->special_token("<|end_header_id|>"));
        QCOMPARE(trained_->decode(trusted), std::string("user"));
    }

    // User-defined pieces (added by hand, plain spelling) match wherever text contains them.
    void userDefinedPiecesMatchInText() {
        SmallVocab v;
        v.merges = {"x y"};
        v.typed_extra = {{"<tool>", 4}};
        const auto t = small_tokenizer(v);
        const int32_t tool = 256;
        const auto ids = t->encode("a<tool>b", false);
        QCOMPARE(ids, (std::vector<int32_t>{byte_id('a'), tool, byte_id('b')}));
        QCOMPARE(t->decode(ids), std::string("a<tool>b"));
    }

    // A character spread over byte tokens comes out of the stream only once it is complete.
    void streamingWaitsForWholeCharacters() {
        SmallVocab v;
        v.merges = {"x y"};
        const auto t = small_tokenizer(v);
        const auto ids = t->encode("\xE4\xBD\xA0!", false);  // "你!" as four byte tokens
        QCOMPARE(ids.size(), size_t(4));
        StreamingDetokenizer stream(*t);
        QCOMPARE(stream.push(ids[0]), std::string());
        QCOMPARE(stream.push(ids[1]), std::string());
        QCOMPARE(stream.push(ids[2]), std::string("\xE4\xBD\xA0"));
        QCOMPARE(stream.push(ids[3]), std::string("!"));
        QCOMPARE(stream.push(t->bos_id()), std::string());
        QCOMPARE(stream.flush(), std::string());
    }

    // Meta's Llama 3 chat layout, recognised from its Jinja template: markers as single control
    // tokens, content trimmed, a blank line after each header, <|eot_id|> closing each turn and
    // stopping generation; turn N's prompt plus the reply and <|eot_id|> is the start of turn N+1's.
    void llama3ChatTemplate() {
        const auto format = ChatTemplate::detect(
            "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
            "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
            "'<|eot_id|>' %}{{ content }}{% endfor %}");
        QCOMPARE(format.has_value(), true);
        QCOMPARE(*format, ChatFormat::Llama3);
        const ChatTemplate chat(ChatFormat::Llama3);
        QVERIFY(chat.has_system_role());
        std::vector<ChatMessage> messages = {{ChatRole::System, " Be brief. ", {}},
                                             {ChatRole::User, "Hi there!\n", {}}};
        const auto first = chat.render(*trained_, messages, true);
        const std::string expected_text =
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi there!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n";
        QCOMPARE(first.text, expected_text);
        QCOMPARE(first.tokens, trained_->encode_with_specials(expected_text, false));
        const int32_t eot = *trained_->special_token("<|eot_id|>");
        QCOMPARE(chat.end_of_turn_tokens(*trained_), std::vector<int32_t>{eot});
        const auto stops = chat.stop_tokens(*trained_);
        QVERIFY(std::find(stops.begin(), stops.end(), eot) != stops.end());

        const auto reply = trained_->encode("Hello! How can I help?", false);
        messages.push_back({ChatRole::Assistant, "Hello! How can I help?", reply});
        messages.push_back({ChatRole::User, "Tell me a story.", {}});
        const auto second = chat.render(*trained_, messages, true);
        std::vector<int32_t> prefix = first.tokens;
        prefix.insert(prefix.end(), reply.begin(), reply.end());
        prefix.push_back(eot);
        QVERIFY(second.tokens.size() > prefix.size());
        QCOMPARE(std::vector<int32_t>(second.tokens.begin(),
                                      second.tokens.begin() + static_cast<long>(prefix.size())),
                 prefix);
    }

    // Mistral's tekken templates write no space after [INST] or before a reply (the spaces of the
    // sentencepiece versions would be tokens of their own in a byte-level vocabulary), and v7 puts
    // the system prompt between its own markers.
    void mistralTekkenTemplates() {
        SmallVocab v;
        v.extra = {"Hi", "Hello", "Bye"};
        v.merges = {"H i"};
        v.typed_extra = {{"[INST]", 3}, {"[/INST]", 3}, {"[SYSTEM_PROMPT]", 3}, {"[/SYSTEM_PROMPT]", 3}};
        v.pre = "tekken";
        const auto t = small_tokenizer(v);
        QVERIFY(!t->add_space_prefix());
        const std::vector<ChatMessage> messages = {{ChatRole::System, "Be brief.", {}},
                                                   {ChatRole::User, "Hi", {}},
                                                   {ChatRole::Assistant, "Hello", {}},
                                                   {ChatRole::User, "Bye", {}}};
        const auto v3 = ChatTemplate(ChatFormat::Mistral).render(*t, messages, true);
        const std::string v3_text =
            "<|begin_of_text|>[INST]Be brief.\n\nHi[/INST]Hello<|eot_id|>[INST]Bye[/INST]";
        QCOMPARE(v3.text, v3_text);
        QCOMPARE(v3.tokens, t->encode_with_specials(v3_text, false));
        const auto v7 = ChatTemplate(ChatFormat::MistralV7).render(*t, messages, true);
        const std::string v7_text =
            "<|begin_of_text|>[SYSTEM_PROMPT]Be "
            "brief.[/SYSTEM_PROMPT][INST]Hi[/INST]Hello<|eot_id|>[INST]Bye[/INST]";
        QCOMPARE(v7.text, v7_text);
        QCOMPARE(v7.tokens, t->encode_with_specials(v7_text, false));
        QCOMPARE(ChatTemplate(ChatFormat::MistralV7).end_of_turn_tokens(*t),
                 std::vector<int32_t>{t->eos_id()});
    }

    // DeepSeek-R1's distilled Llama models: the system prompt bare after BOS, the generation prompt
    // opening the reasoning with "<think>\n" (a user-defined token there), earlier replies sent
    // without their reasoning, as DeepSeek's template does.
    void deepSeekR1Template() {
        const std::string user = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>", assistant =
                                                                       "<\xEF\xBD\x9C"
                                                                       "Assistant\xEF\xBD\x9C>";
        QCOMPARE(ChatTemplate::detect("{{bos_token}}{{ns.system_prompt}}{{'" + user +
                                      "' + message['content']}}{{'" + assistant + "<think>\\n'}}"),
                 std::optional<ChatFormat>(ChatFormat::DeepSeekR1));
        SmallVocab v;
        v.extra = {"Hi", "Hello"};
        v.merges = {"H i"};
        v.typed_extra = {{user, 3}, {assistant, 3}, {"<think>", 4}, {"</think>", 4}};
        const auto t = small_tokenizer(v);
        const int32_t think = 260;
        QCOMPARE(t->piece(think), std::string("<think>"));
        const ChatTemplate chat(ChatFormat::DeepSeekR1);
        std::vector<ChatMessage> messages = {{ChatRole::System, "Be brief.", {}}, {ChatRole::User, "Hi", {}}};
        const auto first = chat.render(*t, messages, true);
        const std::string first_text = "<|begin_of_text|>Be brief." + user + "Hi" + assistant + "<think>\n";
        QCOMPARE(first.text, first_text);
        QCOMPARE(first.tokens, t->encode_with_specials(first_text, false));
        QCOMPARE(first.tokens[first.tokens.size() - 2], think);
        messages.push_back({ChatRole::Assistant, "The user greets me.\n</think>\n\nHello", {}});
        messages.push_back({ChatRole::User, "Hi", {}});
        const auto second = chat.render(*t, messages, false);
        const std::string second_text =
            "<|begin_of_text|>Be brief." + user + "Hi" + assistant + "\n\nHello<|eot_id|>" + user + "Hi";
        QCOMPARE(second.text, second_text);
        QCOMPARE(second.tokens, t->encode_with_specials(second_text, false));

        // Continuing an unfinished reply keeps its reasoning: it goes on from the generation prompt.
        messages.pop_back();
        messages.back().content = "The user greets";
        const auto open = chat.render_open_reply(*t, messages);
        QCOMPARE(open.text, first_text + "The user greets");
        QCOMPARE(open.open_reply_start, first.tokens.size());
        QVERIFY(std::equal(first.tokens.begin(), first.tokens.end(), open.tokens.begin()));
    }

    // Falcon 3's "falcon3" is Llama 3's pre-tokenizer under another name (as in llama.cpp):
    // whole-word tokens first, BOS by default.
    void llama3AliasesRunAsLlama3() {
        for (const char* name : {"falcon3", "midm-2.0", "llama3", "llama-v3"}) {
            SmallVocab v;
            v.extra = {"ab", "abc"};
            v.merges = {"a b"};
            v.pre = name;
            const auto t = small_tokenizer(v);
            QCOMPARE(t->encode("abc", false), (std::vector<int32_t>{257}));
            QVERIFY(t->kind().find(name) != std::string::npos);
        }
    }

    // Qwen's special tokens as its GGUFs mark them: <|im_start|>, <|im_end|>, <|endoftext|> control
    // (placed by the template, never made from typed text), <think> and </think> user-defined
    // (text matches them, and they decode to their spelling, so reasoning can be told apart).
    // Generation ends at any of EOS and the end markers, as llama.cpp's end-of-generation set.
    void qwenSpecialTokensAndEndOfGeneration() {
        SmallVocab v;
        v.pre = "qwen2";
        v.merges = {"a b"};
        v.typed_extra = {
            {"<|endoftext|>", 3}, {"<|im_start|>", 3}, {"<|im_end|>", 3}, {"<think>", 4}, {"</think>", 4}};
        const auto t = small_tokenizer(v);
        const int32_t endoftext = *t->special_token("<|endoftext|>"),
                      im_start = *t->special_token("<|im_start|>"), im_end = *t->special_token("<|im_end|>");
        const auto& eog = t->end_of_generation();
        QCOMPARE(eog.front(), t->eos_id());
        for (int32_t id : {endoftext, im_end}) QVERIFY(std::find(eog.begin(), eog.end(), id) != eog.end());
        QVERIFY(std::find(eog.begin(), eog.end(), im_start) == eog.end());
        const auto think = t->encode("a<think>b", false);
        QCOMPARE(think.size(), size_t{3});
        QCOMPARE(t->piece(think[1]), std::string("<think>"));
        QCOMPARE(t->decode(think), std::string("a<think>b"));
        const auto typed = t->encode("<|im_end|>", false);  // typed text never becomes a control token
        QVERIFY(std::find(typed.begin(), typed.end(), im_end) == typed.end());
        const auto stops = ChatTemplate(ChatFormat::ChatML).stop_tokens(*t);
        for (int32_t id : {endoftext, im_end, t->eos_id()})
            QVERIFY(std::find(stops.begin(), stops.end(), id) != stops.end());
    }

    void unsupportedVocabulariesAreRefused() {
        std::string what;
        SmallVocab other;
        other.merges = {"a b"};
        other.pre = "chatglm-bpe";
        QCOMPARE(error_of([&] { small_tokenizer(other); }, &what), ErrorCode::UnsupportedTokenizer);
        QVERIFY2(what.find(
                     "pre-tokenizer \"chatglm-bpe\" is not supported yet (\"llama-bpe\", \"qwen2\", "
                     "\"tekken\", \"gpt-4o\", \"smollm\", \"deepseek-llm\", \"deepseek-coder\" and \"gpt-2\" "
                     "are)") != std::string::npos,
                 what.c_str());
        SmallVocab unnamed;
        unnamed.merges = {"a b"};
        unnamed.pre.clear();
        QCOMPARE(error_of([&] { small_tokenizer(unnamed); }, &what), ErrorCode::UnsupportedTokenizer);
        QVERIFY2(what.find("tokenizer.ggml.pre") != std::string::npos, what.c_str());
        SmallVocab no_merges;
        QCOMPARE(error_of([&] { small_tokenizer(no_merges); }, &what), ErrorCode::InvalidModelFile);
        QVERIFY2(what.find("tokenizer.ggml.merges is missing") != std::string::npos, what.c_str());
        SmallVocab bad_merge;
        bad_merge.merges = {"a b", "abc"};
        QCOMPARE(error_of([&] { small_tokenizer(bad_merge); }, &what), ErrorCode::InvalidModelFile);
        QVERIFY2(what.find("BPE merge 1 (\"abc\")") != std::string::npos, what.c_str());
    }
};

QTEST_GUILESS_MAIN(BpeTokenizerTest)
#include "test_bpe_tokenizer.moc"
