#include "ModelLibrary.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSet>
#include <algorithm>
#include <functional>

#include "lantern/gguf.h"

namespace model_library {

namespace {

// llama.cpp's gguf-split names the files of a split model NAME-00001-of-00003.gguf and so on; the
// model is opened by its first file (the engine finds the others).
const QRegularExpression& splitPartPattern() {
    static const QRegularExpression re(QStringLiteral("^(.*)-(\\d{5})-of-(\\d{5})\\.gguf$"));
    return re;
}

QString env(const char* name) {
    return QString::fromLocal8Bit(qgetenv(name));
}

// $NAME when set (and absolute, as the XDG spec asks), else `fallback`.
QString dirFromEnv(const char* name, const QString& fallback) {
    const QString v = env(name);
    return !v.isEmpty() && QDir::isAbsolutePath(v) ? v : fallback;
}

}  // namespace

QVector<Source> sources(const QString& lanternDir) {
    const QString home = QDir::homePath();
    const QString data = dirFromEnv("XDG_DATA_HOME", home + QStringLiteral("/.local/share"));
    const QString config = dirFromEnv("XDG_CONFIG_HOME", home + QStringLiteral("/.config"));
    const QString cache = dirFromEnv("XDG_CACHE_HOME", home + QStringLiteral("/.cache"));
    const QString hfHome = dirFromEnv("HF_HOME", cache + QStringLiteral("/huggingface"));
    const QVector<Source> all{
        {QString(), lanternDir, 3},
        // publisher/model/file.gguf
        {QStringLiteral("LM Studio"), home + QStringLiteral("/.lmstudio/models"), 3},
        {QStringLiteral("LM Studio"), home + QStringLiteral("/.cache/lm-studio/models"), 3},
        {QStringLiteral("GPT4All"), data + QStringLiteral("/nomic.ai/GPT4All"), 1},
        // models/<id>/ in older releases, models/<provider or host>/<publisher>/<id>/ in newer ones
        {QStringLiteral("Jan"), home + QStringLiteral("/jan/models"), 4},
        {QStringLiteral("Jan"), config + QStringLiteral("/Jan/data/models"), 4},
        {QStringLiteral("llama.cpp"), dirFromEnv("LLAMA_CACHE", cache + QStringLiteral("/llama.cpp")), 1},
        // models--org--repo/snapshots/<revision>/[subfolder/]file.gguf
        {QStringLiteral("Hugging Face"), dirFromEnv("HF_HUB_CACHE", hfHome + QStringLiteral("/hub")), 5},
        // manifests/<registry>/<namespace>/<model>/<tag>, naming blobs/sha256-<digest>
        {QStringLiteral("Ollama"), dirFromEnv("OLLAMA_MODELS", home + QStringLiteral("/.ollama/models")), 4,
         Source::Layout::OllamaManifests},
        {QStringLiteral("Ollama"), QStringLiteral("/usr/share/ollama/.ollama/models"), 4,
         Source::Layout::OllamaManifests},
    };
    QVector<Source> found;
    QSet<QString> seen;
    for (const Source& s : all) {
        const QFileInfo info(s.dir);
        if (!info.isDir()) continue;
        const QString real = info.canonicalFilePath();
        if (seen.contains(real)) continue;  // e.g. LLAMA_CACHE pointed at the Lantern folder
        seen.insert(real);
        found.push_back(s);
    }
    return found;
}

uint64_t modelBytes(const QString& path) {
    const QFileInfo info(path);
    const auto m = splitPartPattern().match(info.fileName());
    if (!m.hasMatch() || m.captured(2).toInt() != 1) return static_cast<uint64_t>(info.size());
    const int count = m.captured(3).toInt();
    uint64_t total = 0;
    for (int i = 1; i <= count; ++i)
        total += static_cast<uint64_t>(QFileInfo(info.dir().filePath(QStringLiteral("%1-%2-of-%3.gguf")
                                                                         .arg(m.captured(1))
                                                                         .arg(i, 5, 10, QLatin1Char('0'))
                                                                         .arg(m.captured(3))))
                                           .size());
    return total;
}

namespace {

// Calls `file` for each file in the folders below `root`, level by level to `depth` levels (a
// cache folder can be deep), by name within a folder (so that which of two links to one file is
// listed does not depend on the file system's order), for at most `maxEntries` entries.
void walk(const QString& root, int depth, int maxEntries, QStringList* folders,
          const std::function<void(const QFileInfo&)>& file) {
    QVector<QString> level{root};
    int visited = 0;
    for (int d = 1; d <= depth && !level.isEmpty() && visited < maxEntries; ++d) {
        QVector<QString> next;
        for (const QString& dir : level) {
            if (folders != nullptr && QFileInfo(dir).isDir()) *folders << dir;
            const QFileInfoList entries = QDir(dir).entryInfoList(
                QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Readable, QDir::Name);
            for (const QFileInfo& info : entries) {
                if (visited++ >= maxEntries) break;
                if (info.isDir()) {
                    // Into linked folders too (a models folder linked from another disk; the depth
                    // bounds any loop), not into hidden ones (.git, .locks).
                    if (!info.fileName().startsWith(QLatin1Char('.'))) next << info.filePath();
                    continue;
                }
                file(info);
            }
        }
        level = next;
    }
}

QString architectureOf(const QString& path) {
    const auto arch = lantern::gguf_architecture(QFile::encodeName(path).toStdString());
    return arch ? QString::fromStdString(*arch) : QString();
}

// Ollama's name for the model a manifest at manifests/<registry>/<namespace>/<model>/<tag> tags:
// "model:tag" in its own library, "namespace/model:tag" elsewhere in its registry, and the whole
// "registry/namespace/model:tag" for another registry (hf.co/…), as `ollama list` shows them.
QString ollamaName(const QString& manifests, const QFileInfo& manifest) {
    const QStringList parts = QDir(manifests).relativeFilePath(manifest.filePath()).split(QLatin1Char('/'));
    if (parts.size() != 4) return {};
    const QString model = parts[2] + QLatin1Char(':') + parts[3];
    if (parts[0] != QLatin1String("registry.ollama.ai"))
        return parts[0] + QLatin1Char('/') + parts[1] + QLatin1Char('/') + model;
    if (parts[1] != QLatin1String("library")) return parts[1] + QLatin1Char('/') + model;
    return model;
}

// The blob a manifest names as its model layer, or "" (a projector or adapter is another layer's
// media type; a manifest that is not JSON or names no such layer lists nothing).
QString ollamaModelBlob(const QString& store, const QFileInfo& manifest) {
    if (manifest.size() > (1 << 20)) return {};  // manifests are a few hundred bytes
    QFile f(manifest.filePath());
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QJsonArray layers =
        QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("layers")).toArray();
    for (const QJsonValue& layer : layers) {
        const QJsonObject o = layer.toObject();
        if (o.value(QStringLiteral("mediaType")).toString() !=
            QLatin1String("application/vnd.ollama.image.model"))
            continue;
        const QString digest = o.value(QStringLiteral("digest")).toString();  // "sha256:<hex>"
        static const QRegularExpression valid(QStringLiteral("^sha256:[0-9a-f]{64}$"));
        if (!valid.match(digest).hasMatch()) return {};
        return store + QStringLiteral("/blobs/") +
               QString(digest).replace(QLatin1Char(':'), QLatin1Char('-'));
    }
    return {};
}

}  // namespace

