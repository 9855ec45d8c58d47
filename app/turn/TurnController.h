// TurnController — the open conversation's turn lifecycle, without widgets (UI thread): send,
// stream, stop's ending, regenerate, continue, edit and resend, undo a turn that wrote nothing,
// open/new conversation, and saving every step of it to the ConversationStore.
//
// It owns no widget: it edits the ChatModel the view shows, asks the InferenceWorker for turns
// through its request signals (queued to the worker's thread) and takes the worker's results
// through its slots. The window wires both and turns its signals into what the user sees.
// A replacement (Edit and Resend, Regenerate) is a new version of what it replaces, which stays in
// the store as the earlier version (showVersion moves between them); until the new turn has begun
// it is marked, so a turn refused or killed before then is undone without a trace.
#pragma once
#include <QObject>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>

#include "chat/ChatModel.h"
#include "chat/ConversationStore.h"
#include "chat/ReplyDetails.h"
#include "turn/StreamThrottle.h"
#include "worker/EngineTypes.h"

class TurnController : public QObject {
    Q_OBJECT
public:
    // `chat` and `store` outlive the controller.
    TurnController(ChatModel* chat, ConversationStore* store, QObject* parent = nullptr);

    // The loaded model: the name replies are signed with, the file name conversations record,
    // and its context length (for what a notice says). Gives an open conversation to the model.
    void setModel(const QString& name, const QString& fileName, uint32_t contextLength);
    // The model is about to go (another load, a reload) or went: Regenerate/Continue wait for it.
    void modelLeaving();
    // Whether a model is loaded and can take a turn (the window's Ready, less a running turn).
    void setModelReady(bool ready) { modelReady_ = ready; }
    void setDropOldestTurns(bool on);

    bool generating() const { return generating_; }
    bool canSend() const { return modelReady_ && !generating_; }
    bool canRegenerate() const { return canSend() && canRegenerate_; }
    // Continue has a reply to write more of, and room for it (said by continueBlockedByRoom).
    bool canContinue() const;
    bool continueBlockedByRoom() const;
    bool editing() const { return editingRow_ >= 0; }
    // Messages the model keeps before the message being edited (-1: not editing), for measuring
    // it as it will be sent.
    int messagesKeptByEdit() const;
    qint64 conversationId() const { return conversationId_; }
    // The reply being streamed: whether one is, and its tokens so far.
    bool streaming() const { return streamingRow_ >= 0; }
    int streamedTokens() const { return streamingTokens_; }

    // User actions; each does nothing when it cannot act now (and returns false).
    bool send(const QString& text, const QString& systemPrompt);
    bool regenerate();
    bool continueReply();
    bool editMessage(int row);  // the message's text goes to the input (editStarted)
    // Shows the message's previous (step -1) or next (1) version, and the conversation after it
    // as it went on from that version; the model is given that path. False when there is none
    // or a reply is being written.
    bool showVersion(int row, int step);
    bool cancelEdit();
    void newConversation();
    bool openConversation(qint64 id);
    // The user wrote another system prompt: stored with the open conversation.
    void setSystemPrompt(const QString& text);
    // The window closes while a reply is written: it is stored as interrupted.
    void closing();
    // The open conversation as Markdown at `path`; false with a message in `error`.
    bool exportMarkdown(const QString& path, const QString& systemPrompt, QString* error) const;

    // Worker results.
    void onTokens(const TokenBatch& batch);
    void onReplyShared(quint32 tokens) { replySharedTokens_ = tokens; }
    void onTurnFinished(const lantern::TurnStats& stats);
    // A generation failed: returns whether a turn was running (it ends, marked failed, or marked
    // cut off when a remote server's connection was lost: what came of the reply stays).
    bool onError(const QString& message, reply_details::Ending ending = reply_details::Ending::Failed);
    void onModelUnloaded();
    void onContinueRoom(bool fits, bool fitsDropping);

signals:
    // Requests to the InferenceWorker.
    void sendRequested(const QString& text);
    void regenerateRequested();
    void continueRequested();
    void resetConversationRequested();
    void restoreConversationRequested(const QStringList& roles, const QStringList& contents);
    void systemPromptChanged(const QString& text);

