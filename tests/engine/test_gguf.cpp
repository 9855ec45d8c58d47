// GGUF reader robustness (engine/core/src/gguf): round trips through GgufWriter and a hand encoder for
// every metadata type, and a corpus of broken files generated here (every truncation of a small
// file, wrong magic/version, absurd counts, bad types, bad shapes, misaligned/overlapping/outside
// tensors, duplicates, bad alignment). Each must give Error(InvalidModelFile) with a message that
// names the problem — never a crash, a hang or a huge allocation. Plus the model-level errors
// Engine::load reports for an unsupported architecture or tensor type and for truncated models.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "model/llama_config.h"
#include "ops/weight_format.h"
#include "test_support.h"

using namespace lantern;

namespace {

// Little-endian GGUF encoder for files GgufWriter cannot (or must not) produce.
class Enc {
public:
    Enc& u8(uint8_t v) { return raw(&v, 1); }
    Enc& u16(uint16_t v) { return raw(&v, 2); }
    Enc& u32(uint32_t v) { return raw(&v, 4); }
    Enc& u64(uint64_t v) { return raw(&v, 8); }
    Enc& i8(int8_t v) { return raw(&v, 1); }
    Enc& i16(int16_t v) { return raw(&v, 2); }
    Enc& i32(int32_t v) { return raw(&v, 4); }
    Enc& i64(int64_t v) { return raw(&v, 8); }
    Enc& f32(float v) { return raw(&v, 4); }
    Enc& f64(double v) { return raw(&v, 8); }
    Enc& str(const std::string& s) {
        u64(s.size());
        return raw(s.data(), s.size());
    }
    Enc& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
        raw("GGUF", 4);
        return u32(version).u64(n_tensors).u64(n_kv);
    }
    Enc& key(const std::string& k, GgufType t) { return str(k).u32(static_cast<uint32_t>(t)); }
    Enc& kv_u32(const std::string& k, uint32_t v) { return key(k, GgufType::UInt32).u32(v); }
    Enc& tensor(const std::string& name, std::vector<uint64_t> shape, uint32_t type, uint64_t offset) {
        str(name).u32(static_cast<uint32_t>(shape.size()));
        for (auto d : shape) u64(d);
        return u32(type).u64(offset);
    }
    Enc& align(uint64_t a) {
        while (bytes.size() % a) bytes.push_back(0);
        return *this;
    }
    Enc& zeros(size_t n) {
        bytes.insert(bytes.end(), n, 0);
        return *this;
    }
    Enc& raw(const void* p, size_t n) {
        auto* b = static_cast<const uint8_t*>(p);
        bytes.insert(bytes.end(), b, b + n);
        return *this;
    }
    std::vector<uint8_t> bytes;
};

struct Outcome {
    bool parsed = false;
    ErrorCode code = ErrorCode::Internal;
    std::string message;
};

Outcome parse(std::span<const uint8_t> bytes) {
    Outcome o;
    try {
        auto f = GgufFile::from_memory(bytes, "test.gguf");
        // Touch everything a loader would, so a bad view would be caught by ASan/UBSan builds.
        for (const auto& t : f->tensors()) {
            auto d = f->tensor_data(t);
            if (d.size() != t.size_bytes) throw std::logic_error("tensor view size differs from its size");
        }
        o.parsed = true;
    } catch (const Error& e) {
        o.code = e.code();
        o.message = e.what();
    }
    return o;
}

bool says_truncated(const std::string& message) {
    return message.find("truncated") != std::string::npos ||
           message.find("does not fit") != std::string::npos ||
           message.find("cannot fit") != std::string::npos;
}

// QVERIFY-style check that `bytes` is rejected as InvalidModelFile with a message containing `needle`.
#define EXPECT_INVALID(bytes, needle)                                                                        \
    do {                                                                                                     \
        const std::string needle_ = (needle);                                                                \
        Outcome o_ = parse(bytes);                                                                           \
        QVERIFY2(!o_.parsed,                                                                                 \
                 qPrintable(QString("a malformed file was accepted (expected: %1)").arg(needle_.c_str())));  \
        QVERIFY2(o_.code == ErrorCode::InvalidModelFile,                                                     \
                 qPrintable(                                                                                 \
                     QString("wrong error code %1: %2").arg(error_code_name(o_.code), o_.message.c_str()))); \
        QVERIFY2(o_.message.find(needle_) != std::string::npos,                                              \
                 qPrintable(QString("message \"%1\" does not mention \"%2\"")                                \
                                .arg(o_.message.c_str(), needle_.c_str())));                                 \
    } while (0)

std::vector<uint8_t> f32_bytes(std::vector<float> v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// A small valid file: a few keys of different types, three tensors of different types and sizes
// (not multiples of the alignment, so there is padding between and after them).
GgufWriter small_writer() {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.block_count", 2);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "a", "bc"});
    w.set_i32_array("tokenizer.ggml.token_type", {2, 1, 1});
    w.add_tensor("a", {3}, 0, f32_bytes({1, 2, 3}));
    w.add_tensor("b", {2, 3}, 1, std::vector<uint8_t>(12, 0x3c));
    std::vector<float> q(64, 0.5f);
    w.add_tensor("c", {32, 2}, 8, ops::quantize(8, q, 32));
    return w;
}

// Offset of the data section: where the tensor at data offset 0 starts.
uint64_t data_section_offset(const std::vector<uint8_t>& bytes) {
    auto f = GgufFile::from_memory(bytes);
    for (const auto& t : f->tensors())
        if (t.offset == 0) return static_cast<uint64_t>(f->tensor_data(t).data() - bytes.data());
    throw std::logic_error("no tensor at offset 0");
}

// ---- tiny models for Engine::load ----

void add_vocab(GgufWriter& w, uint32_t n) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    for (uint32_t i = 3; i < n; ++i) {
        tokens.push_back("\xE2\x96\x81t" + std::to_string(i));
        types.push_back(1);
    }
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", std::vector<float>(n, 0.0f));
    w.set_i32_array("tokenizer.ggml.token_type", types);
}

// One-layer llama of the given width with every 2-D weight in F32 except `odd_tensor`, which is
// stored as `odd_type` (zero bytes of the right size).
// `extra` adds metadata.
void write_tiny_model(const std::string& path, const std::string& arch, uint32_t dim,
                      const std::string& odd_tensor = "", uint32_t odd_type = 0,
                      const std::function<void(GgufWriter&)>& extra = {}) {
    const uint32_t vocab = 8, ffn = 32, heads = 2;
    GgufWriter w;
    w.set_string("general.architecture", arch);
    w.set_string("general.name", "tiny");
    const std::string a = arch + ".";
    w.set_u32(a + "embedding_length", dim);
    w.set_u32(a + "block_count", 1);
    w.set_u32(a + "feed_forward_length", ffn);
    w.set_u32(a + "attention.head_count", heads);
    w.set_u32(a + "attention.head_count_kv", heads);
    w.set_u32(a + "context_length", 64);
    add_vocab(w, vocab);
    if (extra) extra(w);
    auto add = [&](const std::string& name, uint64_t cols, uint64_t rows) {
        std::vector<uint64_t> shape = rows ? std::vector<uint64_t>{cols, rows} : std::vector<uint64_t>{cols};
        uint64_t n = cols * (rows ? rows : 1);
        if (name == odd_tensor) {
            w.add_tensor(name, shape, odd_type,
                         std::vector<uint8_t>(ggml_row_bytes(odd_type, cols) * (n / cols), 0));
        } else {
            w.add_tensor(name, shape, 0, f32_bytes(std::vector<float>(n, 0.01f)));
        }
    };
    add("token_embd.weight", dim, vocab);
    add("output_norm.weight", dim, 0);
    add("blk.0.attn_norm.weight", dim, 0);
    add("blk.0.ffn_norm.weight", dim, 0);
    add("blk.0.attn_q.weight", dim, dim);
    add("blk.0.attn_k.weight", dim, dim);
    add("blk.0.attn_v.weight", dim, dim);
    add("blk.0.attn_output.weight", dim, dim);
    add("blk.0.ffn_gate.weight", dim, ffn);
    add("blk.0.ffn_up.weight", dim, ffn);
    add("blk.0.ffn_down.weight", ffn, dim);
    w.write(path);
}

