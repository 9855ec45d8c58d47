#include "Preferences.h"

#include <QFile>
#include <QSettings>
#include <QStandardPaths>
#include <QStringList>

namespace preferences {

namespace {
constexpr int kWindowStateVersion = 1;
}

QString lastModel() {
    return QSettings().value(QStringLiteral("model/last")).toString();
}
void setLastModel(const QString& path) {
    QSettings().setValue(QStringLiteral("model/last"), path);
}
// One map for every model, keyed by path: a path holds slashes, which QSettings would read as groups.
uint32_t contextLength(const QString& modelPath) {
    return QSettings().value(QStringLiteral("model/contextLengths")).toMap().value(modelPath, 0u).toUInt();
}
void setContextLength(const QString& modelPath, uint32_t length) {
    QSettings settings;
    QVariantMap lengths = settings.value(QStringLiteral("model/contextLengths")).toMap();
    if (length)
        lengths.insert(modelPath, length);
    else
        lengths.remove(modelPath);
    settings.setValue(QStringLiteral("model/contextLengths"), lengths);
}
QString deviceSelector() {
    return QSettings().value(QStringLiteral("model/device")).toString();
}
void setDeviceSelector(const QString& selector) {
    QSettings().setValue(QStringLiteral("model/device"), selector);
}
QString systemPrompt() {
    return QSettings().value(QStringLiteral("chat/systemPrompt")).toString();
}
void setSystemPrompt(const QString& text) {
    QSettings().setValue(QStringLiteral("chat/systemPrompt"), text);
}
QString language() {
    return QSettings().value(QStringLiteral("ui/language")).toString();
}
void setLanguage(const QString& language) {
    QSettings().setValue(QStringLiteral("ui/language"), language);
}
bool thinking() {
    return QSettings().value(QStringLiteral("chat/thinking"), true).toBool();
}
void setThinking(bool on) {
    QSettings().setValue(QStringLiteral("chat/thinking"), on);
}
bool dropOldestTurns() {
    return QSettings().value(QStringLiteral("chat/dropOldestTurns"), true).toBool();
}
void setDropOldestTurns(bool drop) {
    QSettings().setValue(QStringLiteral("chat/dropOldestTurns"), drop);
}
bool renderMarkdown() {
    return QSettings().value(QStringLiteral("chat/renderMarkdown"), true).toBool();
}
void setRenderMarkdown(bool on) {
    QSettings().setValue(QStringLiteral("chat/renderMarkdown"), on);
}
bool apiServerEnabled() {
    return QSettings().value(QStringLiteral("apiServer/enabled"), false).toBool();
}
void setApiServerEnabled(bool on) {
    QSettings().setValue(QStringLiteral("apiServer/enabled"), on);
}
quint16 apiServerPort() {
    const int port = QSettings().value(QStringLiteral("apiServer/port"), 8080).toInt();
    return port > 0 && port < 65536 ? static_cast<quint16>(port) : quint16(8080);
}
void setApiServerPort(quint16 port) {
    QSettings().setValue(QStringLiteral("apiServer/port"), port);
}
QString apiServerKey() {
    const QByteArray env = qgetenv("LANTERN_API_KEY");
    if (!env.isEmpty()) return QString::fromUtf8(env);
    return QSettings().value(QStringLiteral("apiServer/key")).toString();
}
void setApiServerKey(const QString& key) {
    QSettings settings;
    settings.setValue(QStringLiteral("apiServer/key"), key);
    settings.sync();
    QFile::setPermissions(settings.fileName(), QFileDevice::ReadOwner | QFileDevice::WriteOwner);
}
bool apiChatFirst() {
    return QSettings().value(QStringLiteral("apiServer/chatFirst"), false).toBool();
}
void setApiChatFirst(bool on) {
    QSettings().setValue(QStringLiteral("apiServer/chatFirst"), on);
}
qint64 lastConversation() {
    return QSettings().value(QStringLiteral("chat/lastConversation"), -1).toLongLong();
}
void setLastConversation(qint64 id) {
    QSettings().setValue(QStringLiteral("chat/lastConversation"), id);
}

lantern::SamplingSettings readSamplingSettings(const QSettings& q) {
    lantern::SamplingSettings s;
    const QString g = QStringLiteral("sampling/");
    s.temperature = q.value(g + QStringLiteral("temperature"), s.temperature).toFloat();
    s.top_k = q.value(g + QStringLiteral("topK"), s.top_k).toInt();
    s.top_p = q.value(g + QStringLiteral("topP"), s.top_p).toFloat();
    s.min_p = q.value(g + QStringLiteral("minP"), s.min_p).toFloat();
    s.repeat_penalty = q.value(g + QStringLiteral("repeatPenalty"), s.repeat_penalty).toFloat();
    s.presence_penalty = q.value(g + QStringLiteral("presencePenalty"), s.presence_penalty).toFloat();
    s.frequency_penalty = q.value(g + QStringLiteral("frequencyPenalty"), s.frequency_penalty).toFloat();
    s.penalty_last_n = q.value(g + QStringLiteral("penaltyWindow"), s.penalty_last_n).toInt();
    s.max_new_tokens = q.value(g + QStringLiteral("maxTokens"), s.max_new_tokens).toInt();
    if (q.value(g + QStringLiteral("fixedSeed"), false).toBool())
        s.seed = q.value(g + QStringLiteral("seed"), 0).toULongLong();
    for (const QString& stop : q.value(g + QStringLiteral("stop")).toStringList())
        if (!stop.isEmpty()) s.stop.push_back(stop.toStdString());
    try {
        lantern::validate(s);
    } catch (const std::exception&) {
        return {};  // a hand-edited or outdated file: fall back to the defaults
    }
    return s;
}

void writeSamplingSettings(QSettings& q, const lantern::SamplingSettings& s) {
    const QString g = QStringLiteral("sampling/");
    q.setValue(g + QStringLiteral("temperature"), s.temperature);
    q.setValue(g + QStringLiteral("topK"), s.top_k);
    q.setValue(g + QStringLiteral("topP"), s.top_p);
    q.setValue(g + QStringLiteral("minP"), s.min_p);
    q.setValue(g + QStringLiteral("repeatPenalty"), s.repeat_penalty);
    q.setValue(g + QStringLiteral("presencePenalty"), s.presence_penalty);
    q.setValue(g + QStringLiteral("frequencyPenalty"), s.frequency_penalty);
    q.setValue(g + QStringLiteral("penaltyWindow"), s.penalty_last_n);
    q.setValue(g + QStringLiteral("maxTokens"), s.max_new_tokens);
    q.setValue(g + QStringLiteral("fixedSeed"), s.seed.has_value());
    q.setValue(g + QStringLiteral("seed"), static_cast<qulonglong>(s.seed.value_or(0)));
    QStringList stops;
    for (const std::string& stop : s.stop) stops << QString::fromStdString(stop);
    q.setValue(g + QStringLiteral("stop"), stops);
}

lantern::SamplingSettings samplingSettings() {
    return readSamplingSettings(QSettings());
}

void setSamplingSettings(const lantern::SamplingSettings& settings) {
    QSettings q;
    writeSamplingSettings(q, settings);
}

QByteArray windowGeometry() {
    return QSettings().value(QStringLiteral("window/geometry")).toByteArray();
}

QByteArray windowState() {
    QSettings q;
    if (q.value(QStringLiteral("window/stateVersion")).toInt() != kWindowStateVersion) return {};
    return q.value(QStringLiteral("window/state")).toByteArray();
}

void setWindowLayout(const QByteArray& geometry, const QByteArray& state) {
    QSettings q;
    q.setValue(QStringLiteral("window/geometry"), geometry);
    q.setValue(QStringLiteral("window/state"), state);
    q.setValue(QStringLiteral("window/stateVersion"), kWindowStateVersion);
}

QString hubEndpoint() {
    const QString env = qEnvironmentVariable("HF_ENDPOINT");
    if (!env.isEmpty()) return env;
    return QSettings()
        .value(QStringLiteral("hub/endpoint"), QStringLiteral("https://huggingface.co"))
        .toString();
}
void setHubEndpoint(const QString& endpoint) {
    QSettings().setValue(QStringLiteral("hub/endpoint"), endpoint);
}

QString modelsDirectory() {
    const QString chosen = QSettings().value(QStringLiteral("models/directory")).toString();
    if (!chosen.isEmpty()) return chosen;
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/models");
}
void setModelsDirectory(const QString& path) {
    if (path.isEmpty()) {
        QSettings().remove(QStringLiteral("models/directory"));
    } else {
        QSettings().setValue(QStringLiteral("models/directory"), path);
    }
}

}  // namespace preferences
