#include "tokenizer/bpe.h"

#include <algorithm>
#include <array>
#include <queue>

#include "lantern/error.h"

namespace lantern::tokenizer {

namespace {

struct CodePointRange {
    uint32_t lo, hi;
};
#include "tokenizer/unicode_classes.inc"

template <size_t N>
bool in_ranges(const CodePointRange (&ranges)[N], uint32_t cp) {
    const auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                                     [](uint32_t c, const CodePointRange& r) { return c < r.lo; });
    return it != std::begin(ranges) && cp <= std::prev(it)->hi;
}

// A byte that is not part of valid UTF-8: a code point of its own, in no class.
constexpr uint32_t kInvalid = 0xFFFFFFFF;

// Unicode's White_Space property: what the pre-tokenizers' \s means (as in llama.cpp and the
// `regex` module Hugging Face's tokenizers use; C's isspace would miss U+00A0 and U+3000).
bool is_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}
bool is_letter(uint32_t cp) {
    return cp != kInvalid && in_ranges(kLetterRanges, cp);
}
bool is_number(uint32_t cp) {
    return cp != kInvalid && in_ranges(kNumberRanges, cp);
}
bool is_newline(uint32_t cp) {
    return cp == '\r' || cp == '\n';
}
bool is_punctuation(uint32_t cp) {
    return cp != kInvalid && in_ranges(kPunctuationRanges, cp);
}

// Code points of `text` with the byte offset where each starts (one extra offset: the end).
struct CodePoints {
    std::vector<uint32_t> cp;
    std::vector<size_t> at;
};

