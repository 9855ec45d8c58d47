// ModelLibrary finds the models other local-AI apps downloaded, laid out as each app lays them
// out, in a home folder made up for the test: each model once, split models by their first part
// with all their bytes, no vision projectors, nothing from hidden or too-deep folders, linked
// folders followed, Ollama's digest-named blobs under its own names, and the environment variables
// those apps honour.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>
#include <memory>
#include <utility>

#include "ModelLibrary.h"
#include "lantern/gguf.h"

using model_library::Model;

class TestModelLibrary : public QObject {
    Q_OBJECT
private slots:
    void init() {
        home_ = std::make_unique<QTemporaryDir>();  // a fresh home for each test
        QVERIFY(home_->isValid());
        for (const char* name : {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "LLAMA_CACHE",
                                 "HF_HOME", "HF_HUB_CACHE", "OLLAMA_MODELS"})
            qunsetenv(name);
        qputenv("HOME", QFile::encodeName(home_->path()));
    }

    void eachAppsModelsAreFoundOnce() {
        put("lantern/a.gguf", 100);
        put("lantern/family/b.gguf", 200);
        put("lantern/notes.txt", 5);
        put("other-disk/c.gguf", 150);
        link("lantern/linked", "../other-disk");  // a folder of models on another disk, linked in
        put(".lmstudio/models/lmstudio-community/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q8_0.gguf",
            300);
        put(".lmstudio/models/lmstudio-community/Llama-3.2-1B-Instruct-GGUF/mmproj-model-f16.gguf", 10);
        put(".local/share/nomic.ai/GPT4All/orca-mini-3b.gguf", 400);
        put(".local/share/nomic.ai/GPT4All/localdocs_v2.db", 10);
        put("jan/models/tinyllama-1.1b/tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf", 500);
        put(".cache/llama.cpp/bartowski_Qwen2.5-0.5B-Instruct-GGUF_Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", 600);
        // The Hugging Face cache: files are links into blobs/, and two revisions share one blob.
        const QString repo = QStringLiteral(".cache/huggingface/hub/models--TheBloke--TinyLlama-GGUF");
        put(repo + "/blobs/0123abcd", 700);
        link(repo + "/snapshots/rev1/tinyllama.Q4_0.gguf", "../../blobs/0123abcd");
        link(repo + "/snapshots/rev2/tinyllama.Q4_0.gguf", "../../blobs/0123abcd");
        put(repo + "/snapshots/rev1/big-00001-of-00002.gguf", 800);
        put(repo + "/snapshots/rev1/big-00002-of-00002.gguf", 900);
        link(repo + "/snapshots/rev1/gone.gguf", "../../blobs/missing");  // an interrupted download
        put(".cache/huggingface/hub/.locks/models--x/y.gguf", 1);
        put(".cache/huggingface/hub/models--a--b/snapshots/r/1/2/3/deep.gguf", 1);  // below the 5 levels

        const auto sources = model_library::sources(path("lantern"));
        QStringList names;
        for (const auto& s : sources) names << s.name;
        QCOMPARE(names, (QStringList{"", "LM Studio", "GPT4All", "Jan", "llama.cpp", "Hugging Face"}));

        QStringList folders;
        const QVector<Model> models = model_library::find(sources, 20000, &folders);
        // The folders walked, for the window's watcher: where the next download would land.
        for (const char* walked : {"lantern", "lantern/family", "lantern/linked",
                                   ".lmstudio/models/lmstudio-community/Llama-3.2-1B-Instruct-GGUF",
                                   ".cache/huggingface/hub/models--TheBloke--TinyLlama-GGUF/snapshots/rev2"})
            QVERIFY2(folders.contains(path(QString::fromLatin1(walked))), walked);
        for (const QString& folder : folders) {
            QVERIFY2(!folder.contains(QStringLiteral("/.locks")), qPrintable(folder));   // hidden: not walked
            QVERIFY2(!folder.endsWith(QStringLiteral("/r/1/2/3")), qPrintable(folder));  // below the 5 levels
        }
        QStringList got;
        for (const Model& m : models)
            got << QStringLiteral("%1|%2|%3")
                       .arg(m.source, QDir(home_->path()).relativeFilePath(m.path))
                       .arg(m.bytes);
        QCOMPARE(got, (QStringList{
                          "|lantern/a.gguf|100",
                          "|lantern/family/b.gguf|200",
                          "|lantern/linked/c.gguf|150",
                          "LM "
                          "Studio|.lmstudio/models/lmstudio-community/Llama-3.2-1B-Instruct-GGUF/"
                          "Llama-3.2-1B-Instruct-Q8_0.gguf|300",
                          "GPT4All|.local/share/nomic.ai/GPT4All/orca-mini-3b.gguf|400",
                          "Jan|jan/models/tinyllama-1.1b/tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf|500",
                          "llama.cpp|.cache/llama.cpp/"
                          "bartowski_Qwen2.5-0.5B-Instruct-GGUF_Qwen2.5-0.5B-Instruct-Q4_K_M.gguf|600",
                          "Hugging Face|" + repo + "/snapshots/rev1/big-00001-of-00002.gguf|1700",
                          "Hugging Face|" + repo + "/snapshots/rev1/tinyllama.Q4_0.gguf|700",
                      }));
    }

