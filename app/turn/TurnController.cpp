#include "turn/TurnController.h"

#include <QDateTime>
#include <QDir>
#include <QSaveFile>
#include <algorithm>

#include "Format.h"
#include "chat/Export.h"
#include "chat/ReplyDetails.h"

namespace {

QString conversationTitleFrom(const QString& text) {
    QString title = text.simplified();
    if (title.size() > 48) title = title.left(47) + QChar(0x2026);
    return title;
}

bool inConversation(const ChatMessage& m) {
    return m.role == ChatMessage::Role::User || m.role == ChatMessage::Role::Assistant;
}

}  // namespace

TurnController::TurnController(ChatModel* chat, ConversationStore* store, QObject* parent)
    : QObject(parent), chat_(chat), store_(store) {
    partialSaveTimer_.setInterval(400);
    connect(&partialSaveTimer_, &QTimer::timeout, this, &TurnController::savePartialReply);
    connect(&throttle_, &StreamThrottle::frame, this, &TurnController::showFrame);
}

// ---------------------------------------------------------------------------------------------
// The model

void TurnController::setModel(const QString& name, const QString& fileName, uint32_t contextLength) {
    modelName_ = name;
    modelFile_ = fileName;
    contextLength_ = contextLength;
    if (conversationId_ >= 0) store_->setConversationModel(conversationId_, fileName);
    if (chat_->rowCount() > 0) restoreConversationToModel();
}

void TurnController::modelLeaving() {
    canRegenerate_ = false;
    emit actionsChanged();
}

void TurnController::setDropOldestTurns(bool on) {
    dropOldestTurns_ = on;
    emit actionsChanged();  // dropping may make the room Continue needs
}

bool TurnController::canContinue() const {
    const int row = continuableRow();
    return canSend() && canRegenerate_ && row >= 0 && !continueBlockedByRoom();
}

bool TurnController::continueBlockedByRoom() const {
    const int row = continuableRow();
    if (row < 0) return false;
    const ChatMessage& m = chat_->message(row);
    return !(m.roomToContinue || (dropOldestTurns_ && m.roomToContinueDropping));
}

int TurnController::messagesKeptByEdit() const {
    if (editingRow_ < 0) return -1;
    int keep = 0;
    for (int row = 0; row < editingRow_ && row < chat_->rowCount(); ++row)
        if (inConversation(chat_->message(row))) ++keep;
    return keep;
}

int TurnController::continuableRow() const {
    for (int row = chat_->rowCount() - 1; row >= 0; --row) {
        const ChatMessage& m = chat_->message(row);
        if (m.role == ChatMessage::Role::Notice) continue;  // notices are not part of the conversation
        return m.role == ChatMessage::Role::Assistant && !m.text.isEmpty() ? row : -1;
    }
    return -1;
}

void TurnController::onContinueRoom(bool fits, bool fitsDropping) {
    // For the conversation just restored: a reply that filled a shorter context may go on in a
    // longer one, one reopened from disk may have no room left.
    const int row = continuableRow();
    if (row < 0) return;
    chat_->setRoomToContinue(row, fits, fitsDropping);
    emit actionsChanged();
}

// ---------------------------------------------------------------------------------------------
// Conversations

void TurnController::newConversation() {
    if (generating_) return;
    cancelEdit();
    conversationId_ = -1;
    emit conversationIdChanged(-1);
    chat_->clear();
    canRegenerate_ = false;
    emit resetConversationRequested();
    emit actionsChanged();
    emit measureInvalidated();
}

bool TurnController::openConversation(qint64 id) {
    if (generating_) return false;
    const ConversationSummary summary = store_->conversation(id);
    if (summary.id < 0) return false;
    cancelEdit();
    conversationId_ = id;
    emit conversationIdChanged(id);
    int editRow = -1;
    QString editText;
    showStoredPath(withoutTurnThatNeverBegan(id, editRow, editText));
    emit conversationOpened(summary.system_prompt);
    emit systemPromptChanged(summary.system_prompt);
    restoreConversationToModel();
    if (editRow >= 0) startEditing(editRow, editText);  // back where the user was: editing it
    emit actionsChanged();
    return true;
}

