#include "Format.h"

#include <QCoreApplication>
#include <QLocale>
#include <cmath>

namespace display {

QString count(uint64_t n) {
    return QLocale().toString(static_cast<qulonglong>(n));
}

QString bytes(uint64_t n) {
    if (n < 1024) return QCoreApplication::translate("Format", "%1 B").arg(n);
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(n) / 1024.0;
    int unit = 0;
    while (v >= 1024.0 && unit < 3) {
        v /= 1024.0;
        ++unit;
    }
    return QStringLiteral("%1 %2").arg(QLocale().toString(v, 'f', v < 10 ? 2 : 1),
                                       QString::fromLatin1(units[unit]));
}

QString milliseconds(double ms) {
    if (!std::isfinite(ms) || ms < 0) return QStringLiteral("—");
    if (ms >= 1000.0)
        return QCoreApplication::translate("Format", "%1 s").arg(QLocale().toString(ms / 1000.0, 'f', 2));
    return QCoreApplication::translate("Format", "%1 ms").arg(QLocale().toString(ms, 'f', ms < 10 ? 2 : 1));
}

QString tokensPerSecond(double rate) {
    if (!std::isfinite(rate) || rate <= 0) return QStringLiteral("—");
    return QCoreApplication::translate("Format", "%1 tok/s")
        .arg(QLocale().toString(rate, 'f', rate < 100 ? 1 : 0));
}

QString percent(double fraction) {
    if (!std::isfinite(fraction)) return QStringLiteral("—");
    return QStringLiteral("%1%").arg(QLocale().toString(fraction * 100.0, 'f', 0));
}

QString stopReason(lantern::StopReason reason) {
    switch (reason) {
        case lantern::StopReason::EndOfText:
            return QCoreApplication::translate("Format", "end of text");
        case lantern::StopReason::StopString:
            return QCoreApplication::translate("Format", "stop string");
        case lantern::StopReason::MaxTokens:
            return QCoreApplication::translate("Format", "token limit");
        case lantern::StopReason::User:
            return QCoreApplication::translate("Format", "you");
        case lantern::StopReason::ContextFull:
            return QCoreApplication::translate("Format", "full context");
        case lantern::StopReason::Cancelled:
            return QCoreApplication::translate("Format", "cancelled");
        case lantern::StopReason::None:
            break;
    }
    return QStringLiteral("—");
}

}  // namespace display
