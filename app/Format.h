// How numbers are shown across the panels (locale-aware, translated units).
#pragma once
#include <QString>
#include <cstdint>
#include <string>

#include "lantern/stop_reason.h"

namespace display {

QString count(uint64_t n);             // "12,345" in the user's locale
QString bytes(uint64_t n);             // "640.0 KiB", "1.25 GiB", "320 B"
QString milliseconds(double ms);       // "12.3 ms", "1.42 s"
QString tokensPerSecond(double rate);  // "123.4 tok/s"
QString percent(double fraction);      // "42%"
// What ended a reply, in words: "end of text", "stop string", "token limit", "you", "full context".
QString stopReason(lantern::StopReason reason);

}  // namespace display