CodePoints decode_utf8(std::string_view text) {
    CodePoints out;
    out.cp.reserve(text.size());
    out.at.reserve(text.size() + 1);
    for (size_t i = 0; i < text.size();) {
        const auto b0 = static_cast<uint8_t>(text[i]);
        const size_t len = b0 < 0x80           ? 1
                           : (b0 >> 5) == 0x6  ? 2
                           : (b0 >> 4) == 0xE  ? 3
                           : (b0 >> 3) == 0x1E ? 4
                                               : 0;
        uint32_t cp = kInvalid;
        if (len == 1) {
            cp = b0;
        } else if (len > 1 && i + len <= text.size()) {
            cp = b0 & (0x7F >> len);
            bool ok = true;
            for (size_t k = 1; k < len && ok; ++k) {
                const auto b = static_cast<uint8_t>(text[i + k]);
                ok = (b & 0xC0) == 0x80;
                cp = (cp << 6) | (b & 0x3F);
            }
            // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8 either.
            static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
            if (!ok || cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = kInvalid;
        }
        const size_t used = cp == kInvalid ? 1 : len;
        out.cp.push_back(cp);
        out.at.push_back(i);
        i += used;
    }
    out.at.push_back(text.size());
    return out;
}

uint32_t lower_ascii(uint32_t cp) {
    return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
}

// The whitespace alternatives Llama 3's and tekken's expressions share, `\s*[\r\n]+ | \s+(?!\S) |
// \s+`, at a whitespace character i: up to the run's last line break if it has one; else all but
// its last character when text follows (that character joins the next word); else all of it.
size_t whitespace_word_end(const std::vector<uint32_t>& cp, size_t i, size_t n) {
    size_t end = i, last_break = 0;
    while (end < n && is_space(cp[end])) {
        if (is_newline(cp[end])) last_break = end + 1;
        ++end;
    }
    if (last_break > 0) return last_break;
    if (end - i > 1 && end < n) return end - 1;
    return end > i ? end : i + 1;
}

// Llama 3's pre-tokenizer regex, matched by hand (the same alternatives in the same order):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]*
//   | \s*[\r\n]+ | \s+(?!\S) | \s+
// Qwen2's is the same with \p{N} for \p{N}{1,3}: `max_digits` 1 instead of 3.
// Returns the code point index where the word starting at `i` ends.
size_t llama3_word_end(const std::vector<uint32_t>& cp, size_t i, size_t n, size_t max_digits = 3) {
    const auto at = [&](size_t k) { return k < n ? cp[k] : kInvalid; };
    const auto has = [&](size_t k) { return k < n; };
    const uint32_t c = cp[i];

    // Contractions, any letter case.
    if (c == '\'' && has(i + 1)) {
        const uint32_t a = lower_ascii(at(i + 1));
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if (has(i + 2)) {
            const uint32_t b = lower_ascii(at(i + 2));
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
        }
    }
    // Letters, with at most one leading character that is neither a line break, letter nor digit.
    {
        size_t k = i;
        if (!is_newline(c) && !is_letter(c) && !is_number(c) && has(i + 1) && is_letter(at(i + 1))) ++k;
        if (is_letter(at(k))) {
            while (has(k) && is_letter(at(k))) ++k;
            return k;
        }
    }
    // Up to three digits (Qwen2: one).
    if (is_number(c)) {
        size_t k = i;
        while (has(k) && k < i + max_digits && is_number(at(k))) ++k;
        return k;
    }
    // Punctuation and symbols, with an optional leading space, then any line breaks.
    {
        size_t k = i + (c == ' ' ? 1 : 0);
        const auto symbol = [&](size_t j) {
            return has(j) && !is_space(at(j)) && !is_letter(at(j)) && !is_number(at(j));
        };
        if (symbol(k)) {
            while (symbol(k)) ++k;
            while (has(k) && is_newline(at(k))) ++k;
            return k;
        }
    }
    return whitespace_word_end(cp, i, n);
}

// GPT-2's expression, matched by hand over cp[i, n):
//   's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
// Unlike Llama 3's: contractions in lower case only, any run of digits, a letter run takes only a
// space before it, and line breaks are whitespace like any other.
size_t gpt2_word_end(const std::vector<uint32_t>& cp, size_t i, size_t n) {
    const auto at = [&](size_t k) { return k < n ? cp[k] : kInvalid; };
    const auto has = [&](size_t k) { return k < n; };
    const uint32_t c = cp[i];
    if (c == '\'' && has(i + 1)) {
        const uint32_t a = at(i + 1);
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if (has(i + 2)) {
            const uint32_t b = at(i + 2);
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
        }
    }
    // An optional space, then a run of one class: letters, digits, or symbols.
    const size_t k0 = i + (c == ' ' && has(i + 1) ? 1 : 0);
    const auto symbol = [&](size_t j) {
        return has(j) && !is_space(at(j)) && !is_letter(at(j)) && !is_number(at(j));
    };
    for (const auto in_class :
         {+[](uint32_t x) { return is_letter(x); }, +[](uint32_t x) { return is_number(x); }}) {
        if (has(k0) && in_class(at(k0))) {
            size_t k = k0;
            while (has(k) && in_class(at(k))) ++k;
            return k;
        }
    }
    if (symbol(k0)) {
        size_t k = k0;
        while (symbol(k)) ++k;
        return k;
    }
    // Whitespace: all but its last character when text follows, else all of it.
    size_t end = i;
    while (has(end) && is_space(at(end))) ++end;
    if (end - i > 1 && has(end)) return end - 1;
    return end > i ? end : i + 1;
}

// Mistral's tekken expression as llama.cpp runs it (llama.cpp's std::regex has no \p{Lu} or
// \p{Ll}, so "upper" there is a letter other than a-z and "lower" a letter other than A-Z; letters
// outside ASCII are both, and combining marks are symbols), matched by hand over cp[i, n):
//   [^\r\n\p{L}\p{N}]?U*W+ | [^\r\n\p{L}\p{N}]?U+W* | \p{N} | ?[^\s\p{L}\p{N}]+[\r\n/]*
//   | \s*[\r\n]+ | \s+(?!\S) | \s+
// So "HelloWorld" is two words, "HELLOworld" one, and digits come one by one.
// With `gpt4o` (GPT-4o's expression, as llama.cpp runs it): each letter alternative may end in an
// English contraction, any case ((?i:'s|'t|'re|'ve|'m|'ll|'d)?), and digits come in runs of up to
// three (\p{N}{1,3}).
size_t tekken_word_end(const std::vector<uint32_t>& cp, size_t i, size_t n, bool gpt4o = false) {
    const auto at = [&](size_t k) { return k < n ? cp[k] : kInvalid; };
    const auto has = [&](size_t k) { return k < n; };
    const auto upper = [&](size_t k) {
        return has(k) && is_letter(at(k)) && !(at(k) >= 'a' && at(k) <= 'z');
    };
    const auto lower = [&](size_t k) {
        return has(k) && is_letter(at(k)) && !(at(k) >= 'A' && at(k) <= 'Z');
    };
    const auto run = [&](size_t k, auto in_class) {
        while (in_class(k)) ++k;
        return k;
    };
    const uint32_t c = cp[i];
    // The optional leading character, taken when what follows matches (the regex tries it first).
    const bool lead = !is_newline(c) && !is_letter(c) && !is_number(c) && has(i + 1);
    const size_t k = lead && is_letter(at(i + 1)) ? i + 1 : i;
    // GPT-4o: the contraction after a word's letters, if one follows (lower-cased ASCII compared).
    const auto contraction = [&](size_t e) {
        if (!gpt4o || at(e) != '\'') return e;
        const uint32_t a = lower_ascii(at(e + 1));
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return e + 2;
        const uint32_t b = lower_ascii(at(e + 2));
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return e + 3;
        return e;
    };
    if (is_letter(at(k))) {
        // U*W+: the upper run, then the lower run; if that is empty, give back upper letters until
        // one that is also lower (a letter outside ASCII) starts the lower run.
        const size_t u = run(k, upper);
        if (const size_t w = run(u, lower); w > u) return contraction(w);
        for (size_t m = u; m-- > k;)
            if (lower(m)) return contraction(run(m, lower));
        // U+W*: an upper run (never empty here: the letter at k is upper or lower, and not lower).
        return contraction(run(u, lower));
    }
    if (is_number(c)) {
        size_t e = i + 1;
        while (gpt4o && e < n && e < i + 3 && is_number(cp[e])) ++e;
        return e;
    }
    const auto symbol = [&](size_t j) {
        return has(j) && !is_space(at(j)) && !is_letter(at(j)) && !is_number(at(j));
    };
    if (const size_t s0 = i + (c == ' ' ? 1 : 0); symbol(s0)) {
        size_t e = run(s0, symbol);
        while (has(e) && (is_newline(at(e)) || at(e) == '/')) ++e;
        return e;
    }
    return whitespace_word_end(cp, i, n);
}

struct ByteAlphabet {
    std::array<std::string, 256> symbol;
    std::unordered_map<uint32_t, uint8_t> byte_of;  // code point -> byte
};

std::string utf8_of(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return s;
}

// GPT-2's alphabet: printable Latin-1 bytes stand for themselves; the other 68 (controls, space,
// DEL, NBSP, soft hyphen) take U+0100 onwards in byte order, so no piece holds a space or a
// control character.
const ByteAlphabet& alphabet() {
    static const ByteAlphabet a = [] {
        ByteAlphabet out;
        uint32_t next = 0x100;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            const uint32_t cp = printable ? b : next++;
            out.symbol[b] = utf8_of(cp);
            out.byte_of.emplace(cp, static_cast<uint8_t>(b));
        }
        return out;
    }();
    return a;
}

