// TurnController without a window or a model: the worker's side is played by hand (its results
// are fed to the controller's slots, its requests read from the controller's signals). A sent
// message streams into the chat and the store; Regenerate and Edit and Resend keep what they
// replace until the new turn has begun; a turn that wrote nothing is undone without loss; Continue
// adds to the same reply; a failure and a close keep the partial reply.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "chat/ChatModel.h"
#include "chat/ConversationStore.h"
#include "turn/TurnController.h"

namespace {

TokenBatch batch(const QString& text, int32_t token, quint32 position) {
    TokenBatch b;
    b.text = text;
    b.tokens = {token};
    b.stepMs = {1.0};
    b.position = position;
    return b;
}

lantern::TurnStats finished(lantern::StopReason why, uint32_t generated) {
    lantern::TurnStats s;
    s.stop_reason = why;
    s.generated_tokens = generated;
    s.can_continue = true;
    s.can_continue_dropping = true;
    return s;
}

lantern::TurnStats wroteNothing(lantern::StopReason why) {
    lantern::TurnStats s;
    s.stop_reason = why;
    s.changed_nothing = true;
    s.prompt_tokens = 300;
    return s;
}

}  // namespace

class TestTurnController : public QObject {
    Q_OBJECT
private slots:
    void init() {
        dir_ = std::make_unique<QTemporaryDir>();
        store_ = std::make_unique<ConversationStore>(dir_->filePath(QStringLiteral("c.sqlite")));
        QVERIFY2(store_->isOpen(), qPrintable(store_->lastError()));
        chat_ = std::make_unique<ChatModel>();
        turns_ = std::make_unique<TurnController>(chat_.get(), store_.get());
        turns_->setModel(QStringLiteral("tiny"), QStringLiteral("tiny.gguf"), 256);
        turns_->setModelReady(true);
    }
    void cleanup() {
        turns_.reset();
        chat_.reset();
        store_.reset();
        dir_.reset();
    }

