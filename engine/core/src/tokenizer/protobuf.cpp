#include "tokenizer/protobuf.h"

#include <bit>
#include <cstring>

#include "lantern/error.h"

namespace lantern::tokenizer {

void ProtoWriter::raw_varint(uint64_t value) {
    while (value >= 0x80) {
        out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
        value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
}

void ProtoWriter::tag(uint32_t field, WireType type) {
    raw_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(type));
}

void ProtoWriter::varint(uint32_t field, uint64_t value) {
    tag(field, WireType::Varint);
    raw_varint(value);
}

void ProtoWriter::int32(uint32_t field, int32_t value) {
    tag(field, WireType::Varint);
    raw_varint(static_cast<uint64_t>(static_cast<int64_t>(value)));
}

void ProtoWriter::float32(uint32_t field, float value) {
    tag(field, WireType::Fixed32);
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void ProtoWriter::bytes(uint32_t field, std::string_view value) {
    tag(field, WireType::LengthDelimited);
    raw_varint(value.size());
    out_.append(value);
}

void ProtoWriter::copy(const ProtoField& field) {
    switch (field.type) {
        case WireType::Varint:
            varint(field.number, field.value);
            break;
        case WireType::LengthDelimited:
            bytes(field.number, field.bytes);
            break;
        case WireType::Fixed32:
        case WireType::Fixed64: {
            tag(field.number, field.type);
            const int width = field.type == WireType::Fixed32 ? 4 : 8;
            for (int i = 0; i < width; ++i)
                out_.push_back(static_cast<char>((field.value >> (8 * i)) & 0xff));
            break;
        }
    }
}

float ProtoField::as_float() const {
    return std::bit_cast<float>(static_cast<uint32_t>(value));
}

void ProtoReader::fail(const std::string& problem) const {
    throw Error(ErrorCode::InvalidModelFile,
                what_ + ": " + problem + " at byte " + std::to_string(pos_) + " of the protobuf message");
}

uint64_t ProtoReader::read_varint() {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos_ >= data_.size()) fail("truncated varint");
        const auto byte = static_cast<uint8_t>(data_[pos_++]);
        result |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return result;
    }
    fail("varint longer than 10 bytes");
}

bool ProtoReader::next(ProtoField& field) {
    if (pos_ >= data_.size()) return false;
    const uint64_t key = read_varint();
    field = ProtoField{};
    field.number = static_cast<uint32_t>(key >> 3);
    if (field.number == 0) fail("field number 0");
    switch (key & 7) {
        case 0:
            field.type = WireType::Varint;
            field.value = read_varint();
            break;
        case 1:
        case 5: {
            const size_t width = (key & 7) == 1 ? 8 : 4;
            if (data_.size() - pos_ < width) fail("truncated fixed-width field");
            field.type = width == 8 ? WireType::Fixed64 : WireType::Fixed32;
            for (size_t i = 0; i < width; ++i)
                field.value |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
            pos_ += width;
            break;
        }
        case 2: {
            const uint64_t length = read_varint();
            if (length > data_.size() - pos_) fail("length " + std::to_string(length) + " past the end");
            field.type = WireType::LengthDelimited;
            field.bytes = data_.substr(pos_, length);
            pos_ += length;
            break;
        }
        default:
            fail("unsupported wire type " + std::to_string(key & 7));
    }
    return true;
}

}  // namespace lantern::tokenizer