QVector<Model> find(const QVector<Source>& sources, int maxEntries, QStringList* folders) {
    QVector<Model> models;
    QSet<QString> seen;  // real paths
    for (const Source& source : sources) {
        QVector<Model> here;
        const QString root = QDir(source.dir).absolutePath();
        if (source.layout == Source::Layout::OllamaManifests) {
            const QString manifests = root + QStringLiteral("/manifests");
            // The store itself too: a first pull makes manifests/ there.
            if (folders != nullptr) *folders << root;
            QHash<QString, int> byBlob;  // real path -> index in `here`
            walk(manifests, source.depth, maxEntries, folders, [&](const QFileInfo& manifest) {
                const QString name = ollamaName(manifests, manifest);
                const QString blob = name.isEmpty() ? QString() : ollamaModelBlob(root, manifest);
                const QString real = blob.isEmpty() ? QString() : QFileInfo(blob).canonicalFilePath();
                if (real.isEmpty()) return;  // not a model, or its blob is not (yet) downloaded
                if (const auto at = byBlob.constFind(real); at != byBlob.constEnd()) {
                    // Another tag of the same blob ("latest" next to "1b"): the more telling name.
                    if (here[*at].name.endsWith(QLatin1String(":latest"))) here[*at].name = name;
                    return;
                }
                if (seen.contains(real)) return;
                seen.insert(real);
                byBlob.insert(real, static_cast<int>(here.size()));
                here.push_back({blob, source.name, static_cast<uint64_t>(QFileInfo(blob).size()),
                                architectureOf(blob), name});
            });
        } else {
            walk(root, source.depth, maxEntries, folders, [&](const QFileInfo& info) {
                const QString name = info.fileName();
                if (!name.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive)) return;
                if (name.startsWith(QLatin1String("mmproj"), Qt::CaseInsensitive)) return;
                const auto m = splitPartPattern().match(name);
                if (m.hasMatch() && m.captured(2).toInt() != 1) return;
                const QString real = info.canonicalFilePath();  // "" for a broken link
                if (real.isEmpty() || seen.contains(real)) return;
                seen.insert(real);
                const QString path = info.absoluteFilePath();
                here.push_back({path, source.name, modelBytes(path), architectureOf(path), QString()});
            });
        }
        // By the name the picker shows: the app's own (Ollama's) where there is one, else the file's.
        const auto shown = [](const Model& m) {
            return m.name.isEmpty() ? QFileInfo(m.path).fileName() : m.name;
        };
        std::sort(here.begin(), here.end(), [&](const Model& a, const Model& b) {
            return shown(a).compare(shown(b), Qt::CaseInsensitive) < 0;
        });
        models += here;
    }
    return models;
}

}  // namespace model_library