    void aSentMessageStreamsIntoTheChatAndTheStore() {
        QSignalSpy sent(turns_.get(), &TurnController::sendRequested);
        QSignalSpy generating(turns_.get(), &TurnController::generatingChanged);
        QVERIFY(turns_->send(QStringLiteral("Once upon a time"), QStringLiteral("Be brief.")));
        QCOMPARE(sent.count(), 1);
        QCOMPARE(sent.first().at(0).toString(), QStringLiteral("Once upon a time"));
        QVERIFY(turns_->generating());
        QCOMPARE(generating.count(), 1);
        QVERIFY(!turns_->send(QStringLiteral("again"), {}));  // one turn at a time
        QCOMPARE(chat_->rowCount(), 2);
        QVERIFY(chat_->message(1).streaming);

        turns_->onTokens(batch(QStringLiteral(" there"), 7, 5));  // the first frame shows at once
        QCOMPARE(chat_->message(1).text, QStringLiteral(" there"));
        turns_->onTokens(batch(QStringLiteral(" was"), 8, 6));                // held for the next frame...
        turns_->onTurnFinished(finished(lantern::StopReason::MaxTokens, 2));  // ...which the end sends
        QVERIFY(!turns_->generating());
        QCOMPARE(chat_->message(1).text, QStringLiteral(" there was"));
        QVERIFY(chat_->message(1).complete);
        QVERIFY(!chat_->message(1).streaming);
        QCOMPARE(chat_->message(1).model, QStringLiteral("tiny"));
        QVERIFY(turns_->canRegenerate());
        QVERIFY(turns_->canContinue());

        const ConversationSummary c = store_->conversation(turns_->conversationId());
        QCOMPARE(c.title, QStringLiteral("Once upon a time"));
        QCOMPARE(c.system_prompt, QStringLiteral("Be brief."));
        QCOMPARE(c.model, QStringLiteral("tiny.gguf"));
        const QVector<StoredMessage> stored = store_->messages(c.id);
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[1].content, QStringLiteral(" there was"));
        QVERIFY(stored[1].complete);
        QVERIFY2(stored[1].details.contains(QStringLiteral("max_tokens")), qPrintable(stored[1].details));
    }

    void regenerateKeepsTheOldReplyAsAnEarlierVersion() {
        sendAndFinish(QStringLiteral("Hi"), QStringLiteral(" old reply"));
        const qint64 id = turns_->conversationId();
        QSignalSpy regenerate(turns_.get(), &TurnController::regenerateRequested);
        QVERIFY(turns_->regenerate());
        QCOMPARE(regenerate.count(), 1);
        QCOMPARE(chat_->rowCount(), 2);
        QVERIFY(chat_->message(1).text.isEmpty());
        QCOMPARE(store_->messages(id)[1].replaces, store_->allMessages(id)[1].id);  // until it begins
        turns_->onTokens(batch(QStringLiteral(" new"), 9, 3));
        turns_->onTurnFinished(finished(lantern::StopReason::EndOfText, 1));
        QCOMPARE(store_->messages(id).size(), 2);
        QCOMPARE(store_->messages(id)[1].content, QStringLiteral(" new"));
        QCOMPARE(store_->allMessages(id).size(), 3);
        QCOMPARE(chat_->message(1).version, 2);
        QCOMPARE(chat_->message(1).versions, 2);

        // ‹: the old reply, and the model is given that conversation; ›: the new one again.
        QSignalSpy restored(turns_.get(), &TurnController::restoreConversationRequested);
        QVERIFY(turns_->showVersion(1, -1));
        QCOMPARE(chat_->message(1).text, QStringLiteral(" old reply"));
        QCOMPARE(chat_->message(1).version, 1);
        QCOMPARE(restored.last().at(1).toStringList(), (QStringList{"Hi", " old reply"}));
        QVERIFY(!turns_->showVersion(1, -1));  // there is none before the first
        QVERIFY(turns_->canRegenerate());
        QVERIFY(turns_->showVersion(1, 1));
        QCOMPARE(chat_->message(1).text, QStringLiteral(" new"));
    }

    void continueGoesOnWithTheVersionShownAndReopensAsChosen() {
        sendAndFinish(QStringLiteral("Hi"), QStringLiteral(" first"));
        QVERIFY(turns_->regenerate());
        turns_->onTokens(batch(QStringLiteral(" second"), 9, 3));
        turns_->onTurnFinished(finished(lantern::StopReason::MaxTokens, 1));
        QVERIFY(turns_->showVersion(1, -1));
        QVERIFY(turns_->canContinue());
        QVERIFY(turns_->continueReply());
        QVERIFY(!turns_->showVersion(1, 1));  // not while a reply is written
        turns_->onTokens(batch(QStringLiteral(" more"), 5, 4));
        turns_->onTurnFinished(finished(lantern::StopReason::MaxTokens, 1));
        QCOMPARE(chat_->message(1).text, QStringLiteral(" first more"));
        QCOMPARE(chat_->message(1).version, 1);
        // Reopened (a restart): the version chosen is the one shown, the other still there.
        const qint64 id = turns_->conversationId();
        TurnController again(chat_.get(), store_.get());
        QVERIFY(again.openConversation(id));
        QCOMPARE(chat_->message(1).text, QStringLiteral(" first more"));
        QCOMPARE(chat_->message(1).versions, 2);
        QVERIFY(again.showVersion(1, 1));
        QCOMPARE(chat_->message(1).text, QStringLiteral(" second"));
    }

    void aRegenerateStoppedBeforeItsFirstTokenPutsTheOldReplyBack() {
        sendAndFinish(QStringLiteral("Hi"), QStringLiteral(" old reply"));
        const qint64 id = turns_->conversationId();
        QSignalSpy undone(turns_.get(), &TurnController::turnUndone);
        QVERIFY(turns_->regenerate());
        turns_->onTurnFinished(wroteNothing(lantern::StopReason::User));
        QCOMPARE(undone.count(), 1);
        QCOMPARE(chat_->rowCount(), 2);
        QCOMPARE(chat_->message(1).text, QStringLiteral(" old reply"));
        QCOMPARE(store_->messages(id).size(), 2);
        QCOMPARE(store_->messages(id)[1].content, QStringLiteral(" old reply"));
        QVERIFY(turns_->canRegenerate());
    }

    void aFirstMessageWithoutRoomGoesBackToTheInputAndLeavesNoConversation() {
        QSignalSpy returned(turns_.get(), &TurnController::inputReturned);
        QVERIFY(turns_->send(QStringLiteral("a very long message"), {}));
        const qint64 id = turns_->conversationId();
        QVERIFY(id >= 0);
        turns_->onTurnFinished(wroteNothing(lantern::StopReason::ContextFull));
        QCOMPARE(returned.count(), 1);
        QCOMPARE(returned.first().at(0).toString(), QStringLiteral("a very long message"));
        QCOMPARE(chat_->rowCount(), 1);  // the notice that says why
        QCOMPARE(chat_->message(0).role, ChatMessage::Role::Notice);
        QVERIFY2(chat_->message(0).text.contains(QStringLiteral("300")), qPrintable(chat_->message(0).text));
        QCOMPARE(turns_->conversationId(), qint64(-1));
        QCOMPARE(store_->conversation(id).id, qint64(-1));
    }

    void editAndResendMakesANewVersionOfTheMessage() {
        sendAndFinish(QStringLiteral("first"), QStringLiteral(" one"));
        sendAndFinish(QStringLiteral("second"), QStringLiteral(" two"));
        const qint64 id = turns_->conversationId();
        QSignalSpy editing(turns_.get(), &TurnController::editStarted);
        QVERIFY(turns_->editMessage(2));
        QCOMPARE(editing.first().at(0).toString(), QStringLiteral("second"));
        QCOMPARE(turns_->messagesKeptByEdit(), 2);
        QVERIFY(turns_->send(QStringLiteral("second, edited"), {}));
        QCOMPARE(chat_->rowCount(), 4);
        QCOMPARE(chat_->message(2).text, QStringLiteral("second, edited"));
        QCOMPARE(store_->allMessages(id).size(), 6);  // the replaced pair stays: the earlier version
        turns_->onTokens(batch(QStringLiteral(" three"), 4, 9));
        turns_->onTurnFinished(finished(lantern::StopReason::EndOfText, 1));
        const QVector<StoredMessage> stored = store_->messages(id);
        QCOMPARE(stored.size(), 4);
        QCOMPARE(stored[2].content, QStringLiteral("second, edited"));
        QCOMPARE(stored[3].content, QStringLiteral(" three"));
        QCOMPARE(chat_->message(2).version, 2);
        QCOMPARE(chat_->message(2).versions, 2);
        // The first version, with the reply it had.
        QVERIFY(turns_->showVersion(2, -1));
        QCOMPARE(chat_->rowCount(), 4);
        QCOMPARE(chat_->message(2).text, QStringLiteral("second"));
        QCOMPARE(chat_->message(3).text, QStringLiteral(" two"));
        QCOMPARE(store_->messages(id)[3].content, QStringLiteral(" two"));
    }

    void continueAddsToTheSameReply() {
        sendAndFinish(QStringLiteral("Tell"), QStringLiteral(" a"));
        QSignalSpy resumed(turns_.get(), &TurnController::continueRequested);
        QVERIFY(turns_->continueReply());
        QCOMPARE(resumed.count(), 1);
        turns_->onTokens(batch(QStringLiteral(" story"), 5, 4));
        turns_->onTurnFinished(finished(lantern::StopReason::MaxTokens, 1));
        QCOMPARE(chat_->rowCount(), 2);
        QCOMPARE(chat_->message(1).text, QStringLiteral(" a story"));
        const StoredMessage reply = store_->messages(turns_->conversationId())[1];
        QCOMPARE(reply.content, QStringLiteral(" a story"));
        QVERIFY2(reply.details.contains(QStringLiteral("continued")), qPrintable(reply.details));
    }

    void aFailureAndAClosedWindowKeepThePartialReply() {
        QSignalSpy failed(turns_.get(), &TurnController::turnFailed);
        QVERIFY(turns_->send(QStringLiteral("one"), {}));
        turns_->onTokens(batch(QStringLiteral(" half"), 3, 2));
        QVERIFY(turns_->onError(QStringLiteral("device lost")));
        QCOMPARE(failed.count(), 1);
        QVERIFY(!turns_->generating());
        QCOMPARE(chat_->message(1).text, QStringLiteral(" half"));
        QVERIFY(!chat_->message(1).complete);
        QCOMPARE(chat_->message(2).role, ChatMessage::Role::Notice);
        QVERIFY(!turns_->onError(QStringLiteral("no turn runs")));

        QVERIFY(turns_->send(QStringLiteral("two"), {}));
        turns_->onTokens(batch(QStringLiteral(" part"), 3, 7));
        turns_->closing();
        const QVector<StoredMessage> stored = store_->messages(turns_->conversationId());
        QCOMPARE(stored.last().content, QStringLiteral(" part"));
        QVERIFY(!stored.last().complete);
    }

    void aTurnKilledDuringItsPromptIsUndoneWhenTheConversationOpens() {
        // The store as a kill leaves it: an edit of "second" began (it names what it replaces)
        // and its reply never got a token.
        const qint64 id = store_->createConversation(QStringLiteral("c"));
        store_->appendMessage(id, QStringLiteral("user"), QStringLiteral("first"));
        store_->appendMessage(id, QStringLiteral("assistant"), QStringLiteral(" one"));
        const qint64 second = store_->appendMessage(id, QStringLiteral("user"), QStringLiteral("second"));
        store_->appendMessage(id, QStringLiteral("assistant"), QStringLiteral(" two"));
        store_->appendMessage(id, QStringLiteral("user"), QStringLiteral("second, edited"), true, {}, {},
                              second);
        store_->appendMessage(id, QStringLiteral("assistant"), QString(), false, {}, {}, -1);
        QSignalSpy editing(turns_.get(), &TurnController::editStarted);
        QSignalSpy restored(turns_.get(), &TurnController::restoreConversationRequested);
        QVERIFY(turns_->openConversation(id));
        QCOMPARE(chat_->rowCount(), 4);
        QCOMPARE(chat_->message(3).text, QStringLiteral(" two"));
        QCOMPARE(editing.count(), 1);
        QCOMPARE(editing.first().at(0).toString(), QStringLiteral("second, edited"));
        QVERIFY(turns_->editing());
        QCOMPARE(store_->messages(id).size(), 4);
        QCOMPARE(restored.last().at(0).toStringList().size(), 4);
        QVERIFY(turns_->canRegenerate());
    }

private:
    void sendAndFinish(const QString& text, const QString& reply) {
        QVERIFY(turns_->send(text, {}));
        turns_->onTokens(batch(reply, 1, 1));
        turns_->onTurnFinished(finished(lantern::StopReason::MaxTokens, 1));
        QVERIFY(!turns_->generating());
    }

    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<ConversationStore> store_;
    std::unique_ptr<ChatModel> chat_;
    std::unique_ptr<TurnController> turns_;
};

QTEST_MAIN(TestTurnController)
#include "test_turn_controller.moc"
