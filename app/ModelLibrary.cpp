#include "ModelLibrary.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSet>
#include <algorithm>

#include "lantern/gguf.h"

namespace model_library {

namespace {

// llama.cpp's gguf-split names the files of a split model NAME-00001-of-00003.gguf and so on; the
// model is opened by its first file (the engine finds the others).
const QRegularExpression& splitPartPattern() {
    static const QRegularExpression re(QStringLiteral("^(.*)-(\\d{5})-of-(\\d{5})\\.gguf$"));
    return re;
}

QString env(const char* name) { return QString::fromLocal8Bit(qgetenv(name)); }

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

QVector<Model> find(const QVector<Source>& sources, int maxEntries) {
    QVector<Model> models;
    QSet<QString> seen;  // real paths
    for (const Source& source : sources) {
        QVector<Model> here;
        const QString root = QDir(source.dir).absolutePath();
        // Level by level, to the source's depth: a cache folder can be deep.
        QVector<QString> level{root};
        int visited = 0;
        for (int depth = 1; depth <= source.depth && !level.isEmpty() && visited < maxEntries; ++depth) {
            QVector<QString> next;
            for (const QString& dir : level) {
                // By name, so that which of two links to one file is listed does not depend on
                // the file system's order.
                const QFileInfoList entries =
                    QDir(dir).entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Readable, QDir::Name);
                for (const QFileInfo& info : entries) {
                    if (visited++ >= maxEntries) break;
                    if (info.isDir()) {
                        // Into linked folders too (a models folder linked from another disk; the
                        // depth bounds any loop), not into hidden ones (.git, .locks).
                        if (!info.fileName().startsWith(QLatin1Char('.'))) next << info.filePath();
                        continue;
                    }
                    const QString name = info.fileName();
                    if (!name.endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive)) continue;
                    if (name.startsWith(QLatin1String("mmproj"), Qt::CaseInsensitive)) continue;
                    const auto m = splitPartPattern().match(name);
                    if (m.hasMatch() && m.captured(2).toInt() != 1) continue;
                    const QString real = info.canonicalFilePath();  // "" for a broken link
                    if (real.isEmpty() || seen.contains(real)) continue;
                    seen.insert(real);
                    const QString path = info.absoluteFilePath();
                    const auto arch = lantern::gguf_architecture(QFile::encodeName(path).toStdString());
                    here.push_back({path, source.name, modelBytes(path), arch ? QString::fromStdString(*arch) : QString()});
                }
            }
            level = next;
        }
        std::sort(here.begin(), here.end(), [](const Model& a, const Model& b) {
            return QFileInfo(a.path).fileName().compare(QFileInfo(b.path).fileName(), Qt::CaseInsensitive) < 0;
        });
        models += here;
    }
    return models;
}

}  // namespace model_library
