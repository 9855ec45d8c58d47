#include "chat/SystemPromptBar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>

SystemPromptBar::SystemPromptBar(QWidget* parent) : QWidget(parent), edit_(new QLineEdit(this)) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(18, 10, 18, 4);
    auto* label = new QLabel(tr("System prompt"), this);
    label->setProperty("role", QStringLiteral("caption"));
    edit_->setObjectName(QStringLiteral("systemPrompt"));
    edit_->setPlaceholderText(tr("Optional instructions the model sees before the conversation"));
    edit_->setClearButtonEnabled(true);
    layout->addWidget(label);
    layout->addWidget(edit_, 1);
    connect(edit_, &QLineEdit::editingFinished, this, [this] { emit edited(text()); });
}

QString SystemPromptBar::text() const {
    return edit_->text().trimmed();
}

void SystemPromptBar::setText(const QString& text) {
    edit_->setText(text);
}