void TurnController::setSystemPrompt(const QString& text) {
    if (conversationId_ >= 0) store_->setConversationSystemPrompt(conversationId_, text);
    emit systemPromptChanged(text);
    emit measureInvalidated();
}

void TurnController::restoreConversationToModel() {
    QStringList roles, contents;
    for (int row = 0; row < chat_->rowCount(); ++row) {
        const ChatMessage& m = chat_->message(row);
        if (!inConversation(m)) continue;
        // The model gets the whole conversation again; the next turn drops what does not fit.
        chat_->setOutOfContext(row, false);
        roles << ChatModel::roleName(m.role);
        contents << m.text;
    }
    emit restoreConversationRequested(roles, contents);
    // The model's conversation now ends with the last reply, if there is one: it can be
    // regenerated or continued, by whichever model is loaded. One that ends with the user's turn
    // (its reply was never begun: the app was killed first) gets that reply from Regenerate.
    int last = chat_->rowCount() - 1;
    while (last >= 0 && chat_->message(last).role == ChatMessage::Role::Notice) --last;
    canRegenerate_ =
        continuableRow() >= 0 || (last >= 0 && chat_->message(last).role == ChatMessage::Role::User);
    emit measureInvalidated();  // the message being written joins another conversation
}

void TurnController::showStoredPath(const QVector<StoredMessage>& path) {
    QVector<ChatMessage> messages;
    for (const StoredMessage& m : path) {
        ChatMessage msg;
        msg.role = ChatModel::roleFromName(m.role);
        msg.text = m.content;
        msg.complete = m.complete;
        msg.details = m.details;
        msg.model = m.model;
        msg.store_id = m.id;
        msg.version = m.version;
        msg.versions = m.versions;
        messages.push_back(msg);
    }
    chat_->setMessages(messages);
}

void TurnController::refreshVersions() {
    if (conversationId_ < 0) return;
    QHash<qint64, QPair<int, int>> versions;
    for (const StoredMessage& m : store_->messages(conversationId_))
        versions.insert(m.id, {m.version, m.versions});
    for (int row = 0; row < chat_->rowCount(); ++row) {
        const auto it = versions.constFind(chat_->message(row).store_id);
        if (it != versions.constEnd()) chat_->setVersion(row, it->first, it->second);
    }
}

bool TurnController::showVersion(int row, int step) {
    if (generating_ || conversationId_ < 0 || row < 0 || row >= chat_->rowCount()) return false;
    const qint64 target = store_->versionBeside(chat_->message(row).store_id, step);
    if (target < 0 || !store_->chooseVersion(conversationId_, target)) return false;
    cancelEdit();
    showStoredPath(store_->messages(conversationId_));
    // The model's conversation follows the version shown; the KV prefix cache still holds what
    // it computed of this path before, so the next turn reuses it (the KV panel says how much).
    restoreConversationToModel();
    if (row < chat_->rowCount()) {
        const ChatMessage& m = chat_->message(row);
        emit statusMessage(tr("Version %1 of %2 of this message; the conversation below follows it.")
                               .arg(m.version)
                               .arg(m.versions),
                           6000);
    }
    emit versionShown(row);
    emit actionsChanged();
    emit conversationsChanged();
    return true;
}

