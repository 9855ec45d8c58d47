// RoPE and attention (ops/attention): the RoPE table against its definitions (none, linear, YaRN),
// and the Q/K/V matmul's RoPE + KV-store epilogue followed by attention over paged KV blocks against
// the CPU reference, for f32 and f16 caches, GQA shapes and every attention layout.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "lantern/rope.h"
#include "op_check.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/weight_format.h"
#include "test_support.h"

using namespace lantern;
using namespace lantern::test;

namespace {

// The attention layout that ForDevice does not pick for a step of `groups` workgroups when lanes
// own heads (see AttentionSplit).
ops::AttentionSplit other_attention_split_of(const vk::Context& ctx, uint64_t groups) {
    const bool device_owns_heads = ctx.info().type == DeviceType::Cpu && groups >= vk::cpu_driver_threads();
    return device_owns_heads ? ops::AttentionSplit::LanesSplitKeys : ops::AttentionSplit::LanesOwnHeads;
}

struct SeqPlan {
    uint32_t history;  // tokens already in the cache before the step under test
    uint32_t fresh;    // tokens of this sequence in the step under test
};

// Sequences of the attention test: context lengths 1, 9, 63, 64, 65 and 300 at the end of the step
// (crossing the kernel's 64-key chunks), decode and prefill chunks mixed in one step.
const std::vector<SeqPlan> kPlans = {{0, 1}, {62, 3}, {299, 1}, {61, 2}, {0, 9}, {56, 8}};
// One sequence decoding one token at position 299: the step with the fewest attention workgroups
// (with lanes owning heads one or two, fewer than a CPU driver's threads: then lanes split keys).
const std::vector<SeqPlan> kOneDecode = {{299, 1}};

uint16_t half_bits(uint32_t word, uint32_t which) {
    return static_cast<uint16_t>(word >> (16 * which));
}

}  // namespace

class OpAttentionTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { log_op_device(); }

    // The RoPE table against the definitions, written out here in long double: entry (p, i) is
    // m cos/sin of theta(p, i), for llama's base 10000 and a long-context base —
    //   none:   theta = p * base^(-2i / n_rot), m = attn_factor
    //   linear: theta = (p / factor) * base^(-2i / n_rot)
    //   YaRN:   theta = r * (p / factor) * b + (1 - r) * p * b (b = base^(-2i / n_rot)), r ramping
    //           from 0 at pair `low` to 1 at pair `high`, the pairs that turn 32 times and once over
    //           the original context; m = attn_factor * (1 + 0.1 ln factor)
    // (llama.cpp's rope_yarn and ggml_rope_yarn_corr_dims); and with a linear factor of 4, position
    // 4p has exactly the angles of p.
    void rope_table_angles() {
        const uint32_t n_rot = 64, positions = 256;
        using T = RopeScaling::Type;
        struct Case {
            T type;
            float factor;
            uint32_t original;
            float attn;
            bool frequency_factors = false;  // rope_freqs.weight: theta divided by 1 + (i % 5) / 2
        };
        const Case cases[] = {{T::None, 1, 0, 1},       {T::Linear, 2.5f, 0, 1},    {T::Linear, 4, 0, 1},
                              {T::Yarn, 8, 4096, 1},    {T::Yarn, 16, 2048, 1},     {T::None, 1, 0, 0.75f},
                              {T::None, 1, 0, 1, true}, {T::Yarn, 8, 4096, 1, true}};
        for (long double base : {10000.0L, 500000.0L})
            for (const auto& c : cases) {
                RopeScaling s;
                s.type = c.type;
                s.factor = c.factor;
                s.original_context = c.original;
                s.attn_factor = c.attn;
                const auto divisor = [&](uint32_t i) {
                    return c.frequency_factors ? 1 + (i % 5) / 2.0L : 1.0L;
                };
                if (c.frequency_factors)
                    for (uint32_t i = 0; i < n_rot / 2; ++i) s.frequency_factors.push_back(float(divisor(i)));
                const auto t = ops::rope_table(positions, n_rot, double(base), s);
                QCOMPARE(t.size(), size_t(positions) * n_rot);
                const long double pi = 3.141592653589793238462643383279502884L;
                const auto corr = [&](long double beta) {
                    return n_rot * std::log(c.original / (beta * 2 * pi)) / (2 * std::log(base));
                };
                const long double low = std::max(0.0L, std::floor(corr(32))),
                                  high = std::min(n_rot - 1.0L, std::ceil(corr(1)));
                const long double m =
                    c.attn * (c.type == T::Yarn ? 1 + 0.1L * std::log((long double)c.factor) : 1.0L);
                double worst = 0;
                int ramped = 0;
                for (uint32_t p = 0; p < positions; ++p)
                    for (uint32_t i = 0; i < n_rot / 2; ++i) {
                        const long double b = std::pow(base, -2.0L * i / n_rot);
                        long double r = c.type == T::None ? 0 : 1;
                        if (c.type == T::Yarn)
                            r = std::clamp((i - low) / std::max(0.001L, high - low), 0.0L, 1.0L);
                        if (p == 1 && r > 0 && r < 1) ++ramped;
                        const long double theta =
                            (r * (p / (long double)c.factor) * b + (1 - r) * p * b) / divisor(i);
                        const size_t at = (size_t(p) * (n_rot / 2) + i) * 2;
                        worst = std::max({worst, std::fabs(double(t[at] - m * std::cos(theta))),
                                          std::fabs(double(t[at + 1] - m * std::sin(theta)))});
                    }
                QVERIFY2(worst < 3e-7,
                         qPrintable(QString("base %1 %2%3 x%4: max |diff| %5")
                                        .arg(double(base))
                                        .arg(rope_scaling_name(c.type))
                                        .arg(c.frequency_factors ? " with frequency factors" : "")
                                        .arg(c.factor)
                                        .arg(worst)));
                if (c.type == T::Yarn)
                    QVERIFY2(ramped > 0, "no pair on the YaRN ramp: the case tests nothing");
            }
        RopeScaling four;
        four.type = RopeScaling::Type::Linear;
        four.factor = 4;
        const auto plain = ops::rope_table(64, n_rot, 10000.0),
                   scaled = ops::rope_table(256, n_rot, 10000.0, four);
        for (uint32_t p = 0; p < 64; ++p)
            for (uint32_t j = 0; j < n_rot; ++j)
                QCOMPARE(scaled[size_t(4 * p) * n_rot + j], plain[size_t(p) * n_rot + j]);
        QVERIFY(scaled[size_t(1) * n_rot + 2] !=
                plain[size_t(1) * n_rot + 2]);  // position 1: a quarter of the angle
    }

    void qkv_rope_store_and_attention_match_reference_data() {
        QTest::addColumn<uint32_t>("n_kv");
        QTest::addColumn<uint32_t>("head_dim");
        QTest::addColumn<uint32_t>("n_rot");
        QTest::addColumn<uint32_t>("block");
        QTest::addColumn<bool>("kv_f16");
        // other_split: the other kind of device's matmul kernels, and the attention layout the
        // device would not pick for the step.
        QTest::addColumn<bool>("other_split");
        QTest::addColumn<bool>("parts");          // the Q/K/V weight in two row parts
        QTest::addColumn<bool>("two_subgroups");  // attention workgroups of two subgroups (lanes split keys)
        QTest::addColumn<uint32_t>("n_head");
        QTest::addColumn<bool>("one_decode");          // the step under test is one decode token (kOneDecode)
        QTest::addColumn<uint32_t>("heads_per_lane");  // lanes owning heads: 0 = as the device picks
        for (bool f16 : {false, true})
            for (uint32_t n_kv : {2u, 4u})
                for (uint32_t hd : {64u, 48u, 128u})
                    for (uint32_t block : {16u, 5u})
                        QTest::addRow("kv %s, n_kv %u, head_dim %u, block %u", f16 ? "f16" : "f32", n_kv, hd,
                                      block)
                            << n_kv << hd << hd << block << f16 << false << false << false << 8u << false
                            << 0u;
        // Partial rotary embedding (rope.dimension_count < head_dim).
        QTest::newRow("kv f32, n_kv 2, head_dim 64, n_rot 32")
            << 2u << 64u << 32u << 16u << false << false << false << false << 8u << false << 0u;
        QTest::newRow("kv f16, n_kv 4, head_dim 48, n_rot 16")
            << 4u << 48u << 16u << 5u << true << false << false << false << 8u << false << 0u;
        QTest::newRow("kv f16, n_kv 2, head_dim 64, other split")
            << 2u << 64u << 64u << 16u << true << true << false << false << 8u << false << 0u;
        QTest::newRow("kv f32, n_kv 4, head_dim 48, n_rot 16, other split")
            << 4u << 48u << 16u << 5u << false << true << false << false << 8u << false << 0u;
        QTest::newRow("kv f16, n_kv 2, head_dim 64, parts")
            << 2u << 64u << 64u << 16u << true << false << true << false << 8u << false << 0u;
        QTest::newRow("kv f32, n_kv 4, head_dim 48, parts, other split")
            << 4u << 48u << 48u << 5u << false << true << true << false << 8u << false << 0u;
        QTest::newRow("kv f16, n_kv 2, head_dim 64, two subgroups")
            << 2u << 64u << 64u << 16u << true << false << false << true << 8u << false << 0u;
        QTest::newRow("kv f32, n_kv 8, head_dim 48, block 5, two subgroups")
            << 8u << 48u << 48u << 5u << false << false << false << true << 8u << false << 0u;
        // 12 heads: lanes owning heads leave part of their last workgroup empty; 6:1 and 3:1 GQA.
        QTest::newRow("kv f16, 12 heads, n_kv 4, head_dim 64")
            << 4u << 64u << 64u << 16u << true << false << false << false << 12u << false << 0u;
        QTest::newRow("kv f32, 12 heads, n_kv 2, head_dim 48, block 5, other split")
            << 2u << 48u << 48u << 5u << false << true << false << false << 12u << false << 0u;
        QTest::newRow("kv f16, 12 heads, n_kv 2, head_dim 64, other split")
            << 2u << 64u << 64u << 16u << true << true << false << false << 12u << false << 0u;
        // One decode token: the fewest workgroups.
        QTest::newRow("kv f16, n_kv 2, head_dim 64, one decode")
            << 2u << 64u << 64u << 16u << true << false << false << false << 8u << true << 0u;
        QTest::newRow("kv f32, 12 heads, n_kv 4, head_dim 128, block 5, one decode")
            << 4u << 128u << 128u << 5u << false << false << false << false << 12u << true << 0u;
        QTest::newRow("kv f16, n_kv 2, head_dim 48, one decode, other split")
            << 2u << 48u << 48u << 16u << true << true << false << false << 8u << true << 0u;
        // Lanes owning two or four query heads of one KV head (GQA): 32 heads of 64 with 4 per KV
        // head as TinyLlama's (the device picks two per lane for them on 2-4 threads), one decode
        // token too; six per KV head over a part-empty workgroup; four per lane.
        QTest::newRow("kv f16, 32 heads, n_kv 8, head_dim 64, as the device picks")
            << 8u << 64u << 64u << 16u << true << false << false << false << 32u << false << 0u;
        QTest::newRow("kv f16, 32 heads, n_kv 8, head_dim 64, one decode, as the device picks")
            << 8u << 64u << 64u << 16u << true << false << false << false << 32u << true << 0u;
        QTest::newRow("kv f32, 12 heads, n_kv 2, head_dim 48, block 5, two heads per lane")
            << 2u << 48u << 48u << 5u << false << false << false << false << 12u << false << 2u;
        QTest::newRow("kv f16, 16 heads, n_kv 4, head_dim 64, one decode, two heads per lane, other split")
            << 4u << 64u << 64u << 16u << true << true << false << false << 16u << true << 2u;
        QTest::newRow("kv f16, 8 heads, n_kv 2, head_dim 128, four heads per lane")
            << 2u << 128u << 128u << 16u << true << false << false << false << 8u << false << 4u;
        // Gemma's attention (rows tagged "gemma"): a sliding window that starts inside a block,
        // soft-capped scores and a query scale of its own, in every layout.
        QTest::newRow("kv f16, n_kv 2, head_dim 64, gemma")
            << 2u << 64u << 64u << 16u << true << false << false << false << 8u << false << 0u;
        QTest::newRow("kv f32, n_kv 4, head_dim 48, block 5, other split, gemma")
            << 4u << 48u << 48u << 5u << false << true << false << false << 8u << false << 0u;
        QTest::newRow("kv f16, n_kv 2, head_dim 64, two subgroups, gemma")
            << 2u << 64u << 64u << 16u << true << false << false << true << 8u << false << 0u;
        QTest::newRow("kv f16, 16 heads, n_kv 4, head_dim 128, one decode, two heads per lane, gemma")
            << 4u << 128u << 128u << 16u << true << false << false << false << 16u << true << 2u;
        // The widest head (256: the tiled prefill kernel's smallest key tile, 8 keys) where lanes
        // split keys, with a sliding window.
        QTest::newRow("kv f16, 8 heads, n_kv 2, head_dim 256, two subgroups, gemma")
            << 2u << 256u << 256u << 16u << true << false << false << true << 8u << false << 0u;
        QTest::newRow("kv f16, n_kv 2, head_dim 48, one decode, other split, gemma")
            << 2u << 48u << 48u << 16u << true << true << false << false << 8u << true << 0u;
    }

    // Several sequences in one step (a decode at position 299, prefill chunks, a first token), with
    // block tables drawn from a shuffled pool so no sequence's blocks are contiguous. A first step
    // fills the history through the Q/K/V matmul with its RoPE + KV-store epilogue; the step under
    // test then runs that matmul + attention in one command buffer, as the model does. The
    // reference: the plain matmul, then RoPE + KV store, then attention, all on the CPU.
    void qkv_rope_store_and_attention_match_reference() {
        QFETCH(uint32_t, n_kv);
        QFETCH(uint32_t, head_dim);
        QFETCH(uint32_t, n_rot);
        QFETCH(uint32_t, block);
        QFETCH(bool, kv_f16);
        QFETCH(bool, other_split);
        QFETCH(bool, parts);
        QFETCH(bool, two_subgroups);
        QFETCH(uint32_t, n_head);
        QFETCH(bool, one_decode);
        QFETCH(uint32_t, heads_per_lane);
        const std::vector<SeqPlan>& plans = one_decode ? kOneDecode : kPlans;
        auto& ctx = test::context();
        Rng rng(400 + n_kv * 1000 + head_dim * 10 + block + (kv_f16 ? 7 : 0) + n_head * 100000 +
                (one_decode ? 3 : 0) + heads_per_lane * 13);

        ops::AttentionShape shape;
        shape.n_head = n_head;
        shape.n_kv = n_kv;
        shape.head_dim = head_dim;
        shape.block = block;
        shape.n_rot = n_rot;
        const uint32_t qkv_used = (shape.n_head + 2 * n_kv) * head_dim;
        // Padded rows; with 16-token blocks the stride is a multiple of 4 floats, so attention
        // fetches q as vec4s, with 5-token blocks it is not and q comes float by float.
        shape.qkv_stride = qkv_used + (block % 4 == 0 ? 4 : 6);
        shape.out_stride = shape.n_head * head_dim + 5;
        shape.kv_f16 = kv_f16;
        if (QByteArray(QTest::currentDataTag()).endsWith("gemma")) {
            shape.window = 37;  // positions 263..299 for the token at 299: from inside a block
            shape.softcap = 1.0f;
            shape.scale = 0.11f;
        }

        // Block tables from a shuffled pool with spare blocks that must stay untouched.
        uint32_t needed = 0;
        for (const auto& p : plans) needed += (p.history + p.fresh + block - 1) / block;
        const uint32_t pool_blocks = needed + 7;
        std::vector<uint32_t> free_blocks(pool_blocks);
        std::iota(free_blocks.begin(), free_blocks.end(), 0u);
        std::shuffle(free_blocks.begin(), free_blocks.end(), rng.engine());
        std::vector<uint32_t> tables, table_offset;
        std::vector<uint8_t> slot_used(static_cast<size_t>(pool_blocks) * block, 0);
        for (const auto& p : plans) {
            table_offset.push_back(static_cast<uint32_t>(tables.size()));
            for (uint32_t b = 0; b < (p.history + p.fresh + block - 1) / block; ++b) {
                tables.push_back(free_blocks.back());
                free_blocks.pop_back();
            }
        }
        auto slot_of = [&](size_t seq, uint32_t pos) {
            return tables[table_offset[seq] + pos / block] * block + pos % block;
        };
        std::vector<ops::TokenInfo> hist_info, step_info;
        std::vector<size_t> step_seq;
        for (size_t s = 0; s < plans.size(); ++s) {
            for (uint32_t pos = 0; pos < plans[s].history; ++pos)
                hist_info.push_back({pos, table_offset[s], slot_of(s, pos), static_cast<uint32_t>(s)});
            for (uint32_t pos = plans[s].history; pos < plans[s].history + plans[s].fresh; ++pos) {
                step_info.push_back({pos, table_offset[s], slot_of(s, pos), static_cast<uint32_t>(s)});
                step_seq.push_back(s);
            }
        }
        for (const auto& t : hist_info) slot_used[t.slot] = 1;
        for (const auto& t : step_info) slot_used[t.slot] = 1;
        const uint32_t T1 = static_cast<uint32_t>(hist_info.size()),
                       T2 = static_cast<uint32_t>(step_info.size());

        auto rope = ops::rope_table(320, n_rot, 10000.0);
        // The Q/K/V matmul: F32 weights (the epilogue is what is under test; the weight types are
        // covered by the matmul tests), an input row length that is not a multiple of 4.
        const uint32_t K = 37;
        const ops::MatmulSplit split = other_split ? other_split_of(ctx) : ops::MatmulSplit::ForDevice;
        std::vector<uint64_t> part_rows;
        if (parts) {  // an even split that does not fall on a head boundary
            const uint64_t first = qkv_used / 3 / 2 * 2 + 2;
            part_rows = {first, qkv_used - first};
        }
        auto wqkv = make_weight(ctx, 0, qkv_used, K, rng, part_rows, 0, split);
        auto x1 = rng.floats(static_cast<size_t>(T1) * K, -2.0f, 2.0f);
        auto x2 = rng.floats(static_cast<size_t>(T2) * K, -2.0f, 2.0f);
        auto norm = rng.floats(K, 0.5f, 1.5f);
        // The output rows start as guard words: the epilogue writes Q and nothing else of them.
        std::vector<float> qkv1(static_cast<size_t>(T1) * shape.qkv_stride, bits_to_float(kSentinel));
        std::vector<float> qkv2(static_cast<size_t>(T2) * shape.qkv_stride, bits_to_float(kSentinel));

        const size_t kv_elems = static_cast<size_t>(pool_blocks) * n_kv * block * head_dim;
        const size_t kv_words = kv_f16 ? kv_elems / 2 : kv_elems;
        Guarded k_cache(ctx, kv_words), v_cache(ctx, kv_words);
        Guarded qkv1_b(ctx, qkv1.size()), qkv2_b(ctx, qkv2.size());
        qkv1_b.write(qkv1.data(), qkv1.size() * 4);
        qkv2_b.write(qkv2.data(), qkv2.size() * 4);
        Guarded out(ctx, static_cast<size_t>(T2) * shape.out_stride);
        const uint32_t capture_stride = 304;
        Guarded capture(ctx, static_cast<size_t>(shape.n_head) * capture_stride + 2 * shape.n_head);
        DeviceBuffer rope_b(ctx, rope.data(), rope.size() * 4),
            info1(ctx, hist_info.data(), hist_info.size() * 16),
            info2(ctx, step_info.data(), step_info.size() * 16),
            tables_b(ctx, tables.data(), tables.size() * 4), x1_b(ctx, x1.data(), x1.size() * 4),
            x2_b(ctx, x2.data(), x2.size() * 4), norm_b(ctx, norm.data(), norm.size() * 4),
            rowmap_b(ctx, tables.data(), 4);

        ops::RopeKvEpilogue epi;
        epi.shape = shape;
        epi.rope = rope_b.range();
        epi.k_cache = k_cache.range();
        epi.v_cache = v_cache.range();
        ops::RopeKvEpilogue epi1 = epi, epi2 = epi;
        epi1.tok_info = info1.range();
        epi2.tok_info = info2.range();
        ops::MatmulOptions o1{split, &epi1}, o2{split, &epi2};
        ops::MatmulOp qkv_op1(ctx, wqkv->device, ops::MatmulInput::Norm, x1_b.range(), qkv1_b.range(),
                              norm_b.range(), rowmap_b.range(), o1);
        ops::MatmulOp qkv_op2(ctx, wqkv->device, ops::MatmulInput::Norm, x2_b.range(), qkv2_b.range(),
                              norm_b.range(), rowmap_b.range(), o2);
        // Two subgroups per workgroup run the merge across subgroups (shared memory), which
        // devices whose subgroup fills the workgroup never reach otherwise (64-lane subgroups: one).
        const uint32_t one_subgroup = std::clamp<uint32_t>(ctx.subgroup_size(), 8, 64);
        const uint32_t lanes = two_subgroups ? std::min(2 * one_subgroup, 64u) : 0;
        // Two query heads per lane where a KV head has an even number of them, they fill whole
        // workgroups and a one-token step still has a workgroup per driver thread.
        const bool cpu = ctx.info().type == DeviceType::Cpu;
        const uint32_t threads = cpu ? vk::cpu_driver_threads() : 1;
        const uint32_t hpl = heads_per_lane ? heads_per_lane
                             : (n_head / n_kv) % 2 == 0 && n_head % (2 * one_subgroup) == 0 &&
                                     n_head / (2 * one_subgroup) >= threads
                                 ? 2u
                                 : 1u;
        const uint64_t own_heads_groups =
            uint64_t{(n_head + one_subgroup * hpl - 1) / (one_subgroup * hpl)} * T2;
        // A row that asks for several heads per lane is about that layout: lanes own heads.
        const ops::AttentionSplit attn_split = two_subgroups    ? ops::AttentionSplit::LanesSplitKeys
                                               : heads_per_lane ? ops::AttentionSplit::LanesOwnHeads
                                               : other_split ? other_attention_split_of(ctx, own_heads_groups)
                                                             : ops::AttentionSplit::ForDevice;
        ops::AttentionOp attention(ctx, shape, qkv2_b.range(), k_cache.range(), v_cache.range(),
                                   info2.range(), tables_b.range(), out.range(), capture.range(), lanes,
                                   attn_split, heads_per_lane);
        const bool own_heads = attention.lanes_own_heads(T2);
        qInfo("attention: lanes %s, %u per workgroup, %u heads per lane",
              own_heads ? "own heads" : "split keys", attention.lanes(), attention.heads_per_lane());
        if (!two_subgroups) QCOMPARE(attention.heads_per_lane(), hpl);
        if (attn_split != ops::AttentionSplit::ForDevice) {
            QCOMPARE(own_heads, attn_split == ops::AttentionSplit::LanesOwnHeads);
        } else if (!cpu) {
            QVERIFY(!own_heads);
        } else {  // a CPU driver: lanes own heads when the step has a workgroup per driver thread
            QCOMPARE(own_heads, own_heads_groups >= threads);
        }
        // Capture the heads of the decode token at position 299 (context 300).
        int32_t capture_token = -1;
        for (uint32_t t = 0; t < T2; ++t)
            if (step_info[t].pos == 299) capture_token = static_cast<int32_t>(t);
        QVERIFY(capture_token >= 0);

        auto qkv_shape = [&](uint32_t T) {
            ops::MatmulShape ms;
            ms.tokens = T;
            ms.x_stride = K;
            ms.y_stride = shape.qkv_stride;
            ms.eps = 1e-5f;
            return ms;
        };
        VkCommandBuffer cmd = ctx.begin();
        qkv_op1.record(cmd, qkv_shape(T1));
        ctx.barrier(cmd);
        ctx.submit_and_wait(cmd);
        cmd = ctx.begin();
        qkv_op2.record(cmd, qkv_shape(T2));
        ctx.barrier(cmd);
        attention.record(cmd, T2, capture_token, capture_stride);
        ctx.barrier(cmd);
        ctx.submit_and_wait(cmd);

        // Reference: the same two steps; an f16 cache stores K/V rounded to f16.
        ops::ReferenceKv ref{n_kv, head_dim, block, std::vector<float>(kv_elems, 0.0f),
                             std::vector<float>(kv_elems, 0.0f)};
        auto round_kv = [&] {
            if (!kv_f16) return;
            for (auto* v : {&ref.k, &ref.v})
                for (auto& x : *v) x = ops::half_to_float(ops::float_to_half(x));
        };
        std::vector<float> ref_qkv1 = qkv1, ref_qkv2 = qkv2;
        ops::reference_matmul(wqkv->dequantized, qkv_used, K, ops::MatmulInput::Norm, x1, ref_qkv1, norm, {},
                              qkv_shape(T1));
        ops::reference_matmul(wqkv->dequantized, qkv_used, K, ops::MatmulInput::Norm, x2, ref_qkv2, norm, {},
                              qkv_shape(T2));
        ops::reference_rope_store(shape, ref_qkv1, hist_info, rope, ref);
        round_kv();
        ops::reference_rope_store(shape, ref_qkv2, step_info, rope, ref);
        round_kv();

        // Rotated Q in the output; its K/V columns and padding untouched.
        for (int phase = 0; phase < 2; ++phase) {
            Guarded& b = phase == 0 ? qkv1_b : qkv2_b;
            const auto& ref_q = phase == 0 ? ref_qkv1 : ref_qkv2;
            auto got = b.read_words();
            QVERIFY2(b.guards_ok(), "the Q/K/V matmul wrote outside its output buffer");
            std::vector<float> gq, wq;
            for (size_t i = 0; i < got.size(); ++i) {
                size_t col = i % shape.qkv_stride;
                if (col < shape.n_head * head_dim) {
                    gq.push_back(bits_to_float(got[i]));
                    wq.push_back(ref_q[i]);
                } else {
                    QVERIFY2(got[i] == kSentinel,
                             qPrintable(QString("qkv word %1 (column %2) written: only Q goes to the output")
                                            .arg(i)
                                            .arg(col)));
                }
            }
            Stats s = compare(gq, wq);
            auto err = check("rotated Q", s, kElementwiseNmse);
            QVERIFY2(err.empty(), err.c_str());
            if (phase == 1) qInfo("rope Q: NMSE %.3g, max |diff| %.3g", s.nmse, s.max_abs);
        }

        // KV cache: written slots hold the reference values, every other slot its guard words.
        // `stored` keeps what the device stored: attention is checked against the cache it read
        // (an f16 cache rounds the device's float K/V, which may sit an ulp from the double
        // reference's, to the other neighbouring half; the cache check above bounds that).
        ops::ReferenceKv stored = ref;
        for (int which = 0; which < 2; ++which) {
            Guarded& cache = which == 0 ? k_cache : v_cache;
            const auto& want = which == 0 ? ref.k : ref.v;
            auto words = cache.read_words();
            QVERIFY2(cache.guards_ok(), "the Q/K/V epilogue wrote outside the KV cache buffer");
            std::vector<float> got_v, want_v;
            uint32_t half_mismatch = 0;
            for (uint32_t slot = 0; slot < pool_blocks * block; ++slot)
                for (uint32_t h = 0; h < n_kv; ++h)
                    for (uint32_t d = 0; d < head_dim; ++d) {
                        size_t e = ref.index(slot, h, d);
                        uint32_t word = words[kv_f16 ? e / 2 : e];
                        if (!slot_used[slot]) {
                            QVERIFY2(word == kSentinel,
                                     qPrintable(QString("%1 cache slot %2 (never assigned) was written")
                                                    .arg(which ? "V" : "K")
                                                    .arg(slot)));
                            continue;
                        }
                        float g = kv_f16 ? ops::half_to_float(half_bits(word, static_cast<uint32_t>(e & 1)))
                                         : bits_to_float(word);
                        if (kv_f16 && ops::float_to_half(g) != ops::float_to_half(want[e])) ++half_mismatch;
                        got_v.push_back(g);
                        want_v.push_back(want[e]);
                        (which == 0 ? stored.k : stored.v)[e] = g;
                    }
            Stats s = compare(got_v, want_v);
            auto err = check(which ? "V cache" : "K cache", s, kElementwiseNmse);
            QVERIFY2(err.empty(), err.c_str());
            qInfo("%s cache: NMSE %.3g, max |diff| %.3g%s", which ? "V" : "K", s.nmse, s.max_abs,
                  kv_f16 ? qPrintable(
                               QString(", %1 halves differ from round-to-nearest-even").arg(half_mismatch))
                         : "");
        }

        std::vector<float> want_out(static_cast<size_t>(T2) * shape.out_stride, bits_to_float(kSentinel));
        ops::reference_attention(shape, ref_qkv2, step_info, tables, stored, want_out);

        // Attention output: the heads of every token, guard words in the stride gaps. `heads_of`
        // takes the heads from an output's words and names the first gap word it finds written.
        const size_t w = static_cast<size_t>(shape.n_head) * head_dim;
        auto heads_of = [&](const std::vector<uint32_t>& words, std::string& gap_error) {
            std::vector<float> heads;
            for (size_t i = 0; i < words.size(); ++i) {
                if (i % shape.out_stride < w)
                    heads.push_back(bits_to_float(words[i]));
                else if (words[i] != kSentinel && gap_error.empty())
                    gap_error = "wrote stride gap word " + std::to_string(i);
            }
            return heads;
        };
        std::vector<float> wo;
        for (size_t i = 0; i < want_out.size(); ++i)
            if (i % shape.out_stride < w) wo.push_back(want_out[i]);
        // Per token, so a wrong table offset or position of one sequence cannot hide in the total.
        auto per_token_error = [&](const std::vector<float>& got) -> std::string {
            for (uint32_t t = 0; t < T2; ++t) {
                Stats st = compare(std::span<const float>(got).subspan(t * w, w),
                                   std::span<const float>(wo).subspan(t * w, w));
                auto e = check("one token", st, kAttentionNmse);
                if (!e.empty())
                    return "token " + std::to_string(t) + " (sequence " + std::to_string(step_seq[t]) +
                           ", position " + std::to_string(step_info[t].pos) + "): " + e;
            }
            return {};
        };
        auto got_words = out.read_words();
        QVERIFY2(out.guards_ok(), "attention wrote outside its output buffer");
        std::string gap;
        std::vector<float> go = heads_of(got_words, gap);
        QVERIFY2(gap.empty(), ("attention " + gap).c_str());
        Stats s = compare(go, wo);
        auto err = check("attention", s, kAttentionNmse);
        QVERIFY2(err.empty(), err.c_str());
        err = per_token_error(go);
        QVERIFY2(err.empty(), ("attention, " + err).c_str());
        qInfo("attention: NMSE %.3g, max |diff| %.3g (bound %.0e)", s.nmse, s.max_abs, kAttentionNmse);

        // Capture: raw scores + (max, sum) per head give the softmax probabilities.
        auto cap = capture.read_floats();
        QVERIFY2(capture.guards_ok(), "attention capture wrote outside its buffer");
        const auto& ct = step_info[static_cast<size_t>(capture_token)];
        const uint32_t n_ctx = ct.pos + 1;
        std::vector<float> got_p, want_p;
        const uint32_t group = shape.n_head / n_kv;
        for (uint32_t h = 0; h < shape.n_head; ++h) {
            const float* q =
                ref_qkv2.data() + static_cast<size_t>(capture_token) * shape.qkv_stride + h * head_dim;
            std::vector<double> sc(n_ctx, -INFINITY);  // outside a sliding window: weight 0
            const uint32_t first = shape.window && n_ctx > shape.window ? n_ctx - shape.window : 0;
            double mx = -INFINITY, sum = 0;
            for (uint32_t j = first; j < n_ctx; ++j) {
                uint32_t slot = tables[ct.table_offset + j / block] * block + j % block;
                double d = 0;
                for (uint32_t i = 0; i < head_dim; ++i)
                    d += double(q[i]) * stored.k[stored.index(slot, h / group, i)];
                sc[j] = d * static_cast<float>(shape.score_scale());
                if (shape.softcap > 0) sc[j] = shape.softcap * std::tanh(sc[j] / shape.softcap);
                mx = std::max(mx, sc[j]);
            }
            for (auto& v : sc) sum += (v = std::exp(v - mx));
            const float m = cap[static_cast<size_t>(shape.n_head) * capture_stride + 2 * h];
            const float l = cap[static_cast<size_t>(shape.n_head) * capture_stride + 2 * h + 1];
            for (uint32_t j = 0; j < n_ctx; ++j) {
                got_p.push_back(std::exp(cap[static_cast<size_t>(h) * capture_stride + j] - m) / l);
                want_p.push_back(static_cast<float>(sc[j] / sum));
            }
            for (uint32_t j = n_ctx; j < capture_stride; ++j)
                QVERIFY2(float_bits(cap[static_cast<size_t>(h) * capture_stride + j]) == kSentinel,
                         "capture wrote scores past the token's context");
        }
        Stats cs = compare(got_p, want_p);
        err = check("captured attention probabilities", cs, kAttentionNmse);
        QVERIFY2(err.empty(), err.c_str());

        // The same step without a capture: where lanes split keys, a step of this many tokens runs
        // the tiled prefill kernel (shaders/attention_tiled.comp). Same output, no stray writes.
        if (attention.tiled_for(T2)) {
            std::vector<float> fresh(static_cast<size_t>(T2) * shape.out_stride, bits_to_float(kSentinel));
            out.write(fresh.data(), fresh.size() * 4);
            cmd = ctx.begin();
            attention.record(cmd, T2, -1, capture_stride);
            ctx.barrier(cmd);
            ctx.submit_and_wait(cmd);
            auto tiled_words = out.read_words();
            QVERIFY2(out.guards_ok(), "tiled attention wrote outside its output buffer");
            std::vector<float> gt = heads_of(tiled_words, gap);
            QVERIFY2(gap.empty(), ("tiled attention " + gap).c_str());
            err = per_token_error(gt);
            QVERIFY2(err.empty(), ("tiled attention, " + err).c_str());
            Stats ts = compare(gt, wo);
            qInfo("tiled attention: NMSE %.3g, max |diff| %.3g", ts.nmse, ts.max_abs);
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(OpAttentionTest)
#include "test_op_attention.moc"