// ---- DeepSeek's pre-tokenizers: expressions applied one after another, as llama.cpp applies
// them. Each expression splits every piece the earlier ones made into its matches (leftmost,
// greedy) and the text between them, which stays a piece of its own. The classes are those the
// expressions name: \p{L}, \p{P}, \p{N} by Unicode category, \s as White_Space; a whitespace
// code point is in no other class (llama.cpp sees every non-ASCII one as a vertical tab). ----
using Spans = std::vector<std::pair<size_t, size_t>>;  // code point ranges [first, second)

// `match(cp, i, end)`: the length of the expression's match at i within a piece ending at `end`,
// 0 for none.
template <class Match>
Spans split_each(const std::vector<uint32_t>& cp, const Spans& pieces, Match match) {
    Spans out;
    for (auto [begin, end] : pieces) {
        size_t gap = begin;
        for (size_t i = begin; i < end;) {
            const size_t len = match(cp, i, end);
            if (len == 0) {
                ++i;
                continue;
            }
            if (i > gap) out.emplace_back(gap, i);
            out.emplace_back(i, i + len);
            i += len;
            gap = i;
        }
        if (gap < end) out.emplace_back(gap, end);
    }
    return out;
}

template <class Class>
size_t run_of(const std::vector<uint32_t>& cp, size_t i, size_t end, Class in) {
    size_t j = i;
    while (j < end && in(cp[j])) ++j;
    return j - i;
}
// "\s?X+": a run of X, with the whitespace code point before it when there is one.
template <class Class>
size_t space_then_run(const std::vector<uint32_t>& cp, size_t i, size_t end, Class in) {
    if (is_space(cp[i]) && i + 1 < end && in(cp[i + 1])) return 1 + run_of(cp, i + 1, end, in);
    return run_of(cp, i, end, in);
}

