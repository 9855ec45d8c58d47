#include "models/ModelsDialog.h"

#include <QEvent>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QNetworkProxyFactory>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <functional>
#include <thread>

#include "Format.h"
#include "Preferences.h"
#include "models/HubToken.h"
#include "models/ModelDownloads.h"

namespace {

// Runs `work` on a thread of its own and hands its result (or its HubError's words) back to
// `context`'s thread, unless `context` is gone by then.
template <typename R>
void inBackground(QObject* context, std::function<R()> work, std::function<void(R)> done,
                  std::function<void(QString)> failed) {
    QPointer<QObject> guard(context);
    std::thread([guard, work = std::move(work), done = std::move(done), failed = std::move(failed)] {
        try {
            R result = work();
            QMetaObject::invokeMethod(
                guard.data(),
                [guard, done, result] {
                    if (guard) done(result);
                },
                Qt::QueuedConnection);
        } catch (const std::exception& e) {
            const QString message = QString::fromStdString(e.what());
            QMetaObject::invokeMethod(
                guard.data(),
                [guard, failed, message] {
                    if (guard) failed(message);
                },
                Qt::QueuedConnection);
        }
    }).detach();
}

enum FileColumn { kFile, kQuant, kSize, kRuns, kFits, kFileColumns };
enum DownloadColumn { kName, kProgress, kState, kPause, kCancel, kDownloadColumns };
constexpr int kRecommendedRole = Qt::UserRole + 1;  // a results entry that lists a recommended repository

}  // namespace

QStringList ModelsDialog::recommendedRepositories() {
    return {QStringLiteral("Qwen/Qwen3-1.7B-GGUF"),
            QStringLiteral("Qwen/Qwen3-4B-GGUF"),
            QStringLiteral("ggml-org/gemma-3-1b-it-GGUF"),
            QStringLiteral("ggml-org/gemma-3-4b-it-GGUF"),
            QStringLiteral("bartowski/Llama-3.2-3B-Instruct-GGUF"),
            QStringLiteral("bartowski/Phi-3.5-mini-instruct-GGUF"),
            QStringLiteral("Qwen/Qwen3-0.6B-GGUF")};
}

