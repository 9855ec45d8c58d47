#include "models/ModelDownloads.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMetaObject>
#include <QPointer>

namespace {

QString sidecarOf(const QString& dir, const lantern::hub::RepoFile& file) {
    const QString path = QString::fromStdString(file.path);
    return dir + QLatin1Char('/') + path.section(QLatin1Char('/'), -1) + QStringLiteral(".part.json");
}

void writeSidecar(const QString& dir, const QString& repo, const lantern::hub::RepoFile& file) {
    QJsonObject o;
    o[QStringLiteral("repo")] = repo;
    o[QStringLiteral("path")] = QString::fromStdString(file.path);
    o[QStringLiteral("size")] = static_cast<qint64>(file.size);
    o[QStringLiteral("sha256")] = QString::fromStdString(file.sha256);
    o[QStringLiteral("quant")] = QString::fromStdString(file.quant);
    o[QStringLiteral("split_index")] = static_cast<int>(file.split_index);
    o[QStringLiteral("split_count")] = static_cast<int>(file.split_count);
    QDir().mkpath(dir);
    QFile f(sidecarOf(dir, file));
    if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        f.write(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

}  // namespace

ModelDownloads::ModelDownloads(QString modelsDir, QObject* parent)
    : QObject(parent),
      modelsDir_(std::move(modelsDir)),
      options_(lantern::hub::HubOptions::from_environment()) {}

ModelDownloads::~ModelDownloads() {
    for (auto it = runs_.begin(); it != runs_.end(); ++it)
        it.value()->keep = static_cast<int>(lantern::hub::Keep::Pause);
    for (auto it = runs_.begin(); it != runs_.end(); ++it) {
        if (it.value()->thread.joinable()) it.value()->thread.join();
    }
}

void ModelDownloads::setHubOptions(const lantern::hub::HubOptions& options) {
    options_ = options;
}

int ModelDownloads::start(const QString& repo, const lantern::hub::RepoFile& file) {
    for (const Item& existing : std::as_const(items_)) {
        if (existing.repo == repo && existing.file.path == file.path &&
            (existing.state == State::Running || existing.state == State::Paused))
            return existing.id;
    }
    Item item;
    item.id = nextId_++;
    item.repo = repo;
    item.file = file;
    item.dir = modelsDir_ + QLatin1Char('/') + repo;
    item.total = file.size;
    items_.insert(item.id, item);
    writeSidecar(item.dir, repo, file);
    launch(item.id);
    return item.id;
}

void ModelDownloads::launch(int id) {
    join(id);
    Item& item = items_[id];
    item.state = State::Running;
    item.error.clear();
    auto run = std::make_shared<Run>();
    runs_.insert(id, run);
    const lantern::hub::HubOptions options = options_;
    const std::string repo = item.repo.toStdString();
    const lantern::hub::RepoFile file = item.file;
    const std::string dir = item.dir.toStdString();
    QPointer<ModelDownloads> self(this);
    run->thread = std::thread([self, run, options, repo, file, dir, id] {
        // Everything that reaches the UI thread goes by queued calls; `self` is checked there.
        const auto post = [self](auto fn) {
            QMetaObject::invokeMethod(self.data(), fn, Qt::QueuedConnection);
        };
        try {
            lantern::hub::HubClient client(options);
            const std::string path =
                lantern::hub::download(client, repo, file, dir, [&](const lantern::hub::DownloadProgress& p) {
                    post([self, id, p] {
                        if (!self || !self->items_.contains(id)) return;
                        Item& it = self->items_[id];
                        it.done = p.done;
                        it.total = p.total;
                        it.bytesPerSecond = p.bytes_per_s;
                        emit self->changed(id);
                    });
                    return static_cast<lantern::hub::Keep>(run->keep.load());
                });
            post([self, id, path] {
                if (!self || !self->items_.contains(id)) return;
                Item& it = self->items_[id];
                it.state = State::Done;
                it.done = it.total;
                it.path = QString::fromStdString(path);
                QFile::remove(sidecarOf(it.dir, it.file));
                emit self->changed(id);
                emit self->finished(id, it.path);
            });
        } catch (const lantern::hub::HubError& e) {
            const auto kind = e.kind();
            const QString message = QString::fromStdString(e.what());
            const int keep = run->keep.load();
            post([self, id, kind, message, keep] {
                if (!self || !self->items_.contains(id)) return;
                Item& it = self->items_[id];
                if (kind == lantern::hub::HubError::Kind::Cancelled) {
                    it.state = keep == static_cast<int>(lantern::hub::Keep::Cancel) ? State::Cancelled
                                                                                    : State::Paused;
                    if (it.state == State::Cancelled) QFile::remove(sidecarOf(it.dir, it.file));
                    emit self->changed(id);
                    return;
                }
                it.state = State::Failed;
                it.error = message;
                // A wrong checksum removed the file; a network failure keeps the .part to resume.
                if (kind == lantern::hub::HubError::Kind::Checksum) QFile::remove(sidecarOf(it.dir, it.file));
                emit self->changed(id);
                emit self->failed(id, message);
            });
        }
    });
}

void ModelDownloads::join(int id) {
    const auto run = runs_.take(id);
    if (run && run->thread.joinable()) run->thread.join();
}

void ModelDownloads::pause(int id) {
    if (const auto run = runs_.value(id)) run->keep = static_cast<int>(lantern::hub::Keep::Pause);
}

void ModelDownloads::resume(int id) {
    if (!items_.contains(id)) return;
    const State s = items_[id].state;
    if (s != State::Paused && s != State::Failed) return;
    launch(id);
    emit changed(id);
}

void ModelDownloads::cancel(int id) {
    if (!items_.contains(id)) return;
    Item& it = items_[id];
    if (it.state == State::Running) {
        if (const auto run = runs_.value(id)) run->keep = static_cast<int>(lantern::hub::Keep::Cancel);
        return;
    }
    if (it.state == State::Paused || it.state == State::Failed) {
        join(id);
        const QString name = QString::fromStdString(it.file.path).section(QLatin1Char('/'), -1);
        QFile::remove(it.dir + QLatin1Char('/') + name + QStringLiteral(".part"));
        QFile::remove(sidecarOf(it.dir, it.file));
        it.state = State::Cancelled;
        emit changed(id);
    }
}

int ModelDownloads::restorePaused() {
    int found = 0;
    QDirIterator it(modelsDir_, {QStringLiteral("*.part.json")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString sidecar = it.next();
        QFile f(sidecar);
        if (!f.open(QIODevice::ReadOnly)) continue;
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        Item item;
        item.repo = o.value(QStringLiteral("repo")).toString();
        item.file.path = o.value(QStringLiteral("path")).toString().toStdString();
        item.file.size = static_cast<uint64_t>(o.value(QStringLiteral("size")).toInteger());
        item.file.sha256 = o.value(QStringLiteral("sha256")).toString().toStdString();
        item.file.quant = o.value(QStringLiteral("quant")).toString().toStdString();
        item.file.split_index = static_cast<uint32_t>(o.value(QStringLiteral("split_index")).toInt());
        item.file.split_count = static_cast<uint32_t>(o.value(QStringLiteral("split_count")).toInt());
        if (item.repo.isEmpty() || item.file.path.empty()) continue;
        bool known = false;
        for (const Item& existing : std::as_const(items_))
            known = known || (existing.repo == item.repo && existing.file.path == item.file.path);
        if (known) continue;
        item.id = nextId_++;
        item.dir = QFileInfo(sidecar).absolutePath();
        item.state = State::Paused;
        item.total = item.file.size;
        item.done = static_cast<quint64>(QFileInfo(sidecar.chopped(5)).size());  // NAME.part
        items_.insert(item.id, item);
        ++found;
        emit changed(item.id);
    }
    return found;
}

QList<ModelDownloads::Item> ModelDownloads::items() const {
    QList<Item> out = items_.values();
    std::sort(out.begin(), out.end(), [](const Item& a, const Item& b) { return a.id < b.id; });
    return out;
}