EngineOptions engine_options() {
    EngineOptions o = test::validated_engine_options();
    o.context_length = 64;
    o.max_sequences = 1;
    o.max_step_tokens = 16;
    return o;
}

Outcome load(const std::string& path) {
    Outcome o;
    try {
        auto e = Engine::load(path, engine_options());
        o.parsed = true;
    } catch (const Error& e) {
        o.code = e.code();
        o.message = e.what();
    }
    return o;
}

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

class GgufTest : public QObject {
    Q_OBJECT
private slots:
    void writer_round_trip_data() {
        QTest::addColumn<uint32_t>("version");
        QTest::addColumn<uint64_t>("alignment");
        QTest::newRow("v3, alignment 32") << 3u << uint64_t(32);
        QTest::newRow("v2, alignment 32") << 2u << uint64_t(32);
        QTest::newRow("v3, alignment 64") << 3u << uint64_t(64);
        QTest::newRow("v3, alignment 8") << 3u << uint64_t(8);
        QTest::newRow("v2, alignment 256") << 2u << uint64_t(256);
    }
    void writer_round_trip() {
        QFETCH(uint32_t, version);
        QFETCH(uint64_t, alignment);
        GgufWriter w;
        w.set_u32("u32", 0xfffffff0u);
        w.set_i32("i32", -123456);
        w.set_f32("f32", 0.15625f);
        w.set_bool("yes", true);
        w.set_bool("no", false);
        w.set_string("s", "h\xC3\xA9llo\nworld");
        w.set_string("empty", "");
        w.set_string_array("strings", {"a", "", "\xE2\x96\x81x"});
        w.set_f32_array("floats", {1.5f, -2.25f, 1e30f});
        w.set_i32_array("ints", {-1, 0, 2147483647});
        w.set_i32_array("no ints", {});
        w.set_u32("u32", 7);  // setting a key again replaces it
        std::vector<float> vals(5 * 64);
        for (size_t i = 0; i < vals.size(); ++i) vals[i] = std::sin(float(i));
        auto f16 = ops::quantize(1, std::span<const float>(vals).first(3 * 7), 7);
        auto q8 = ops::quantize(8, vals, 64);
        auto q4 = ops::quantize(2, vals, 32);
        w.add_tensor("t.f32", {5}, 0, f32_bytes({1, 2, 3, 4, 5}));
        w.add_tensor("t.f16", {7, 3}, 1, f16);
        w.add_tensor("t.q8_0", {64, 5}, 8, q8);
        w.add_tensor("t.q4_0", {32, 2, 5}, 2, q4);
        auto bytes = w.serialize(version, alignment);
        auto f = GgufFile::from_memory(bytes, "round-trip");
        QCOMPARE(f->version(), version);
        QCOMPARE(f->alignment(), alignment);
        QCOMPARE(f->get_int("u32").value(), int64_t(7));
        QCOMPARE(f->get_int("i32").value(), int64_t(-123456));
        QCOMPARE(f->get_float("f32").value(), 0.15625);
        QCOMPARE(f->get_bool("yes").value(), true);
        QCOMPARE(f->get_bool("no").value(), false);
        QCOMPARE(f->get_string("s").value(), std::string("h\xC3\xA9llo\nworld"));
        QCOMPARE(f->get_string("empty").value(), std::string());
        QCOMPARE(f->get_string_array("strings"), (std::vector<std::string>{"a", "", "\xE2\x96\x81x"}));
        QCOMPARE(f->get_float_array("floats"), (std::vector<float>{1.5f, -2.25f, 1e30f}));
        QCOMPARE(f->get_int_array("ints"), (std::vector<int64_t>{-1, 0, 2147483647}));
        QVERIFY(f->get_int_array("no ints").empty());
        QVERIFY(!f->get_int("missing").has_value());
        QVERIFY(f->get_string_array("missing").empty());
        QCOMPARE(f->metadata().size(), size_t(alignment != 32 ? 12 : 11));  // + general.alignment
        // Wrong-type reads are errors naming the key and both types.
        try {
            (void)f->get_int("s");
            QFAIL("get_int on a string must throw");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::InvalidModelFile);
            QVERIFY(std::string(e.what()).find("\"s\" is string, expected an integer") != std::string::npos);
        }
        QVERIFY_THROWS_EXCEPTION(Error, (void)f->get_string("u32"));
        QVERIFY_THROWS_EXCEPTION(Error, (void)f->get_string_array("ints"));
        QVERIFY_THROWS_EXCEPTION(Error, (void)f->get_int_array("floats"));

