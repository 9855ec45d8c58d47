#include "chat/ReplyDetails.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>
#include <string>

#include "Format.h"

namespace reply_details {

namespace {

// The stored parts; a string that is not such an array (details written before this format) is
// one part of literal text.
QJsonArray parts(const QString& stored) {
    if (stored.isEmpty()) return {};
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(stored.toUtf8(), &error);
    if (error.error == QJsonParseError::NoError && doc.isArray()) return doc.array();
    return QJsonArray{QJsonObject{{QStringLiteral("text"), stored}}};
}

const char* endingName(Ending e) {
    switch (e) {
        case Ending::Failed:
            return "failed";
        case Ending::DeviceLost:
            return "device_lost";
        case Ending::AppClosed:
            return "app_closed";
        case Ending::ConnectionLost:
            return "connection_lost";
        case Ending::Figures:
            break;
    }
    return "";
}

// lupdate reads the literal context and text of every QCoreApplication::translate call.
QString words(const QJsonObject& part) {
    if (part.contains(QLatin1String("text"))) return part.value(QLatin1String("text")).toString();
    const QString end = part.value(QLatin1String("end")).toString();
    if (end == QLatin1String("failed")) return QCoreApplication::translate("ReplyDetails", "failed");
    if (end == QLatin1String("device_lost"))
        return QCoreApplication::translate("ReplyDetails", "the device was lost");
    if (end == QLatin1String("app_closed"))
        return QCoreApplication::translate("ReplyDetails", "the app was closed while generating");
    if (end == QLatin1String("connection_lost"))
        return QCoreApplication::translate("ReplyDetails", "cut off: the connection to the server was lost");
    const int tokens = part.value(QLatin1String("tokens")).toInt();
    const double rate = part.value(QLatin1String("tok_s")).toDouble();
    const double ttft = part.value(QLatin1String("ttft_ms")).toDouble();
    const lantern::StopReason stop =
        lantern::stop_reason_from_name(part.value(QLatin1String("stop")).toString().toStdString())
            .value_or(lantern::StopReason::None);
    QStringList line;
    line << QCoreApplication::translate("ReplyDetails", "%Ln token(s)", nullptr, tokens);
    if (rate > 0) line << display::tokensPerSecond(rate);
    line << QCoreApplication::translate("ReplyDetails", "first token %1").arg(display::milliseconds(ttft));
    line << QCoreApplication::translate("ReplyDetails", "ended by %1").arg(display::stopReason(stop));
    const int beside = part.value(QLatin1String("beside_api")).toInt();
    if (beside > 0)
        line << QCoreApplication::translate("ReplyDetails", "%Ln written beside API replies", nullptr,
                                            beside);
    QString text = line.join(QStringLiteral(" · "));
    if (part.value(QLatin1String("continued")).toBool()) {
        const QString by = part.value(QLatin1String("by")).toString();
        const QString how = by.isEmpty()
                                ? QCoreApplication::translate("ReplyDetails", "continued")
                                : QCoreApplication::translate("ReplyDetails", "continued by %1").arg(by);
        text = how + QStringLiteral(": ") + text;
    }
    return text;
}

}  // namespace

QString append(const QString& stored, const Part& part) {
    QJsonObject o;
    if (part.ending != Ending::Figures) {
        o.insert(QStringLiteral("end"), QLatin1String(endingName(part.ending)));
    } else {
        o.insert(QStringLiteral("tokens"), part.tokens);
        if (part.tokensPerSecond > 0) o.insert(QStringLiteral("tok_s"), part.tokensPerSecond);
        o.insert(QStringLiteral("ttft_ms"), part.firstTokenMs);
        o.insert(QStringLiteral("stop"), part.stopReason);
        if (part.continued) o.insert(QStringLiteral("continued"), true);
        if (part.continued && !part.continuedBy.isEmpty()) o.insert(QStringLiteral("by"), part.continuedBy);
        if (part.besideApi > 0) o.insert(QStringLiteral("beside_api"), part.besideApi);
    }
    QJsonArray all = parts(stored);
    all.append(o);
    return QString::fromUtf8(QJsonDocument(all).toJson(QJsonDocument::Compact));
}

QString display(const QString& stored) {
    QStringList line;
    for (const QJsonValue& part : parts(stored)) {
        const QString w = words(part.toObject());
        if (!w.isEmpty()) line << w;
    }
    return line.join(QStringLiteral(" · "));
}

}  // namespace reply_details
