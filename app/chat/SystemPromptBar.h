// SystemPromptBar — the line above the chat for the conversation's system prompt (UI thread).
// edited() carries the trimmed text when the user finishes editing it.
#pragma once
#include <QWidget>

class QLabel;
class QLineEdit;

class SystemPromptBar : public QWidget {
    Q_OBJECT
public:
    explicit SystemPromptBar(QWidget* parent = nullptr);
    QString text() const;  // trimmed
    void setText(const QString& text);

signals:
    void edited(const QString& text);

protected:
    void changeEvent(QEvent* event) override;  // LanguageChange: retranslateUi()

private:
    void retranslateUi();
    QLabel* label_;
    QLineEdit* edit_;
};
