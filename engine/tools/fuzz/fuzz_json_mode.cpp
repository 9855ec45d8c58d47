// libFuzzer target for JSON mode's automaton (server/src/json_mode.h), fed the input in pieces
// (split at 0xFF bytes, as tokens would come). Whatever valid UTF-8 it accepts as a whole object
// must be one for the server's JSON parser too (inside strings it does not check UTF-8: the
// server's writer turns stray bytes into U+FFFD; nor numbers' range or surrogate pairs, which the
// grammar has not).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "json.h"
#include "json_mode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    lantern::server::JsonPrefix prefix;
    std::string read;
    bool ok = true;
    for (size_t start = 0; start <= bytes.size() && ok;) {
        size_t end = bytes.find('\xff', start);
        if (end == std::string_view::npos) end = bytes.size();
        const std::string_view piece = bytes.substr(start, end - start);
        lantern::server::JsonPrefix trial = prefix;
        ok = trial.feed(piece);
        if (ok) {
            prefix = trial;
            read += piece;
        }
        start = end + 1;
    }
    if (prefix.complete() && lantern::fuzz::valid_utf8(read)) {
        try {
            if (!lantern::server::parse_json(read).is_object()) std::abort();
        } catch (const lantern::server::JsonError& e) {
            // RFC 8259's grammar has no number range and lets \u escape any 16 bits: 1e400 and a lone
            // surrogate are JSON to the automaton, which this parser refuses.
            const std::string_view why = e.what();
            if (why.find("number overflow") == std::string_view::npos &&
                why.find("surrogate") == std::string_view::npos)
                std::abort();  // the automaton let through what is not JSON
        }
    }
    return 0;
}
