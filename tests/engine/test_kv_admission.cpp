// Continuous batching in a KV cache smaller than its replies at full length (lantern/scheduler.h):
// generations are admitted by free blocks and preempted when a step's tokens do not fit, and each
// reply is still token for token the one it is alone in a cache with room to spare; a reply alone
// without room ends with "context_full"; a share (max_kv_blocks) leaves the rest of the cache to
// a sequence outside the scheduler (the desktop app's chat), which can decode in the replies'
// steps (step_with). On stories260K, greedy.
#include <QTest>

#include <algorithm>
#include <map>
#include <random>

#include "lantern/engine.h"
#include "lantern/error.h"
#include "lantern/scheduler.h"
#include "lantern/tokenizer.h"
#include "test_support.h"

using namespace lantern;

namespace {

constexpr uint32_t kBlock = 16;

EngineOptions options(uint32_t kv_tokens) {
    EngineOptions o = test::validated_engine_options();
    o.context_length = 512;
    o.max_sequences = 4;
    o.max_step_tokens = 64;
    o.kv_block_tokens = kBlock;
    o.kv_tokens = kv_tokens;
    return o;
}

std::string model() {
    return test::shared_path("models/stories260K.gguf");
}

const std::vector<std::string> kPrompts{"Once upon a time", "The dog ran to the park and",
                                        "Tom and Sue wanted to bake a big cake for their mom because",
                                        "Lily saw a bird"};

struct Reply {
    std::vector<int32_t> tokens;
    std::string reason;
    uint32_t admitted = 0;  // times on_admitted was called
};

// Greedy, no stop token: every reply runs to its token limit unless the cache stops it.
GenerationRequest request(const Tokenizer& tok, const std::string& prompt, int max_new, Reply* out) {
    GenerationRequest r;
    r.prompt = tok.encode(prompt, true);
    r.settings.temperature = 0;
    r.settings.max_new_tokens = max_new;
    r.on_token = [out](RequestId, int32_t t) { out->tokens.push_back(t); };
    r.on_finish = [out](RequestId, StopReason why) { out->reason = stop_reason_name(why); };
    r.on_admitted = [out](RequestId, uint32_t) { ++out->admitted; };
    return r;
}

// Each prompt alone, in a cache with room for all of it.
std::vector<Reply> alone(int max_new) {
    auto e = Engine::load(model(), options(0));
    std::vector<Reply> out(kPrompts.size());
    for (size_t i = 0; i < kPrompts.size(); ++i) {
        Scheduler s(*e, 64, 1);
        s.submit(request(e->tokenizer(), kPrompts[i], max_new, &out[i]));
        s.run();
    }
    return out;
}

}  // namespace

