#include "chat/MessageComposer.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "chat/MessageFitLabel.h"

MessageComposer::MessageComposer(QWidget* parent) : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(18, 8, 18, 14);
    input_ = new QPlainTextEdit(this);
    input_->setObjectName(QStringLiteral("messageInput"));
    input_->setFixedHeight(QFontMetrics(input_->font()).lineSpacing() * 3 + 20);
    input_->setTabChangesFocus(true);
    input_->installEventFilter(this);
    auto* column = new QVBoxLayout();
    column->setSpacing(3);
    column->addWidget(input_);
    measure_ = new MessageFitLabel(this);  // one line: a long warning does not move the chat
    column->addWidget(measure_);
    layout->addLayout(column, 1);

    auto makeButton = [this](const char* name) {
        auto* button = new QPushButton(this);
        button->setObjectName(QString::fromLatin1(name));
        return button;
    };
    send_ = makeButton("sendButton");
    send_->setCursor(Qt::PointingHandCursor);
    stop_ = makeButton("stopButton");
    regenerate_ = makeButton("regenerateButton");
    continue_ = makeButton("continueButton");
    retranslateUi();
    auto* buttons = new QVBoxLayout();
    buttons->setSpacing(6);
    buttons->addWidget(send_);
    auto* secondary = new QHBoxLayout();
    secondary->setSpacing(6);
    for (QPushButton* b : {stop_, regenerate_, continue_}) secondary->addWidget(b);
    buttons->addLayout(secondary);
    buttons->addStretch(1);
    layout->addLayout(buttons);

    connect(send_, &QPushButton::clicked, this, [this] { emit sendRequested(text()); });
    connect(stop_, &QPushButton::clicked, this, &MessageComposer::stopRequested);
    connect(regenerate_, &QPushButton::clicked, this, &MessageComposer::regenerateRequested);
    connect(continue_, &QPushButton::clicked, this, &MessageComposer::continueRequested);
    connect(input_, &QPlainTextEdit::textChanged, this, &MessageComposer::textChanged);
}

QString MessageComposer::text() const {
    return input_->toPlainText().trimmed();
}

void MessageComposer::setText(const QString& text) {
    input_->setPlainText(text);
    input_->moveCursor(QTextCursor::End);
}

void MessageComposer::clear() {
    input_->clear();
}

void MessageComposer::focusInput() {
    input_->setFocus();
}

void MessageComposer::setActions(const Actions& actions) {
    send_->setEnabled(actions.send && !isEmpty());
    stop_->setEnabled(actions.stop);
    regenerate_->setEnabled(actions.regenerate);
    continue_->setEnabled(actions.resume);
    continueBlocked_ = actions.continueBlockedByRoom;
    continue_->setToolTip(continueBlocked_ ? tr("There is no room left in the context to continue this reply")
                                           : tr("Write more of the last reply, from where it stopped"));
}

void MessageComposer::retranslateUi() {
    input_->setPlaceholderText(tr("Write a message… (Enter sends, Shift+Enter starts a new line)"));
    send_->setText(tr("Send"));
    stop_->setText(tr("Stop"));
    stop_->setToolTip(tr("Stop generating (Esc). The text so far is kept."));
    regenerate_->setText(tr("Regenerate"));
    regenerate_->setToolTip(tr("Replace the last reply with a new one"));
    continue_->setText(tr("Continue"));
    continue_->setToolTip(continueBlocked_ ? tr("There is no room left in the context to continue this reply")
                                           : tr("Write more of the last reply, from where it stopped"));
}

void MessageComposer::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

bool MessageComposer::eventFilter(QObject* watched, QEvent* event) {
    if (watched == input_ && event->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
            !(key->modifiers() & Qt::ShiftModifier)) {
            send_->click();  // (does nothing while it is disabled)
            return true;
        }
        if (key->key() == Qt::Key_Escape) {
            if (generating_)
                stop_->click();
            else
                emit cancelEditRequested();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}