QVector<StoredMessage> TurnController::withoutTurnThatNeverBegan(qint64 conversationId, int& editRow,
                                                                 QString& editText) {
    // A turn that never began (the app was killed while its prompt was read) left its messages in
    // the store as a new version of what they were to replace: they go (the path is back on the
    // version they replaced), and an edit's text is back in the input.
    editRow = -1;
    QVector<StoredMessage> out = store_->messages(conversationId);
    const QVector<StoredMessage> all = store_->allMessages(conversationId);
    for (int i = 0; i < out.size(); ++i) {
        if (out[i].replaces < 0) continue;
        const StoredMessage turn = out[i];
        const bool named = std::any_of(all.begin(), all.end(),
                                       [&](const StoredMessage& m) { return m.id == turn.replaces; });
        if (!named) {  // what it named is gone some other way: nothing to undo, an ordinary message
            store_->completeReplacement(turn.id);
            out[i].replaces = -1;
            continue;
        }
        store_->deleteMessage(turn.id);  // with what followed it
        out = store_->messages(conversationId);
        if (turn.role == QStringLiteral("user")) {
            for (int j = 0; j < out.size(); ++j)
                if (out[j].id == turn.replaces) editRow = j;
            if (editRow >= 0) editText = turn.content;
        }
        break;
    }
    // A reply killed before its first token is an empty, unfinished row: nothing to show. The
    // conversation then ends with the user's turn, which Regenerate answers.
    while (!out.isEmpty() && out.last().role == QStringLiteral("assistant") && !out.last().complete &&
           out.last().content.isEmpty()) {
        store_->deleteMessage(out.last().id);
        out.removeLast();
    }
    return out;
}

