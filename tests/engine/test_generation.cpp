// Generation end to end on stories260K: seeded reproducibility (in process and across fresh
// processes), sampling settings changed mid-generation, stop strings, and continuous batching
// giving the same tokens as running each request alone.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>
#include <cmath>
#include <nlohmann/json.hpp>

#include "lantern/chat.h"
#include "lantern/chat_template.h"
#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/perplexity.h"
#include "lantern/scheduler.h"
#include "lantern/synthetic.h"
#include "lantern/tokenizer.h"
#include "test_support.h"

using namespace lantern;

namespace {

EngineOptions options() {
    EngineOptions o = test::validated_engine_options();
    o.context_length = 512;
    o.max_sequences = 4;
    o.max_step_tokens = 64;
    return o;
}

std::string model() {
    return test::shared_path("models/stories260K.gguf");
}

struct Run {
    std::vector<int32_t> tokens;
    std::string text;
    TurnStats stats;
    std::vector<double> step_ms;  // per token event
};

Run respond(Engine& e, const std::string& user, SettingsSlot& slot,
            const std::function<void(size_t index, SettingsSlot&)>& on_index = {}) {
    ChatSession session(e);
    Run r;
    r.stats = session.respond(user, slot, [&](const TokenEvent& ev) {
        if (ev.token >= 0) r.tokens.push_back(ev.token);
        if (ev.token >= 0) r.step_ms.push_back(ev.step_ms);
        r.text += ev.text;
        if (on_index && ev.token >= 0) on_index(r.tokens.size() - 1, slot);
        return true;
    });
    return r;
}

SamplingSettings sampled(uint64_t seed, int n) {
    SamplingSettings s;
    s.temperature = 0.9f;
    s.seed = seed;
    s.max_new_tokens = n;
    return s;
}

}  // namespace

