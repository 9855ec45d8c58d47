#include "Format.h"

#include <QCoreApplication>
#include <QLocale>
#include <cmath>

namespace display {

QString count(uint64_t n) { return QLocale().toString(static_cast<qulonglong>(n)); }

QString bytes(uint64_t n) {
    if (n < 1024) return QCoreApplication::translate("Format", "%1 B").arg(n);
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(n) / 1024.0;
    int unit = 0;
    while (v >= 1024.0 && unit < 3) {
        v /= 1024.0;
        ++unit;
    }
    return QStringLiteral("%1 %2").arg(QLocale().toString(v, 'f', v < 10 ? 2 : 1), QString::fromLatin1(units[unit]));
}

QString milliseconds(double ms) {
    if (!std::isfinite(ms) || ms < 0) return QStringLiteral("—");
    if (ms >= 1000.0) return QCoreApplication::translate("Format", "%1 s").arg(QLocale().toString(ms / 1000.0, 'f', 2));
    return QCoreApplication::translate("Format", "%1 ms").arg(QLocale().toString(ms, 'f', ms < 10 ? 2 : 1));
}

QString tokensPerSecond(double rate) {
    if (!std::isfinite(rate) || rate <= 0) return QStringLiteral("—");
    return QCoreApplication::translate("Format", "%1 tok/s").arg(QLocale().toString(rate, 'f', rate < 100 ? 1 : 0));
}

QString percent(double fraction) {
    if (!std::isfinite(fraction)) return QStringLiteral("—");
    return QStringLiteral("%1%").arg(QLocale().toString(fraction * 100.0, 'f', 0));
}

QString stopReason(const std::string& reason) {
    if (reason == "eos") return QCoreApplication::translate("Format", "end of text");
    if (reason == "stop_string") return QCoreApplication::translate("Format", "stop string");
    if (reason == "max_tokens") return QCoreApplication::translate("Format", "token limit");
    if (reason == "user") return QCoreApplication::translate("Format", "you");
    if (reason == "context_full") return QCoreApplication::translate("Format", "full context");
    return QString::fromStdString(reason);
}

}  // namespace display
