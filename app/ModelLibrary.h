// ModelLibrary — the GGUF models on this computer that the model picker lists: Lantern's own
// models folder, and the folders where other local-AI apps keep the models they downloaded
// (LM Studio, GPT4All, Jan, llama.cpp's cache, the Hugging Face cache, Ollama), so that a model
// already on disk is not downloaded again for Lantern.
#pragma once
#include <QString>
#include <QStringList>
#include <QVector>
#include <cstdint>

namespace model_library {

struct Source {
    // Files: *.gguf files in folders. OllamaManifests: Ollama's store, where a model is a blob
    // named by its digest (blobs/sha256-…) and manifests/<registry>/<namespace>/<model>/<tag>
    // name it.
    enum class Layout { Files, OllamaManifests };
    QString name;   // the app, as the picker labels its models ("" for Lantern's own folder)
    QString dir;    // where it keeps them
    int depth = 1;  // folder levels below `dir` that hold models (1: the files of `dir` itself)
    Layout layout = Layout::Files;
};

struct Model {
    QString path;          // absolute; the first file of a split model
    QString source;        // Source::name
    uint64_t bytes = 0;    // all parts of a split model together
    QString architecture;  // general.architecture from the file's head ("" when not found there)
    QString name;  // what to call it when its file name says nothing (Ollama's "llama3.2:1b"), else ""
};

// Where the apps keep their models by default on this system, with the environment variables
// they honour (XDG_DATA_HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME, LLAMA_CACHE, HF_HOME, HF_HUB_CACHE,
// OLLAMA_MODELS; and Ollama's Linux service's store, /usr/share/ollama/.ollama/models).
// `lanternDir` comes first. Only folders that exist are returned.
QVector<Source> sources(const QString& lanternDir);

// Every model under the sources, once each (by its real path: the Hugging Face cache links each
// snapshot's files to shared blobs), sorted by source order and then name. Skipped: later parts of
// a split model (NAME-00002-of-00003.gguf; the engine finds them from the first), and vision
// projectors (mmproj*.gguf, Ollama's projector layers), which are not models one can chat with;
// an Ollama model is its model layer's blob, named as Ollama names it ("llama3.2:1b",
// "hf.co/org/repo:Q4_K_M"; of several tags of one blob, the first that is not "latest"). Each
// says its architecture (lantern::gguf_architecture: the head of the file only). Bounded: a folder
// tree of more than `maxEntries` entries is not walked further. `folders`, when given, receives
// every folder walked — where a model another app downloads next would appear — for a watcher.
QVector<Model> find(const QVector<Source>& sources, int maxEntries = 20000, QStringList* folders = nullptr);

// Bytes of a model file, all parts of a split model together.
uint64_t modelBytes(const QString& path);

}  // namespace model_library