bool deepseek_letter(uint32_t c) {
    return !is_space(c) && is_letter(c);
}
bool deepseek_punctuation(uint32_t c) {
    return !is_space(c) && is_punctuation(c);
}
bool deepseek_number(uint32_t c) {
    return !is_space(c) && is_number(c);
}
// "[一-龥ࠀ-一가-퟿]": CJK ideographs up to U+9FA5, everything from U+0800 to U+4E00, and Hangul
// syllables and jamo to U+D7FF (whitespace such as U+3000 excepted, as above).
bool deepseek_cjk(uint32_t c) {
    return !is_space(c) && ((c >= 0x800 && c <= 0x9FA5) || (c >= 0xAC00 && c <= 0xD7FF));
}

// DeepSeek LLM's letters: its tokenizer's own list of Latin, Greek, Cyrillic, Armenian,
// Georgian, Cherokee, Glagolitic, Coptic, ... ranges (not Unicode's whole \p{L}).
constexpr CodePointRange kDeepSeekLlmLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
bool deepseek_llm_letter(uint32_t c) {
    return c != kInvalid && in_ranges(kDeepSeekLlmLetters, c);
}
// "[!-/:-~！-／：-～‘-‟　-。]": ASCII punctuation, symbols and letters past '9', their fullwidth
// forms, curly quotes, and U+3001/U+3002 (U+3000, a space, is whitespace).
bool deepseek_llm_punctuation(uint32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x7E) || (c >= 0xFF01 && c <= 0xFF0F) ||
           (c >= 0xFF1A && c <= 0xFF5E) || (c >= 0x2018 && c <= 0x201F) || c == 0x3001 || c == 0x3002;
}

Spans deepseek_pieces(const std::vector<uint32_t>& cp, BpePreTokenizer pre) {
    using CP = std::vector<uint32_t>;
    Spans pieces{{0, cp.size()}};
    if (cp.empty()) return {};
    const auto newline = [](const CP& c, size_t i, size_t) -> size_t { return is_newline(c[i]) ? 1 : 0; };
    const auto cjk = [](const CP& c, size_t i, size_t end) { return run_of(c, i, end, deepseek_cjk); };
    pieces = split_each(cp, pieces, newline);
    if (pre == BpePreTokenizer::DeepSeekCoder) {
        pieces = split_each(cp, pieces, [](const CP& c, size_t i, size_t end) {
            return space_then_run(c, i, end, deepseek_letter);
        });
        pieces = split_each(cp, pieces, [](const CP& c, size_t i, size_t end) {
            return space_then_run(c, i, end, deepseek_punctuation);
        });
        pieces = split_each(cp, pieces, cjk);
        // "\p{N}": one digit at a time.
        return split_each(cp, pieces, [](const CP& c, size_t i, size_t) -> size_t {
            return deepseek_number(c[i]) ? 1 : 0;
        });
    }
    pieces = split_each(cp, pieces, [](const CP& c, size_t i, size_t end) {
        return space_then_run(c, i, end, deepseek_llm_letter);
    });
    pieces = split_each(cp, pieces, [](const CP& c, size_t i, size_t end) {
        return space_then_run(c, i, end, deepseek_llm_punctuation);
    });
    // "\s+$": the whitespace that ends a piece, split off once per piece (trying it at every code
    // point rescanned a long whitespace run before a digit for each of its code points: quadratic).
    {
        Spans out;
        for (auto [begin, end] : pieces) {
            size_t trailing = end;
            while (trailing > begin && is_space(cp[trailing - 1])) --trailing;
            if (trailing > begin) out.emplace_back(begin, trailing);
            if (trailing < end) out.emplace_back(trailing, end);
        }
        pieces = std::move(out);
    }
    pieces = split_each(cp, pieces, cjk);
    return split_each(cp, pieces,
                      [](const CP& c, size_t i, size_t end) { return run_of(c, i, end, deepseek_number); });
}

}  // namespace

