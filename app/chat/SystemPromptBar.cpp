#include "chat/SystemPromptBar.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>

SystemPromptBar::SystemPromptBar(QWidget* parent) : QWidget(parent), edit_(new QLineEdit(this)) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(18, 10, 18, 4);
    label_ = new QLabel(this);
    label_->setProperty("role", QStringLiteral("caption"));
    edit_->setObjectName(QStringLiteral("systemPrompt"));
    edit_->setClearButtonEnabled(true);
    layout->addWidget(label_);
    layout->addWidget(edit_, 1);
    connect(edit_, &QLineEdit::editingFinished, this, [this] { emit edited(text()); });
    retranslateUi();
}

void SystemPromptBar::retranslateUi() {
    label_->setText(tr("System prompt"));
    edit_->setPlaceholderText(tr("Optional instructions the model sees before the conversation"));
}

void SystemPromptBar::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

QString SystemPromptBar::text() const {
    return edit_->text().trimmed();
}

void SystemPromptBar::setText(const QString& text) {
    edit_->setText(text);
}