ModelsDialog::ModelsDialog(ModelDownloads* downloads, const lantern::DeviceInfo& device, uint32_t context,
                           QWidget* parent)
    : QDialog(parent), downloads_(downloads), device_(device), context_(context) {
    texts_([this] { setWindowTitle(tr("Get Models")); });
    auto* layout = new QVBoxLayout(this);

    auto* settings = new QFormLayout();
    endpoint_ = new QLineEdit(preferences::hubEndpoint(), this);
    endpoint_->setObjectName(QStringLiteral("hubEndpoint"));
    texts_([this] {
        endpoint_->setToolTip(
            tr("The Hugging Face Hub, or a mirror of it (HF_ENDPOINT), e.g. https://hf-mirror.com"));
    });
    texts_([caption = captionedRow(settings, endpoint_)] { caption->setText(tr("Hub address")); });
    connect(endpoint_, &QLineEdit::editingFinished, this,
            [this] { preferences::setHubEndpoint(endpoint_->text().trimmed()); });
    tokenField_ = new QLineEdit(this);
    tokenField_->setObjectName(QStringLiteral("hubToken"));
    tokenField_->setEchoMode(QLineEdit::Password);
    texts_([this] { tokenField_->setPlaceholderText(tr("hf_… (for gated and private models)")); });
    tokenNote_ = new QLabel(this);
    tokenNote_->setObjectName(QStringLiteral("hubTokenNote"));
    tokenNote_->setWordWrap(true);
    auto* tokenBox = new QVBoxLayout();
    tokenBox->addWidget(tokenField_);
    tokenBox->addWidget(tokenNote_);
    texts_([caption = captionedRow(settings, tokenBox)] { caption->setText(tr("Access token")); });
    token_ = new HubToken(this);
    connect(token_, &HubToken::loaded, this, [this] {
        if (!token_->token().isEmpty()) tokenField_->setText(token_->token());
        tokenNote_->setText(token_->where() == HubToken::Where::Environment ? tr("From HF_TOKEN.")
                            : token_->where() == HubToken::Where::Keyring
                                ? tr("Kept in your keyring.")
                                : tr("Kept in your keyring when you enter one."));
    });
    connect(token_, &HubToken::saved, this, [this](KeyringSecret::Where where, const QString& error) {
        tokenNote_->setText(
            where == HubToken::Where::Keyring ? tr("Kept in your keyring.")
            : where == HubToken::Where::Nowhere
                ? tr("No token.")
                : tr("No keyring answered (%1): the token is kept for this session only.").arg(error));
    });
    connect(tokenField_, &QLineEdit::editingFinished, this, [this] { setToken(tokenField_->text()); });
    token_->load();
    folder_ = new QLabel(downloads->modelsDir(), this);
    folder_->setObjectName(QStringLiteral("modelsFolder"));
    folder_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* change = new QPushButton(this);
    texts_([change] { change->setText(tr("Change…")); });
    connect(change, &QPushButton::clicked, this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Models Folder"), downloads_->modelsDir());
        if (!dir.isEmpty()) setModelsFolder(dir);
    });
    auto* folderRow = new QHBoxLayout();
    folderRow->addWidget(folder_, 1);
    folderRow->addWidget(change);
    texts_([caption = captionedRow(settings, folderRow)] { caption->setText(tr("Models folder")); });
    layout->addLayout(settings);

    auto* searchRow = new QHBoxLayout();
    query_ = new QLineEdit(this);
    query_->setObjectName(QStringLiteral("hubQuery"));
    texts_([this] { query_->setPlaceholderText(tr("Search GGUF models, e.g. qwen3 or gemma 3")); });
    auto* searchButton = new QPushButton(this);
    texts_([searchButton] { searchButton->setText(tr("Search")); });
    searchRow->addWidget(query_, 1);
    searchRow->addWidget(searchButton);
    layout->addLayout(searchRow);
    connect(searchButton, &QPushButton::clicked, this, [this] { search(query_->text()); });
    connect(query_, &QLineEdit::returnPressed, this, [this] { search(query_->text()); });

    results_ = new QListWidget(this);
    results_->setObjectName(QStringLiteral("hubResults"));
    for (const QString& repo : recommendedRepositories()) {
        auto* item = new QListWidgetItem(recommended(repo), results_);
        item->setData(Qt::UserRole, repo);
        item->setData(kRecommendedRole, true);  // (worded again on LanguageChange)
    }
    layout->addWidget(results_, 1);
    connect(results_, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* item) { openRepository(item->data(Qt::UserRole).toString()); });
    connect(results_, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { openRepository(item->data(Qt::UserRole).toString()); });

    repoLabel_ = new QLabel(this);
    texts_([this] { repoLabel_->setText(tr("Choose a repository to see its files.")); });
    repoLabel_->setObjectName(QStringLiteral("hubRepo"));
    repoLabel_->setWordWrap(true);
    layout->addWidget(repoLabel_);

    files_ = new QTableWidget(0, kFileColumns, this);
    files_->setObjectName(QStringLiteral("hubFiles"));
    texts_([this] {
        files_->setHorizontalHeaderLabels(
            {tr("File"), tr("Quantisation"), tr("Size"), tr("Lantern runs it"), tr("On this device")});
    });
    files_->verticalHeader()->hide();
    files_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    files_->horizontalHeader()->setSectionResizeMode(kFits, QHeaderView::Stretch);
    files_->setWordWrap(false);
    files_->setSelectionBehavior(QAbstractItemView::SelectRows);
    files_->setSelectionMode(QAbstractItemView::SingleSelection);
    files_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    layout->addWidget(files_, 2);

    download_ = new QPushButton(this);
    texts_([this] { download_->setText(tr("Download")); });
    download_->setObjectName(QStringLiteral("hubDownload"));
    download_->setEnabled(false);
    layout->addWidget(download_, 0, Qt::AlignRight);
    connect(download_, &QPushButton::clicked, this, &ModelsDialog::downloadSelected);
    connect(files_, &QTableWidget::itemSelectionChanged, this, [this] {
        const auto rows = files_->selectionModel()->selectedRows();
        download_->setEnabled(!rows.isEmpty() &&
                              files_->item(rows[0].row(), kRuns)->data(Qt::UserRole).toInt() != 0);
    });

    downloadsTable_ = new QTableWidget(0, kDownloadColumns, this);
    downloadsTable_->setObjectName(QStringLiteral("hubDownloads"));
    texts_([this] {
        downloadsTable_->setHorizontalHeaderLabels(
            {tr("Download"), tr("Progress"), tr("State"), QString(), QString()});
    });
    downloadsTable_->verticalHeader()->hide();
    downloadsTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    downloadsTable_->horizontalHeader()->setSectionResizeMode(kState, QHeaderView::Stretch);
    downloadsTable_->setWordWrap(false);
    downloadsTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    layout->addWidget(downloadsTable_, 1);

    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("hubStatus"));
    status_->setWordWrap(true);
    layout->addWidget(status_);

    connect(downloads_, &ModelDownloads::changed, this, &ModelsDialog::refreshDownload);
    for (const auto& item : downloads_->items()) refreshDownload(item.id);
    resize(860, 720);
}