std::vector<std::string_view> bpe_split_words(std::string_view text, BpePreTokenizer pre) {
    std::vector<std::string_view> words;
    const CodePoints cps = decode_utf8(text);
    const size_t n = cps.cp.size();
    if (pre == BpePreTokenizer::DeepSeekLlm || pre == BpePreTokenizer::DeepSeekCoder) {
        for (auto [begin, end] : deepseek_pieces(cps.cp, pre))
            words.push_back(text.substr(cps.at[begin], cps.at[end] - cps.at[begin]));
        return words;
    }
    size_t segment_end = 0;  // SmolLM: where the digit-free stretch at i ends (found once per stretch)
    for (size_t i = 0; i < n;) {
        size_t end = i + 1;
        switch (pre) {
            case BpePreTokenizer::Llama3:
                end = llama3_word_end(cps.cp, i, n);
                break;
            case BpePreTokenizer::Qwen2:
                end = llama3_word_end(cps.cp, i, n, 1);
                break;
            case BpePreTokenizer::Gpt2:
                end = gpt2_word_end(cps.cp, i, n);
                break;
            case BpePreTokenizer::Tekken:
                end = tekken_word_end(cps.cp, i, n);
                break;
            case BpePreTokenizer::Gpt4o:
                end = tekken_word_end(cps.cp, i, n, true);
                break;
            case BpePreTokenizer::SmolLm: {
                // Every digit is a word of its own; GPT-2's expression splits the text between
                // digits, which it sees as the whole text (a space before a digit ends there).
                // (Rescanning the stretch for every word made a long text without digits
                // quadratic: a hostile request stalled the engine's thread.)
                if (is_number(cps.cp[i])) break;
                if (segment_end <= i) {
                    segment_end = i;
                    while (segment_end < n && !is_number(cps.cp[segment_end])) ++segment_end;
                }
                end = gpt2_word_end(cps.cp, i, segment_end);
                break;
            }
            case BpePreTokenizer::DeepSeekLlm:
            case BpePreTokenizer::DeepSeekCoder:
                break;  // split above
        }
        words.push_back(text.substr(cps.at[i], cps.at[end] - cps.at[i]));
        i = end;
    }
    return words;
}

const std::string& bpe_byte_symbol(uint8_t b) {
    return alphabet().symbol[b];
}

std::string bpe_piece_bytes(std::string_view piece) {
    const auto& byte_of = alphabet().byte_of;
    const CodePoints cps = decode_utf8(piece);
    std::string out;
    out.reserve(piece.size());
    for (size_t i = 0; i < cps.cp.size(); ++i) {
        const auto it = byte_of.find(cps.cp[i]);
        if (it != byte_of.end()) {
            out.push_back(static_cast<char>(it->second));
        } else {
            out.append(piece.substr(cps.at[i], cps.at[i + 1] - cps.at[i]));
        }
    }
    return out;
}