    void generatingChanged(bool generating);
    void actionsChanged();                               // canRegenerate/canContinue/editing may differ
    void turnStarted();                                  // a reply streams (send, regenerate, continue)
    void frame(const StreamFrame& frame);                // a frame of the streaming reply with new tokens
    void replyEnded();                                   // the streaming reply ended (with or without tokens)
    void turnFinished(const lantern::TurnStats& stats);  // a turn that wrote its reply
    void turnUndone();                                   // a turn that wrote nothing was undone
    void turnFailed(const QString& message);
    void inputReturned(const QString& text);  // a message not taken goes back into an empty input
    void editStarted(const QString& text);    // null text: the input already holds the edit
    void editCancelled();                     // the edit's text leaves the input
    void statusMessage(const QString& text, int timeoutMs);
    void conversationsChanged();  // the list of conversations (titles, counts, order)
    void conversationOpened(const QString& systemPrompt);
    void conversationIdChanged(qint64 id);  // the open conversation (-1: a new one, not stored yet)
    void measureInvalidated();              // the message being written must be measured again
    void versionShown(int row);             // another version of the message in `row` is shown

private:
    enum class Turn { Send, Regenerate, Continue };
    // What a running Edit and Resend or Regenerate replaces: off the screen and out of the model's
    // conversation, but still in the store until the turn has begun.
    struct Replaced {
        int row = -1;  // where they were; -1: nothing replaced
        QVector<ChatMessage> messages;
        bool editing = false;  // Edit and Resend: the edit goes on after an undo
        qint64 by = -1;        // store id of the new turn's first message, which names them
        qint64 firstStoreId() const { return messages.isEmpty() ? -1 : messages.first().store_id; }
    };

    int continuableRow() const;  // the last reply's row if the conversation ends with one, else -1
    void restoreConversationToModel();
    void beginAssistantReply(qint64 replaces = -1);
    void startStreaming(int row, qint64 storeId, const QString& textSoFar);
    void showFrame(const StreamFrame& frame);
    void savePartialReply();
    void endAssistantReply(bool complete, const QString& details);
    void endTurn();
    void undoTurnThatWroteNothing(const lantern::TurnStats& stats);
    void addNotice(const QString& text);
    void setAsideFrom(int row, bool editing);
    void commitReplacement();
    void undoReplacement();
    QVector<StoredMessage> withoutTurnThatNeverBegan(qint64 conversationId, int& editRow, QString& editText);
    void showStoredPath(const QVector<StoredMessage>& path);
    void refreshVersions();  // the rows' places among their versions, as the store has them
    void startEditing(int row, const QString& text);

    ChatModel* chat_;
    ConversationStore* store_;
    StreamThrottle throttle_;
    QTimer partialSaveTimer_;

    QString modelName_, modelFile_;
    uint32_t contextLength_ = 0;
    bool modelReady_ = false;
    bool dropOldestTurns_ = true;
    bool generating_ = false;

    qint64 conversationId_ = -1;
    int streamingRow_ = -1;
    qint64 streamingStoreId_ = -1;
    QString streamingText_;  // always whole (the partial save reads it); the view gets frames
    int streamingTokens_ = 0;
    // The model's conversation holds the last reply (or ends with the user's turn after a
    // Regenerate that wrote nothing): Regenerate and Continue act on it.
    bool canRegenerate_ = false;
    QString continuedDetails_;  // the reply being continued: its details before (null: not continuing)
    bool continuedComplete_ = true;
    quint32 replySharedTokens_ = 0;  // of the turn ending, tokens written beside API replies
    Turn turn_ = Turn::Send;
    QString sentText_;  // the message being answered (Turn::Send)
    int editingRow_ = -1;
    Replaced replaced_;
};
