#include "ModelPicker.h"

#include <QDir>
#include <QEvent>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QSet>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QThread>
#include <algorithm>
#include <memory>

#include "Format.h"
#include "Preferences.h"
#include "lantern/engine.h"

namespace {
constexpr int kModelPathRole = Qt::UserRole + 2;
}

ModelPicker::ModelPicker(QWidget* parent) : QComboBox(parent) {
    setObjectName(QStringLiteral("modelPicker"));
    setMinimumContentsLength(28);
    setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    retranslateUi();
    connect(this, &QComboBox::activated, this, [this](int index) {
        const QString path = itemData(index, kModelPathRole).toString();
        if (!path.isEmpty() && path != current_) emit modelChosen(path);
    });
    watcher_ = new QFileSystemWatcher(this);
    QDir().mkpath(preferences::modelsDirectory());
    for (const model_library::Source& source : model_library::sources(preferences::modelsDirectory()))
        watcher_->addPath(source.dir);
    connect(watcher_, &QFileSystemWatcher::directoryChanged, this, &ModelPicker::rescan);
    fill();    // the last model, at once
    rescan();  // and every other, once the folders are scanned
}

ModelPicker::~ModelPicker() {
    if (scan_ != nullptr) {
        scan_->wait();
        delete scan_;
    }
}

void ModelPicker::setCurrentModel(const QString& path) {
    current_ = path;
    fill();
}

void ModelPicker::rescan() {
    if (scan_ != nullptr) {  // one scan at a time; the next starts when it ends
        rescanWanted_ = true;
        return;
    }
    // The thread fills its own list; the picker takes it once the thread has finished.
    auto found = std::make_shared<QVector<model_library::Model>>();
    auto folders = std::make_shared<QStringList>();
    scan_ = QThread::create([found, folders, dir = preferences::modelsDirectory()] {
        *found = model_library::find(model_library::sources(dir), 20000, folders.get());
    });
    connect(scan_, &QThread::finished, this, [this, found, folders] {
        scan_->deleteLater();
        scan_ = nullptr;
        scanned_ = std::move(*found);
        watchFolders(*folders);
        scanned_once_ = true;
        fill();
        emit modelListChanged();
        if (rescanWanted_) {
            rescanWanted_ = false;
            rescan();
        }
    });
    scan_->start(QThread::LowPriority);
}

void ModelPicker::watchFolders(const QStringList& folders) {
    // Every folder the scan walked, so that a model another app downloads into a folder of its
    // own (LM Studio's publisher/model/, a Hugging Face snapshot, an Ollama tag) shows up; at most
    // a couple of thousand, well within the system's watch limit.
    const QStringList first = folders.mid(0, 2000);
    const QSet<QString> wanted(first.begin(), first.end());
    const QStringList current = watcher_->directories();
    const QSet<QString> watched(current.begin(), current.end());
    QStringList gone, added;
    for (const QString& dir : current)
        if (!wanted.contains(dir)) gone << dir;
    for (const QString& dir : first)
        if (!watched.contains(dir)) added << dir;
    if (!gone.isEmpty()) watcher_->removePaths(gone);
    if (!added.isEmpty()) watcher_->addPaths(added);
}

void ModelPicker::retranslateUi() {
    setToolTip(tr("Models in %1, those LM Studio, GPT4All, Jan, llama.cpp, the Hugging Face cache and "
                  "Ollama downloaded, and models you opened")
                   .arg(QDir::toNativeSeparators(preferences::modelsDirectory())));
}

void ModelPicker::changeEvent(QEvent* event) {
    QComboBox::changeEvent(event);
    if (event->type() != QEvent::LanguageChange) return;
    retranslateUi();
    fill();  // the placeholder entry and the model labels
}

void ModelPicker::fill() {
    QVector<model_library::Model> models = scanned_;
    for (const QString& extra : {preferences::lastModel(), current_}) {
        if (extra.isEmpty() || !QFileInfo::exists(extra)) continue;
        const QString path = QFileInfo(extra).absoluteFilePath();
        const bool listed =
            std::any_of(models.begin(), models.end(), [&](const auto& m) { return m.path == path; });
        if (!listed) models.push_back({path, QString(), model_library::modelBytes(path), QString()});
    }

    const QSignalBlocker block(this);
    clear();
    addItem(!models.isEmpty() ? tr("Choose a model…")
            : scanned_once_   ? tr("No models found — use Open Model…")
                              : tr("Looking for models…"));
    setItemData(0, QString(), kModelPathRole);
    for (const model_library::Model& m : models) {
        const QString name = m.name.isEmpty() ? QFileInfo(m.path).completeBaseName() : m.name;
        const QString where = QDir::toNativeSeparators(m.path);
        // Models other apps downloaded say whose they are.
        QString label = m.source.isEmpty() ? tr("%1  (%2)").arg(name, display::bytes(m.bytes))
                                           : tr("%1  (%2 · %3)").arg(name, display::bytes(m.bytes), m.source);
        QString tip = where;
        // A model of another architecture is listed, so that the user sees why it is not offered,
        // but cannot be chosen.
        const bool runs =
            m.architecture.isEmpty() || lantern::supported_architecture(m.architecture.toStdString());
        if (!runs) {
            label = tr("%1 — %2, not supported").arg(label, m.architecture);
            tip = tr("%1\nLantern runs llama, qwen2, qwen3, phi3, gemma2 and gemma3 models; this one is %2.")
                      .arg(where, m.architecture);
        }
        addItem(label);
        const int row = count() - 1;
        setItemData(row, m.path, kModelPathRole);
        setItemData(row, tip, Qt::ToolTipRole);
        if (auto* items = qobject_cast<QStandardItemModel*>(model()); items && !runs)
            items->item(row)->setEnabled(false);
    }
    const int currentRow = findData(QFileInfo(current_).absoluteFilePath(), kModelPathRole);
    setCurrentIndex(currentRow >= 0 ? currentRow : 0);
}

QString ModelPicker::modelName(const QString& path, bool withExtension) const {
    // Ollama's blobs are named by digest: its own name for the model says more.
    for (const model_library::Model& m : scanned_)
        if (m.path == path && !m.name.isEmpty()) return m.name;
    return withExtension ? QFileInfo(path).fileName() : QFileInfo(path).completeBaseName();
}