QString ModelsDialog::recommended(const QString& repo) {
    return tr("%1 — recommended").arg(repo);
}

void ModelsDialog::setModelsFolder(const QString& folder) {
    folder_->setText(folder);
    downloads_->setModelsDir(folder);
    emit modelsFolderChanged(folder);
}

void ModelsDialog::setToken(const QString& token) {
    tokenField_->setText(token);
    if (token.trimmed() != token_->token()) token_->save(token);
}

lantern::hub::HubOptions ModelsDialog::hubOptions() const {
    lantern::hub::HubOptions o = downloads_->hubOptions();
    o.endpoint = endpoint_->text().trimmed().toStdString();
    while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
    o.token = tokenField_->text().trimmed().toStdString();
    // The proxy the system settings name for the Hub (Qt reads them: the desktop's, or
    // http(s)_proxy), unless https_proxy already gave one.
    if (o.proxy_host.empty()) {
        const auto proxies =
            QNetworkProxyFactory::systemProxyForQuery(QNetworkProxyQuery(QUrl(endpoint_->text().trimmed())));
        for (const QNetworkProxy& proxy : proxies) {
            if (proxy.type() == QNetworkProxy::HttpProxy && !proxy.hostName().isEmpty()) {
                o.proxy_host = proxy.hostName().toStdString();
                o.proxy_port = proxy.port();
                break;
            }
        }
    }
    return o;
}

void ModelsDialog::showError(const QString& message) {
    status_->setText(message);
}

void ModelsDialog::search(const QString& query) {
    if (query.trimmed().isEmpty()) return;
    status_->setText(tr("Searching…"));
    downloads_->setHubOptions(hubOptions());
    const auto options = hubOptions();
    const std::string q = query.trimmed().toStdString();
    inBackground<std::vector<lantern::hub::RepoSummary>>(
        this, [options, q] { return lantern::hub::HubClient(options).search(q, 50); },
        [this](std::vector<lantern::hub::RepoSummary> found) {
            results_->clear();
            for (const auto& r : found) {
                const QString id = QString::fromStdString(r.id);
                auto* item = new QListWidgetItem(tr("%1 — %2 downloads%3")
                                                     .arg(id, display::count(r.downloads),
                                                          r.gated ? tr(", gated: needs a token") : QString()),
                                                 results_);
                item->setData(Qt::UserRole, id);
            }
            status_->setText(found.empty()
                                 ? tr("No GGUF models found.")
                                 : tr("%n repositories found.", nullptr, static_cast<int>(found.size())));
        },
        [this](const QString& message) { showError(message); });
}

