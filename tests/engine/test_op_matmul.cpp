// The matmul kernels (ops/matmul) against their CPU reference for every weight type: every input
// mode, accumulate and row map, both kernel layouts, the SwiGLU epilogue, the CPU decode layout's
// fixed-point input bit for bit, NaN/Inf passing through, and weights split in row parts.
#include <QTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lantern/error.h"
#include "lantern/gguf.h"
#include "op_check.h"
#include "ops/matmul.h"
#include "ops/weight_format.h"
#include "test_support.h"

using namespace lantern;
using namespace lantern::test;

namespace {

const char* input_name(ops::MatmulInput in) {
    return in == ops::MatmulInput::Norm ? "norm" : in == ops::MatmulInput::Silu ? "silu" : "plain";
}

struct MatmulCase {
    uint32_t type;
    ops::MatmulInput input;
    bool accumulate, rowmap;
    uint32_t K, N, T;
    std::vector<uint64_t> parts;  // empty = one part
    uint32_t tile_rows = 0;       // weight layout; 0 = the one `split` wants (ops::matmul_tile_rows)
    ops::MatmulSplit split = ops::MatmulSplit::ForDevice;
    bool gelu = false;  // the Silu input's gate takes GELU (GeGLU) instead
};

// Runs one matmul on the device and on the CPU; returns "" or what went wrong. `worst` collects
// the largest NMSE seen.
std::string run_matmul(const MatmulCase& c, Rng& rng, double* worst, double* worst_abs) {
    auto& ctx = test::context();
    auto w = make_weight(ctx, c.type, c.N, c.K, rng, c.parts, c.tile_rows, c.split);
    const uint32_t in_width = c.input == ops::MatmulInput::Silu ? 2 * c.K : c.K;
    const uint32_t x_stride = in_width + 3;  // rows of x are not packed: the stride matters
    const uint32_t x_rows = c.rowmap ? c.T + 5 : c.T;
    const uint32_t y_offset = 2, y_stride = y_offset + c.N + 3;
    auto x = rng.floats(static_cast<size_t>(x_rows) * x_stride, -2.0f, 2.0f);
    auto norm = rng.floats(c.K, 0.5f, 1.5f);
    std::vector<uint32_t> rowmap(std::max<uint32_t>(c.T, 1));
    for (auto& r : rowmap) r = rng.below(x_rows);

    // y: guard words everywhere except the N outputs of each token, which start as random values
    // (they are the residual when accumulating and must be overwritten otherwise).
    std::vector<float> y0(static_cast<size_t>(c.T) * y_stride, bits_to_float(kSentinel));
    for (uint32_t t = 0; t < c.T; ++t)
        for (uint32_t n = 0; n < c.N; ++n) y0[t * y_stride + y_offset + n] = rng.uniform(-1.0f, 1.0f);

    DeviceBuffer xb(ctx, x.data(), x.size() * 4), nb(ctx, norm.data(), norm.size() * 4),
        rb(ctx, rowmap.data(), rowmap.size() * 4);
    Guarded yb(ctx, y0.size());
    yb.write(y0.data(), y0.size() * 4);

    ops::MatmulOptions options;
    options.split = c.split;
    options.gelu = c.gelu;
    ops::MatmulOp op(ctx, w->device, c.input, xb.range(), yb.range(), nb.range(), rb.range(), options);
    if (op.dispatches() != w->device.parts.size()) return "one dispatch per weight part expected";
    ops::MatmulShape s;
    s.tokens = c.T;
    s.x_stride = x_stride;
    s.y_stride = y_stride;
    s.y_offset = y_offset;
    s.accumulate = c.accumulate;
    s.use_rowmap = c.rowmap;
    s.eps = 1e-5f;
    VkCommandBuffer cmd = ctx.begin();
    op.record(cmd, s);
    ctx.barrier(cmd);
    ctx.submit_and_wait(cmd);

    std::vector<float> want = y0;
    ops::reference_matmul(w->dequantized, c.N, c.K, c.input, x, want, norm, rowmap, s,
                          ops::fixed_point_input(ctx, c.split, c.type, c.T), c.gelu);
    auto got_words = yb.read_words();
    std::vector<float> got_v, want_v;
    for (size_t i = 0; i < got_words.size(); ++i) {
        uint32_t t = static_cast<uint32_t>(i / y_stride), n = static_cast<uint32_t>(i % y_stride);
        if (n >= y_offset && n < y_offset + c.N) {
            got_v.push_back(bits_to_float(got_words[i]));
            want_v.push_back(want[i]);
        } else if (got_words[i] != kSentinel) {
            return "write outside the output columns at token " + std::to_string(t) + ", column " +
                   std::to_string(n);
        }
    }
    if (!yb.guards_ok()) return "write outside the output buffer (guard words changed)";
    Stats st = compare(got_v, want_v);
    *worst = std::max(*worst, st.nmse);
    *worst_abs = std::max(*worst_abs, st.max_abs);
    return check("y", st, kMatmulNmse);
}

std::string describe(const MatmulCase& c) {
    std::string parts;
    for (auto p : c.parts) parts += (parts.empty() ? " parts " : "+") + std::to_string(p);
    return std::string(ggml_type_name(c.type)) + " " + input_name(c.input) + (c.gelu ? " (GeGLU)" : "") +
           (c.accumulate ? " +acc" : "") + (c.rowmap ? " +rowmap" : "") + " K=" + std::to_string(c.K) +
           " N=" + std::to_string(c.N) + " T=" + std::to_string(c.T) + parts +
           (c.tile_rows ? " tiles of " + std::to_string(c.tile_rows) : "") +
           (c.split == ops::MatmulSplit::SplitK         ? " split-K"
            : c.split == ops::MatmulSplit::LanesOwnRows ? " lanes own rows"
                                                        : "");
}

}  // namespace

class OpMatmulTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { log_op_device(); }

    void matmul_matches_reference_data() {
        QTest::addColumn<uint32_t>("type");
        for (uint32_t t : kTypes) QTest::newRow(ggml_type_name(t)) << t;
    }
    // Every input mode x accumulate x rowmap, each over all token counts; K and N cycle through
    // sizes that are not multiples of 8 (float types), of the 512-element k stride of a workgroup,
    // of the 4 rows per workgroup, or of the weight tile (300 rows: a whole tile of 256 and a short
    // one on CPU drivers). Then plain rows (tiles of 1, what GPUs use) in the device's kernels, and
    // the kernel layout of the other kind of device (other_split_of).
    void matmul_matches_reference() {
        QFETCH(uint32_t, type);
        const bool quantized = ops::find_weight_format(type)->block_elements > 1;
        const bool k_quant = ops::find_weight_format(type)->block_elements == 256;
        const std::vector<uint32_t> Ks =
            quantized ? std::vector<uint32_t>{whole_blocks(type, 1), whole_blocks(type, 3),
                                              whole_blocks(type, 9), whole_blocks(type, k_quant ? 17 : 33)}
                      : std::vector<uint32_t>{3, 45, 259, 1030};
        const uint32_t Ns[] = {1, 7, 13, 66, 300};
        Rng rng(200 + type);
        double worst = 0, worst_abs = 0;
        int cases = 0, mode = 0;
        for (auto input : {ops::MatmulInput::Plain, ops::MatmulInput::Norm, ops::MatmulInput::Silu})
            for (bool acc : {false, true})
                for (bool rowmap : {false, true}) {
                    for (size_t i = 0; i < std::size(kTokenCounts); ++i) {
                        MatmulCase c{type,
                                     input,
                                     acc,
                                     rowmap,
                                     Ks[(i + mode) % Ks.size()],
                                     Ns[(i + 2 * mode) % std::size(Ns)],
                                     kTokenCounts[i],
                                     {}};
                        c.gelu = input == ops::MatmulInput::Silu && rowmap;  // Gemma's GeGLU on half of them
                        auto err = run_matmul(c, rng, &worst, &worst_abs);
                        QVERIFY2(err.empty(), qPrintable(QString::fromStdString(describe(c) + ": " + err)));
                        ++cases;
                    }
                    ++mode;
                }
        // Row-major weights (tiles of 1 row, the GPU layout) with the device's kernels: on CPU
        // drivers, whose kernels read tiles (a lane's scales four rows at a time), a clear refusal.
        const bool cpu = test::context().info().type == DeviceType::Cpu;
        for (auto input : {ops::MatmulInput::Plain, ops::MatmulInput::Norm, ops::MatmulInput::Silu})
            for (uint32_t T : {1u, 70u}) {
                MatmulCase c{type, input, T == 1, false, Ks[cases % Ks.size()], 300, T, {}, 1};
                if (cpu) {
                    std::string refusal;
                    try {
                        run_matmul(c, rng, &worst, &worst_abs);
                    } catch (const Error& e) {
                        if (e.code() == ErrorCode::Internal) refusal = e.what();
                    }
                    QVERIFY2(
                        refusal.find("tiles of 1 rows") != std::string::npos,
                        qPrintable(QString::fromStdString(describe(c) + ": not refused (" + refusal + ")")));
                    continue;
                }
                auto err = run_matmul(c, rng, &worst, &worst_abs);
                QVERIFY2(err.empty(), qPrintable(QString::fromStdString(describe(c) + ": " + err)));
                ++cases;
            }
        // (On a CPU driver the other split is split-K: 70 and 130 tokens run its tiled GEMM, one and
        // three token tiles, the last ones part-empty.)
        for (auto input : {ops::MatmulInput::Plain, ops::MatmulInput::Norm, ops::MatmulInput::Silu})
            for (uint32_t T : {1u, 9u, 70u, 130u}) {
                MatmulCase c{type,
                             input,
                             T != 9,
                             T == 9,
                             Ks[cases % Ks.size()],
                             Ns[cases % std::size(Ns)],
                             T,
                             {},
                             0,
                             other_split_of(test::context())};
                auto err = run_matmul(c, rng, &worst, &worst_abs);
                QVERIFY2(err.empty(), qPrintable(QString::fromStdString(describe(c) + ": " + err)));
                ++cases;
            }
        qInfo("matmul %s: %d cases, worst NMSE %.3g, max |diff| %.3g (bound %.0e)", ggml_type_name(type),
              cases, worst, worst_abs, kMatmulNmse);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void gate_up_swiglu_matches_reference_data() {
        QTest::addColumn<uint32_t>("type");
        for (uint32_t t : kTypes) QTest::newRow(ggml_type_name(t)) << t;
    }
    // The gate/up matmul with its SwiGLU epilogue: rows of gate and up interleaved, y[t][i] =
    // silu(gate i) * up i at y_offset + i; every other word of y keeps its guard. Odd FFN widths,
    // every token count of a decode / short / long step, both kernel layouts, one or two row parts;
    // every second case GeGLU (gelu_tanh(gate) * up, Gemma) instead.
    void gate_up_swiglu_matches_reference() {
        QFETCH(uint32_t, type);
        auto& ctx = test::context();
        const bool quantized = ops::find_weight_format(type)->block_elements > 1;
        Rng rng(500 + type);
        double worst = 0, worst_abs = 0;
        int cases = 0;
        for (auto split : {ops::MatmulSplit::ForDevice, other_split_of(ctx)})
            for (uint32_t F : {7u, 66u, 150u})
                for (uint32_t T : {1u, 9u, 70u}) {
                    const uint32_t K = quantized ? whole_blocks(type, F == 7 ? 2 : 3) : (F == 7 ? 37u : 44u);
                    std::vector<uint64_t> parts;
                    if (F == 150) parts = {2 * 41, 2 * F - 2 * 41};  // an even split
                    auto w = make_weight(ctx, type, 2 * F, K, rng, parts, 0, split);
                    const uint32_t y_offset = 2, y_stride = y_offset + F + 3;
                    auto x = rng.floats(static_cast<size_t>(T) * K, -2.0f, 2.0f);
                    auto norm = rng.floats(K, 0.5f, 1.5f);
                    std::vector<float> y0(static_cast<size_t>(T) * y_stride, bits_to_float(kSentinel));
                    DeviceBuffer xb(ctx, x.data(), x.size() * 4), nb(ctx, norm.data(), norm.size() * 4),
                        rb(ctx, x.data(), 4);
                    Guarded yb(ctx, y0.size());
                    yb.write(y0.data(), y0.size() * 4);
                    ops::MatmulOptions opts;
                    opts.split = split;
                    opts.swiglu = true;
                    const bool gelu = cases % 2 == 1;
                    opts.gelu = gelu;
                    ops::MatmulOp op(ctx, w->device, ops::MatmulInput::Norm, xb.range(), yb.range(),
                                     nb.range(), rb.range(), opts);
                    ops::MatmulShape ms;
                    ms.tokens = T;
                    ms.x_stride = K;
                    ms.y_stride = y_stride;
                    ms.y_offset = 2 * y_offset;  // in weight rows: two rows per output column
                    ms.eps = 1e-5f;
                    VkCommandBuffer cmd = ctx.begin();
                    op.record(cmd, ms);
                    ctx.barrier(cmd);
                    ctx.submit_and_wait(cmd);

                    // Reference: the plain matmul into [gate0, up0, gate1, up1, ...], then SwiGLU.
                    std::vector<float> gu(static_cast<size_t>(T) * 2 * F);
                    ops::MatmulShape rs;
                    rs.tokens = T;
                    rs.x_stride = K;
                    rs.y_stride = 2 * F;
                    rs.eps = 1e-5f;
                    ops::reference_matmul(w->dequantized, 2 * F, K, ops::MatmulInput::Norm, x, gu, norm, {},
                                          rs, ops::fixed_point_input(ctx, split, type, T));
                    auto got = yb.read_words();
                    QVERIFY2(yb.guards_ok(), "the SwiGLU epilogue wrote outside its output buffer");
                    std::vector<float> gv, wv;
                    for (uint32_t t = 0; t < T; ++t)
                        for (uint32_t c = 0; c < y_stride; ++c) {
                            const uint32_t word = got[static_cast<size_t>(t) * y_stride + c];
                            if (c < y_offset || c >= y_offset + F) {
                                QVERIFY2(word == kSentinel,
                                         qPrintable(QString("F=%1 T=%2: column %3 of token %4 "
                                                            "written")
                                                        .arg(F)
                                                        .arg(T)
                                                        .arg(c)
                                                        .arg(t)));
                                continue;
                            }
                            const uint32_t i = c - y_offset;
                            const double g = gu[static_cast<size_t>(t) * 2 * F + 2 * i];
                            const double u = gu[static_cast<size_t>(t) * 2 * F + 2 * i + 1];
                            gv.push_back(bits_to_float(word));
                            wv.push_back(static_cast<float>(
                                (gelu ? ops::reference_gelu_tanh(g) : g / (1.0 + std::exp(-g))) * u));
                        }
                    Stats st = compare(gv, wv);
                    worst = std::max(worst, st.nmse);
                    worst_abs = std::max(worst_abs, st.max_abs);
                    auto err = check(gelu ? "gelu(gate) * up" : "silu(gate) * up", st, kMatmulNmse);
                    QVERIFY2(err.empty(),
                             qPrintable(QString("F=%1 K=%2 T=%3 %4: %5")
                                            .arg(F)
                                            .arg(K)
                                            .arg(T)
                                            .arg(split == ops::MatmulSplit::ForDevice ? "device kernels"
                                                                                      : "other kernels")
                                            .arg(err.c_str())));
                    ++cases;
                }
        qInfo("gate/up SwiGLU %s: %d cases, worst NMSE %.3g, max |diff| %.3g (bound %.0e)",
              ggml_type_name(type), cases, worst, worst_abs, kMatmulNmse);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void matmul_fixed_point_input_is_exact_data() {
        QTest::addColumn<uint32_t>("type");
        for (auto t : {GgmlType::Q8_0, GgmlType::Q4_0})
            QTest::newRow(ggml_type_name(static_cast<uint32_t>(t))) << static_cast<uint32_t>(t);
    }
    // The fixed-point input of the CPU decode layout (ops::fixed_point_input), pinned bit for bit:
    // weights whose block scales are 1 (small integers, each block led by the type's extreme value)
    // and inputs that hit each rule — below half a step rounds to 0, ties go to the even integer, a
    // group's largest value just below 2 (step 2^-14) rounds to 2^15 steps and is clamped to 32767
    // of them (and so is its negative, to -32767), a group below 2^-111 becomes zeros — keep every
    // device sum exact, so the outputs must equal the reference with ops::to_fixed_point exactly
    // (the NMSE tests could not tell 15 bits from 16, nor a missing clamp). The
    // lanes-own-rows kernels run on every device; 5 tokens take the four-tokens-per-lane kernel.
    void matmul_fixed_point_input_is_exact() {
        QFETCH(uint32_t, type);
        auto& ctx = test::context();
        const bool q8 = type == static_cast<uint32_t>(GgmlType::Q8_0);
        const uint32_t K = 64, N = 40;
        Rng rng(800 + type);
        std::vector<float> wv(static_cast<size_t>(N) * K);
        for (uint32_t i = 0; i < wv.size(); ++i)
            wv[i] =
                i % 32 == 0 ? (q8 ? 127.0f : -8.0f) : static_cast<float>(static_cast<int>(rng.below(7)) - 3);
        auto w = make_weight_of(ctx, type, N, K, wv, {}, 0, ops::MatmulSplit::LanesOwnRows);
        QVERIFY(w->dequantized == wv);  // scales of exactly 1
        for (uint32_t T : {1u, 5u}) {
            QVERIFY(ops::fixed_point_input(true, type, T));
            std::vector<float> x(static_cast<size_t>(T) * K);
            for (uint32_t t = 0; t < T; ++t) {
                float* xt = x.data() + static_cast<size_t>(t) * K;
                for (uint32_t k = 0; k < K; ++k) xt[k] = k % 32 == 0 ? 0.0f : rng.uniform(-1.0f, 1.0f);
                // Group 0: its largest values just below 2 (step 2^-14), and values at the rounding edges.
                const float edges[] = {0x1.fffffep0f, 0x1p-16f,      3 * 0x1p-16f, 5 * 0x1p-15f,
                                       7 * 0x1p-15f,  -5 * 0x1p-15f, -1.0f,        -0x1.fffffep0f};
                for (size_t i = 0; i < std::size(edges); ++i) xt[1 + i] = edges[i];
                xt[33] = 1.5f;  // group 1 on the same step, so the two groups' sums add exactly
                if (t == 1) {   // group 0 zero, group 1 below 2^-111: both quantize to zeros
                    for (uint32_t k = 0; k < 32; ++k) xt[k] = 0.0f;
                    for (uint32_t k = 32; k < K; ++k) xt[k] = rng.uniform(-1.0f, 1.0f) * 1e-35f;
                }
            }
            auto got = run_plain_matmul(ctx, *w, x, T, ops::MatmulSplit::LanesOwnRows);
            QVERIFY2(!got.empty(), "wrote outside the output buffer");
            const auto want = reference_plain_matmul(w->dequantized, N, K, x, T, 32);
            for (uint32_t i = 0; i < T * N; ++i)
                QVERIFY2(got[i] == float_bits(want[i]),
                         qPrintable(QString("T=%1: token %2, row %3: %4, want %5")
                                        .arg(T)
                                        .arg(i / N)
                                        .arg(i % N)
                                        .arg(double(bits_to_float(got[i])), 0, 'g', 9)
                                        .arg(double(want[i]), 0, 'g', 9)));
            if (T > 1)
                for (uint32_t n = 0; n < N; ++n) QCOMPARE(want[N + n], 0.0f);
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void matmul_passes_nan_and_inf_through_data() {
        QTest::addColumn<uint32_t>("type");
        for (uint32_t t : kTypes) QTest::newRow(ggml_type_name(t)) << t;
    }
    // A NaN or an infinity in a token's input makes all of that token's outputs non-finite, on
    // every kernel layout and step size — the CPU decode layout's fixed-point input included,
    // where converting them to integers would otherwise yield finite garbage — and the step's
    // other tokens stay finite.
    void matmul_passes_nan_and_inf_through() {
        QFETCH(uint32_t, type);
        auto& ctx = test::context();
        Rng rng(700 + type);
        const uint32_t K = std::max(64u, whole_blocks(type, 1)), N = 40;
        for (auto split : {ops::MatmulSplit::ForDevice, other_split_of(ctx)})
            for (uint32_t T : {1u, 3u, 30u}) {
                auto w = make_weight(ctx, type, N, K, rng, {}, 0, split);
                auto x = rng.floats(static_cast<size_t>(T) * K, -2.0f, 2.0f);
                x[5] = std::nanf("");                                           // token 0, first group
                if (T > 1) x[K + 40] = std::numeric_limits<float>::infinity();  // token 1, second group
                auto got = run_plain_matmul(ctx, *w, x, T, split);
                QVERIFY2(!got.empty(), "wrote outside the output buffer");
                for (uint32_t t = 0; t < T; ++t)
                    for (uint32_t n = 0; n < N; ++n) {
                        const float v = bits_to_float(got[static_cast<size_t>(t) * N + n]);
                        QVERIFY2(std::isfinite(v) == (t >= 2),
                                 qPrintable(QString("T=%1 %2: token %3, row %4 = %5")
                                                .arg(T)
                                                .arg(split == ops::MatmulSplit::ForDevice ? "device kernels"
                                                                                          : "other kernels")
                                                .arg(t)
                                                .arg(n)
                                                .arg(v)));
                    }
            }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void matmul_with_weight_split_in_parts_data() {
        QTest::addColumn<uint32_t>("type");
        for (uint32_t t : kTypes) QTest::newRow(ggml_type_name(t)) << t;
    }
    // A DeviceWeight of several row parts, each in its own buffers (what the loader builds for a
    // tensor larger than one texel view may hold): one dispatch per part, outputs at first_row.
    void matmul_with_weight_split_in_parts() {
        QFETCH(uint32_t, type);
        const bool quantized = ops::find_weight_format(type)->block_elements > 1;
        Rng rng(300 + type);
        double worst = 0, worst_abs = 0;
        for (auto input : {ops::MatmulInput::Plain, ops::MatmulInput::Norm, ops::MatmulInput::Silu})
            for (uint32_t T : {1u, 9u}) {
                MatmulCase c{type, input, T == 9,      T == 1, quantized ? whole_blocks(type, 3) : 77u,
                             37,   T,     {10, 13, 14}};
                auto err = run_matmul(c, rng, &worst, &worst_abs);
                QVERIFY2(err.empty(), qPrintable(QString::fromStdString(describe(c) + ": " + err)));
                MatmulCase two{type, input, false, false, quantized ? whole_blocks(type, 2) : 40u,
                               9,    T,     {1, 8}};
                err = run_matmul(two, rng, &worst, &worst_abs);
                QVERIFY2(err.empty(), qPrintable(QString::fromStdString(describe(two) + ": " + err)));
            }
        qInfo("split matmul %s: worst NMSE %.3g, max |diff| %.3g", ggml_type_name(type), worst, worst_abs);
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(OpMatmulTest)
#include "test_op_matmul.moc"
