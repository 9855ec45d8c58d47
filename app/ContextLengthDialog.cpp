#include "ContextLengthDialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QEvent>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

#include "Format.h"
#include "Theme.h"

namespace {

// The engine's default when no length is asked for (lantern::EngineOptions::context_length = 0).
uint32_t automaticLength(const lantern::ModelInfo& model) {
    return std::min<uint32_t>(model.context_length, 4096);
}

}  // namespace

ContextLengthDialog::ContextLengthDialog(const lantern::ModelInfo& model, const lantern::DeviceInfo& device,
                                         uint32_t chosen, uint32_t sequences, uint32_t conversationTokens,
                                         QWidget* parent)
    : QDialog(parent),
      model_(model),
      device_(device),
      sequences_(std::max<uint32_t>(1, sequences)),
      conversationTokens_(conversationTokens) {
    setObjectName(QStringLiteral("contextLengthDialog"));
    texts_([this] { setWindowTitle(tr("Context Length")); });
    auto* layout = new QVBoxLayout(this);

    auto* intro = new QLabel(this);
    texts_([this, intro] {
        const QString name = model_.name.empty() ? tr("This model") : QString::fromStdString(model_.name);
        intro->setText(tr("How many tokens of the conversation the model sees at once. A longer context "
                          "remembers more of it and takes more memory; %1 was trained on %2 tokens, "
                          "the most it is offered.")
                           .arg(name, display::count(model_.context_length)));
    });
    intro->setWordWrap(true);
    layout->addWidget(intro);

    automatic_ = new QCheckBox(this);
    texts_([this] {
        automatic_->setText(tr("Automatic: %1 tokens (the model's own, at most %2)")
                                .arg(display::count(automaticLength(model_)), display::count(4096)));
    });
    automatic_->setObjectName(QStringLiteral("automaticContext"));
    layout->addWidget(automatic_);

    auto* form = new QFormLayout;
    length_ = new QSpinBox(this);
    length_->setObjectName(QStringLiteral("contextLength"));
    // Below a few hundred tokens a chat template and a system prompt leave no room for a reply.
    length_->setRange(static_cast<int>(std::min<uint32_t>(256, model.context_length)),
                      static_cast<int>(std::min<uint32_t>(model.context_length, INT32_MAX)));
    length_->setSingleStep(model.context_length >= 16384 ? 1024 : 256);
    length_->setGroupSeparatorShown(true);
    texts_([this] { length_->setSuffix(tr(" tokens")); });
    texts_([caption = captionedRow(form, length_)] { caption->setText(tr("Length")); });
    layout->addLayout(form);

    memory_ = new QLabel(this);
    memory_->setObjectName(QStringLiteral("contextMemory"));
    memory_->setWordWrap(true);
    layout->addWidget(memory_);
    warning_ = new QLabel(this);
    warning_->setObjectName(QStringLiteral("contextWarning"));
    warning_->setWordWrap(true);
    QPalette palette = warning_->palette();
    palette.setColor(QPalette::WindowText, theme::warningText());
    warning_->setPalette(palette);
    layout->addWidget(warning_);

    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons_->button(QDialogButtonBox::Ok)->setText(tr("Reload the Model"));
    layout->addWidget(buttons_);
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);

    setChosenLength(chosen);
    connect(automatic_, &QCheckBox::toggled, this, [this] { update(); });
    connect(length_, &QSpinBox::valueChanged, this, [this] { update(); });
    update();
}

uint32_t ContextLengthDialog::chosenLength() const {
    return automatic_->isChecked() ? 0u : static_cast<uint32_t>(length_->value());
}

void ContextLengthDialog::setChosenLength(uint32_t length) {
    automatic_->setChecked(length == 0);
    length_->setValue(
        static_cast<int>(length ? std::min(length, model_.context_length) : automaticLength(model_)));
    update();
}

void ContextLengthDialog::update() {
    length_->setEnabled(!automatic_->isChecked());
    if (automatic_->isChecked()) {
        const QSignalBlocker quiet(length_);
        length_->setValue(static_cast<int>(automaticLength(model_)));
    }
    lantern::EngineOptions options;
    options.context_length = chosenLength();
    options.max_sequences = sequences_;
    plan_ = lantern::plan_memory(model_, device_, options);

    const QString device = QString::fromStdString(device_.name);
    QString text =
        plan_.sequences > 1
            ? tr("KV cache: %1, room for %n conversation(s) of %2 tokens at once: the chat's, and what the "
                 "local "
                 "API server's replies share.",
                 nullptr, static_cast<int>(plan_.sequences))
                  .arg(display::bytes(plan_.kv_bytes), display::count(plan_.context_length))
            : tr("KV cache: %1 for the chat's %2 tokens (switching the local API server on adds room for its "
                 "replies).")
                  .arg(display::bytes(plan_.kv_bytes), display::count(plan_.context_length));
    text += QLatin1Char(' ');
    text += device_.device_local_bytes
                ? tr("With the weights, about %1 of the %3 on %2.")
                      .arg(display::bytes(plan_.total_bytes()), device,
                           display::bytes(device_.device_local_bytes))
                : tr("With the weights, about %1.").arg(display::bytes(plan_.total_bytes()));
    memory_->setText(text);

    QString warning;
    switch (plan_.limit) {
        case lantern::MemoryLimit::BufferRange:
            warning =
                tr("Too long for %1: one layer's KV cache would take %2, and one buffer on it reaches %3. "
                   "Choose a shorter context.")
                    .arg(device, display::bytes(plan_.kv_layer_bytes), display::bytes(plan_.limit_bytes));
            break;
        case lantern::MemoryLimit::DeviceMemory:
            warning =
                tr("Too much for %1: about %2 are needed and it has %3. Choose a shorter context.")
                    .arg(device, display::bytes(plan_.total_bytes()), display::bytes(plan_.limit_bytes));
            break;
        case lantern::MemoryLimit::None:
            if (conversationTokens_ > plan_.context_length)
                warning =
                    tr("This conversation is already %1 tokens long: with %2, its oldest turns no longer "
                       "fit (File > When the Context Is Full decides what happens next).")
                        .arg(display::count(conversationTokens_), display::count(plan_.context_length));
            break;
    }
    warning_->setText(warning);
    warning_->setVisible(!warning.isEmpty());
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(plan_.fits());
}

void ContextLengthDialog::changeEvent(QEvent* event) {
    QDialog::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void ContextLengthDialog::retranslateUi() {
    texts_.apply();
    update();  // the memory and the warning
    // After the button box has worded its standard buttons again (it does so on LanguageChange).
    QMetaObject::invokeMethod(
        this, [this] { buttons_->button(QDialogButtonBox::Ok)->setText(tr("Reload the Model")); },
        Qt::QueuedConnection);
}