void ModelsDialog::openRepository(const QString& repo) {
    if (repo.isEmpty()) return;
    repo_ = repo;
    files_->setRowCount(0);
    download_->setEnabled(false);
    repoLabel_->setText(tr("%1: reading its files…").arg(repo));
    downloads_->setHubOptions(hubOptions());
    const auto options = hubOptions();
    const std::string id = repo.toStdString();
    using Listing = std::pair<lantern::hub::RepoInfo, std::vector<lantern::hub::RepoFile>>;
    inBackground<Listing>(
        this,
        [options, id] {
            lantern::hub::HubClient client(options);
            auto files = client.gguf_files(id);
            return Listing{client.repo_info(id), std::move(files)};
        },
        [this, repo](Listing listing) {
            if (repo != repo_) return;
            repoLabel_->setText(tr("%1 · licence: %2")
                                    .arg(repo, listing.first.license.empty()
                                                   ? tr("not stated")
                                                   : QString::fromStdString(listing.first.license)));
            showFiles(repo, listing.second);
        },
        [this](const QString& message) {
            repoLabel_->setText(message);
            showError(message);
        });
}

void ModelsDialog::showFiles(const QString& repo, const std::vector<lantern::hub::RepoFile>& files) {
    repoFiles_.clear();
    for (const auto& f : files) {
        if (f.split_index <= 1) repoFiles_.push_back(f);  // a split model is one row (its parts come along)
    }
    files_->setRowCount(static_cast<int>(repoFiles_.size()));
    for (int row = 0; row < files_->rowCount(); ++row) {
        const auto& f = repoFiles_[static_cast<size_t>(row)];
        const auto parts = lantern::hub::choose_model(files, f.path);
        uint64_t total = 0;
        for (const auto& p : parts) total += p.size;
        QString name = QString::fromStdString(f.path);
        if (f.split_count > 1) name += tr(" (%n parts)", nullptr, static_cast<int>(f.split_count));
        files_->setItem(row, kFile, new QTableWidgetItem(name));
        files_->setItem(row, kQuant, new QTableWidgetItem(QString::fromStdString(f.quant)));
        auto* size = new QTableWidgetItem(display::bytes(total));
        size->setData(Qt::UserRole, static_cast<qulonglong>(total));
        files_->setItem(row, kSize, size);
        files_->setItem(row, kRuns, new QTableWidgetItem(tr("checking…")));
        files_->setItem(row, kFits, new QTableWidgetItem(QString()));
    }
    emit repositoryListed(repo);
    probeFiles(repo);
}