class KvAdmissionTest : public QObject {
    Q_OBJECT
private slots:
    void repliesThatOutgrowTheCacheArePreemptedAndStayTheSame() {
        const int n = 60;
        const std::vector<Reply> ref = alone(n);
        // 4 replies of 5-15 prompt tokens + 60 generated need 5 blocks each, 20 together: the
        // cache holds 9, so they cannot all run to the end at once.
        auto e = Engine::load(model(), options(9 * kBlock));
        QCOMPARE(e->kv_stats().total_blocks, 9u);
        Scheduler s(*e, 8, 4);
        std::vector<Reply> got(kPrompts.size());
        for (size_t i = 0; i < kPrompts.size(); ++i)
            s.submit(request(e->tokenizer(), kPrompts[i], n, &got[i]));
        SchedulerStepStats st;
        uint32_t preempted = 0, most_running = 0, waited = 0;
        while (s.step(&st)) {
            preempted += st.preempted;
            waited += st.waiting > 0 ? 1 : 0;
            most_running = std::max(most_running, st.sequences);
            QVERIFY(st.decode_tokens + st.prefill_tokens <= 8);
        }
        QVERIFY2(preempted > 0, "no generation was preempted: the test does not exercise preemption");
        QCOMPARE(uint64_t{preempted}, s.preemptions());
        QVERIFY(waited > 0);
        QVERIFY2(most_running >= 2, "the replies never ran together");
        for (size_t i = 0; i < kPrompts.size(); ++i) {
            QCOMPARE(got[i].reason, std::string("max_tokens"));
            QCOMPARE(got[i].tokens.size(), size_t(n));
            QCOMPARE(got[i].tokens, ref[i].tokens);
            QCOMPARE(got[i].admitted, 1u);  // told once, however often it came back
        }
        const KvStats kv = e->kv_stats();
        QCOMPARE(kv.used_blocks, 0u);
        QCOMPARE(e->kv_free_blocks(),
                 kv.empty_blocks + kv.cached_blocks);  // what the scheduler reads each step
        QVERIFY(kv.cached_blocks > 0);
        // They filled the cache before one gave way (preempted only when a step had no room left).
        QVERIFY2(kv.peak_used_blocks >= 8u, qPrintable(QString::number(kv.peak_used_blocks)));
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void aReplyAloneWithoutRoomEndsWithContextFull() {
        const std::vector<Reply> ref = alone(100);
        auto e = Engine::load(model(), options(4 * kBlock));  // 64 tokens, the context is 512
        Scheduler s(*e, 64, 4);
        Reply got;
        const auto prompt = e->tokenizer().encode(kPrompts[1], true);
        s.submit(request(e->tokenizer(), kPrompts[1], 100, &got));
        s.run();
        QCOMPARE(got.reason, std::string("context_full"));
        // The sequence holds all 64 tokens; the last token sampled is never fed.
        QCOMPARE(got.tokens.size(), 64 - prompt.size() + 1);
        QCOMPARE(got.tokens,
                 std::vector<int32_t>(ref[1].tokens.begin(),
                                      ref[1].tokens.begin() + static_cast<long>(got.tokens.size())));
        QCOMPARE(e->kv_stats().used_blocks, 0u);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void aPromptLargerThanTheCacheIsRefusedAtOnce() {
        auto e = Engine::load(model(), options(4 * kBlock));
        Scheduler s(*e, 64, 4);
        GenerationRequest r;
        r.prompt.assign(65, 300);
        try {
            s.submit(std::move(r));
            QFAIL("a 65-token prompt was taken into a 64-token cache");
        } catch (const Error& err) {
            QCOMPARE(err.code(), ErrorCode::ContextFull);
            QVERIFY2(std::string(err.what()).find("64 tokens") != std::string::npos, err.what());
        }
        QCOMPARE(s.pending(), size_t(0));
        // Within a share too: 2 blocks of the 4.
        Scheduler share(*e, 64, 4, 2);
        GenerationRequest r2;
        r2.prompt.assign(33, 300);
        QVERIFY_THROWS_EXCEPTION(Error, share.submit(std::move(r2)));
    }

    void aShareLeavesTheRestOfTheCacheToTheChat() {
        const int n = 40;
        const std::vector<Reply> ref = alone(n);
        auto e = Engine::load(model(), options(16 * kBlock));
        // The chat: a sequence outside the scheduler, with 8 blocks of its own promised.
        const SequenceId chat = e->create_sequence();
        const auto chat_prompt = e->tokenizer().encode("Once upon a time there was a little girl", true);
        e->prefill(chat, chat_prompt);
        Scheduler s(*e, 8, 3, 8);
        std::vector<Reply> got(3);
        for (size_t i = 0; i < 3; ++i) s.submit(request(e->tokenizer(), kPrompts[i + 1], n, &got[i]));
        uint32_t preempted = 0;
        SchedulerStepStats st;
        while (s.step(&st)) {
            preempted += st.preempted;
            uint32_t replies = 0;
            for (const auto& q : e->kv_stats().sequences)
                if (q.id != chat) replies += q.blocks;
            QVERIFY2(replies <= 8, "the replies took more than their share");
        }
        QVERIFY2(preempted > 0,
                 "the replies fit their share without preemption: the test does not exercise the share");
        for (size_t i = 0; i < 3; ++i) {
            QCOMPARE(got[i].reason, std::string("max_tokens"));
            QCOMPARE(got[i].tokens, ref[i + 1].tokens);
        }
        // The chat's 8 blocks are still there to fill, however full the replies kept the rest.
        std::vector<int32_t> more(8 * kBlock - chat_prompt.size(), 300);
        e->prefill(chat, more);
        QCOMPARE(e->sequence_length(chat), 8 * kBlock);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // The desktop app's chat decodes beside the API's replies (Scheduler::step_with): one engine
    // step carries its token and theirs, within the step's tokens, and every reply, the chat's
    // included, is token for token what it is alone.
    void theChatDecodesInTheRepliesSteps() {
        const int n = 40, chat_new = 90;
        const std::vector<Reply> ref = alone(n);
        const std::string chat_text = "Once upon a time there was a little girl";
        const auto greedy = [](const std::vector<float>& logits) {
            return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        };
        std::vector<int32_t> chat_ref;
        {
            auto e = Engine::load(model(), options(16 * kBlock));
            const SequenceId chat = e->create_sequence();
            int32_t t = greedy(e->prefill(chat, e->tokenizer().encode(chat_text, true)));
            for (int i = 0; i < chat_new; ++i) {
                chat_ref.push_back(t);
                StepItem item{chat, {t}, true, false};
                t = greedy(e->step(std::span<const StepItem>(&item, 1))[0]);
            }
        }

        auto e = Engine::load(model(), options(16 * kBlock));
        const SequenceId chat = e->create_sequence();
        int32_t t = greedy(e->prefill(chat, e->tokenizer().encode(chat_text, true)));
        Scheduler s(*e, 8, 3, 8);
        std::vector<Reply> got(3);
        for (size_t i = 0; i < 3; ++i) s.submit(request(e->tokenizer(), kPrompts[i + 1], n, &got[i]));
        // An item that wants no logits is refused: its caller would have nothing to sample from.
        QVERIFY_THROWS_EXCEPTION(Error, [&] {
            std::vector<float> none;
            s.step_with(StepItem{chat, {t}, false, false}, none);
        }());
        QCOMPARE(e->sequence_length(chat), e->tokenizer().encode(chat_text, true).size());

        constexpr uint32_t kStepTokens = 6;  // fewer than the scheduler's 8: the caller's bound holds
        std::vector<int32_t> chat_got;
        uint32_t shared = 0, alone_steps = 0, prefill_beside = 0;
        SchedulerStepStats st;
        std::vector<float> logits;
        for (int i = 0; i < chat_new; ++i) {
            chat_got.push_back(t);
            const bool replies = s.pending() > 0;
            QVERIFY(s.step_with(StepItem{chat, {t}, true, false}, logits, kStepTokens, &st));
            QCOMPARE(st.outside_tokens, 1u);
            QVERIFY2(st.decode_tokens + st.prefill_tokens + st.outside_tokens <= kStepTokens,
                     qPrintable(QString("%1 + %2 + 1").arg(st.decode_tokens).arg(st.prefill_tokens)));
            shared += st.sequences > 0 ? 1 : 0;
            prefill_beside += st.prefill_tokens > 0 ? 1 : 0;
            if (!replies) {
                ++alone_steps;  // runs with no generation pending too
                QCOMPARE(st.sequences, 0u);
            }
            QCOMPARE(logits.size(), size_t(e->model().vocab));
            t = greedy(logits);
        }
        QCOMPARE(s.pending(), size_t(0));
        QVERIFY2(shared >= uint32_t(n), "the replies did not decode in the chat's steps");
        QVERIFY2(prefill_beside > 0, "no prompt chunk ran beside the chat's token");
        QVERIFY2(alone_steps > 0, "the chat never stepped after the replies ended: raise chat_new");
        QCOMPARE(chat_got, chat_ref);
        for (size_t i = 0; i < 3; ++i) {
            QCOMPARE(got[i].reason, std::string("max_tokens"));
            QCOMPARE(got[i].tokens, ref[i + 1].tokens);
        }
        QCOMPARE(s.step_with(StepItem{chat, {t}, true, false}, logits), true);
        QCOMPARE(e->sequence_length(chat), e->tokenizer().encode(chat_text, true).size() + chat_new + 1);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    void aPreemptedReplyCanBeCancelledWhileItWaits() {
        auto e = Engine::load(model(), options(6 * kBlock));
        Scheduler s(*e, 8, 4);
        std::vector<Reply> got(3);
        std::vector<RequestId> ids;
        for (size_t i = 0; i < 3; ++i)
            ids.push_back(s.submit(request(e->tokenizer(), kPrompts[i], 80, &got[i])));
        SchedulerStepStats st;
        bool cancelled = false;
        while (s.step(&st)) {
            if (!cancelled && st.preempted > 0) {
                // Preempted: the last admitted, which had generated and now waits for room.
                QVERIFY(!got[2].tokens.empty());
                QVERIFY(st.waiting > 0);
                s.cancel(ids.back());
                cancelled = true;
            }
        }
        QVERIFY(cancelled);
        QCOMPARE(got[2].reason, std::string("cancelled"));
        QCOMPARE(e->kv_stats().used_blocks, 0u);
        LANTERN_VERIFY_NO_VALIDATION();
    }

    // Random mixes (fixed seeds): caches (or shares of one) of 6-12 blocks, step budgets of 3-16
    // tokens, 1-4 replies at once, prompts of 1-40 tokens, 1-50 new tokens, one reply cancelled at
    // a random step.
    // Every reply alone fits the cache (at most 90 tokens, 6 blocks), so each must end as it does
    // alone, with its tokens; the cancelled one with a start of them; nothing left held.
    void randomMixesEndAsEachAloneDoes() {
        auto roomy = Engine::load(model(), options(0));
        const int32_t eos = roomy->tokenizer().eos_id();
        std::mt19937 rng(20261204);
        const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
        uint64_t preempted = 0;
        for (int round = 0; round < 6; ++round) {
            struct Case {
                GenerationRequest req;
                Reply alone, got;
            };
            std::vector<Case> cases(static_cast<size_t>(pick(3, 6)));
            for (auto& c : cases) {
                c.req.prompt.push_back(1);
                for (int i = pick(0, 39); i > 0; --i) c.req.prompt.push_back(pick(3, 500));
                c.req.settings.temperature = 0;
                c.req.settings.max_new_tokens = pick(1, 50);
                c.req.stop_tokens = {eos};
                Scheduler s(*roomy, 64, 1);
                GenerationRequest r = c.req;
                r.on_token = [&c](RequestId, int32_t t) { c.alone.tokens.push_back(t); };
                r.on_finish = [&c](RequestId, StopReason why) { c.alone.reason = stop_reason_name(why); };
                s.submit(std::move(r));
                s.run();
            }
            // Odd rounds: a share of the cache, beside a sequence outside holding 4 blocks of its own.
            const uint32_t blocks = static_cast<uint32_t>(pick(6, 12)), outside = round % 2 ? 4 : 0;
            auto e = Engine::load(model(), options((blocks + outside) * kBlock));
            if (outside) e->prefill(e->create_sequence(), std::vector<int32_t>(outside * kBlock, 7));
            Scheduler s(*e, static_cast<uint32_t>(pick(3, 16)), static_cast<uint32_t>(pick(1, 4)),
                        outside ? blocks : 0);
            std::vector<RequestId> ids;
            for (auto& c : cases) {
                GenerationRequest r = c.req;
                r.on_token = [&c](RequestId, int32_t t) { c.got.tokens.push_back(t); };
                r.on_finish = [&c](RequestId, StopReason why) { c.got.reason = stop_reason_name(why); };
                ids.push_back(s.submit(std::move(r)));
            }
            const size_t cancelled = static_cast<size_t>(pick(0, static_cast<int>(cases.size()) - 1));
            const int cancel_at = pick(0, 40);
            for (int step = 0; s.step(); ++step) {
                if (step == cancel_at) s.cancel(ids[cancelled]);
                QVERIFY2(step < 5000, "the scheduler does not finish");
            }
            preempted += s.preemptions();
            for (size_t i = 0; i < cases.size(); ++i) {
                const auto& c = cases[i];
                const QString what =
                    QStringLiteral("round %1, reply %2 of %3 (%4 prompt tokens, %5 new), %6 blocks")
                        .arg(round)
                        .arg(i)
                        .arg(cases.size())
                        .arg(c.req.prompt.size())
                        .arg(c.req.settings.max_new_tokens)
                        .arg(blocks);
                if (c.got.reason == "cancelled") {
                    QVERIFY2(i == cancelled, qPrintable(what));
                    QVERIFY2(c.got.tokens.size() <= c.alone.tokens.size() &&
                                 std::equal(c.got.tokens.begin(), c.got.tokens.end(), c.alone.tokens.begin()),
                             qPrintable(what));
                    continue;
                }
                QVERIFY2(c.got.reason == c.alone.reason,
                         qPrintable(what + ": " + QString::fromStdString(c.got.reason)));
                QVERIFY2(c.got.tokens == c.alone.tokens, qPrintable(what));
            }
            QCOMPARE(e->kv_stats().used_blocks, outside);
        }
        QVERIFY2(preempted > 0, "no mix preempted a reply");
        LANTERN_VERIFY_NO_VALIDATION();
    }
};

QTEST_APPLESS_MAIN(KvAdmissionTest)
#include "test_kv_admission.moc"
