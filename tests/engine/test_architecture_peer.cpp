// Each architecture Lantern runs besides llama (qwen2, qwen3, phi3, gemma2, gemma3) gives llama.cpp's greedy
// text on a random-weight model of a real shape (tests/data/peer_greedy.tsv: the shape, weight type, prompt
// and llama.cpp's output, recorded by scripts/peer-greedy-vectors through ../shared/peer/run-peer
// on the file Lantern's writer makes). The test writes the same file, runs the path a user's
// completion takes (BOS + prompt, prefill, greedy decode with the f16 KV cache, stop at the end
// token) and compares the bytes, in F32, F16, Q8_0, Q4_0 and the Q4_K_M mix: every one of 48
// tokens, or all up to a decision that is a coin flip (coin_flip_margin) where they part; per
// model, one of its prompts must agree for 32 decisions or more.
#include <QTest>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/synthetic.h"
#include "lantern/tokenizer.h"
#include "test_support.h"

using namespace lantern;

namespace {

struct Case {
    std::string shape, type, prompt;
    int n = 0;
    std::string expected;  // llama.cpp's stdout less its final newline: the prompt, then the pieces
};

std::string unhex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

std::vector<Case> cases() {
    std::ifstream f(test::source_path("tests/data/peer_greedy.tsv"));
    if (!f) throw std::runtime_error("tests/data/peer_greedy.tsv is missing");
    std::vector<Case> out;
    for (std::string line; std::getline(f, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> cols;
        std::stringstream ss(line);
        for (std::string col; std::getline(ss, col, '\t');) cols.push_back(col);
        if (cols.size() != 5) throw std::runtime_error("peer_greedy.tsv: a row without 5 columns: " + line);
        out.push_back({cols[0], cols[1], cols[2], std::stoi(cols[3]), unhex(cols[4])});
    }
    return out;
}

// The ggml type of a lantern-bench type name ("q8_0"), or the Q4_K_M mix.
uint32_t type_of(const std::string& name) {
    if (name == "q4_k_m") return kSyntheticQ4KM;
    for (uint32_t id = 0; id < 64; ++id) {
        std::string n = ggml_type_name(id);
        std::transform(n.begin(), n.end(), n.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (n == name) return id;
    }
    throw std::runtime_error("unknown weight type " + name);
}

// Where two byte strings part, as text for a failure message.
std::string first_difference(const std::string& got, const std::string& want) {
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    auto show = [](const std::string& s, size_t at) {
        std::string out;
        for (size_t k = at > 20 ? at - 20 : 0; k < std::min(s.size(), at + 40); ++k)
            out += std::isprint(static_cast<unsigned char>(s[k]))
                       ? std::string(1, s[k])
                       : "\\x" + QByteArray(1, s[k]).toHex().toStdString();
        return out;
    };
    return "byte " + std::to_string(i) + ": got \"" + show(got, i) + "\", llama.cpp \"" + show(want, i) +
           "\"";
}

}  // namespace

// How close two logits may lie before the decision between them is a coin flip: a fraction of the
// logits' RMS, by the weights' type, from how llama.cpp's CPU matmuls round their input where
// Lantern does not (F32: not at all; F16 weights: the input to F16, ~5e-4; quantized weights: to
// 8 bits, ~4e-3 per matmul, compounding over the layers). Where the two texts part, the decision
// must be such a coin flip; a decisive one that differs is a bug.
double coin_flip_margin(const std::string& type) {
    if (type == "f32") return 1e-3;
    if (type == "f16" || type == "bf16") return 5e-3;
    return 3e-2;
}

class ArchitecturePeerTest : public QObject {
    Q_OBJECT
private slots:
    void greedy_text_matches_llama_cpp_data() {
        QTest::addColumn<QString>("shape");
        QTest::addColumn<QString>("type");
        std::vector<std::pair<std::string, std::string>> seen;
        for (const auto& c : cases())
            if (std::find(seen.begin(), seen.end(), std::pair{c.shape, c.type}) == seen.end())
                seen.emplace_back(c.shape, c.type);
        QVERIFY2(seen.size() >= 21, "tests/data/peer_greedy.tsv is incomplete");
        for (const auto& [shape, type] : seen)
            QTest::addRow("%s:%s", shape.c_str(), type.c_str())
                << QString::fromStdString(shape) << QString::fromStdString(type);
    }
    // Every recorded prompt's text is llama.cpp's, or parts from it at a coin flip; one of them
    // agrees for 32 decisions or more.
    void greedy_text_matches_llama_cpp() {
        QFETCH(QString, shape);
        QFETCH(QString, type);
        const std::string path = test::temp_dir() + "/peer.gguf";
        write_synthetic_model(synthetic_shape(shape.toStdString()), type_of(type.toStdString()), path);
        EngineOptions o = test::validated_engine_options();
        o.context_length = 256;
        o.max_sequences = 1;
        auto engine = Engine::load(path, o);
        QCOMPARE(engine->model().architecture, synthetic_shape(shape.toStdString()).architecture);
        const Tokenizer& tok = engine->tokenizer();
        const double coin_flip = coin_flip_margin(type.toStdString());
        size_t most = 0;
        for (const Case& c : cases()) {
            if (c.shape != shape.toStdString() || c.type != type.toStdString()) continue;
            auto seq = engine->create_sequence();
            auto logits = engine->prefill(seq, tok.encode(c.prompt, true));
            std::string text = c.prompt;
            // Per decision: where its text starts, and its top-2 margin over the logits' RMS.
            std::vector<std::pair<size_t, double>> margins;
            bool ended = false;
            for (int generated = 0; generated < c.n; ++generated) {
                const auto next =
                    static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
                double rms = 0, second = -1e30;
                for (size_t i = 0; i < logits.size(); ++i) {
                    rms += static_cast<double>(logits[i]) * logits[i];
                    if (static_cast<int32_t>(i) != next)
                        second = std::max(second, static_cast<double>(logits[i]));
                }
                rms = std::sqrt(rms / static_cast<double>(logits.size()));
                margins.emplace_back(text.size(), (logits[static_cast<size_t>(next)] - second) / rms);
                // Where llama.cpp's generation ends: EOS, EOT, or an end marker (Gemma's <end_of_turn>).
                const auto& ends = tok.end_of_generation();
                if (std::find(ends.begin(), ends.end(), next) != ends.end()) {
                    ended = true;
                    break;
                }
                // As llama.cpp's greedy prints a piece: nothing for unknown and control tokens.
                if (tok.type(next) != TokenType::Unknown && !tok.is_control(next))
                    text += tok.token_text(next);
                StepItem item{seq, {next}, true, false};
                logits = engine->step(std::span<const StepItem>(&item, 1))[0];
            }
            engine->free_sequence(seq);
            // The first decision whose text differs from llama.cpp's, if any: it must be a coin flip.
            size_t agreed = margins.size();
            if (text != c.expected) {
                size_t at = 0;
                while (at < text.size() && at < c.expected.size() && text[at] == c.expected[at]) ++at;
                // The decision whose piece holds that byte, or an empty piece (unknown, control)
                // right there.
                const auto end_of = [&](size_t i) {
                    return i + 1 < margins.size() ? margins[i + 1].first : text.size();
                };
                agreed = 0;
                while (agreed + 1 < margins.size() && end_of(agreed) <= at &&
                       !(end_of(agreed) == at && margins[agreed].first == at))
                    ++agreed;
                QVERIFY2(
                    margins[agreed].second < coin_flip,
                    qPrintable(
                        QString("\"%1\": ").arg(QString::fromStdString(c.prompt)) +
                        QString::fromStdString(first_difference(text, c.expected)) +
                        QString(" at decision %1, whose top-2 margin %2 of the logits' RMS is no coin flip")
                            .arg(agreed)
                            .arg(margins[agreed].second)));
            }
            qInfo("\"%s\": %zu of %zu decisions as llama.cpp's%s", c.prompt.c_str(), agreed, margins.size(),
                  agreed < margins.size() ? QString(", then a coin flip (margin %1)")
                                                .arg(margins[agreed].second)
                                                .toUtf8()
                                                .constData()
                                          : (ended ? " (to the end token)" : ""));
            most = std::max(most, ended && agreed == margins.size() ? size_t{32} : agreed);
        }
        QVERIFY2(
            most >= 32,
            qPrintable(QString("no prompt gave 32 decisions before a coin flip (at most %1)").arg(most)));
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(ArchitecturePeerTest)
#include "test_architecture_peer.moc"
