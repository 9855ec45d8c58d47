// MessageComposer — the input bar under the chat: the message being written, its measure line,
// and Send / Stop / Regenerate / Continue (UI thread). Enter sends, Shift+Enter breaks the line,
// Esc stops a reply being written or leaves an edit.
#pragma once
#include <QWidget>

class MessageFitLabel;
class QPlainTextEdit;
class QPushButton;

class MessageComposer : public QWidget {
    Q_OBJECT
public:
    explicit MessageComposer(QWidget* parent = nullptr);

    QString text() const;  // trimmed
    bool isEmpty() const { return text().isEmpty(); }
    void setText(const QString& text);  // the cursor at its end
    void clear();
    void focusInput();
    MessageFitLabel* measure() const { return measure_; }

    struct Actions {
        bool send = false, stop = false, regenerate = false, resume = false;
        bool continueBlockedByRoom = false;  // Continue's tooltip says why it is off
    };
    void setActions(const Actions& actions);
    void setGenerating(bool generating) { generating_ = generating; }

signals:
    void sendRequested(const QString& text);
    void stopRequested();
    void regenerateRequested();
    void continueRequested();
    void cancelEditRequested();
    void textChanged();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();           // the placeholder, the buttons and their tooltips
    bool continueBlocked_ = false;  // Continue's tooltip says there is no room
    QPlainTextEdit* input_;
    MessageFitLabel* measure_;
    QPushButton* send_;
    QPushButton* stop_;
    QPushButton* regenerate_;
    QPushButton* continue_;
    bool generating_ = false;
};