    // Each model says the architecture its file's head names, "" when that is not GGUF.
    void eachModelSaysItsArchitecture() {
        for (const auto& [file, arch] :
             {std::pair{"m/llama.gguf", "llama"}, std::pair{"m/qwen.gguf", "qwen2"}}) {
            lantern::GgufWriter w;
            w.set_string("general.architecture", arch);
            QVERIFY(QDir().mkpath(path("m")));
            w.write(path(file).toStdString());
        }
        put("m/zeros.gguf", 64);
        QStringList got;
        for (const Model& m : model_library::find({{QString(), path("m"), 1}}))
            got << QFileInfo(m.path).fileName() + "=" + m.architecture;
        QCOMPARE(got, (QStringList{"llama.gguf=llama", "qwen.gguf=qwen2", "zeros.gguf="}));
    }

    // The variables the apps honour move their folders; a relative XDG path is ignored, as the XDG
    // spec says; one folder named twice is one source.
    void theAppsEnvironmentVariablesMoveTheirFolders() {
        put("elsewhere/llama/m1.gguf", 10);
        put("elsewhere/hub/models--o--r/snapshots/s/m2.gguf", 20);
        put("elsewhere/xdg-data/nomic.ai/GPT4All/m3.gguf", 30);
        put(".cache/llama.cpp/not-this-one.gguf", 40);
        qputenv("LLAMA_CACHE", QFile::encodeName(path("elsewhere/llama")));
        qputenv("HF_HUB_CACHE", QFile::encodeName(path("elsewhere/hub")));
        qputenv("XDG_DATA_HOME", QFile::encodeName(path("elsewhere/xdg-data")));
        qputenv("XDG_CACHE_HOME", "relative/cache");  // ignored: ~/.cache stays
        QStringList got;
        for (const Model& m : model_library::find(model_library::sources(path("elsewhere/llama"))))
            got << m.source + "|" + QFileInfo(m.path).fileName();
        QCOMPARE(got, (QStringList{"|m1.gguf", "GPT4All|m3.gguf", "Hugging Face|m2.gguf"}));
    }

