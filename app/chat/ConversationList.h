// ConversationList — the sidebar of stored conversations: New Chat, a search field, the list
// (most recent first, with time and message count) and its Rename/Delete menu (UI thread).
//
// It reads and edits the ConversationStore itself; opening and starting conversations is the
// TurnController's, asked for through its signals.
#pragma once
#include <QWidget>

class ConversationStore;
class QLineEdit;
class QPushButton;
class QListWidget;

class ConversationList : public QWidget {
    Q_OBJECT
public:
    ConversationList(ConversationStore* store, QWidget* parent = nullptr);

    // The open conversation (-1: none), highlighted; while a reply is written it cannot be deleted.
    void setCurrent(qint64 id);
    void setGenerating(bool generating);
    // Reads the store again (titles, counts, order, the search).
    void refresh();

signals:
    void openRequested(qint64 id);
    void newRequested();
    void deleted(qint64 id);

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi() and the subtitles

private:
    void retranslateUi();
    QPushButton* newChat_ = nullptr;
    void rename(qint64 id);
    void remove(qint64 id);

    ConversationStore* store_;
    QLineEdit* filter_ = nullptr;
    QListWidget* list_ = nullptr;
    qint64 current_ = -1;
    bool generating_ = false;
};
