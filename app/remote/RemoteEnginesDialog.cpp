#include "remote/RemoteEnginesDialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QEvent>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "Format.h"
#include "KeyringSecret.h"
#include "Theme.h"
#include "remote/RemoteChat.h"
#include "remote/RemoteEndpointStore.h"

RemoteEnginesDialog::RemoteEnginesDialog(QWidget* parent) : QDialog(parent) {
    texts_([this] { setWindowTitle(tr("Remote Engines")); });
    secret_ = new KeyringSecret(QString(), {}, this);

    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("remoteList"));
    auto* add = new QPushButton(this);
    texts_([add] { add->setText(tr("Add")); });
    add->setObjectName(QStringLiteral("remoteAdd"));
    auto* remove = new QPushButton(this);
    texts_([remove] { remove->setText(tr("Remove")); });
    remove->setObjectName(QStringLiteral("remoteRemove"));
    auto* left = new QVBoxLayout();
    left->addWidget(list_, 1);
    auto* listButtons = new QHBoxLayout();
    listButtons->addWidget(add);
    listButtons->addWidget(remove);
    left->addLayout(listButtons);

    name_ = new QLineEdit(this);
    name_->setObjectName(QStringLiteral("remoteName"));
    texts_([this] { name_->setPlaceholderText(tr("GPU server")); });
    url_ = new QLineEdit(this);
    url_->setObjectName(QStringLiteral("remoteUrl"));
    url_->setPlaceholderText(QStringLiteral("http://gpu-box:8000/v1"));
    key_ = new QLineEdit(this);
    key_->setObjectName(QStringLiteral("remoteKey"));
    key_->setEchoMode(QLineEdit::Password);
    texts_([this] { key_->setPlaceholderText(tr("none")); });
    keyNote_ = new QLabel(this);
    keyNote_->setObjectName(QStringLiteral("remoteKeyNote"));
    keyNote_->setProperty("role", QStringLiteral("caption"));
    keyNote_->setWordWrap(true);
    model_ = new QComboBox(this);
    model_->setObjectName(QStringLiteral("remoteModel"));
    model_->setEditable(true);
    texts_([this] { model_->lineEdit()->setPlaceholderText(tr("the first the server lists")); });
    fetch_ = new QPushButton(this);
    texts_([this] { fetch_->setText(tr("Fetch Models")); });
    fetch_->setObjectName(QStringLiteral("remoteFetch"));
    auto* modelRow = new QHBoxLayout();
    modelRow->addWidget(model_, 1);
    modelRow->addWidget(fetch_);
    auto* form = new QFormLayout();
    texts_([caption = captionedRow(form, name_)] { caption->setText(tr("Name")); });
    texts_([caption = captionedRow(form, url_)] { caption->setText(tr("Base URL")); });
    texts_([caption = captionedRow(form, key_)] { caption->setText(tr("API key")); });
    form->addRow(QString(), keyNote_);
    texts_([caption = captionedRow(form, modelRow)] { caption->setText(tr("Model")); });
    test_ = new QPushButton(this);
    texts_([this] { test_->setText(tr("Test Connection")); });
    test_->setObjectName(QStringLiteral("remoteTest"));
    result_ = new QLabel(this);
    result_->setObjectName(QStringLiteral("remoteResult"));
    result_->setWordWrap(true);
    result_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* right = new QVBoxLayout();
    right->addLayout(form);
    right->addWidget(test_, 0, Qt::AlignLeft);
    right->addWidget(result_);
    right->addStretch(1);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect_ = buttons->addButton(QString(), QDialogButtonBox::AcceptRole);
    texts_([this] { connect_->setText(tr("Connect")); });
    connect_->setObjectName(QStringLiteral("remoteConnect"));
    texts_([this] { connect_->setToolTip(tr("Chat with this server's model instead of a local one")); });
    auto* save = buttons->addButton(QString(), QDialogButtonBox::ApplyRole);
    texts_([save] { save->setText(tr("Save")); });
    save->setObjectName(QStringLiteral("remoteSave"));

    auto* columns = new QHBoxLayout();
    columns->addLayout(left, 2);
    columns->addLayout(right, 5);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(columns, 1);
    layout->addWidget(buttons);
    resize(760, 420);

    connect(list_, &QListWidget::currentRowChanged, this, &RemoteEnginesDialog::select);
    connect(add, &QPushButton::clicked, this, &RemoteEnginesDialog::addEndpoint);
    connect(remove, &QPushButton::clicked, this, &RemoteEnginesDialog::removeEndpoint);
    connect(save, &QPushButton::clicked, this, &RemoteEnginesDialog::saveEndpoint);
    connect(test_, &QPushButton::clicked, this, [this] { test(false); });
    connect(fetch_, &QPushButton::clicked, this, [this] { test(true); });
    connect(connect_, &QPushButton::clicked, this, [this] {
        if (!saveEndpoint()) return;
        emit connectRequested(endpoint());
        accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(secret_, &KeyringSecret::loaded, this, [this] {
        key_->setText(secret_->secret());
        keyNote_->setText(secret_->where() == KeyringSecret::Where::Keyring ? tr("Kept in your keyring.")
                                                                            : QString());
    });
    connect(secret_, &KeyringSecret::saved, this, [this](KeyringSecret::Where where, const QString& error) {
        keyNote_->setText(
            where == KeyringSecret::Where::Keyring ? tr("Kept in your keyring.")
            : where == KeyringSecret::Where::Nowhere
                ? QString()
                : tr("No keyring answered (%1): the key is kept for this session only.").arg(error));
    });

    endpoints_ = remote_endpoints::load();
    fillList();
    if (endpoints_.isEmpty())
        addEndpoint();
    else
        list_->setCurrentRow(0);
}

RemoteEnginesDialog::~RemoteEnginesDialog() = default;

RemoteEndpoint RemoteEnginesDialog::endpoint() const {
    return {.name = name_->text().trimmed(),
            .baseUrl = url_->text().trimmed(),
            .model = model_->currentText().trimmed(),
            .apiKey = key_->text().trimmed()};
}

QString RemoteEnginesDialog::resultText() const {
    return result_->text();
}

void RemoteEnginesDialog::fillList() {
    const QSignalBlocker block(list_);
    list_->clear();
    for (const RemoteEndpoint& e : std::as_const(endpoints_))
        list_->addItem(QStringLiteral("%1 — %2").arg(e.name, remote::hostLabel(e.baseUrl)));
}

void RemoteEnginesDialog::select(int row) {
    current_ = row;
    result_->clear();
    if (row < 0 || row >= endpoints_.size()) return;
    const RemoteEndpoint& e = endpoints_[row];
    name_->setText(e.name);
    url_->setText(e.baseUrl);
    model_->clear();
    model_->setEditText(e.model);
    key_->clear();
    keyNote_->clear();
    secret_->setKey(remote_endpoints::keyringKey(e.name));
    secret_->load();
}

void RemoteEnginesDialog::addEndpoint() {
    const QSignalBlocker block(list_);
    list_->clearSelection();
    current_ = -1;
    name_->clear();
    url_->clear();
    key_->clear();
    keyNote_->clear();
    model_->clear();
    result_->clear();
    name_->setFocus();
}

void RemoteEnginesDialog::removeEndpoint() {
    if (current_ < 0 || current_ >= endpoints_.size()) return;
    secret_->setKey(remote_endpoints::keyringKey(endpoints_[current_].name));
    secret_->forget();
    endpoints_.removeAt(current_);
    remote_endpoints::save(endpoints_);
    fillList();
    if (endpoints_.isEmpty())
        addEndpoint();
    else
        list_->setCurrentRow(0);
}

bool RemoteEnginesDialog::saveEndpoint() {
    RemoteEndpoint e = endpoint();
    QString error;
    if (!remote::apiRoot(e.baseUrl, &error).isValid()) {
        showResult(error, false);
        return false;
    }
    if (e.name.isEmpty()) e.name = remote::hostLabel(e.baseUrl);
    name_->setText(e.name);
    for (int i = 0; i < endpoints_.size(); ++i) {
        if (i != current_ && endpoints_[i].name == e.name) {
            showResult(tr("Another endpoint is called “%1”.").arg(e.name), false);
            return false;
        }
    }
    const QString key = e.apiKey;
    e.apiKey.clear();
    if (current_ >= 0 && current_ < endpoints_.size()) {
        if (endpoints_[current_].name != e.name) {  // renamed: its key moves with it
            secret_->setKey(remote_endpoints::keyringKey(endpoints_[current_].name));
            secret_->forget();
        }
        endpoints_[current_] = e;
    } else {
        endpoints_.append(e);
        current_ = static_cast<int>(endpoints_.size()) - 1;
    }
    remote_endpoints::save(endpoints_);
    secret_->setKey(remote_endpoints::keyringKey(e.name));
    secret_->save(key);
    fillList();
    const QSignalBlocker block(list_);
    list_->setCurrentRow(current_);
    return true;
}

void RemoteEnginesDialog::test(bool fillModels) {
    RemoteEndpoint e = endpoint();
    if (fillModels) e.model.clear();  // any model: the list is what is asked for
    delete probe_;
    probe_ = new RemoteChat(e, &neverStop_, this);
    test_->setEnabled(false);
    fetch_->setEnabled(false);
    showResult(tr("Asking %1…").arg(remote::apiUrl(e.baseUrl, QStringLiteral("models")).toString()), true);
    connect(probe_, &RemoteChat::opened, this, [this, fillModels](const RemoteReport& report) {
        test_->setEnabled(true);
        fetch_->setEnabled(true);
        if (fillModels) {
            const QString typed = model_->currentText();
            model_->clear();
            model_->addItems(report.models);
            model_->setEditText(typed.isEmpty() || !report.models.contains(typed) ? report.model : typed);
        }
        QString text = tr("Connected: %1 serves %n model(s) (%2), answering in %3.", nullptr,
                          static_cast<int>(report.models.size()))
                           .arg(remote::serverKindName(report.kind),
                                report.models.mid(0, 5).join(QStringLiteral(", ")) +
                                    (report.models.size() > 5 ? QStringLiteral(", …") : QString()),
                                display::milliseconds(report.connectMs));
        if (report.contextLength > 0)
            text += QLatin1Char(' ') + tr("Context: %1 tokens.").arg(display::count(report.contextLength));
        showResult(text, true);
        emit tested(true);
    });
    connect(probe_, &RemoteChat::openFailed, this, [this](const QString& message) {
        test_->setEnabled(true);
        fetch_->setEnabled(true);
        showResult(message, false);
        emit tested(false);
    });
    probe_->open();
}

void RemoteEnginesDialog::showResult(const QString& text, bool ok) {
    result_->setText(text);
    QPalette p = result_->palette();
    p.setColor(QPalette::WindowText, ok ? palette().color(QPalette::WindowText) : theme::warningText());
    result_->setPalette(p);
}

void RemoteEnginesDialog::changeEvent(QEvent* event) {
    QDialog::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void RemoteEnginesDialog::retranslateUi() {
    texts_.apply();
    if (!keyNote_->text().isEmpty() && secret_->where() == KeyringSecret::Where::Keyring)
        keyNote_->setText(tr("Kept in your keyring."));  // (a test's result: at the next test)
}
