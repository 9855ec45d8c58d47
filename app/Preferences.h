// Preferences — what Lantern remembers between runs, stored with QSettings: the last model and
// device, the sampling settings, the system prompt, the interface language, window layout.
#pragma once
#include <QByteArray>
#include <QString>
#include <cstdint>

#include "lantern/sampling.h"

class QSettings;

namespace preferences {

QString lastModel();
void setLastModel(const QString& path);
// The context length asked for with a model (File > Context Length…), by its file path; 0 =
// automatic (the model's, at most 4096 tokens).
uint32_t contextLength(const QString& modelPath);
void setContextLength(const QString& modelPath, uint32_t length);
QString deviceSelector();  // "" = automatic
void setDeviceSelector(const QString& selector);
QString systemPrompt();
void setSystemPrompt(const QString& text);
// "" = follow the system locale, otherwise a locale name such as "zh_CN" or "en".
QString language();
void setLanguage(const QString& language);
// What happens when a conversation outgrows the context: true = drop the oldest turns (the
// system prompt stays), false = stop and say so.
bool dropOldestTurns();
// Whether models with a thinking switch (Qwen3) reason before they answer (true, the default).
bool thinking();
void setThinking(bool on);
void setDropOldestTurns(bool drop);
// Replies rendered as Markdown (true, the default) or shown as raw text.
bool renderMarkdown();
void setRenderMarkdown(bool on);
// The local OpenAI-compatible API server (off by default) and its port on 127.0.0.1.
bool apiServerEnabled();
void setApiServerEnabled(bool on);
quint16 apiServerPort();
void setApiServerPort(quint16 port);
// The key API clients must send (Authorization: Bearer <key>); empty = none. LANTERN_API_KEY, when
// set, is used instead. Stored in the settings file, which is then readable by the user alone.
QString apiServerKey();
void setApiServerKey(const QString& key);
// Whether API replies pause while the chat writes a reply (false, the default: they share its
// steps; see InferenceWorker::setChatFirst).
bool apiChatFirst();
void setApiChatFirst(bool on);
qint64 lastConversation();
void setLastConversation(qint64 id);

lantern::SamplingSettings samplingSettings();
void setSamplingSettings(const lantern::SamplingSettings& settings);
// The same, against an explicit QSettings (tests use a temporary file).
lantern::SamplingSettings readSamplingSettings(const QSettings& settings);
void writeSamplingSettings(QSettings& settings, const lantern::SamplingSettings& sampling);

QByteArray windowGeometry();
QByteArray windowState();
void setWindowLayout(const QByteArray& geometry, const QByteArray& state);

// Where the model picker looks for *.gguf files: AppDataLocation/models.
QString modelsDirectory();                     // the folder the picker lists and downloads go to
void setModelsDirectory(const QString& path);  // empty: the default (AppDataLocation/models)
// The Hugging Face Hub or the mirror the Get Models dialog asks: HF_ENDPOINT when set, else what
// was chosen there, else https://huggingface.co. (Its token is not a setting: models/HubToken.)
QString hubEndpoint();
void setHubEndpoint(const QString& endpoint);

}  // namespace preferences