BpeEncoder::BpeEncoder(const std::vector<std::string>& pieces, const std::vector<uint8_t>& matchable,
                       const std::vector<std::string>& merges, BpePreTokenizer pre, const std::string& source)
    : pre_(pre), whole_words_first_(pre == BpePreTokenizer::Llama3 || pre == BpePreTokenizer::Tekken) {
    ids_.reserve(pieces.size());
    for (size_t id = 0; id < pieces.size(); ++id)
        if (matchable[id] && !pieces[id].empty()) ids_.emplace(pieces[id], static_cast<int32_t>(id));
    merge_rank_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& m = merges[rank];
        const size_t space = m.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == m.size() ||
            m.find(' ', space + 1) != std::string::npos)
            throw Error(ErrorCode::InvalidModelFile, source + ": BPE merge " + std::to_string(rank) + " (\"" +
                                                         m + "\") is not two symbols separated by one space");
        merge_rank_.emplace(m, static_cast<int32_t>(rank));  // a repeated merge keeps its first rank
    }
}

void BpeEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
    for (std::string_view word : bpe_split_words(text, pre_)) encode_word(word, out);
}

void BpeEncoder::encode_word(std::string_view word, std::vector<int32_t>& out) const {
    // The word in the byte alphabet, and where each byte's symbol starts in it.
    std::string spelled;
    std::vector<size_t> starts;
    for (char ch : word) {
        starts.push_back(spelled.size());
        spelled += bpe_byte_symbol(static_cast<uint8_t>(ch));
    }
    if (whole_words_first_) {
        if (const auto it = ids_.find(spelled); it != ids_.end()) {
            out.push_back(it->second);
            return;
        }
    }

    // Symbols as a linked list over `spelled`; merge the adjacent pair of lowest rank (leftmost
    // first among equals) until no pair has a merge. A heap of candidate pairs, each checked on
    // the way out against the symbols as they are by then, keeps long words (a run of 10 000
    // spaces) at n log n.
    struct Symbol {
        size_t start, len;
        int prev, next;
    };
    std::vector<Symbol> sym;
    sym.reserve(starts.size());
    for (size_t i = 0; i < starts.size(); ++i) {
        const size_t end = i + 1 < starts.size() ? starts[i + 1] : spelled.size();
        sym.push_back({starts[i], end - starts[i], static_cast<int>(i) - 1,
                       i + 1 < starts.size() ? static_cast<int>(i) + 1 : -1});
    }
    struct Candidate {
        int32_t rank;
        int left;
        size_t left_len, right_len;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    std::string key;
    const auto consider = [&](int left) {
        if (left < 0 || sym[left].next < 0) return;
        const Symbol& a = sym[left];
        const Symbol& b = sym[a.next];
        key.assign(spelled, a.start, a.len);
        key += ' ';
        key.append(spelled, b.start, b.len);
        if (const auto it = merge_rank_.find(key); it != merge_rank_.end())
            heap.push({it->second, left, a.len, b.len});
    };
    for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) consider(i);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        Symbol& a = sym[c.left];
        if (a.len != c.left_len || a.next < 0 || sym[a.next].len != c.right_len) continue;  // stale
        Symbol& b = sym[a.next];
        if (b.len == 0) continue;
        a.len += b.len;
        b.len = 0;  // merged away
        a.next = b.next;
        if (b.next >= 0) sym[b.next].prev = c.left;
        consider(a.prev);
        consider(c.left);
    }

    for (int i = 0; i >= 0 && !sym.empty(); i = sym[i].next) {
        const Symbol& s = sym[i];
        const std::string_view piece(spelled.data() + s.start, s.len);
        if (const auto it = ids_.find(std::string(piece)); it != ids_.end()) {
            out.push_back(it->second);
            continue;
        }
        // No token for the merged symbol (merges the vocabulary has no piece for): its bytes.
        for (const char ch : bpe_piece_bytes(piece)) {
            const auto it = ids_.find(bpe_byte_symbol(static_cast<uint8_t>(ch)));
            if (it == ids_.end())
                throw Error(ErrorCode::InvalidArgument,
                            "the vocabulary has no token for byte 0x" +
                                std::string(1, "0123456789ABCDEF"[static_cast<uint8_t>(ch) >> 4]) +
                                std::string(1, "0123456789ABCDEF"[static_cast<uint8_t>(ch) & 15]) +
                                ", so this text cannot be encoded");
            out.push_back(it->second);
        }
    }
}

}  // namespace lantern::tokenizer
