// The protobuf wire format, reduced to what a sentencepiece ModelProto needs.
//
// Debian's libsentencepiece-dev ships no generated sentencepiece_model.pb.h, so the tokenizer
// writes and reads the model proto itself: varints, 32-bit floats and length-delimited fields
// (strings and nested messages) are all that ModelProto uses.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace lantern::tokenizer {

enum class WireType : uint32_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

// One field as read from the wire. `value` holds varints and fixed-width numbers; `bytes` views
// the payload of length-delimited fields inside the reader's input.
struct ProtoField {
    uint32_t number = 0;
    WireType type = WireType::Varint;
    uint64_t value = 0;
    std::string_view bytes;

    float as_float() const;  // a Fixed32 field read as an IEEE float
    int32_t as_int32() const { return static_cast<int32_t>(static_cast<uint64_t>(value)); }
};

// Appends fields to a serialized message. Fields are written in the order of the calls; nested
// messages are built with their own writer and added with message().
class ProtoWriter {
public:
    void varint(uint32_t field, uint64_t value);
    // int32 fields are varints of the sign-extended 64-bit value (so -1 takes ten bytes).
    void int32(uint32_t field, int32_t value);
    void boolean(uint32_t field, bool value) { varint(field, value ? 1 : 0); }
    void float32(uint32_t field, float value);
    void bytes(uint32_t field, std::string_view value);
    void message(uint32_t field, const ProtoWriter& nested) { bytes(field, nested.data()); }
    // Writes a field read by ProtoReader back unchanged (to keep settings we do not interpret).
    void copy(const ProtoField& field);

    const std::string& data() const { return out_; }

private:
    void tag(uint32_t field, WireType type);
    void raw_varint(uint64_t value);

    std::string out_;
};

// Iterates over the fields of one serialized message. Malformed input (a truncated varint, a
// length past the end, a wire type protobuf does not define) throws
// lantern::Error(InvalidModelFile) naming `what` and the byte offset.
class ProtoReader {
public:
    ProtoReader(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}
    // Reads the next field into `field`; false at the end of the message.
    bool next(ProtoField& field);

private:
    uint64_t read_varint();
    [[noreturn]] void fail(const std::string& problem) const;

    std::string_view data_;
    std::string what_;
    size_t pos_ = 0;
};

}  // namespace lantern::tokenizer