bool TurnController::exportMarkdown(const QString& path, const QString& systemPrompt, QString* error) const {
    ExportHeader header;
    const ConversationSummary summary =
        conversationId_ >= 0 ? store_->conversation(conversationId_) : ConversationSummary{};
    header.title = summary.title;
    header.systemPrompt = systemPrompt;
    header.modelFile = summary.model;
    header.exported = QDateTime::currentDateTime();
    QVector<ChatMessage> messages;
    for (int row = 0; row < chat_->rowCount(); ++row) messages.push_back(chat_->message(row));
    // Written to a temporary file and renamed into place: an existing file is never left half written.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text) ||
        file.write(conversationMarkdown(header, messages).toUtf8()) < 0 || !file.commit()) {
        if (error)
            *error = tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// Starting turns

void TurnController::startEditing(int row, const QString& text) {
    editingRow_ = row;
    emit editStarted(text);
    emit statusMessage(
        tr("Editing a message: sending makes a new version of it, and the earlier one stays (‹ › switches "
           "between them; Esc cancels)."),
        0);
    emit measureInvalidated();
}

bool TurnController::editMessage(int row) {
    if (generating_ || row < 0 || row >= chat_->rowCount() ||
        chat_->message(row).role != ChatMessage::Role::User)
        return false;
    startEditing(row, chat_->message(row).text);
    return true;
}

bool TurnController::cancelEdit() {
    if (editingRow_ < 0) return false;
    editingRow_ = -1;
    emit editCancelled();
    emit measureInvalidated();
    return true;
}

bool TurnController::send(const QString& text, const QString& systemPrompt) {
    if (text.isEmpty() || !canSend()) return false;
    if (editingRow_ >= 0) {
        // The edited message and everything after it go, from the screen, the store and the
        // model's view of the conversation; the new message continues from what stays. They stay
        // in the store until the new turn has begun (setAsideFrom).
        const int row = std::min(editingRow_, chat_->rowCount());
        editingRow_ = -1;
        emit statusMessage(QString(), 0);
        setAsideFrom(row, true);
        restoreConversationToModel();
    }
    if (conversationId_ < 0) {
        conversationId_ = store_->createConversation(conversationTitleFrom(text), systemPrompt, modelFile_);
        emit conversationIdChanged(conversationId_);
    }
    ChatMessage user;
    user.role = ChatMessage::Role::User;
    user.text = text;
    // An edit names the first message it replaces until its turn has begun (commitReplacement),
    // so a kill before then is undone when the conversation is opened again.
    const qint64 replaces = replaced_.row >= 0 ? replaced_.firstStoreId() : -1;
    user.store_id =
        store_->appendMessage(conversationId_, QStringLiteral("user"), text, true, {}, {}, replaces);
    if (replaces >= 0) replaced_.by = user.store_id;
    chat_->append(user);
    turn_ = Turn::Send;
    sentText_ = text;
    beginAssistantReply();
    emit sendRequested(text);
    emit conversationsChanged();
    return true;
}

bool TurnController::regenerate() {
    if (!canRegenerate()) return false;
    // The reply that ends the conversation goes; a conversation that ends with the user's turn (a
    // regenerate stopped during its prompt) gets the reply it lacks.
    int row = chat_->rowCount() - 1;
    while (row >= 0 && chat_->message(row).role == ChatMessage::Role::Notice) --row;
    if (row < 0) return false;
    if (chat_->message(row).role == ChatMessage::Role::Assistant)
        setAsideFrom(row, false);  // with the notices about it; stored until the new reply begins
    else if (chat_->message(row).role != ChatMessage::Role::User)
        return false;
    turn_ = Turn::Regenerate;
    beginAssistantReply(replaced_.row >= 0 ? replaced_.firstStoreId() : -1);
    emit regenerateRequested();
    return true;
}

bool TurnController::continueReply() {
    const int row = continuableRow();
    if (!canSend() || row < 0) return false;
    const ChatMessage& reply = chat_->message(row);
    continuedDetails_ = reply.details.isNull() ? QStringLiteral("") : reply.details;
    continuedComplete_ = reply.complete;
    turn_ = Turn::Continue;
    chat_->resume(row);
    startStreaming(row, reply.store_id, reply.text);
    emit continueRequested();
    return true;
}

void TurnController::beginAssistantReply(qint64 replaces) {
    continuedDetails_ = QString();
    ChatMessage reply;
    reply.role = ChatMessage::Role::Assistant;
    reply.streaming = true;
    reply.complete = false;
    reply.model = modelName_;
    if (conversationId_ >= 0)
        reply.store_id = store_->appendMessage(conversationId_, QStringLiteral("assistant"), QString(), false,
                                               QString(), reply.model, replaces);
    if (replaces >= 0) replaced_.by = reply.store_id;
    startStreaming(chat_->append(reply), reply.store_id, QString());
}

void TurnController::startStreaming(int row, qint64 storeId, const QString& textSoFar) {
    streamingRow_ = row;
    streamingStoreId_ = storeId;
    streamingText_ = textSoFar;
    streamingTokens_ = 0;
    throttle_.restart();  // the first token shows at once
    canRegenerate_ = false;
    partialSaveTimer_.start();
    generating_ = true;
    emit turnStarted();
    emit generatingChanged(true);
    emit actionsChanged();
}

// ---------------------------------------------------------------------------------------------
// Streaming

void TurnController::onTokens(const TokenBatch& batch) {
    if (!generating_ || streamingRow_ < 0) return;
    streamingText_ += batch.text;
    if (!batch.tokens.empty()) {
        commitReplacement();  // the turn has begun: what it replaces leaves the store
        streamingTokens_ += static_cast<int>(batch.tokens.size());
    }
    throttle_.add(batch);
}

void TurnController::showFrame(const StreamFrame& frame) {
    if (streamingRow_ < 0) return;
    if (!frame.text.isEmpty()) chat_->appendToMessage(streamingRow_, frame.text);
    if (!frame.stepMs.empty()) emit this->frame(frame);
}

void TurnController::savePartialReply() {
    if (streamingStoreId_ >= 0) store_->updateMessage(streamingStoreId_, streamingText_, false);
}

void TurnController::endAssistantReply(bool complete, const QString& details) {
    throttle_.flush();  // what the last frame held back goes in before the reply ends
    partialSaveTimer_.stop();
    if (streamingRow_ >= 0) {
        chat_->setDetails(streamingRow_, details);
        chat_->finish(streamingRow_, complete);
    }
    if (streamingStoreId_ >= 0) store_->updateMessage(streamingStoreId_, streamingText_, complete, details);
    streamingRow_ = -1;
    streamingStoreId_ = -1;
    emit replyEnded();
    emit conversationsChanged();
}

void TurnController::endTurn() {
    generating_ = false;
    emit generatingChanged(false);
    emit actionsChanged();
}

// ---------------------------------------------------------------------------------------------
// Ending turns

void TurnController::onTurnFinished(const lantern::TurnStats& stats) {
    if (!generating_) return;
    if (stats.changed_nothing) {
        undoTurnThatWroteNothing(stats);
        return;
    }
    commitReplacement();
    reply_details::Part part;
    part.tokens = static_cast<qint64>(stats.generated_tokens);
    part.tokensPerSecond = stats.decode_tokens_per_s;
    part.firstTokenMs = stats.ttft_ms;
    part.stopReason = QString::fromUtf8(lantern::stop_reason_name(stats.stop_reason));
    part.besideApi = std::min<qint64>(replySharedTokens_, part.tokens);
    replySharedTokens_ = 0;
    if (!continuedDetails_.isNull()) {
        // A continued reply keeps what its first part said; the continuation adds its own figures.
        const ChatMessage& reply = chat_->message(streamingRow_);
        part.continued = true;
        if (!reply.model.isEmpty() && reply.model != modelName_) part.continuedBy = modelName_;
    }
    const QString details = reply_details::append(continuedDetails_, part);
    continuedDetails_ = QString();
    chat_->setRoomToContinue(streamingRow_, stats.can_continue, stats.can_continue_dropping);
    endAssistantReply(true, details);
    emit turnFinished(stats);
    canRegenerate_ = true;
    if (stats.dropped_turns > 0) {
        // The session dropped its oldest messages: the same ones, in order, of those on screen
        // that it still held.
        uint32_t left = stats.dropped_turns;
        for (int row = 0; row < chat_->rowCount() && left > 0; ++row) {
            const ChatMessage& m = chat_->message(row);
            if (!inConversation(m) || m.outOfContext) continue;
            chat_->setOutOfContext(row, true);
            --left;
        }
        addNotice(tr("%n earlier turn(s) were dropped to make room in the context.", nullptr,
                     static_cast<int>(stats.dropped_turns)));
    }
    if (stats.stop_reason == lantern::StopReason::ContextFull)
        addNotice(
            dropOldestTurns_
                ? tr("The reply filled the context. Your next message makes room by dropping the oldest "
                     "turns.")
                : tr("The context is full. Start a new chat, or turn on File > When the Context Is Full, "
                     "Drop the Oldest Turns."));
    endTurn();
}

// A turn that had no room in the context (TurnStats::would_fit_dropping), or that was stopped
// while its prompt was read, changed nothing in the model's conversation: the screen and the store
// go back to how they were, a sent message goes back into the input, and (no room) a notice says
// why and what would help.
void TurnController::undoTurnThatWroteNothing(const lantern::TurnStats& stats) {
    const int row = streamingRow_;
    const bool stopped = stats.stop_reason == lantern::StopReason::User;
    const QString fix = stats.would_fit_dropping ? tr("Turn on File > When the Context Is Full, Drop the "
                                                      "Oldest Turns to make room, or start a new chat.")
                                                 : QString();
    emit turnUndone();  // it wrote nothing: the last reply's figures stay
    if (turn_ == Turn::Continue) {
        // The reply as it was: its text, details and completeness.
        endAssistantReply(continuedComplete_, continuedDetails_);
        continuedDetails_ = QString();
        canRegenerate_ = true;
        if (!stopped) {
            chat_->setRoomToContinue(row, false, stats.would_fit_dropping);
            // (Whole sentences with placeholders, so that each language joins them its own way.)
            addNotice(tr("There is no room left in the context to continue this reply. %1")
                          .arg(fix.isEmpty() ? tr("Start a new chat to go on.") : fix));
        }
        endTurn();
        return;
    }
    // The empty reply goes, from the screen and the store.
    throttle_.clear();
    partialSaveTimer_.stop();
    if (streamingStoreId_ >= 0) store_->deleteMessage(streamingStoreId_);
    if (row >= 0) chat_->removeMessage(row);
    streamingRow_ = -1;
    streamingStoreId_ = -1;
    const QString size =
        tr("The conversation would be %1 tokens long; the context holds %2, and a reply needs room too.")
            .arg(display::count(stats.prompt_tokens), display::count(contextLength_));
    if (turn_ == Turn::Send) {
        // So does the message: the model's conversation never took it, and it goes back into the
        // input to be shortened, sent again (what was computed of it is reused) or elsewhere.
        const int user = chat_->lastRow(ChatMessage::Role::User);
        if (user >= 0 && chat_->message(user).text == sentText_) {
            if (chat_->message(user).store_id >= 0) store_->deleteMessage(chat_->message(user).store_id);
            chat_->removeMessage(user);
        }
        undoReplacement();  // an edited message and what followed it come back
        emit inputReturned(sentText_);
        bool anyStored = false;  // (notices are not stored)
        for (int r = 0; r < chat_->rowCount() && !anyStored; ++r) anyStored = chat_->message(r).store_id >= 0;
        if (conversationId_ >= 0 && !anyStored) {  // it was the conversation's first message
            store_->deleteConversation(conversationId_);
            conversationId_ = -1;
            emit conversationIdChanged(-1);
        }
        canRegenerate_ = continuableRow() >= 0;
        if (stopped)
            emit statusMessage(tr("Stopped before the reply began: your message is back in the input."),
                               8000);
        else
            addNotice(tr("This message does not fit in the context. %1 %2")
                          .arg(size, fix.isEmpty() ? tr("Shorten it, or start a new chat.") : fix));
    } else {
        undoReplacement();  // the reply it was to replace comes back
        canRegenerate_ =
            true;  // (if none: the conversation ends with the user's turn, which Regenerate answers)
        if (!stopped)
            addNotice(tr("There is no room left in the context for a new reply. %1 %2")
                          .arg(size, fix.isEmpty() ? tr("Start a new chat to go on.") : fix));
    }
    emit conversationsChanged();
    endTurn();
}

bool TurnController::onError(const QString& message, reply_details::Ending ending) {
    if (!generating_) return false;
    // A continued reply keeps what its first part said.
    commitReplacement();  // the failed reply stays on screen, so the store matches it
    endAssistantReply(false, reply_details::append(continuedDetails_, {.ending = ending}));
    continuedDetails_ = QString();
    canRegenerate_ = false;
    endTurn();
    addNotice(message);
    emit turnFailed(message);
    return true;
}

void TurnController::onModelUnloaded() {
    if (generating_) {
        commitReplacement();  // the reply stays on screen as far as it got, so the store matches it
        endAssistantReply(
            false, reply_details::append(continuedDetails_, {.ending = reply_details::Ending::DeviceLost}));
        continuedDetails_ = QString();
        generating_ = false;
        emit generatingChanged(false);
    }
    modelLeaving();
}

void TurnController::closing() {
    if (!generating_) return;
    // Keep what was generated so far: stored as an interrupted reply.
    commitReplacement();  // the store keeps what the screen shows
    endAssistantReply(false,
                      reply_details::append(continuedDetails_, {.ending = reply_details::Ending::AppClosed}));
    continuedDetails_ = QString();
}

void TurnController::addNotice(const QString& text) {
    ChatMessage notice;
    notice.role = ChatMessage::Role::Notice;
    notice.text = text;
    chat_->append(notice);
}

// ---------------------------------------------------------------------------------------------
// Replacements

void TurnController::setAsideFrom(int row, bool editing) {
    replaced_ = Replaced{row, {}, editing};
    while (chat_->rowCount() > row) {
        replaced_.messages.prepend(chat_->message(chat_->rowCount() - 1));
        chat_->removeMessage(chat_->rowCount() - 1);
    }
}

void TurnController::commitReplacement() {
    if (replaced_.row < 0) return;
    // What it replaced stays in the store as the earlier version of the new turn's first message.
    store_->completeReplacement(replaced_.by);
    replaced_ = Replaced{};
    refreshVersions();
}

void TurnController::undoReplacement() {
    if (replaced_.row < 0) return;
    QVector<ChatMessage> rows;
    for (int r = 0; r < chat_->rowCount(); ++r) rows << chat_->message(r);
    const int at = std::min(replaced_.row, static_cast<int>(rows.size()));
    for (int i = 0; i < replaced_.messages.size(); ++i) rows.insert(at + i, replaced_.messages[i]);
    const Replaced was = replaced_;
    replaced_ = Replaced{};
    chat_->setMessages(rows);
    restoreConversationToModel();                       // the model's conversation is whole again
    if (was.editing) startEditing(was.row, QString());  // still editing it: sending again replaces it
}
