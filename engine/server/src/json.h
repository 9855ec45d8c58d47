// JSON for the API server (RFC 8259): a value tree, a strict parser for request bodies and a
// writer for responses. The engine has no other use for JSON, and Qt (QJsonDocument) stays out of
// the engine, so this is the whole of it.
//
// The parser is written for bodies from the network: it never recurses deeper than kMaxDepth, it
// accepts only valid UTF-8 and well-formed escapes (a lone surrogate is an error), and every error
// names what was wrong and at which byte.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lantern::server {

class JsonError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Json {
public:
    enum class Type { Null, Bool, Number, String, Array, Object };
    static constexpr int kMaxDepth = 64;
    // Values one document may hold (parse throws past it): a request's token ids and logit_bias
    // entries fit many times over, and the parsed document stays under ~30 MB.
    static constexpr size_t kMaxValues = 256 * 1024;

    Json() = default;  // null
    Json(bool b) : type_(Type::Bool), bool_(b) {}
    Json(double d) : type_(Type::Number), number_(d) {}
    Json(int v) : Json(static_cast<int64_t>(v)) {}
    Json(int64_t v) : type_(Type::Number), number_(static_cast<double>(v)), integer_(v) {}
    Json(uint32_t v) : Json(static_cast<int64_t>(v)) {}
    Json(const char* s) : type_(Type::String), string_(s) {}
    Json(std::string s) : type_(Type::String), string_(std::move(s)) {}
    Json(std::string_view s) : type_(Type::String), string_(s) {}
    static Json array() {
        Json j;
        j.type_ = Type::Array;
        return j;
    }
    static Json object() {
        Json j;
        j.type_ = Type::Object;
        return j;
    }

    // Throws JsonError("... at byte N") for anything that is not exactly one JSON value (surrounding
    // whitespace allowed).
    static Json parse(std::string_view text);
    // Compact text. Strings are written as UTF-8 (bytes that are not valid UTF-8 as U+FFFD), numbers
    // that are not finite as null (JSON has no spelling for them).
    std::string dump() const;

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::Null; }
    bool is_bool() const { return type_ == Type::Bool; }
    bool is_number() const { return type_ == Type::Number; }
    bool is_string() const { return type_ == Type::String; }
    bool is_array() const { return type_ == Type::Array; }
    bool is_object() const { return type_ == Type::Object; }

    bool as_bool() const { return bool_; }
    double as_number() const { return number_; }
    // The number as an integer when it was written as one (no fraction or exponent) and fits.
    std::optional<int64_t> as_integer() const { return integer_; }
    const std::string& as_string() const { return string_; }
    const std::vector<Json>& items() const { return items_; }
    const std::vector<std::pair<std::string, Json>>& members() const { return members_; }

    // Object member by key (the last one when a key repeats, as JavaScript reads it); nullptr if absent.
    const Json* find(std::string_view key) const;
    // Builders: append to an array, set (or add) an object member. Return *this for chaining.
    Json& push(Json value);
    Json& set(std::string key, Json value);

private:
    Type type_ = Type::Null;
    bool bool_ = false;
    double number_ = 0;
    std::optional<int64_t> integer_;
    std::string string_;
    std::vector<Json> items_;
    std::vector<std::pair<std::string, Json>> members_;

    void dump_to(std::string& out) const;
    friend class JsonParser;
};

// `text` as a JSON string literal, quotes included (what Json::dump writes for a string).
std::string json_quote(std::string_view text);

}  // namespace lantern::server