        QCOMPARE(f->tensors().size(), size_t(4));
        struct Want {
            const char* name;
            std::vector<uint64_t> shape;
            uint32_t type;
            std::vector<uint8_t> data;
        };
        std::vector<Want> want = {{"t.f32", {5}, 0, f32_bytes({1, 2, 3, 4, 5})},
                                  {"t.f16", {7, 3}, 1, f16},
                                  {"t.q8_0", {64, 5}, 8, q8},
                                  {"t.q4_0", {32, 2, 5}, 2, q4}};
        for (const auto& wt : want) {
            const auto* t = f->find_tensor(wt.name);
            QVERIFY2(t, wt.name);
            QCOMPARE(t->shape, wt.shape);
            QCOMPARE(t->type, wt.type);
            QCOMPARE(t->size_bytes, uint64_t(wt.data.size()));
            QCOMPARE(t->offset % alignment, uint64_t(0));
            auto d = f->tensor_data(*t);
            QVERIFY(std::equal(d.begin(), d.end(), wt.data.begin(), wt.data.end()));
            QCOMPARE(static_cast<uint64_t>(d.data() - bytes.data()) % alignment, uint64_t(0));
        }
        QVERIFY(!f->find_tensor("t.missing"));
    }

    void reads_every_metadata_value_type() {
        Enc e;
        e.header(3, 0, 15);
        e.key("u8", GgufType::UInt8).u8(250);
        e.key("i8", GgufType::Int8).i8(-100);
        e.key("u16", GgufType::UInt16).u16(65000);
        e.key("i16", GgufType::Int16).i16(-32000);
        e.key("u32", GgufType::UInt32).u32(4000000000u);
        e.key("i32", GgufType::Int32).i32(-2000000000);
        e.key("f32", GgufType::Float32).f32(-0.5f);
        e.key("bool", GgufType::Bool).u8(1);
        e.key("str", GgufType::String).str("text");
        e.key("u64", GgufType::UInt64).u64(1ull << 40);
        e.key("u64 big", GgufType::UInt64).u64(~0ull);
        e.key("i64", GgufType::Int64).i64(-(1ll << 50));
        e.key("f64", GgufType::Float64).f64(1.0 / 3.0);
        e.key("u16 array", GgufType::Array)
            .u32(static_cast<uint32_t>(GgufType::UInt16))
            .u64(3)
            .u16(1)
            .u16(2)
            .u16(3);
        // Array of two arrays of int8.
        e.key("nested", GgufType::Array).u32(static_cast<uint32_t>(GgufType::Array)).u64(2);
        e.u32(static_cast<uint32_t>(GgufType::Int8)).u64(2).i8(-1).i8(1);
        e.u32(static_cast<uint32_t>(GgufType::Int8)).u64(0);
        auto f = GgufFile::from_memory(e.bytes);
        QCOMPARE(f->get_int("u8").value(), int64_t(250));
        QCOMPARE(f->get_int("i8").value(), int64_t(-100));
        QCOMPARE(f->get_int("u16").value(), int64_t(65000));
        QCOMPARE(f->get_int("i16").value(), int64_t(-32000));
        QCOMPARE(f->get_int("u32").value(), int64_t(4000000000ll));
        QCOMPARE(f->get_int("i32").value(), int64_t(-2000000000));
        QCOMPARE(f->get_float("f32").value(), -0.5);
        QCOMPARE(f->get_bool("bool").value(), true);
        QCOMPARE(f->get_string("str").value(), std::string("text"));
        QCOMPARE(f->get_int("u64").value(), int64_t(1ll << 40));
        QCOMPARE(f->find("u64 big")->type, GgufType::UInt64);
        QCOMPARE(std::get<uint64_t>(f->find("u64 big")->v), ~0ull);
        QVERIFY(!f->find("u64 big")->as_int().has_value());  // does not fit int64: not silently wrapped
        QCOMPARE(f->get_int("i64").value(), -(int64_t(1) << 50));
        QCOMPARE(f->get_float("f64").value(), 1.0 / 3.0);
        QCOMPARE(f->get_int_array("u16 array"), (std::vector<int64_t>{1, 2, 3}));
        const auto* nested = f->find("nested")->as_array();
        QVERIFY(nested);
        QCOMPARE(nested->element_type, GgufType::Array);
        QCOMPARE(nested->items.size(), size_t(2));
        QCOMPARE(nested->items[0].as_array()->items.size(), size_t(2));
        QCOMPARE(nested->items[0].as_array()->items[0].as_int().value(), int64_t(-1));
        QCOMPARE(nested->items[1].as_array()->items.size(), size_t(0));
        QCOMPARE(f->tensors().size(), size_t(0));
    }

    // Every prefix of a small valid file: an error naming the truncation, or — only when the cut
    // is in the padding after the last tensor's data — a clean parse.
    void every_truncation_is_a_clean_error() {
        for (uint32_t version : {2u, 3u}) {
            auto bytes = small_writer().serialize(version, 32);
            auto full = GgufFile::from_memory(bytes);
            uint64_t data_end = 0;
            for (const auto& t : full->tensors())
                data_end =
                    std::max<uint64_t>(data_end, (full->tensor_data(t).data() - bytes.data()) + t.size_bytes);
            QVERIFY(data_end < bytes.size());  // there is trailing padding to cut into
            int clean = 0;
            for (size_t len = 0; len < bytes.size(); ++len) {
                std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(len));
                Outcome o = parse(cut);
                if (len >= data_end) {
                    QVERIFY2(o.parsed, qPrintable(QString("cut at %1 (after the last tensor) failed: %2")
                                                      .arg(len)
                                                      .arg(o.message.c_str())));
                    ++clean;
                    continue;
                }
                QVERIFY2(!o.parsed,
                         qPrintable(
                             QString("v%1 cut at %2 of %3 parsed").arg(version).arg(len).arg(bytes.size())));
                QVERIFY2(o.code == ErrorCode::InvalidModelFile, qPrintable(QString("cut at %1: %2 %3")
                                                                               .arg(len)
                                                                               .arg(error_code_name(o.code))
                                                                               .arg(o.message.c_str())));
                const bool named = says_truncated(o.message) ||
                                   (len < 4 && o.message.find("not a GGUF file") != std::string::npos);
                QVERIFY2(named,
                         qPrintable(QString("cut at %1: message does not say the file is truncated: %2")
                                        .arg(len)
                                        .arg(o.message.c_str())));
            }
            QCOMPARE(clean, int(bytes.size() - data_end));
        }
    }

    void wrong_magic_and_versions() {
        auto bytes = small_writer().serialize();
        auto bad = bytes;
        std::memcpy(bad.data(), "GGML", 4);
        EXPECT_INVALID(bad, "not a GGUF file");
        EXPECT_INVALID(std::vector<uint8_t>{}, "not a GGUF file");
        for (uint32_t v : {0u, 1u, 4u, 0xffffffffu}) {
            bad = bytes;
            std::memcpy(bad.data() + 4, &v, 4);
            Outcome o = parse(bad);
            QVERIFY(!o.parsed);
            QCOMPARE(o.code, ErrorCode::InvalidModelFile);
            QVERIFY2(o.message.find("GGUF version " + std::to_string(v) + " is not supported") !=
                         std::string::npos,
                     o.message.c_str());
        }
    }

    void absurd_counts_and_lengths() {
        const uint64_t huge = 1ull << 60;
        EXPECT_INVALID(Enc().header(3, huge, 0).zeros(64).bytes,
                       "tensor count 1152921504606846976 cannot fit");
        EXPECT_INVALID(Enc().header(3, 0, huge).zeros(64).bytes,
                       "metadata count 1152921504606846976 cannot fit");
        EXPECT_INVALID(Enc().header(3, ~0ull, ~0ull).zeros(64).bytes, "cannot fit in the file");
        // Array length: of bytes, of strings, of arrays.
        for (auto et : {GgufType::UInt8, GgufType::String, GgufType::Array, GgufType::Float64}) {
            Enc e;
            e.header(3, 0, 1).key("arr", GgufType::Array).u32(static_cast<uint32_t>(et)).u64(huge).zeros(64);
            EXPECT_INVALID(e.bytes, "\"arr\": array of 1152921504606846976 elements does not fit");
        }
        {
            Enc e;  // 2^64 - 1 eight-byte elements: the byte count overflows
            e.header(3, 0, 1)
                .key("arr", GgufType::Array)
                .u32(static_cast<uint32_t>(GgufType::UInt64))
                .u64(~0ull)
                .zeros(64);
            EXPECT_INVALID(e.bytes, "does not fit");
        }
        {
            Enc e;  // key length
            e.header(3, 0, 1).u64(huge).zeros(64);
            EXPECT_INVALID(e.bytes, "metadata key: string length 1152921504606846976 is absurd");
        }
        {
            Enc e;  // string value length: absurd, then merely longer than the file
            e.header(3, 0, 1).key("s", GgufType::String).u64(huge).zeros(64);
            EXPECT_INVALID(e.bytes, "string length 1152921504606846976 is absurd");
            Enc e2;
            e2.header(3, 0, 1).key("s", GgufType::String).u64(1000).zeros(64);
            EXPECT_INVALID(e2.bytes, "truncated: s needs 1000 bytes");
        }
        {
            Enc e;  // tensor name length
            e.header(3, 1, 0).u64(huge).zeros(64);
            EXPECT_INVALID(e.bytes, "tensor name: string length 1152921504606846976 is absurd");
        }
        {
            Enc e;  // strings in an array
            e.header(3, 0, 1).key("sa", GgufType::Array).u32(static_cast<uint32_t>(GgufType::String)).u64(2);
            e.str("ok").u64(huge).zeros(64);
            EXPECT_INVALID(e.bytes, "string length 1152921504606846976 is absurd");
        }
    }

    void unknown_and_invalid_types() {
        {
            Enc e;
            e.header(3, 0, 1).str("k").u32(13).u32(0).zeros(16);
            EXPECT_INVALID(e.bytes, "metadata \"k\" has unknown value type 13");
        }
        {
            Enc e;
            e.header(3, 0, 1).str("k").u32(0xffffffffu).zeros(16);
            EXPECT_INVALID(e.bytes, "unknown value type 4294967295");
        }
        {
            Enc e;
            e.header(3, 0, 1).key("k", GgufType::Array).u32(42).u64(1).zeros(16);
            EXPECT_INVALID(e.bytes, "metadata \"k\": unknown array element type 42");
        }
        {
            Enc e;
            e.header(3, 0, 1).key("flag", GgufType::Bool).u8(2);
            EXPECT_INVALID(e.bytes, "\"flag\": bool value 2 is neither 0 nor 1");
        }
        {
            Enc e;  // arrays nested four deep
            e.header(3, 0, 1).key("deep", GgufType::Array);
            for (int i = 0; i < 4; ++i) e.u32(static_cast<uint32_t>(GgufType::Array)).u64(1);
            e.u32(static_cast<uint32_t>(GgufType::UInt8)).u64(1).u8(0);
            EXPECT_INVALID(e.bytes, "\"deep\": arrays nested too deeply");
        }
        {
            Enc e;
            e.header(3, 1, 0).tensor("w", {32}, 99, 0).align(32).zeros(128);
            EXPECT_INVALID(e.bytes, "tensor \"w\" has unknown ggml type 99");
        }
        {
            Enc e;  // row length not a whole number of blocks
            e.header(3, 1, 0).tensor("q", {33, 2}, 8, 0).align(32).zeros(256);
            EXPECT_INVALID(e.bytes,
                           "tensor \"q\": row length 33 is not a multiple of the Q8_0 block size 32");
        }
    }

    void invalid_tensor_shapes() {
        for (uint32_t n_dims : {0u, 5u, 1000000u}) {
            Enc e;
            e.header(3, 1, 0).str("t").u32(n_dims);
            for (uint32_t d = 0; d < std::min(n_dims, 5u); ++d) e.u64(2);
            e.u32(0).u64(0).align(32).zeros(256);
            EXPECT_INVALID(e.bytes,
                           "tensor \"t\" has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
        }
        {
            Enc e;
            e.header(3, 1, 0).tensor("zero", {4, 0}, 0, 0).align(32).zeros(64);
            EXPECT_INVALID(e.bytes, "tensor \"zero\" has dimension 0");
        }
        {
            Enc e;  // each dimension is plausible, the product is not
            e.header(3, 1, 0).tensor("big", {1ull << 30, 1ull << 30, 1ull << 30}, 0, 0).align(32).zeros(64);
            EXPECT_INVALID(e.bytes, "tensor \"big\": element count overflows 64 bits");
        }
        {
            Enc e;  // 2^62 elements fit 64 bits, their F32 bytes do not
            e.header(3, 1, 0).tensor("bytes", {1ull << 31, 1ull << 31}, 0, 0).align(32).zeros(64);
            EXPECT_INVALID(e.bytes, "tensor \"bytes\": byte size overflows 64 bits");
        }
        {
            Enc e;  // no overflow, just far larger than the file
            e.header(3, 1, 0).tensor("huge", {1ull << 20, 1ull << 20}, 0, 0).align(32).zeros(64);
            EXPECT_INVALID(e.bytes,
                           "tensor \"huge\" (4398046511104 bytes at data offset 0) extends past the end");
        }
        {
            Enc e;
            e.header(3, 1, 0).tensor("dim", {1ull << 41}, 0, 0).align(32).zeros(64);
            EXPECT_INVALID(e.bytes, "tensor \"dim\" has dimension 2199023255552");
        }
    }

    void tensor_placement_errors() {
        {
            Enc e;
            e.header(3, 1, 0).tensor("m", {8}, 0, 4).align(32).zeros(64);
            EXPECT_INVALID(e.bytes, "tensor \"m\": data offset 4 is not aligned to 32");
        }
        {
            Enc e;  // custom alignment is honoured: 16 is fine at alignment 16, 8 is not
            e.header(3, 2, 1).kv_u32("general.alignment", 16).tensor("a", {4}, 0, 0).tensor("b", {4}, 0, 16);
            e.align(16).zeros(32);
            QVERIFY(parse(e.bytes).parsed);
            Enc e2;
            e2.header(3, 1, 1).kv_u32("general.alignment", 16).tensor("a", {4}, 0, 8).align(16).zeros(32);
            EXPECT_INVALID(e2.bytes, "data offset 8 is not aligned to 16");
        }
        {
            Enc e;  // a (64 bytes at 0) and b (at 32) overlap
            e.header(3, 2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).align(32).zeros(128);
            EXPECT_INVALID(e.bytes, "tensors \"a\" and \"b\" overlap");
            Enc e2;  // same offset, declared in the other order
            e2.header(3, 2, 0).tensor("x", {8}, 0, 32).tensor("y", {8}, 0, 32).align(32).zeros(128);
            EXPECT_INVALID(e2.bytes, "overlap");
        }
        {
            Enc e;  // ends one byte past the file
            e.header(3, 1, 0).tensor("tail", {16}, 0, 0).align(32).zeros(63);
            EXPECT_INVALID(e.bytes,
                           "tensor \"tail\" (64 bytes at data offset 0) extends past the end of the file");
            Enc e2;  // an offset near 2^64: start + size overflows
            e2.header(3, 1, 0).tensor("wrap", {16}, 0, ~0ull - 31).align(32).zeros(64);
            EXPECT_INVALID(e2.bytes, "tensor \"wrap\"");
        }
        {
            Enc e;  // header ends, data section is missing
            e.header(3, 1, 0).tensor("t", {4}, 0, 0);
            EXPECT_INVALID(e.bytes, "truncated before the tensor data section");
        }
    }

    void duplicates() {
        {
            Enc e;
            e.header(3, 0, 2).kv_u32("general.k", 1).kv_u32("general.k", 2);
            EXPECT_INVALID(e.bytes, "metadata key \"general.k\" appears twice");
        }
        {
            Enc e;
            e.header(3, 2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).align(32).zeros(64);
            EXPECT_INVALID(e.bytes, "tensor name \"w\" appears twice");
        }
    }

    void bad_alignment() {
        for (uint32_t a : {0u, 3u, 48u}) {
            Enc e;
            e.header(3, 1, 1).kv_u32("general.alignment", a).tensor("t", {4}, 0, 0).align(32).zeros(64);
            EXPECT_INVALID(e.bytes,
                           "general.alignment must be a power of two (got " + std::to_string(a) + ")");
        }
        Enc big;  // a power of two, but an absurd one
        big.header(3, 0, 1).kv_u32("general.alignment", 1u << 24);
        EXPECT_INVALID(big.bytes,
                       "general.alignment of 16777216 bytes is above the 1 MiB this reader accepts");
        Enc e;
        e.header(3, 0, 1).key("general.alignment", GgufType::String).str("32");
        EXPECT_INVALID(e.bytes, "general.alignment must be a power of two (got non-integer)");
    }

    void open_reports_io_errors() {
        try {
            GgufFile::open(test::temp_dir() + "/does-not-exist.gguf");
            QFAIL("opening a missing file must throw");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::Io);
            QVERIFY(std::string(e.what()).find("does-not-exist.gguf") != std::string::npos);
        }
        const std::string empty = test::temp_dir() + "/empty.gguf";
        write_file(empty, {});
        try {
            GgufFile::open(empty);
            QFAIL("an empty file must be rejected");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::InvalidModelFile);
            QVERIFY(std::string(e.what()).find("not a GGUF file") != std::string::npos);
        }
        try {
            GgufFile::open(test::temp_dir());
            QFAIL("a directory must be rejected");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::Io);
        }
    }

    // gguf_architecture reads the head of a file only: what the model picker shows beside each
    // file it lists. Found when it is among the entries in the first 64 KiB (llama.cpp writes it
    // first); nothing, not a guess, when it is behind a big vocabulary, or the file is no GGUF.
    void architecture_is_read_from_the_head_alone() {
        QCOMPARE(gguf_architecture(test::shared_path("models/stories260K.gguf")),
                 std::optional<std::string>("llama"));
        QVERIFY(supported_architecture("llama"));
        const std::string dir = test::temp_dir();
        GgufWriter qwen;
        qwen.set_string("general.architecture", "qwen2");
        qwen.set_u32("qwen2.block_count", 24);
        qwen.write(dir + "/qwen.gguf");
        QCOMPARE(gguf_architecture(dir + "/qwen.gguf"), std::optional<std::string>("qwen2"));
        QVERIFY(supported_architecture("qwen2"));
        QVERIFY(!supported_architecture("mamba"));
        // After a small array and a scalar it is still found; after 40 000 tokens it is not read.
        GgufWriter late;
        late.set_string_array("tokenizer.ggml.merges", {"a b", "c d"});
        late.set_f32("some.float", 1.5f);
        late.set_string("general.architecture", "gemma");
        late.write(dir + "/late.gguf");
        QCOMPARE(gguf_architecture(dir + "/late.gguf"), std::optional<std::string>("gemma"));
        GgufWriter behind;
        behind.set_string_array("tokenizer.ggml.tokens", std::vector<std::string>(40000, "token"));
        behind.set_string("general.architecture", "llama");
        behind.write(dir + "/behind.gguf");
        QCOMPARE(gguf_architecture(dir + "/behind.gguf"), std::nullopt);
        QCOMPARE(GgufFile::open(dir + "/behind.gguf")->get_string("general.architecture"),
                 std::optional<std::string>("llama"));  // (opening the whole file does find it)
        // No GGUF, a truncated head, a directory, nothing there.
        write_file(dir + "/text.gguf", std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o'});
        QCOMPARE(gguf_architecture(dir + "/text.gguf"), std::nullopt);
        std::vector<uint8_t> head = qwen.serialize();
        head.resize(30);
        write_file(dir + "/cut.gguf", head);
        QCOMPARE(gguf_architecture(dir + "/cut.gguf"), std::nullopt);
        QCOMPARE(gguf_architecture(dir), std::nullopt);
        QCOMPARE(gguf_architecture(dir + "/missing.gguf"), std::nullopt);
    }

    void non_llama_architecture_is_unsupported() {
        const std::string path = test::temp_dir() + "/mamba.gguf";
        write_tiny_model(path, "mamba", 32);
        Outcome o = load(path);
        QVERIFY(!o.parsed);
        QCOMPARE(o.code, ErrorCode::UnsupportedArchitecture);
        QVERIFY2(o.message.find("unsupported architecture \"mamba\"") != std::string::npos,
                 o.message.c_str());
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Biases: Q, K and V carry them all or none (qwen2 always), and a bias elsewhere, which
    // Lantern would leave out of the sums, is refused by name. With all three, a qwen2 file loads.
    void biases_are_on_q_k_and_v_or_refused() {
        const std::string dir = test::temp_dir();
        const auto bias = [](const std::vector<std::string>& pieces, uint32_t n) {
            return [pieces, n](GgufWriter& w) {
                for (const auto& piece : pieces)
                    w.add_tensor("blk.0." + piece + ".bias", {n}, 0, f32_bytes(std::vector<float>(n, 0.5f)));
            };
        };
        write_tiny_model(dir + "/qwen-none.gguf", "qwen2", 32);
        Outcome o = load(dir + "/qwen-none.gguf");
        QCOMPARE(o.code, ErrorCode::InvalidModelFile);
        QVERIFY2(o.message.find("blk.0.attn_q.bias is missing") != std::string::npos, o.message.c_str());
        write_tiny_model(dir + "/llama-q-only.gguf", "llama", 32, "", 0, bias({"attn_q"}, 32));
        o = load(dir + "/llama-q-only.gguf");
        QCOMPARE(o.code, ErrorCode::InvalidModelFile);
        QVERIFY2(o.message.find("blk.0.attn_k.bias is missing") != std::string::npos, o.message.c_str());
        write_tiny_model(dir + "/llama-up.gguf", "llama", 32, "", 0, bias({"ffn_up"}, 32));
        o = load(dir + "/llama-up.gguf");
        QCOMPARE(o.code, ErrorCode::UnsupportedArchitecture);
        QVERIFY2(o.message.find("blk.0.ffn_up.bias: a bias on ffn_up is not supported") != std::string::npos,
                 o.message.c_str());
        write_tiny_model(dir + "/qwen.gguf", "qwen2", 32, "", 0, bias({"attn_q", "attn_k", "attn_v"}, 32));
        o = load(dir + "/qwen.gguf");
        QVERIFY2(o.parsed, o.message.c_str());
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // qwen3's per-head Q/K norms: both there in every layer, a head wide; then the file loads.
    // Keys and values of different head sizes are refused by name.
    void qwen3_needs_its_head_norms() {
        const std::string dir = test::temp_dir();
        const auto norms = [](uint32_t n) {
            return [n](GgufWriter& w) {
                for (const char* piece : {"attn_q_norm", "attn_k_norm"})
                    w.add_tensor(std::string("blk.0.") + piece + ".weight", {n}, 0,
                                 f32_bytes(std::vector<float>(n, 1.0f)));
            };
        };
        write_tiny_model(dir + "/qwen3-none.gguf", "qwen3", 32);
        Outcome o = load(dir + "/qwen3-none.gguf");
        QCOMPARE(o.code, ErrorCode::InvalidModelFile);
        QVERIFY2(o.message.find("blk.0.attn_q_norm.weight is missing") != std::string::npos,
                 o.message.c_str());
        write_tiny_model(dir + "/qwen3-wide.gguf", "qwen3", 32, "", 0, norms(32));  // heads of 16
        o = load(dir + "/qwen3-wide.gguf");
        QCOMPARE(o.code, ErrorCode::InvalidModelFile);
        QVERIFY2(o.message.find("has 32 values, not the head size 16") != std::string::npos,
                 o.message.c_str());
        write_tiny_model(dir + "/qwen3-kv.gguf", "qwen3", 32, "", 0, [&](GgufWriter& w) {
            norms(16)(w);
            w.set_u32("qwen3.attention.key_length", 16);
            w.set_u32("qwen3.attention.value_length", 8);
        });
        o = load(dir + "/qwen3-kv.gguf");
        QCOMPARE(o.code, ErrorCode::UnsupportedArchitecture);
        QVERIFY2(o.message.find("key length 16 and value length 8 differ") != std::string::npos,
                 o.message.c_str());
        write_tiny_model(dir + "/qwen3.gguf", "qwen3", 32, "", 0, norms(16));
        o = load(dir + "/qwen3.gguf");
        QVERIFY2(o.parsed, o.message.c_str());
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Q2_K (no device layout: its 16-element sub-blocks have a scale and a min, a layout no kernel
    // runs) is refused naming the tensor, its type and the types that run.
    void unsupported_tensor_type_is_named_with_the_tensor() {
        // The tiny model itself loads (so the error below is about the tensor type only).
        const std::string ok = test::temp_dir() + "/tiny-f32.gguf";
        write_tiny_model(ok, "llama", 256);
        Outcome good = load(ok);
        QVERIFY2(good.parsed, good.message.c_str());
        const std::string path = test::temp_dir() + "/tiny-q2k.gguf";
        write_tiny_model(path, "llama", 256, "blk.0.ffn_gate.weight", static_cast<uint32_t>(GgmlType::Q2_K));
        Outcome o = load(path);
        QVERIFY(!o.parsed);
        QCOMPARE(o.code, ErrorCode::UnsupportedTensorType);
        QVERIFY2(o.message.find("blk.0.ffn_gate.weight") != std::string::npos, o.message.c_str());
        QVERIFY2(o.message.find("stored as Q2_K") != std::string::npos, o.message.c_str());
        QVERIFY2(o.message.find("Q4_K, Q5_K, Q6_K, Q3_K, IQ4_NL, IQ4_XS") != std::string::npos,
                 o.message.c_str());
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // RoPE scaling metadata, read as llama.cpp reads it: a factor applies linearly unless the type
    // says YaRN (also under the older key rope.scale_linear), "none" or a factor of 0 means none,
    // YaRN takes the original context from its key or the trained context, other kinds are
    // refused by name, and a factor that is not a positive number is a malformed file.
    void rope_scaling_metadata() {
        using T = RopeScaling::Type;
        struct Case {
            const char* name;
            const char* type;  // nullptr: no rope.scaling.type key
            const char* key;   // the factor's key
            float factor;
            uint32_t original;  // rope.scaling.original_context_length (0: no key)
            bool loads;
            T want_type;
            float want_factor;
            uint32_t want_original;
            ErrorCode code;      // when loading fails (unused otherwise)
            const char* needle;  // in the error message
        };
        const auto F = "llama.rope.scaling.factor";
        const Case cases[] = {
            {"none given", nullptr, nullptr, 0, 0, true, T::None, 1, 64, ErrorCode::Internal, ""},
            {"linear", "linear", F, 4, 0, true, T::Linear, 4, 64, ErrorCode::Internal, ""},
            {"no type", nullptr, F, 2, 0, true, T::Linear, 2, 64, ErrorCode::Internal, ""},
            {"older key", nullptr, "llama.rope.scale_linear", 8, 0, true, T::Linear, 8, 64,
             ErrorCode::Internal, ""},
            {"type none", "none", F, 4, 0, true, T::None, 1, 64, ErrorCode::Internal, ""},
            {"factor 0", "linear", F, 0, 0, true, T::None, 1, 64, ErrorCode::Internal, ""},
            {"yarn", "yarn", F, 4, 0, true, T::Yarn, 4, 64, ErrorCode::Internal, ""},
            {"yarn, original 16", "yarn", F, 4, 16, true, T::Yarn, 4, 16, ErrorCode::Internal, ""},
            {"longrope", "longrope", F, 4, 0, false, T::None, 0, 0, ErrorCode::UnsupportedArchitecture,
             "RoPE scaling \"longrope\" is not supported yet (linear and YaRN are)"},
            {"negative", "linear", F, -2, 0, false, T::None, 0, 0, ErrorCode::InvalidModelFile,
             "RoPE scaling factor -2"},
        };
        for (const auto& c : cases) {
            const std::string path = test::temp_dir() + "/tiny-rope-" + std::string(c.name) + ".gguf";
            write_tiny_model(path, "llama", 16, "", 0, [&](GgufWriter& w) {
                if (c.type) w.set_string("llama.rope.scaling.type", c.type);
                if (c.key) w.set_f32(c.key, c.factor);
                if (c.original) w.set_u32("llama.rope.scaling.original_context_length", c.original);
            });
            try {
                auto e = Engine::load(path, engine_options());
                QVERIFY2(c.loads, c.name);
                const RopeScaling& s = e->model().rope_scaling;
                QVERIFY2(s.type == c.want_type,
                         qPrintable(QString("%1: %2").arg(c.name, rope_scaling_name(s.type))));
                QCOMPARE(s.factor, c.want_factor);
                QCOMPARE(s.original_context, c.want_original);
            } catch (const Error& e) {
                QVERIFY2(!c.loads, qPrintable(QString("%1: %2").arg(c.name, e.what())));
                QCOMPARE(e.code(), c.code);
                QVERIFY2(std::string(e.what()).find(c.needle) != std::string::npos, e.what());
            }
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Llama 3.1+ frequency factors (tensor rope_freqs.weight, one F32 per rotated pair) are read
    // into the RoPE scaling; a wrong size or a factor that is not positive is a malformed file.
    void rope_frequency_factors_are_read() {
        const uint32_t dim = 16, pairs = dim / 2 / 2;  // two heads of 8: 4 pairs each
        const auto write = [&](const std::string& name, std::vector<float> factors) {
            const std::string path = test::temp_dir() + "/tiny-rope-freqs-" + name + ".gguf";
            write_tiny_model(path, "llama", dim, "", 0, [&](GgufWriter& w) {
                std::vector<uint8_t> bytes(factors.size() * 4);
                std::memcpy(bytes.data(), factors.data(), bytes.size());
                w.add_tensor("rope_freqs.weight", {factors.size()}, static_cast<uint32_t>(GgmlType::F32),
                             bytes);
            });
            return path;
        };
        const std::vector<float> factors = {1.0f, 1.5f, 4.0f, 8.0f};
        QCOMPARE(size_t(pairs), factors.size());
        auto e = Engine::load(write("good", factors), engine_options());
        QCOMPARE(e->model().rope_scaling.frequency_factors, factors);
        QVERIFY(e->model().rope_scaling.type == RopeScaling::Type::None);
        e.reset();
        const auto fails = [&](const std::string& path, const std::string& needle) {
            try {
                Engine::load(path, engine_options());
                QFAIL(qPrintable(QString::fromStdString(path + " loaded")));
            } catch (const Error& err) {
                QCOMPARE(err.code(), ErrorCode::InvalidModelFile);
                QVERIFY2(std::string(err.what()).find(needle) != std::string::npos, err.what());
            }
        };
        fails(write("short", {1.0f, 2.0f}),
              "rope_freqs.weight must be 4 F32 values (one per rotated pair), not 2 F32");
        fails(write("negative", {1.0f, -2.0f, 1.0f, 1.0f}), "rope_freqs.weight holds -2");
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Phi-3's LongRoPE: short and long factors are read (the long ones for a run longer than the
    // original context, as llama.cpp chooses), and one without the other, or beside rope_freqs, is
    // refused.
    void long_rope_factors_are_read() {
        const uint32_t dim = 16;  // two heads of 8: 4 rotated pairs
        const std::vector<float> short_f = {1.0f, 1.1f, 1.2f, 1.3f}, long_f = {1.0f, 2.0f, 8.0f, 30.0f};
        const auto write = [&](const std::string& name, bool with_short, bool with_long, bool with_freqs) {
            const std::string path = test::temp_dir() + "/tiny-longrope-" + name + ".gguf";
            write_tiny_model(path, "phi3", dim, "", 0, [&](GgufWriter& w) {
                w.set_u32("phi3.rope.scaling.original_context_length", 32);
                w.set_f32("phi3.rope.scaling.attn_factor", 1.2f);
                const auto add = [&](const char* tensor, const std::vector<float>& f) {
                    w.add_tensor(tensor, {f.size()}, static_cast<uint32_t>(GgmlType::F32), f32_bytes(f));
                };
                if (with_short) add("rope_factors_short.weight", short_f);
                if (with_long) add("rope_factors_long.weight", long_f);
                if (with_freqs) add("rope_freqs.weight", short_f);
            });
            return path;
        };
        auto e = Engine::load(write("good", true, true, false), engine_options());
        const RopeScaling& rs = e->model().rope_scaling;
        QCOMPARE(e->model().architecture, std::string("phi3"));
        QCOMPARE(rs.frequency_factors, short_f);
        QCOMPARE(rs.frequency_factors_long, long_f);
        QCOMPARE(rs.attn_factor, 1.2f);
        QCOMPARE(rs.factors_for(32), short_f);
        QCOMPARE(rs.factors_for(33), long_f);
        e.reset();
        for (const auto& [name, s, l, f] :
             {std::tuple{"short-only", true, false, false}, std::tuple{"long-only", false, true, false},
              std::tuple{"with-freqs", true, true, true}}) {
            try {
                Engine::load(write(name, s, l, f), engine_options());
                QFAIL(name);
            } catch (const Error& err) {
                QCOMPARE(err.code(), ErrorCode::InvalidModelFile);
            }
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Gemma 2 and 3 are read as llama.cpp reads them: gemma2's window on every second layer (4096
    // unless the file says), its soft-capping defaults and tied head; gemma3's five local layers to
    // one global (or the file's period), local RoPE at 10000 unscaled, no window without the key;
    // the 27B models' query scale; a missing post-norm named.
    void gemma_metadata_is_read_as_llama_cpp_reads_it() {
        const uint32_t dim = 64, heads = 4, vocab = 300;
        const auto config = [&](const std::string& arch, uint32_t layers,
                                const std::function<void(GgufWriter&)>& more, bool drop_post_norm = false) {
            GgufWriter w;
            const std::string a = arch + ".";
            w.set_string("general.architecture", arch);
            w.set_u32(a + "embedding_length", dim);
            w.set_u32(a + "block_count", layers);
            w.set_u32(a + "feed_forward_length", 128);
            w.set_u32(a + "attention.head_count", heads);
            w.set_u32(a + "attention.head_count_kv", 2);
            w.set_u32(a + "attention.key_length", 32);
            w.set_u32(a + "attention.value_length", 32);
            w.set_f32(a + "rope.freq_base", 1000000.0f);
            more(w);
            w.add_tensor("token_embd.weight", {dim, vocab}, 0,
                         f32_bytes(std::vector<float>(size_t(dim) * vocab)));
            w.add_tensor("output.weight", {dim, vocab}, 0,
                         f32_bytes(std::vector<float>(size_t(dim) * vocab)));
            for (uint32_t l = 0; l < layers; ++l) {
                const std::string p = "blk." + std::to_string(l) + ".";
                if (!(drop_post_norm && l == layers - 1))
                    w.add_tensor(p + "post_attention_norm.weight", {dim}, 0,
                                 f32_bytes(std::vector<float>(dim)));
                w.add_tensor(p + "post_ffw_norm.weight", {dim}, 0, f32_bytes(std::vector<float>(dim)));
                if (arch == "gemma3")
                    for (const char* n : {"attn_q_norm.weight", "attn_k_norm.weight"})
                        w.add_tensor(p + n, {32}, 0, f32_bytes(std::vector<float>(32)));
            }
            const std::vector<uint8_t> bytes = w.serialize();
            return model::read_llama_config(*GgufFile::from_memory(bytes, arch + ".gguf"));
        };
        const auto none = [](GgufWriter&) {};
        const ModelInfo g2 = config("gemma2", 4, none);
        QVERIFY(g2.post_norms && g2.gelu && g2.tied_output && g2.rope_neox && !g2.qk_norm);
        QCOMPARE(g2.embed_scale, 8.0f);
        QCOMPARE(g2.attn_softcap, 50.0f);
        QCOMPARE(g2.final_softcap, 30.0f);
        QCOMPARE(g2.sliding_window, 4096u);
        QCOMPARE(g2.local_layers, (std::vector<bool>{true, false, true, false}));
        QCOMPARE(g2.rope_freq_base_local, 1000000.0f);
        QVERIFY(g2.rope_local_scaled);
        QCOMPARE(g2.attn_scale, 0.0f);  // 1 / sqrt(head size)
        const ModelInfo g2_27b = config("gemma2", 46, [](GgufWriter& w) {
            w.set_f32("gemma2.attn_logit_softcapping", 40.0f);
            w.set_u32("gemma2.attention.sliding_window", 2048);
        });
        QCOMPARE(g2_27b.attn_scale, 1.0f / std::sqrt(16.0f));  // width / heads, not the head size 32
        QCOMPARE(g2_27b.attn_softcap, 40.0f);
        QCOMPARE(g2_27b.sliding_window, 2048u);

        const ModelInfo g3 =
            config("gemma3", 7, [](GgufWriter& w) { w.set_u32("gemma3.attention.sliding_window", 512); });
        QVERIFY(g3.qk_norm && !g3.tied_output && g3.final_softcap == 0.0f && g3.attn_softcap == 0.0f);
        QCOMPARE(g3.local_layers, (std::vector<bool>{true, true, true, true, true, false, true}));
        QCOMPARE(g3.rope_freq_base_local, 10000.0f);
        QVERIFY(!g3.rope_local_scaled);
        const ModelInfo g3_period = config("gemma3", 4, [](GgufWriter& w) {
            w.set_u32("gemma3.attention.sliding_window", 512);
            w.set_u32("gemma3.attention.sliding_window_pattern", 2);
            w.set_f32("gemma3.rope.freq_base_swa", 20000.0f);
        });
        QCOMPARE(g3_period.local_layers, (std::vector<bool>{true, false, true, false}));
        QCOMPARE(g3_period.rope_freq_base_local, 20000.0f);
        QVERIFY(config("gemma3", 4, none).local_layers.empty());  // no window key: every layer global
        try {
            config("gemma3", 3, none, true);
            QFAIL("a gemma3 file without blk.2.post_attention_norm.weight was read");
        } catch (const Error& e) {
            QCOMPARE(e.code(), ErrorCode::InvalidModelFile);
            QVERIFY2(std::string(e.what()).find("blk.2.post_attention_norm.weight is missing") !=
                         std::string::npos,
                     e.what());
        }
    }

    // A row view reads rows of a file tensor under another name without a copy (Phi-3's fused
    // attn_qkv and gate+up), takes the place of a file tensor of its name, and asking for rows the
    // tensor does not have is a clear error.
    void row_views_read_rows_of_a_tensor() {
        GgufWriter w;
        std::vector<float> m(6 * 4);
        for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i);
        w.add_tensor("m", {4, 6}, static_cast<uint32_t>(GgmlType::F32), f32_bytes(m));
        w.add_tensor("v", {4}, static_cast<uint32_t>(GgmlType::F32), f32_bytes({1, 2, 3, 4}));
        const std::vector<uint8_t> bytes = w.serialize();
        auto g = GgufFile::from_memory(bytes);
        g->add_row_view("middle", "m", 2, 3);
        g->add_row_view("m", "m", 4, 2);  // the view now answers for "m"
        const GgufTensorInfo* middle = g->find_tensor("middle");
        QVERIFY(middle);
        QCOMPARE(middle->shape, (std::vector<uint64_t>{4, 3}));
        const auto data = g->tensor_data(*middle);
        QCOMPARE(data.size(), size_t(3 * 4 * 4));
        float first = 0, last = 0;
        std::memcpy(&first, data.data(), 4);
        std::memcpy(&last, data.data() + data.size() - 4, 4);
        QCOMPARE(first, 8.0f);  // row 2, column 0
        QCOMPARE(last, 19.0f);  // row 4, column 3
        QCOMPARE(g->find_tensor("m")->shape, (std::vector<uint64_t>{4, 2}));
        QCOMPARE(g->tensors().size(), size_t(2));  // views are not file tensors
        for (const auto& [of, first_row, rows] : {std::tuple{"m", 5, 2}, std::tuple{"m", 0, 0},
                                                  std::tuple{"v", 0, 1}, std::tuple{"none", 0, 1}}) {
            try {
                g->add_row_view("bad", of, first_row, rows);
                QFAIL(of);
            } catch (const Error& err) {
                QCOMPARE(err.code(), ErrorCode::InvalidModelFile);
            }
        }
    }

    // A model split by llama.cpp's gguf-split convention opens by its first file and reads as one:
    // every tensor's bytes equal the unsplit file's. Opening a later part, a missing part or a
    // renamed first part are clear errors naming the file to open or the one missing.
    void split_model_reads_as_one() {
        const auto w = small_writer();
        const std::string whole_path = test::temp_dir() + "/whole.gguf",
                          prefix = test::temp_dir() + "/split-model";
        w.write(whole_path);
        const auto paths = w.write_split(prefix, 3);
        QCOMPARE(paths.size(), size_t(3));
        QCOMPARE(paths[0], prefix + "-00001-of-00003.gguf");
        auto whole = GgufFile::open(whole_path);
        auto split = GgufFile::open(paths[0]);
        QCOMPARE(split->split_count(), 3u);
        QCOMPARE(split->tensors().size(), whole->tensors().size());
        QCOMPARE(split->get_string("general.architecture").value_or(""), std::string("llama"));
        for (const auto& t : whole->tensors()) {
            const auto* s = split->find_tensor(t.name);
            QVERIFY2(s, t.name.c_str());
            const auto a = whole->tensor_data(t), b = split->tensor_data(*s);
            QCOMPARE(b.size(), a.size());
            QVERIFY(std::equal(a.begin(), a.end(), b.begin()));
        }
        QVERIFY(split->find_tensor("c")->part == 2);

        auto fails = [](const std::string& path, const std::string& needle) {
            try {
                GgufFile::open(path);
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
                return;
            }
            QFAIL(qPrintable(QString("%1 opened").arg(path.c_str())));
        };
        fails(paths[1], "is part 2 of 3 of a split model; open " + paths[0]);
        const std::string renamed = test::temp_dir() + "/renamed.gguf";
        write_file(renamed, read_file(paths[0]));
        fails(renamed, "does not end in -00001-of-00003.gguf");
        std::remove(paths[2].c_str());
        fails(paths[0], "part 3 of 3 of " + paths[0] + " is missing or unreadable");
    }

    void truncated_stories260k_fails_to_load() {
        const auto bytes = read_file(test::shared_path("models/stories260K.gguf"));
        QVERIFY(bytes.size() > 1000);
        const uint64_t data = data_section_offset(bytes);
        auto whole = GgufFile::from_memory(bytes);
        uint64_t header_end = 0;  // the byte after the last tensor record (before the padding)
        {
            // Re-walk the header: data offset minus padding cannot be recovered from the parsed
            // file, so find the largest prefix that still fails with "before the tensor data".
            header_end = data;
            while (header_end > 0) {
                std::vector<uint8_t> cut(bytes.begin(),
                                         bytes.begin() + static_cast<ptrdiff_t>(header_end - 1));
                Outcome o = parse(cut);
                if (o.message.find("before the tensor data section") == std::string::npos) break;
                --header_end;
            }
        }
        QVERIFY(header_end > 0 && header_end <= data && data - header_end < whole->alignment());
        for (uint64_t len :
             {uint64_t(bytes.size() / 2), data, header_end, uint64_t(bytes.size() - 1), uint64_t(24)}) {
            const std::string path = test::temp_dir() + "/stories-cut-" + std::to_string(len) + ".gguf";
            write_file(path, std::span<const uint8_t>(bytes).first(len));
            Outcome o = load(path);
            QVERIFY2(!o.parsed, qPrintable(QString("cut at %1 loaded").arg(len)));
            QVERIFY2(o.code == ErrorCode::InvalidModelFile, qPrintable(QString("cut at %1: %2: %3")
                                                                           .arg(len)
                                                                           .arg(error_code_name(o.code))
                                                                           .arg(o.message.c_str())));
            QVERIFY2(says_truncated(o.message),
                     qPrintable(QString("cut at %1: %2").arg(len).arg(o.message.c_str())));
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(GgufTest)
#include "test_gguf.moc"