class GenerationTest : public QObject {
    Q_OBJECT
private slots:
    // A Qwen3 model's session: its template is read as Qwen3 (the switch is there), and with
    // thinking off the prompt the model sees ends with the empty reasoning section Qwen3's template
    // writes for enable_thinking=false; on, it ends at the assistant header.
    void qwen3_session_takes_the_thinking_switch() {
        SyntheticShape shape;
        shape.architecture = "qwen3";
        shape.dim = 64, shape.n_heads = 4, shape.n_kv_heads = 2, shape.head_dim = 32, shape.ffn_dim = 128;
        shape.n_layers = 2, shape.vocab = 512, shape.qk_norm = true, shape.rope_base = 1e6f;
        shape.chat_template =
            "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + "
            "'<|im_end|>\\n' }}"
            "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if "
            "enable_thinking is "
            "defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- "
            "endif %}";
        const std::string path = test::temp_dir() + "/qwen3-chat.gguf";
        write_synthetic_model(shape, static_cast<uint32_t>(GgmlType::F32), path);
        auto e = Engine::load(path, options());
        QCOMPARE(ChatTemplate::for_engine(*e).format(), ChatFormat::Qwen3);
        for (bool thinking : {true, false}) {
            ChatSession session(*e);
            QVERIFY(session.has_thinking_switch());
            session.set_thinking(thinking);
            SamplingSettings greedy;
            greedy.temperature = 0;
            greedy.max_new_tokens = 1;
            SettingsSlot slot(greedy);
            session.respond("Hi", slot, [](const TokenEvent&) { return true; });
            // (The reply's one token was sampled, not fed: the sequence holds the prompt.)
            const std::string prompt = e->tokenizer().decode(e->sequence_tokens(session.sequence()));
            const std::string tail = thinking
                                         ? "Hi<|im_end|>\n<|im_start|>assistant\n"
                                         : "Hi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
            QVERIFY2(prompt.ends_with(tail), prompt.c_str());
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A session says when the model's template renders the earlier conversation differently from
    // what the sequence holds (here: earlier replies replaced by "(earlier)", as reasoning models'
    // templates drop earlier reasoning): the KV keeps the common start, the rest is recomputed.
    // A template that renders replies as written keeps every token.
    void session_says_when_the_template_breaks_the_prefix() {
        const std::string chatml =
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        const std::string forgetful =
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' and not loop.last "
            "%}(earlier)"
            "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        for (const bool breaks : {false, true}) {
            SyntheticShape shape = synthetic_shape("tiny");
            shape.chat_template = breaks ? forgetful : chatml;
            const std::string path = test::temp_dir() + (breaks ? "/forgetful.gguf" : "/chatml.gguf");
            write_synthetic_model(shape, static_cast<uint32_t>(GgmlType::F32), path);
            auto e = Engine::load(path, options());
            ChatSession session(*e);
            QVERIFY(session.chat_template().uses_model_template());
            SamplingSettings greedy;
            greedy.temperature = 0;
            greedy.max_new_tokens = 6;
            greedy.ignore_eos = true;
            SettingsSlot slot(greedy);
            const auto quiet = [](const TokenEvent&) { return true; };
            const TurnStats first = session.respond("Hello", slot, quiet);
            QVERIFY(!first.template_broke_prefix);
            const uint32_t first_prompt = first.prompt_tokens;
            const TurnStats second = session.respond("Again", slot, quiet);
            QCOMPARE(second.template_broke_prefix, breaks);
            if (breaks) {
                // Everything up to the reply was kept; the reply's tokens were where it differed.
                QCOMPARE(second.prefix_break_at, first_prompt);
                QVERIFY(second.reused_tokens <= first_prompt);
            } else {
                // The whole previous turn but the reply's last token, which was sampled, not fed.
                QCOMPARE(second.reused_tokens, first_prompt + first.generated_tokens - 1);
            }
            // Regenerating replaces the reply on purpose: no break to report.
            QVERIFY(!session.regenerate(slot, quiet).template_broke_prefix);
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A template that refuses a conversation (its raise_exception) fails the turn with the
    // template's words, and the conversation stays as it was: the next turn goes on normally.
    void a_template_that_refuses_a_turn_changes_nothing() {
        SyntheticShape shape = synthetic_shape("tiny");
        shape.chat_template =
            "{% for m in messages %}{% if m.content == 'forbidden' %}{{ raise_exception('That word is not "
            "allowed.') }}{% endif %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        const std::string path = test::temp_dir() + "/strict.gguf";
        write_synthetic_model(shape, static_cast<uint32_t>(GgmlType::F32), path);
        auto e = Engine::load(path, options());
        ChatSession session(*e);
        SamplingSettings greedy;
        greedy.temperature = 0;
        greedy.max_new_tokens = 3;
        SettingsSlot slot(greedy);
        const auto quiet = [](const TokenEvent&) { return true; };
        session.respond("Hello", slot, quiet);
        QCOMPARE(session.history().size(), size_t{2});
        try {
            session.respond("forbidden", slot, quiet);
            QFAIL("the template's refusal must reach the caller");
        } catch (const Error& err) {
            QVERIFY2(std::string(err.what()).find("That word is not allowed.") != std::string::npos,
                     err.what());
        }
        QCOMPARE(session.history().size(), size_t{2});
        const std::string reply = session.history().back().content;
        session.respond("Fine", slot, quiet);
        QCOMPARE(session.history().size(), size_t{4});
        QCOMPARE(session.history()[1].content, reply);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void same_seed_gives_identical_text_twice() {
        auto e1 = Engine::load(model(), options());
        auto e2 = Engine::load(model(), options());
        SettingsSlot a(sampled(1234, 80)), b(sampled(1234, 80)), c(sampled(99, 80));
        Run r1 = respond(*e1, "Once upon a time", a);
        Run r2 = respond(*e2, "Once upon a time", b);
        // The first token's step is the prompt's: its time covers the prefill (the app shows it as
        // the live time to first token), the later ones a decode step each.
        QVERIFY(!r1.step_ms.empty());
        QVERIFY2(r1.step_ms[0] >= r1.stats.prefill_ms,
                 qPrintable(QStringLiteral("first step %1 ms, prefill %2 ms")
                                .arg(r1.step_ms[0])
                                .arg(r1.stats.prefill_ms)));
        for (double ms : r1.step_ms) QVERIFY(ms > 0);
        Run r3 = respond(*e1, "Once upon a time", c);
        QCOMPARE(r1.stats.seed, uint64_t(1234));
        QVERIFY(r1.tokens.size() > 20);
        QCOMPARE(r1.tokens, r2.tokens);
        QCOMPARE(r1.text, r2.text);
        QVERIFY2(r1.tokens != r3.tokens, "a different seed should give a different story");
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void same_seed_gives_identical_text_across_fresh_processes() {
        auto run_cli = [&]() {
            QProcess p;
            p.start(LANTERN_CLI_PATH,
                    {"--model", QString::fromStdString(model()), "--prompt", "Once upon a time", "-n", "60",
                     "--temp", "0.9", "--seed", "777", "--ctx", "256"});
            if (!p.waitForFinished(120000)) throw Error(ErrorCode::Internal, "lantern-cli did not finish");
            if (p.exitCode() != 0) throw Error(ErrorCode::Internal, p.readAllStandardError().toStdString());
            return p.readAllStandardOutput();
        };
        QByteArray first = run_cli(), second = run_cli();
        QVERIFY(first.size() > 40);
        QCOMPARE(first, second);
        // And the same as this process with the same engine, sampler and seed (Scheduler path).
        auto e = Engine::load(model(), options());
        GenerationRequest req;
        req.prompt = e->tokenizer().encode("Once upon a time", true);
        req.settings = sampled(777, 60);
        req.stop_tokens = {e->tokenizer().eos_id()};
        std::vector<int32_t> toks;
        req.on_token = [&](RequestId, int32_t t) { toks.push_back(t); };
        Scheduler sched(*e, 64, 1);
        sched.submit(std::move(req));
        sched.run();
        QCOMPARE(QByteArray::fromStdString(e->tokenizer().decode(toks) + "\n"), first);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // lantern-cli --perplexity reads the file, adds BOS and chunks it as the library does: its result
    // equals measure_perplexity in this process on the same text (the reference greedy text, whose
    // 200 tokens make three chunks of 64).
    // `lantern-cli --tokenize` prints the ids, then one piece per line as the sampling panel shows
    // them: sentencepiece pieces as stored, byte-level BPE pieces as text (" world", not "Ġworld").
    void cli_tokenize_prints_ids_and_pieces() {
        const auto run = [](const std::string& model_path, const QString& text) {
            QProcess p;
            p.start(LANTERN_CLI_PATH, {"--model", QString::fromStdString(model_path), "--tokenize", text});
            if (!p.waitForFinished(60000) || p.exitCode() != 0)
                return QStringList{"failed: " + p.readAllStandardError()};
            return QString::fromUtf8(p.readAllStandardOutput()).split('\n');
        };
        const std::string bpe_vocab = test::bpe_test_vocab_file("llama-bpe", true);
        for (const std::string& path : {model(), bpe_vocab}) {
            const auto tok = Tokenizer::from_gguf(*GgufFile::open(path));
            const auto ids = tok->encode("Hello world", false);
            const QStringList lines = run(path, "Hello world");
            QVERIFY2(lines.size() >= 1 + static_cast<qsizetype>(ids.size()), qPrintable(lines.join('|')));
            QStringList want_ids;
            for (int32_t id : ids) want_ids << QString::number(id);
            QCOMPARE(lines[0], want_ids.join(' '));
            for (size_t i = 0; i < ids.size(); ++i)
                QCOMPARE(lines[static_cast<qsizetype>(i) + 1],
                         QString::fromStdString(tok->display_piece(ids[i])));
        }
        const QStringList bpe = run(bpe_vocab, "Hello world");
        QVERIFY2(bpe.contains(" world"), qPrintable(bpe.join('|')));
        const QStringList spm = run(model(), "Hello world");
        QVERIFY2(spm.filter(QString::fromUtf8("\xE2\x96\x81")).size() > 0, qPrintable(spm.join('|')));  // "▁"
    }

    // `lantern-cli --apply-template` prints exactly what Python's Jinja2 renders (as transformers
    // does) for the model's own template: a messages array, an object with tools and
    // chat_template_kwargs, --no-generation-prompt. Only the GGUF's metadata is read.
    void cli_apply_template_prints_what_jinja2_renders() {
        SyntheticShape shape = synthetic_shape("tiny");
        shape.chat_template = test::corpus_template("Qwen-Qwen3-0.6B.jinja");
        const std::string path = test::temp_dir() + "/qwen3-template.gguf";
        write_synthetic_model(shape, static_cast<uint32_t>(GgmlType::F32), path);
        const auto tok = Tokenizer::from_gguf(*GgufFile::open(path));
        const std::string bos = tok->piece(tok->bos_id()), eos = tok->piece(tok->eos_id());
        const QString messages =
            R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|im_end|>"},
            {"role": "assistant", "content": "<think>\nok\n</think>\n\nHello!"}, {"role": "user", "content": "Weather?"}])";
        const QString tools =
            R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])";
        const QStringList files = {messages, "{\"messages\": " + messages + ", \"tools\": " + tools +
                                                 ", \"chat_template_kwargs\": {\"enable_thinking\": false}}"};
        auto cases = nlohmann::ordered_json::array();
        std::vector<QString> outputs;
        int n = 0;
        for (const QString& file : files) {
            for (const bool generation : {true, false}) {
                const QString conv_path =
                    QString::fromStdString(test::temp_dir()) + QString("/conv%1.json").arg(n++);
                QFile f(conv_path);
                QVERIFY(f.open(QIODevice::WriteOnly));
                f.write(file.toUtf8());
                f.close();
                QProcess p;
                QStringList args = {"--model", QString::fromStdString(path), "--apply-template", conv_path};
                if (!generation) args << "--no-generation-prompt";
                p.start(LANTERN_CLI_PATH, args);
                QVERIFY(p.waitForFinished(60000));
                QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
                QCOMPARE(p.readAllStandardError(), QByteArray());  // the model's template: nothing to say
                outputs.push_back(QString::fromUtf8(p.readAllStandardOutput()));
                // (nlohmann's ordered_json keeps the file's key order, as Python's json does.)
                const auto x = nlohmann::ordered_json::parse(file.toStdString());
                nlohmann::ordered_json context;
                context["messages"] = x.is_array() ? x : x["messages"];
                context["tools"] = x.is_array() ? nlohmann::ordered_json() : x["tools"];
                context["documents"] = nullptr;
                context["add_generation_prompt"] = generation;
                context["bos_token"] = bos;
                context["eos_token"] = eos;
                if (!x.is_array()) context["enable_thinking"] = false;
                cases.push_back(
                    {{"id", std::to_string(n)}, {"template", shape.chat_template}, {"context", context}});
            }
        }
        const QString cases_path = QString::fromStdString(test::temp_dir()) + "/apply_cases.json";
        QFile cf(cases_path);
        QVERIFY(cf.open(QIODevice::WriteOnly));
        cf.write(QByteArray::fromStdString(cases.dump()));
        cf.close();
        QProcess python;
        python.start("python3",
                     {QString::fromStdString(test::source_path("scripts/jinja-reference")), cases_path});
        QVERIFY(python.waitForFinished(60000));
        QVERIFY2(python.exitCode() == 0, python.readAllStandardError().constData());
        const QJsonArray expected = QJsonDocument::fromJson(python.readAllStandardOutput()).array();
        QCOMPARE(expected.size(), qsizetype(outputs.size()));
        for (qsizetype i = 0; i < expected.size(); ++i) {
            QVERIFY2(expected[i].toObject()["ok"].toBool(),
                     qPrintable(expected[i].toObject()["error"].toString()));
            QCOMPARE(outputs[static_cast<size_t>(i)], expected[i].toObject()["output"].toString());
        }
        QVERIFY(outputs[2].contains("get_weather"));  // the tools reached the template
        // A file that is not a conversation fails with the reason, exit status 1, nothing on stdout.
        QProcess bad;
        const QString bad_path = QString::fromStdString(test::temp_dir()) + "/bad.json";
        QFile bf(bad_path);
        QVERIFY(bf.open(QIODevice::WriteOnly));
        bf.write("{\"messages\": 3}");
        bf.close();
        bad.start(LANTERN_CLI_PATH, {"--model", QString::fromStdString(path), "--apply-template", bad_path});
        QVERIFY(bad.waitForFinished(60000));
        QCOMPARE(bad.exitCode(), 1);
        QCOMPARE(bad.readAllStandardOutput(), QByteArray());
        QVERIFY(bad.readAllStandardError().contains("expected a messages array"));
    }

    void cli_perplexity_equals_the_library() {
        const std::string text = test::stories_reference()["greedy_from_bos_text"].toString().toStdString();
        const QString path = QString::fromStdString(test::temp_dir() + "/ppl-text.txt");
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray::fromStdString(text));
        }
        QProcess p;
        p.start(LANTERN_CLI_PATH,
                {"--model", QString::fromStdString(model()), "--perplexity", path, "--ctx", "64"});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const QString out = QString::fromUtf8(p.readAllStandardOutput()).trimmed();
        const QStringList words = out.split(' ');
        QVERIFY2(words.size() > 6 && words[0] == "perplexity", qPrintable(out));
        EngineOptions eo = options();
        eo.max_logit_rows = 64;  // a whole chunk's logits in one step
        auto e = Engine::load(model(), eo);
        PerplexityOptions o;
        o.context = 64;
        const auto r = measure_perplexity(*e, e->tokenizer().encode(text, e->tokenizer().add_bos()), o);
        QVERIFY2(r.chunks >= 3, qPrintable(QString::number(r.chunks)));
        bool number = false;
        const double cli = words[1].toDouble(&number);
        QVERIFY2(number && std::fabs(cli / r.perplexity - 1) < 1e-4,
                 qPrintable(QString("CLI %1, library %2").arg(words[1]).arg(r.perplexity)));
        QVERIFY2(out.contains(
                     QString("over %1 chunks of 64 tokens (%2 scored)").arg(r.chunks).arg(r.scored_tokens)),
                 qPrintable(out));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void temperature_change_applies_from_the_next_token_and_never_before() {
        auto e = Engine::load(model(), options());
        SamplingSettings greedy;
        greedy.temperature = 0;
        greedy.seed = 5;
        greedy.max_new_tokens = 30;
        SettingsSlot g(greedy);
        Run reference = respond(*e, "Once upon a time", g);
        QCOMPARE(reference.tokens.size(), size_t(30));

        const size_t change_at = 10;  // settings change while token 10 is being shown
        SettingsSlot live(greedy);
        Run changed = respond(*e, "Once upon a time", live, [&](size_t index, SettingsSlot& slot) {
            if (index == change_at) {
                SamplingSettings hot = greedy;
                hot.temperature = 50.0f;  // nearly uniform over the vocabulary
                hot.top_k = 0;
                hot.top_p = 1.0f;
                hot.min_p = 0.0f;
                slot.store(hot);
            }
        });
        QCOMPARE(changed.tokens.size(), size_t(30));
        for (size_t i = 0; i <= change_at; ++i)
            QVERIFY2(changed.tokens[i] == reference.tokens[i],
                     qPrintable(QString("token %1 changed before the new settings could apply").arg(i)));
        // With seed 5 the first hot token is drawn from a nearly uniform distribution over 512
        // tokens: it is not the greedy one (checked deterministic for this seed).
        QVERIFY2(changed.tokens[change_at + 1] != reference.tokens[change_at + 1],
                 "the next token after the change was still greedy");
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void stop_string_ends_the_reply_and_is_never_shown() {
        auto ref = test::stories_reference();
        std::string story = ref["greedy_from_bos_text"].toString().toStdString();
        const std::string prompt = "Once upon a time";
        size_t lily = story.find("Lily");
        QVERIFY(story.rfind(prompt, 0) == 0 && lily != std::string::npos);
        std::string expected = story.substr(prompt.size(), lily - prompt.size());

        auto e = Engine::load(model(), options());
        SamplingSettings s;
        s.temperature = 0;
        s.max_new_tokens = 100;
        s.stop = {"Lily"};
        SettingsSlot slot(s);
        Run r = respond(*e, prompt, slot);
        QCOMPARE(r.stats.stop_reason, StopReason::StopString);
        QCOMPARE(r.text, expected);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void restored_conversation_is_rendered_whole_and_reuses_the_prefix_cache() {
        auto e = Engine::load(model(), options());
        std::vector<ChatTurn> turns{
            {"user", "Once upon a time there was a cat"},
            {"assistant", " named Tom. Tom liked to play with his ball in the garden every day."},
            {"user", " One day, the ball rolled away and"}};
        std::vector<ChatMessage> msgs{{ChatRole::User, turns[0].content, {}},
                                      {ChatRole::Assistant, turns[1].content, {}},
                                      {ChatRole::User, turns[2].content, {}},
                                      {ChatRole::User, "Tom ran", {}}};
        const size_t expected = ChatTemplate::for_engine(*e).render(e->tokenizer(), msgs, true).tokens.size();
        SamplingSettings s;
        s.temperature = 0;
        s.max_new_tokens = 8;
        SettingsSlot slot(s);
        auto quiet = [](const TokenEvent&) { return true; };
        ChatSession first(*e);
        first.restore(turns);
        QCOMPARE(first.history().size(), size_t(3));
        TurnStats a = first.respond("Tom ran", slot, quiet);
        QCOMPARE(size_t(a.prompt_tokens), expected);
        QCOMPARE(a.reused_tokens, 0u);
        ChatSession second(*e);
        second.restore(turns);
        TurnStats b = second.respond("Tom ran", slot, quiet);
        QCOMPARE(b.prompt_tokens, a.prompt_tokens);
        QCOMPARE(b.reused_tokens, a.prompt_tokens / 16 * 16 - (a.prompt_tokens % 16 == 0 ? 16 : 0));
        QCOMPARE(first.history().back().content, second.history().back().content);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A KV cache with room for one conversation only (the app's while its API server is off): once
    // the conversation outgrows the context and its oldest turns are dropped, the new prompt starts
    // differently and needs a fresh sequence of nearly the whole context, while the old one holds
    // the rest; it gets the room the old one held, and every reply is the one a roomy cache gives.
    void a_conversation_that_drops_its_oldest_turns_fits_a_cache_of_one_conversation() {
        const std::vector<std::string> lines{"Once upon a time there was a little girl named Lily.",
                                             "She loved to play outside in the park with her friends.",
                                             "One day she saw a big red ball under a tree.",
                                             "She ran to get it, but a small dog took the ball.",
                                             "The dog came back and dropped the ball at her feet.",
                                             "They played together all day and became best friends."};
        SamplingSettings s;
        s.temperature = 0;
        s.max_new_tokens = 24;
        SettingsSlot slot(s);
        auto quiet = [](const TokenEvent&) { return true; };
        auto conversation = [&](uint32_t sequences, uint32_t* dropped, uint32_t* longest) {
            EngineOptions o = options();
            o.context_length = 128;
            o.max_sequences = sequences;
            auto e = Engine::load(model(), o);
            ChatSession session(*e);
            session.set_context_policy(ContextPolicy::DropOldestTurns);
            std::vector<std::string> replies;
            for (const std::string& line : lines) {
                const TurnStats t = session.respond(line, slot, quiet);
                if (t.changed_nothing)
                    replies.push_back("(did not start: " + std::string(stop_reason_name(t.stop_reason)) +
                                      ")");
                else
                    replies.push_back(session.history().back().content);
                *dropped += t.dropped_turns;
                *longest = std::max(*longest, t.prompt_tokens + t.generated_tokens);
            }
            return replies;
        };
        uint32_t dropped = 0, longest = 0, dropped4 = 0, longest4 = 0;
        const auto tight = conversation(1, &dropped, &longest);
        QVERIFY2(dropped > 0, "the conversation outgrew the 128-token context");
        QVERIFY2(longest > 64, qPrintable(QString::number(longest)));  // more than half the pool at once
        const auto wide = conversation(4, &dropped4, &longest4);
        QCOMPARE(tight, wide);
        QCOMPARE(dropped, dropped4);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A reply cut at a token limit and continued is the reply written in one go (greedy): same
    // tokens, same text, and the next turn's prompt comes out the same; a reply reopened from disk
    // (text only) continues too. Continuing with nothing to continue is refused.
    void continued_reply_equals_one_written_in_one_go() {
        auto e = Engine::load(model(), options());
        SamplingSettings s;
        s.temperature = 0;
        s.max_new_tokens = 40;
        SettingsSlot whole_slot(s);
        Run whole = respond(*e, "Once upon a time", whole_slot);
        QCOMPARE(whole.tokens.size(), size_t(40));

        ChatSession session(*e);
        QVERIFY_THROWS_EXCEPTION(Error,
                                 session.continue_reply(whole_slot, [](const TokenEvent&) { return true; }));
        s.max_new_tokens = 15;
        SettingsSlot part_slot(s);
        Run parts;
        const auto collect = [&](const TokenEvent& ev) {
            if (ev.token >= 0) parts.tokens.push_back(ev.token);
            parts.text += ev.text;
            return true;
        };
        TurnStats first = session.respond("Once upon a time", part_slot, collect);
        QCOMPARE(first.stop_reason, StopReason::MaxTokens);
        s.max_new_tokens = 25;
        SettingsSlot rest_slot(s);
        TurnStats rest = session.continue_reply(rest_slot, collect);
        QCOMPARE(rest.generated_tokens, 25u);
        QCOMPARE(rest.computed_tokens, 1u);  // only the last token of the first part was not in the cache yet
        QCOMPARE(parts.tokens, whole.tokens);
        QCOMPARE(parts.text, whole.text);
        QCOMPARE(session.history().size(), size_t(2));
        QCOMPARE(session.history().back().content, whole.text);

        // Reopened from disk: the reply as text, continued from there.
        ChatSession reopened(*e);
        const std::string start = session.history().back().content.substr(0, 30);
        reopened.restore({{"user", "Once upon a time"}, {"assistant", start}});
        std::string more;
        TurnStats r = reopened.continue_reply(rest_slot, [&](const TokenEvent& ev) {
            more += ev.text;
            return true;
        });
        QVERIFY(r.generated_tokens > 0);
        QCOMPARE(reopened.history().back().content, start + more);
        QVERIFY(!more.empty());
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void full_context_stops_or_drops_the_oldest_turns_as_chosen() {
        EngineOptions o = options();
        o.context_length = 96;  // a few turns fill it
        auto e = Engine::load(model(), o);
        SamplingSettings s;
        s.temperature = 0;
        s.max_new_tokens = 20;
        SettingsSlot slot(s);
        auto quiet = [](const TokenEvent&) { return true; };
        const std::string line = "Once upon a time there was a little dog who liked to run";

        // Stop: the turn that no longer fits ends at once with "context_full" and changes nothing:
        // the conversation is the one before it (the caller still has the text), and it says that
        // dropping the oldest turns would have made room.
        ChatSession stop(*e);
        stop.set_context_policy(ContextPolicy::Stop);
        TurnStats st;
        int turns = 0;
        std::vector<ChatTurn> before;
        do {
            before = stop.history();
            st = stop.respond(line, slot, quiet);
            ++turns;
        } while (!(st.stop_reason == StopReason::ContextFull && st.generated_tokens == 0) && turns < 20);
        QCOMPARE(st.stop_reason, StopReason::ContextFull);
        QVERIFY(turns >= 2);
        QCOMPARE(st.dropped_turns, 0u);
        QCOMPARE(st.generated_tokens, 0u);
        QVERIFY(st.changed_nothing);
        QVERIFY(st.would_fit_dropping);
        QVERIFY(st.prompt_tokens + std::min<uint32_t>(64, e->context_length() / 4) > e->context_length());
        QCOMPARE(stop.history().size(), before.size());
        for (size_t i = 0; i < before.size(); ++i) {
            QCOMPARE(stop.history()[i].role, before[i].role);
            QCOMPARE(stop.history()[i].content, before[i].content);
        }
        QCOMPARE(stop.history().back().role, std::string("assistant"));

        // DropOldestTurns: the same conversation keeps going; the oldest turns leave, and it says so.
        ChatSession drop(*e);
        drop.set_context_policy(ContextPolicy::DropOldestTurns);
        uint32_t dropped = 0;
        for (int i = 0; i < turns + 3; ++i) {
            TurnStats d = drop.respond(line, slot, quiet);
            QVERIFY2(d.stop_reason != StopReason::ContextFull || d.generated_tokens > 0,
                     "DropOldestTurns must make room instead of refusing the turn");
            QVERIFY(d.prompt_tokens <= e->context_length());
            dropped += d.dropped_turns;
        }
        QVERIFY2(dropped > 0, "no turn was dropped although the context filled up");
        QCOMPARE(drop.history().front().role, std::string("user"));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Continue is offered only where it can write something (TurnStats::can_continue), and a
    // continuation that cannot start leaves the reply as it was.
    void continue_has_room_only_while_the_context_does() {
        EngineOptions o = options();
        o.context_length = 64;
        auto e = Engine::load(model(), o);
        const uint32_t ctx = e->context_length();
        SamplingSettings s;
        s.temperature = 0;
        s.ignore_eos = true;
        s.max_new_tokens = 20;
        SettingsSlot slot(s);
        auto quiet = [](const TokenEvent&) { return true; };

        ChatSession chat(*e);
        chat.set_context_policy(ContextPolicy::DropOldestTurns);
        TurnStats t = chat.respond("Once upon a time", slot, quiet);
        QCOMPARE(t.stop_reason, StopReason::MaxTokens);
        QVERIFY(t.can_continue);
        QVERIFY(t.can_continue_dropping);

        // More of it until the context is full: each continuation that had room says so first.
        SamplingSettings more = s;
        more.max_new_tokens = 0;
        SettingsSlot more_slot(more);
        TurnStats c = chat.continue_reply(more_slot, quiet);
        QCOMPARE(c.stop_reason, StopReason::ContextFull);
        QVERIFY(c.generated_tokens > 0);
        QVERIFY(t.prompt_tokens + t.generated_tokens + c.generated_tokens >= ctx);
        // A reply that filled the context alone: nothing to continue, nothing to drop.
        QVERIFY(!c.can_continue);
        QVERIFY(!c.can_continue_dropping);
        const std::string whole = chat.history().back().content;
        TurnStats none = chat.continue_reply(more_slot, quiet);
        QCOMPARE(none.stop_reason, StopReason::ContextFull);
        QCOMPARE(none.generated_tokens, 0u);
        QVERIFY(none.changed_nothing);
        QVERIFY(!none.would_fit_dropping);
        QCOMPARE(chat.history().size(), 2u);
        QCOMPARE(chat.history().back().content, whole);

        // A short reply leaves room; Stop with 10 tokens of room still continues (any room does
        // for more of a reply), up to the context's end.
        ChatSession near(*e);
        near.set_context_policy(ContextPolicy::Stop);
        SamplingSettings fill = s;
        TurnStats p = near.respond("Once upon a time", slot, quiet);
        fill.max_new_tokens = static_cast<int>(ctx - p.prompt_tokens - p.generated_tokens - 10);
        SettingsSlot fill_slot(fill);
        TurnStats q = near.continue_reply(fill_slot, quiet);
        QCOMPARE(q.stop_reason, StopReason::MaxTokens);
        QVERIFY2(q.can_continue, "10 tokens of room are room for more of a reply");
        TurnStats r = near.continue_reply(more_slot, quiet);
        QVERIFY(r.generated_tokens > 0 && r.generated_tokens <= 11);
        QCOMPARE(r.stop_reason, StopReason::ContextFull);
        QVERIFY2(!r.changed_nothing, "a reply that filled the context wrote tokens");
        QVERIFY(!r.can_continue);

        // continue_room() says the same without a turn: for the session that wrote them, and for a
        // session given the conversation afterwards (reopened, or another context).
        QVERIFY(!near.continue_room().fits);
        ChatSession reopened(*e);
        reopened.set_context_policy(ContextPolicy::Stop);
        reopened.restore(near.history());
        QVERIFY(!reopened.continue_room().fits && !reopened.continue_room().fits_dropping);
        reopened.restore({near.history()[0], {"assistant", " there was a cat."}});
        QVERIFY(reopened.continue_room().fits);
        reopened.restore({near.history()[0]});  // no reply to continue
        QVERIFY(!reopened.continue_room().fits);
        EngineOptions longer = options();
        longer.context_length = 128;
        auto wide = Engine::load(model(), longer);
        ChatSession roomier(*wide);
        roomier.restore(near.history());
        QVERIFY2(roomier.continue_room().fits, "the reply that filled 64 tokens goes on in 128");
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A long prompt tells how far it is after each chunk, and Stop takes effect between chunks:
    // the engine keeps the chunks done (a later prefill goes on from them, to the same logits),
    // the chat session's turn ends with no token and changes nothing, and sending the message
    // again reuses what was computed and writes what it would have written in one go.
    // measure() says what respond() then does: the same prompt length, the same fit, the same
    // turns dropped; and it changes nothing. An edited message (keep_messages) is measured
    // against the conversation before it.
    void measuring_a_message_predicts_its_turn_and_changes_nothing() {
        EngineOptions o = options();
        o.context_length = 128;
        auto e = Engine::load(model(), o);
        const uint32_t ctx = e->context_length();
        SamplingSettings s;
        s.temperature = 0;
        s.ignore_eos = true;
        s.max_new_tokens = 30;
        SettingsSlot slot(s);
        auto quiet = [](const TokenEvent&) { return true; };
        ChatSession chat(*e);
        chat.set_context_policy(ContextPolicy::Stop);

        MessageFit first = chat.measure("Once upon a time");
        QCOMPARE(first.context, ctx);
        QCOMPARE(first.message_tokens,
                 static_cast<uint32_t>(e->tokenizer().encode("Once upon a time", false).size()));
        QVERIFY(first.fits && first.fits_dropping);
        QCOMPARE(first.dropped_turns, 0u);
        QVERIFY(chat.history().empty());
        TurnStats t = chat.respond("Once upon a time", slot, quiet);
        QCOMPARE(t.prompt_tokens, first.prompt_tokens);

        // The second turn: predicted, then run.
        MessageFit second = chat.measure("The cat sat on the mat");
        QVERIFY(second.fits);
        QCOMPARE(chat.history().size(), 2u);
        TurnStats t2 = chat.respond("The cat sat on the mat", slot, quiet);
        QCOMPARE(t2.prompt_tokens, second.prompt_tokens);
        QVERIFY(second.prompt_tokens >
                first.prompt_tokens + second.message_tokens);  // the whole conversation

        // A message the conversation has no room for under Stop, which dropping would make room for.
        std::string longer;
        for (int i = 0; i < 5; ++i) longer += "The dog ran to the big park. ";
        const MessageFit full = chat.measure(longer);
        QVERIFY2(!full.fits, std::to_string(full.prompt_tokens).c_str());
        QVERIFY(full.fits_dropping);
        TurnStats refused = chat.respond(longer, slot, quiet);
        QVERIFY(refused.changed_nothing);
        QCOMPARE(refused.prompt_tokens, full.prompt_tokens);
        QCOMPARE(refused.would_fit_dropping, full.fits_dropping);
        // Under DropOldestTurns the same message fits, leaving out what the turn then drops.
        chat.set_context_policy(ContextPolicy::DropOldestTurns);
        const MessageFit dropping = chat.measure(longer);
        QVERIFY(dropping.fits && dropping.fits_dropping);
        QVERIFY(dropping.dropped_turns > 0);
        // An edit of the first message: measured against nothing before it.
        const MessageFit edit = chat.measure(longer, 0);
        QVERIFY(edit.fits);
        QCOMPARE(edit.dropped_turns, 0u);
        QVERIFY(edit.prompt_tokens < full.prompt_tokens);  // without the earlier turns
        QCOMPARE(chat.history().size(), 4u);               // measuring changed nothing
        TurnStats dropped = chat.respond(longer, slot, quiet);
        QCOMPARE(dropped.prompt_tokens, dropping.prompt_tokens);
        QCOMPARE(dropped.dropped_turns, dropping.dropped_turns);

        // Longer than the context whatever is dropped.
        std::string huge;
        for (int i = 0; i < 40; ++i) huge += "The dog ran to the big park. ";
        const MessageFit never = chat.measure(huge);
        QVERIFY(!never.fits && !never.fits_dropping);
        QVERIFY(never.prompt_tokens > ctx);
    }

    void a_long_prompt_reports_progress_and_stops_between_chunks() {
        EngineOptions o = options();
        o.max_step_tokens = 16;
        auto e = Engine::load(model(), o);
        std::string text;
        for (int i = 0; i < 8; ++i) text += "The little dog ran to the big park. ";
        const std::vector<int32_t> prompt = e->tokenizer().encode(text, true);
        QVERIFY(prompt.size() > 48);

        // Engine: progress after each chunk but the last; false stops it after the second.
        std::vector<std::pair<uint32_t, uint32_t>> told;
        SequenceId a = e->create_sequence();
        auto none = e->prefill(a, prompt, [&](uint32_t done, uint32_t total) {
            told.emplace_back(done, total);
            return told.size() < 2;
        });
        QVERIFY(none.empty());
        QCOMPARE(told.size(), size_t{2});
        QCOMPARE(told[0], std::make_pair(16u, static_cast<uint32_t>(prompt.size())));
        QCOMPARE(told[1], std::make_pair(32u, static_cast<uint32_t>(prompt.size())));
        QCOMPARE(e->sequence_length(a), 32u);
        QCOMPARE(e->last_computed_tokens(), 32u);  // what it did compute, not what it was given
        auto rest = e->prefill(a, std::span<const int32_t>(prompt).subspan(32));
        auto whole_engine = Engine::load(model(), o);
        SequenceId b = whole_engine->create_sequence();
        auto whole = whole_engine->prefill(b, prompt);
        QCOMPARE(rest.size(), whole.size());
        QVERIFY2(rest == whole,
                 "a prefill stopped and resumed at a chunk boundary computes what one in one go does");
        e->free_sequence(a);

        // ChatSession: the stop flag, set while the prompt runs, ends the turn between chunks
        // (another text: this one's blocks are in the prefix cache now).
        text.clear();
        for (int i = 0; i < 8; ++i) text += "Once upon a time, a cat sat on the mat. ";
        SamplingSettings s;
        s.temperature = 0;
        s.max_new_tokens = 12;
        SettingsSlot slot(s);
        ChatSession chat(*e);
        std::atomic<bool> stop{false};
        uint32_t progress_calls = 0;
        chat.set_prompt_progress([&](uint32_t done, uint32_t total) {
            ++progress_calls;
            QVERIFY(done < total);
            stop.store(true);  // as the Stop button, pressed while the prompt is read
        });
        std::string written;
        TurnStats st = chat.respond(
            text, slot,
            [&](const TokenEvent& ev) {
                written += ev.text;
                return true;
            },
            &stop);
        QCOMPARE(st.stop_reason, StopReason::User);
        QCOMPARE(st.generated_tokens, 0u);
        QVERIFY(st.changed_nothing);
        QCOMPARE(progress_calls, 1u);
        QVERIFY(written.empty());
        QVERIFY2(chat.history().empty(), "a turn stopped during its prompt keeps nothing");

        stop.store(false);
        chat.set_prompt_progress({});
        std::string again;
        TurnStats st2 = chat.respond(
            text, slot,
            [&](const TokenEvent& ev) {
                again += ev.text;
                return true;
            },
            &stop);
        QCOMPARE(st2.stop_reason, StopReason::MaxTokens);
        QVERIFY2(st2.reused_tokens >= 16, "the chunks computed before the stop are reused");
        auto one_go_engine = Engine::load(model(), o);
        ChatSession fresh(*one_go_engine);
        std::string one_go;
        fresh.respond(text, slot, [&](const TokenEvent& ev) {
            one_go += ev.text;
            return true;
        });
        QCOMPARE(again, one_go);

        // A turn that had to drop the oldest turns and was stopped during its prompt keeps them.
        ChatSession full(*e);
        full.set_context_policy(ContextPolicy::DropOldestTurns);
        std::string first, second;  // ~200 and ~250 tokens: each fits, both together do not
        while (e->tokenizer().encode(first, true).size() < 200)
            first += "A bird sang in the tall green tree. ";
        while (e->tokenizer().encode(second, true).size() < 250)
            second += "The sun was warm and the sky was blue. ";
        QVERIFY(e->tokenizer().encode(first, true).size() + e->tokenizer().encode(second, true).size() + 64 >
                e->context_length());
        const TurnStats opened = full.respond(first, slot, [](const TokenEvent&) { return true; });
        QVERIFY2(opened.generated_tokens > 0, std::string(stop_reason_name(opened.stop_reason)).c_str());
        const std::vector<ChatTurn> kept = full.history();
        stop.store(false);
        full.set_prompt_progress([&](uint32_t, uint32_t) { stop.store(true); });
        TurnStats dropped = full.respond(
            second, slot, [](const TokenEvent&) { return true; }, &stop);
        QCOMPARE(dropped.stop_reason, StopReason::User);
        QCOMPARE(dropped.generated_tokens, 0u);
        QCOMPARE(full.history().size(), kept.size());
        QCOMPARE(full.history().front().content, kept.front().content);

        // Regenerate stopped during its prompt: the old reply is gone (the window removed it
        // first) and the conversation ends with the user's turn, which the next Regenerate answers.
        std::string asked;
        while (e->tokenizer().encode(asked, true).size() < 100)
            asked += "Why is the river so wide and so cold? ";
        ChatSession again_chat(*e);
        again_chat.restore({{"user", asked}, {"assistant", "It is."}});
        stop.store(false);
        again_chat.set_prompt_progress([&](uint32_t, uint32_t) { stop.store(true); });
        TurnStats halted = again_chat.regenerate(
            slot, [](const TokenEvent&) { return true; }, &stop);
        QCOMPARE(halted.stop_reason, StopReason::User);
        QCOMPARE(again_chat.history().size(), 1u);
        QCOMPARE(again_chat.history().back().role, std::string("user"));
        stop.store(false);
        again_chat.set_prompt_progress({});
        TurnStats answered = again_chat.regenerate(
            slot, [](const TokenEvent&) { return true; }, &stop);
        QVERIFY(answered.generated_tokens > 0);
        QCOMPARE(again_chat.history().size(), 2u);
        QCOMPARE(again_chat.history().back().role, std::string("assistant"));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void batched_generations_match_each_alone() {
        auto e = Engine::load(model(), options());
        const Tokenizer& tok = e->tokenizer();
        std::vector<std::string> prompts{"Once upon a time", "The dog ran to the park and",
                                         "Tom and Sue wanted to bake a big cake for their mom because"};
        auto request = [&](const std::string& p, std::vector<int32_t>* out) {
            GenerationRequest r;
            r.prompt = tok.encode(p, true);
            r.settings.temperature = 0;
            r.settings.max_new_tokens = 24;
            r.stop_tokens = {tok.eos_id()};
            r.on_token = [out](RequestId, int32_t t) { out->push_back(t); };
            return r;
        };
        std::vector<std::vector<int32_t>> alone(prompts.size()), together(prompts.size());
        for (size_t i = 0; i < prompts.size(); ++i) {
            Scheduler s(*e, 64, 1);
            s.submit(request(prompts[i], &alone[i]));
            s.run();
        }
        // A budget of 6 tokens per step forces chunked prefill of the later prompts while the
        // first one is already decoding.
        Scheduler s(*e, 6, 3);
        for (size_t i = 0; i < prompts.size(); ++i) s.submit(request(prompts[i], &together[i]));
        bool mixed = false;
        SchedulerStepStats st;
        while (s.step(&st)) {
            QVERIFY(st.decode_tokens + st.prefill_tokens <= 6);
            mixed |= st.decode_tokens > 0 && st.prefill_tokens > 0;
        }
        QVERIFY2(mixed, "no step carried decodes and prefill chunks together");
        for (size_t i = 0; i < prompts.size(); ++i) {
            QVERIFY(!alone[i].empty());
            QCOMPARE(together[i], alone[i]);
        }
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // A long prompt arriving while a reply is written is read in chunks beside it: the reply gets
    // its next token in every step (a step holds its decode and at most one chunk of the prompt),
    // and both come out as each would alone.
    void a_long_prompt_does_not_stall_a_reply() {
        auto e = Engine::load(model(), options());
        const Tokenizer& tok = e->tokenizer();
        std::string long_text;
        while (tok.encode(long_text, true).size() < 300)
            long_text += "The little cat sat by the window and looked at the rain. ";
        auto request = [&](const std::vector<int32_t>& prompt, uint32_t n, std::vector<int32_t>* out) {
            GenerationRequest r;
            r.prompt = prompt;
            r.settings.temperature = 0;
            r.settings.max_new_tokens = n;
            r.stop_tokens = {};
            r.on_token = [out](RequestId, int32_t t) { out->push_back(t); };
            return r;
        };
        const auto reply_prompt = tok.encode("Once upon a time", true),
                   long_prompt = tok.encode(long_text, true);
        std::vector<int32_t> reply_alone, long_alone, reply, long_reply;
        {  // (in an engine of their own, so the prompt is not taken from this one's prefix cache)
            auto e2 = Engine::load(model(), options());
            Scheduler s(*e2, 64, 1);
            s.submit(request(reply_prompt, 60, &reply_alone));
            s.run();
            Scheduler s2(*e2, 64, 1);
            s2.submit(request(long_prompt, 4, &long_alone));
            s2.run();
        }
        constexpr uint32_t kBudget = 32;
        Scheduler s(*e, kBudget, 2);
        s.submit(request(reply_prompt, 60, &reply));
        SchedulerStepStats st;
        while (reply.size() < 3) QVERIFY(s.step(&st));
        s.submit(request(long_prompt, 4, &long_reply));
        int beside = 0;
        while (long_reply.empty() && reply.size() < 60) {
            const size_t before = reply.size();
            QVERIFY(s.step(&st));
            QVERIFY(st.decode_tokens + st.prefill_tokens <= kBudget);
            QCOMPARE(reply.size(), before + 1);  // the reply's token came in this step, too
            beside += st.prefill_tokens > 0;
        }
        QVERIFY2(beside >= static_cast<int>(300 / kBudget),
                 qPrintable(QString("the prompt was read in %1 steps").arg(beside)));
        s.run();
        QCOMPARE(reply, reply_alone);
        QCOMPARE(long_reply, long_alone);
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(GenerationTest)
#include "test_generation.moc"
