#include "panels/TokenSpans.h"

#include <algorithm>

namespace {

// The length of the UTF-8 sequence `lead` begins (0: not a lead byte).
int sequenceLength(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

}  // namespace

TokenText tokenSpans(const std::vector<std::string>& tokenBytes) {
    std::string all;
    std::vector<size_t> starts;  // each token's first byte in `all`
    for (const std::string& b : tokenBytes) {
        starts.push_back(all.size());
        all += b;
    }
    // Characters: their first byte and UTF-16 offset, one past the last as a sentinel.
    TokenText out;
    std::vector<size_t> charByte;
    std::vector<int> charAt;
    size_t i = 0;
    while (i < all.size()) {
        const auto lead = static_cast<unsigned char>(all[i]);
        int n = sequenceLength(lead);
        bool whole = n > 0 && i + n <= all.size();
        for (int k = 1; whole && k < n; ++k) whole = (static_cast<unsigned char>(all[i + k]) & 0xC0) == 0x80;
        if (whole) {
            const QString c = QString::fromUtf8(all.data() + i, n);
            whole = !c.contains(QChar::ReplacementCharacter);  // overlong or surrogate forms
            if (whole) {
                charByte.push_back(i);
                charAt.push_back(static_cast<int>(out.text.size()));
                out.text += c;
                i += static_cast<size_t>(n);
                continue;
            }
        }
        charByte.push_back(i);  // a byte that forms no character
        charAt.push_back(static_cast<int>(out.text.size()));
        out.text += QChar::ReplacementCharacter;
        ++i;
    }
    charByte.push_back(all.size());
    charAt.push_back(static_cast<int>(out.text.size()));
    // The character holding byte b: the last one that starts at or before it.
    const auto charOf = [&](size_t b) {
        return static_cast<size_t>(std::upper_bound(charByte.begin(), charByte.end() - 1, b) -
                                   charByte.begin()) -
               1;
    };
    for (size_t t = 0; t < tokenBytes.size(); ++t) {
        TokenSpan span;
        if (tokenBytes[t].empty()) {
            const int at =
                starts[t] < all.size() ? charAt[charOf(starts[t])] : static_cast<int>(out.text.size());
            span.begin = span.end = at;
        } else {
            const size_t first = charOf(starts[t]), last = charOf(starts[t] + tokenBytes[t].size() - 1);
            span.begin = charAt[first];
            span.end = charAt[last + 1];
        }
        out.spans.push_back(span);
    }
    return out;
}

int TokenText::tokenAt(int at) const {
    for (int t = static_cast<int>(spans.size()) - 1; t >= 0; --t)
        if (spans[t].begin <= at && at < spans[t].end) return t;
    return -1;
}
