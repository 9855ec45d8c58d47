// ModelDownloads — the app's downloads from the Hugging Face Hub (a controller; lives on the UI
// thread): several at once, each on a thread of its own running lantern::hub::download. Pause stops
// one and keeps its NAME.part; resume goes on from there — also after a restart or a crash, since
// each .part has a NAME.part.json beside it naming its repository and file (restorePaused). Cancel
// removes both. A finished file is verified (SHA-256) before it takes its name, so nothing
// half-written is ever a .gguf the model picker would list.
#pragma once
#include <QHash>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <thread>

#include "lantern/hub.h"

class ModelDownloads : public QObject {
    Q_OBJECT
public:
    enum class State { Running, Paused, Done, Failed, Cancelled };
    struct Item {
        int id = 0;
        QString repo;
        lantern::hub::RepoFile file;
        QString dir;  // MODELS/OWNER/REPO
        State state = State::Running;
        quint64 done = 0, total = 0;
        double bytesPerSecond = 0;
        QString path;   // the model file, once Done
        QString error;  // why it Failed, in words
    };

    // Downloads go into `modelsDir`/OWNER/REPO/.
    explicit ModelDownloads(QString modelsDir, QObject* parent = nullptr);
    ~ModelDownloads() override;  // running downloads pause (their .part stays for next time)

    void setHubOptions(const lantern::hub::HubOptions& options);
    const lantern::hub::HubOptions& hubOptions() const { return options_; }
    QString modelsDir() const { return modelsDir_; }
    // Where later downloads go (those under way finish where they started).
    void setModelsDir(const QString& dir) { modelsDir_ = dir; }

    // Starts downloading `file` of `repo`; returns its id. A file already being downloaded is not
    // started twice (its id is returned).
    int start(const QString& repo, const lantern::hub::RepoFile& file);
    void pause(int id);
    void resume(int id);
    void cancel(int id);
    // Lists, as Paused, every .part under the models folder that has its .part.json (a download
    // that a pause, a quit or a crash interrupted). Returns how many it found.
    int restorePaused();

    QList<Item> items() const;
    Item item(int id) const { return items_.value(id); }

signals:
    void changed(int id);  // progress or state
    void finished(int id, const QString& path);
    void failed(int id, const QString& message);

private:
    struct Run {
        std::atomic<int> keep{0};  // lantern::hub::Keep
        std::thread thread;
    };
    void launch(int id);
    void join(int id);

    QString modelsDir_;
    lantern::hub::HubOptions options_;
    QHash<int, Item> items_;
    QHash<int, std::shared_ptr<Run>> runs_;
    int nextId_ = 1;
};