void ModelsDialog::probeFiles(const QString& repo) {
    const auto options = hubOptions();
    const std::string id = repo.toStdString();
    std::vector<std::pair<std::string, uint64_t>> wanted;
    for (int row = 0; row < files_->rowCount(); ++row)
        wanted.emplace_back(repoFiles_[static_cast<size_t>(row)].path,
                            files_->item(row, kSize)->data(Qt::UserRole).toULongLong());
    const lantern::DeviceInfo device = device_;
    const uint32_t context = context_;
    struct Probe {
        lantern::hub::ProbedFile file;
        lantern::hub::FitVerdict fit;
        QString error;
    };
    inBackground<std::vector<Probe>>(
        this,
        [options, id, wanted, device, context] {
            lantern::hub::HubClient client(options);
            std::vector<Probe> out;
            for (const auto& [path, bytes] : wanted) {
                Probe p;
                try {
                    p.file = client.probe(id, path);
                    p.fit = lantern::hub::fit_on_device(p.file, bytes, device, context);
                } catch (const lantern::hub::HubError& e) {
                    p.error = QString::fromStdString(e.what());
                }
                out.push_back(std::move(p));
            }
            return out;
        },
        [this, repo](std::vector<Probe> probes) {
            if (repo != repo_) return;
            for (int row = 0; row < files_->rowCount() && row < static_cast<int>(probes.size()); ++row) {
                const Probe& p = probes[static_cast<size_t>(row)];
                auto* runs = files_->item(row, kRuns);
                const QString arch = QString::fromStdString(p.file.architecture);
                runs->setText(!p.error.isEmpty() ? tr("unknown: %1").arg(p.error)
                              : p.file.supported ? tr("yes (%1)").arg(arch)
                              : arch.isEmpty()   ? tr("no: not a model Lantern can read")
                                                 : tr("no: a %1 model").arg(arch));
                runs->setData(Qt::UserRole, p.file.supported ? 1 : 0);
                QString fit;
                switch (p.fit.kind) {
                    case lantern::hub::FitVerdict::Kind::Fits:
                        fit = tr("fits (%1 with a context of %2)")
                                  .arg(display::bytes(p.fit.needed_bytes), display::count(p.fit.context));
                        break;
                    case lantern::hub::FitVerdict::Kind::ShorterContext:
                        fit =
                            tr("fits with a shorter context (%1 tokens)").arg(display::count(p.fit.context));
                        break;
                    case lantern::hub::FitVerdict::Kind::TooBig:
                        fit =
                            tr("too big: needs %1 of %2")
                                .arg(display::bytes(p.fit.needed_bytes), display::bytes(p.fit.device_bytes));
                        break;
                    case lantern::hub::FitVerdict::Kind::Unknown:
                        fit = tr("unknown");
                        break;
                }
                files_->item(row, kFits)->setText(fit);
            }
            const auto rows = files_->selectionModel()->selectedRows();
            download_->setEnabled(!rows.isEmpty() &&
                                  files_->item(rows[0].row(), kRuns)->data(Qt::UserRole).toInt() != 0);
            emit filesProbed(repo);
        },
        [this](const QString& message) { showError(message); });
}

void ModelsDialog::downloadSelected() {
    const auto rows = files_->selectionModel()->selectedRows();
    if (rows.isEmpty() || repo_.isEmpty()) return;
    const auto& chosen = repoFiles_[static_cast<size_t>(rows[0].row())];
    const auto options = hubOptions();
    downloads_->setHubOptions(options);
    const std::string id = repo_.toStdString();
    const QString repo = repo_;
    inBackground<std::vector<lantern::hub::RepoFile>>(
        this,
        [options, id, path = chosen.path] {
            lantern::hub::HubClient client(options);
            return lantern::hub::choose_model(client.gguf_files(id), path);
        },
        [this, repo](std::vector<lantern::hub::RepoFile> parts) {
            for (const auto& part : parts) downloads_->start(repo, part);
            status_->setText(tr("Downloading into %1").arg(downloads_->modelsDir()));
        },
        [this](const QString& message) { showError(message); });
}

