#include "panels/ChatTemplateDialog.h"

#include <QDialogButtonBox>
#include <QEvent>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QVBoxLayout>

ChatTemplateDialog::ChatTemplateDialog(const LoadReport& report, QWidget* parent) : QDialog(parent) {
    texts_([this] { setWindowTitle(tr("Chat template")); });
    auto* layout = new QVBoxLayout(this);
    auto* renderer = new QLabel(this);
    renderer->setObjectName(QStringLiteral("renderer"));
    renderer->setWordWrap(true);
    renderer->setTextInteractionFlags(Qt::TextSelectableByMouse);
    texts_([renderer, isModels = report.template_is_models, name = report.template_name,
            reason = report.template_fallback_reason] {
        renderer->setText(isModels ? tr("Lantern renders the model's own template with its Jinja engine, as "
                                        "Hugging Face does. Text you type never becomes a control token.")
                                   : tr("Lantern writes the prompts with its built-in %1 format: the model's "
                                        "template could not be used (%2).")
                                         .arg(name, reason));
    });
    layout->addWidget(renderer);
    auto* source = new QPlainTextEdit(this);
    source->setObjectName(QStringLiteral("source"));
    source->setReadOnly(true);
    source->setLineWrapMode(QPlainTextEdit::NoWrap);
    source->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    source->setPlainText(report.template_source);
    layout->addWidget(source, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(720, 520);
}

void ChatTemplateDialog::changeEvent(QEvent* event) {
    QDialog::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void ChatTemplateDialog::retranslateUi() {
    texts_.apply();
}