    // Ollama's store: manifests name blobs by digest. Each model blob is listed once, under Ollama's
    // name for it (its library's "model:tag", another namespace's "ns/model:tag", another
    // registry's whole path), the tag that says more than "latest"; projectors, blobs not yet
    // downloaded and manifests that are not JSON list nothing. $OLLAMA_MODELS moves the store.
    void ollamasModelsAreListedByTheirOllamaNames() {
        const QString store = QStringLiteral(".ollama/models");
        const QString a = digest('a'), b = digest('b'), c = digest('c'), p = digest('d'), gone = digest('e');
        // llama3.2 with two tags on one blob, and a vision model whose projector is another layer.
        putBlob(store, a, 1000);
        manifest(store, "registry.ollama.ai/library/llama3.2/latest",
                 {{"model", a}, {"template", digest('f')}});
        manifest(store, "registry.ollama.ai/library/llama3.2/q8_0", {{"model", a}});  // found after "latest"
        putBlob(store, b, 2000);
        putBlob(store, p, 50);
        manifest(store, "registry.ollama.ai/library/llava/7b", {{"model", b}, {"projector", p}});
        putBlob(store, c, 3000);
        manifest(store, "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF/Q4_K_M", {{"model", c}});
        manifest(store, "registry.ollama.ai/someone/tiny/latest", {{"model", gone}});  // still downloading
        put(store + "/manifests/registry.ollama.ai/library/broken/latest", 20);        // not JSON

        QStringList names;
        for (const auto& s : model_library::sources(path("lantern-none"))) names << s.name;
        QCOMPARE(names, (QStringList{"Ollama"}));
        QStringList got;
        for (const Model& m : model_library::find(model_library::sources(path("lantern-none"))))
            got << QStringLiteral("%1|%2|%3|%4")
                       .arg(m.source, m.name, QFileInfo(m.path).fileName())
                       .arg(m.bytes);
        QCOMPARE(got, (QStringList{
                          "Ollama|hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M|sha256-" + c + "|3000",
                          "Ollama|llama3.2:q8_0|sha256-" + a + "|1000",
                          "Ollama|llava:7b|sha256-" + b + "|2000",
                      }));

        // The folders to watch: the store (where a first pull makes manifests/) and every manifest
        // folder down to the tags.
        QStringList folders;
        model_library::find(model_library::sources(path("lantern-none")), 20000, &folders);
        for (const char* walked :
             {".ollama/models", ".ollama/models/manifests/registry.ollama.ai/library/llama3.2",
              ".ollama/models/manifests/hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF"})
            QVERIFY2(folders.contains(path(QString::fromLatin1(walked))), walked);

        // Moved, as Ollama's OLLAMA_MODELS moves it.
        QVERIFY(QDir().mkpath(path("big-disk")));
        QVERIFY(QDir().rename(path(store), path("big-disk/ollama")));
        qputenv("OLLAMA_MODELS", QFile::encodeName(path("big-disk/ollama")));
        const auto moved = model_library::find(model_library::sources(path("lantern-none")));
        QCOMPARE(moved.size(), 3);
        QVERIFY(moved[1].path.startsWith(path("big-disk/ollama/blobs/")));
    }

    // A huge folder is walked only so far, so the picker never hangs on it.
    void aHugeFolderIsWalkedOnlySoFar() {
        for (int i = 0; i < 40; ++i) put(QStringLiteral("many/%1.gguf").arg(i, 3, 10, QLatin1Char('0')), 1);
        const QVector<model_library::Source> one{{QString(), path("many"), 1}};
        QCOMPARE(model_library::find(one).size(), 40);
        QCOMPARE(model_library::find(one, 25).size(), 25);
    }

private:
    QString path(const QString& relative) const { return home_->filePath(relative); }
    static QString digest(char fill) { return QString(64, QLatin1Char(fill)); }
    void putBlob(const QString& store, const QString& hex, int bytes) {
        put(store + "/blobs/sha256-" + hex, bytes);
    }
    // An Ollama manifest at manifests/<name> with the given layers (kind: model, projector, template ...).
    void manifest(const QString& store, const QString& name,
                  const QVector<std::pair<QString, QString>>& layers) {
        QJsonArray list;
        for (const auto& [kind, hex] : layers)
            list.append(QJsonObject{{"mediaType", "application/vnd.ollama.image." + kind},
                                    {"digest", "sha256:" + hex},
                                    {"size", 1}});
        const QJsonObject doc{{"schemaVersion", 2},
                              {"mediaType", "application/vnd.docker.distribution.manifest.v2+json"},
                              {"layers", list}};
        const QString file = path(store + "/manifests/" + name);
        QVERIFY(QDir().mkpath(QFileInfo(file).path()));
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QJsonDocument(doc).toJson());
    }
    void put(const QString& relative, int bytes) {
        QVERIFY(QDir().mkpath(QFileInfo(path(relative)).path()));
        QFile f(path(relative));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(bytes, 'x'));
    }
    void link(const QString& relative, const QString& target) {
        QVERIFY(QDir().mkpath(QFileInfo(path(relative)).path()));
        QVERIFY(QFile::link(target, path(relative)));
    }

    std::unique_ptr<QTemporaryDir> home_;
};

QTEST_GUILESS_MAIN(TestModelLibrary)
#include "test_model_library.moc"