void ModelsDialog::refreshDownload(int id) {
    const ModelDownloads::Item item = downloads_->item(id);
    int row = rowOfDownload_.value(id, -1);
    if (row < 0) {
        row = downloadsTable_->rowCount();
        downloadsTable_->insertRow(row);
        rowOfDownload_.insert(id, row);
        downloadsTable_->setItem(
            row, kName,
            new QTableWidgetItem(item.repo + QLatin1Char('/') + QString::fromStdString(item.file.path)));
        auto* bar = new QProgressBar(downloadsTable_);
        bar->setRange(0, 1000);
        downloadsTable_->setCellWidget(row, kProgress, bar);
        downloadsTable_->setItem(row, kState, new QTableWidgetItem());
        auto* pause = new QPushButton(downloadsTable_);
        pause->setObjectName(QStringLiteral("pauseDownload"));
        connect(pause, &QPushButton::clicked, this, [this, id] {
            const auto state = downloads_->item(id).state;
            if (state == ModelDownloads::State::Running) {
                downloads_->pause(id);
            } else {
                downloads_->resume(id);
            }
        });
        downloadsTable_->setCellWidget(row, kPause, pause);
        auto* cancel = new QPushButton(tr("Cancel"), downloadsTable_);
        cancel->setObjectName(QStringLiteral("cancelDownload"));
        connect(cancel, &QPushButton::clicked, this, [this, id] { downloads_->cancel(id); });
        downloadsTable_->setCellWidget(row, kCancel, cancel);
    }
    auto* bar = qobject_cast<QProgressBar*>(downloadsTable_->cellWidget(row, kProgress));
    bar->setValue(item.total ? static_cast<int>(1000.0 * static_cast<double>(item.done) /
                                                static_cast<double>(item.total))
                             : 0);
    QString state;
    switch (item.state) {
        case ModelDownloads::State::Running: {
            const double left = item.bytesPerSecond > 0
                                    ? static_cast<double>(item.total - item.done) / item.bytesPerSecond
                                    : 0;
            state = tr("%1 of %2, %3/s, %4 left")
                        .arg(display::bytes(item.done), display::bytes(item.total),
                             display::bytes(static_cast<uint64_t>(item.bytesPerSecond)),
                             display::milliseconds(left * 1000.0));
            break;
        }
        case ModelDownloads::State::Paused:
            state = tr("paused at %1 of %2").arg(display::bytes(item.done), display::bytes(item.total));
            break;
        case ModelDownloads::State::Done:
            state = tr("done: in the model picker");
            break;
        case ModelDownloads::State::Failed:
            state = item.error;
            break;
        case ModelDownloads::State::Cancelled:
            state = tr("cancelled");
            break;
    }
    downloadsTable_->item(row, kState)->setText(state);
    const bool live = item.state == ModelDownloads::State::Running ||
                      item.state == ModelDownloads::State::Paused ||
                      item.state == ModelDownloads::State::Failed;
    if (!live) {  // done or cancelled: nothing more to do with it
        downloadsTable_->removeCellWidget(row, kPause);
        downloadsTable_->removeCellWidget(row, kCancel);
        return;
    }
    if (auto* pause = qobject_cast<QPushButton*>(downloadsTable_->cellWidget(row, kPause)))
        pause->setText(item.state == ModelDownloads::State::Running ? tr("Pause") : tr("Resume"));
}

void ModelsDialog::changeEvent(QEvent* event) {
    QDialog::changeEvent(event);
    if (event->type() == QEvent::LanguageChange) retranslateUi();
}

void ModelsDialog::retranslateUi() {
    texts_.apply();
    for (int row = 0; row < results_->count(); ++row)
        if (QListWidgetItem* item = results_->item(row); item->data(kRecommendedRole).toBool())
            item->setText(recommended(item->data(Qt::UserRole).toString()));
    if (files_->rowCount() == 0 && !repoLabel_->text().contains(QChar(0x2026)))
        repoLabel_->setText(tr("Choose a repository to see its files."));
    if (!tokenNote_->text().isEmpty())
        tokenNote_->setText(token_->where() == HubToken::Where::Environment ? tr("From HF_TOKEN.")
                            : token_->where() == HubToken::Where::Keyring
                                ? tr("Kept in your keyring.")
                                : tr("Kept in your keyring when you enter one."));
    for (int row = 0; row < downloadsTable_->rowCount(); ++row)
        if (auto* cancel = qobject_cast<QPushButton*>(downloadsTable_->cellWidget(row, kCancel)))
            cancel->setText(tr("Cancel"));
    for (const auto& item : downloads_->items()) refreshDownload(item.id);  // their states and Pause
}
