// StreamingDetokenizer: token ids → text deltas that are always whole UTF-8 characters.
//
// Byte-fallback pieces carry one byte each, so a character such as "你" (E4 BD A0) arrives over
// three tokens; the bytes wait in `pending_` until the character is complete. Bytes that can never
// become a valid character (a stray continuation byte, a sequence cut short by other text) are
// replaced by U+FFFD one byte at a time, which is what sentencepiece's decoder does with them.
#include <string_view>

#include "lantern/tokenizer.h"

namespace lantern {

namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";           // "▁"

bool is_continuation(uint8_t byte) {
    return (byte & 0xC0) == 0x80;
}

// Length of the UTF-8 sequence a lead byte starts, 0 if it cannot start one.
size_t sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;  // continuation byte, overlong lead (C0, C1) or beyond U+10FFFF (F5..FF)
}

// Whether `byte` may follow `lead` as the second byte of a sequence: the ranges that exclude
// overlong forms, UTF-16 surrogates and code points past U+10FFFF.
bool valid_second_byte(uint8_t lead, uint8_t byte) {
    switch (lead) {
        case 0xE0:
            return byte >= 0xA0 && byte <= 0xBF;
        case 0xED:
            return byte >= 0x80 && byte <= 0x9F;
        case 0xF0:
            return byte >= 0x90 && byte <= 0xBF;
        case 0xF4:
            return byte >= 0x80 && byte <= 0x8F;
        default:
            return is_continuation(byte);
    }
}

// Moves the complete characters at the front of `pending` to the result, replacing invalid bytes.
// An incomplete but still valid sequence at the end stays in `pending` unless `final`.
std::string take_complete(std::string& pending, bool final) {
    std::string out;
    size_t i = 0;
    while (i < pending.size()) {
        const auto lead = static_cast<uint8_t>(pending[i]);
        const size_t length = sequence_length(lead);
        if (length == 0) {
            out += kReplacementCharacter;
            ++i;
            continue;
        }
        size_t have = 1;
        while (have < length && i + have < pending.size()) {
            const auto byte = static_cast<uint8_t>(pending[i + have]);
            if (have == 1 ? !valid_second_byte(lead, byte) : !is_continuation(byte)) break;
            ++have;
        }
        if (have == length) {
            out.append(pending, i, length);
            i += length;
        } else if (i + have == pending.size() && !final) {
            break;  // the rest of this character may still arrive
        } else {
            out += kReplacementCharacter;  // cut short: the lead byte is lost, the rest rescanned
            ++i;
        }
    }
    pending.erase(0, i);
    return out;
}

}  // namespace

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool at_text_start)
    : tokenizer_(&tokenizer), strip_leading_space_(at_text_start), at_text_start_(at_text_start) {}

std::string StreamingDetokenizer::push(int32_t token) {
    std::string_view text = tokenizer_->token_text(token);
    // An invisible (special) token ends a character cut short before it, as in sentencepiece.
    if (text.empty()) return take_complete(pending_, true);
    if (at_text_start_) {
        // sentencepiece drops the space it put in front of the text when encoding ("dummy
        // prefix"): the "▁" at the start of the first visible piece.
        if (tokenizer_->add_space_prefix() && tokenizer_->type(token) != TokenType::Byte &&
            std::string_view(tokenizer_->piece(token)).starts_with(kSpaceMarker))
            text.remove_prefix(1);
        at_text_start_ = false;
    }
    pending_.append(text);
    return take_complete(pending_, false);
}

std::string StreamingDetokenizer::flush() {
    return take_complete(pending_, true);
}

void StreamingDetokenizer::reset() {
    pending_.clear();
    at_text_start_ = strip_leading_space_;
}

}  // namespace lantern
