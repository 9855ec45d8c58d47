// lantern/gguf.h — reading and writing GGUF files (the llama.cpp model format), v2 and v3.
//
// GgufFile memory-maps the file and validates everything before it is used: every count, length,
// offset and tensor extent is checked against the file size (with overflow checks), so a truncated
// or hostile file raises lantern::Error(InvalidModelFile) naming the field and byte offset instead
// of crashing. Tensor data stays in the mapping; tensor_data() returns a view into it.
//
// GgufWriter builds small GGUF files (tests, synthetic benchmark models).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lantern {

// ggml tensor types we know by name (values are the on-disk ids).
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ4_NL = 20,
    IQ4_XS = 23,
    BF16 = 30,
};
const char* ggml_type_name(uint32_t type);

// GGUF metadata value types (on-disk ids).
enum class GgufType : uint32_t {
    UInt8 = 0,
    Int8 = 1,
    UInt16 = 2,
    Int16 = 3,
    UInt32 = 4,
    Int32 = 5,
    Float32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    UInt64 = 10,
    Int64 = 11,
    Float64 = 12,
};

struct GgufValue;
struct GgufArray {
    GgufType element_type = GgufType::UInt8;
    std::vector<GgufValue> items;
};
// One metadata value. Integers keep their signedness; arrays hold values of one element type.
struct GgufValue {
    GgufType type = GgufType::UInt8;
    std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<GgufArray>> v;

    std::optional<int64_t> as_int() const;   // any integer type (and bool)
    std::optional<double> as_float() const;  // any numeric type
    const std::string* as_string() const;    // String only
    const GgufArray* as_array() const;       // Array only
};

struct GgufTensorInfo {
    std::string name;
    std::vector<uint64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
    uint32_t type = 0;            // ggml type id (see GgmlType)
    uint64_t offset = 0;          // relative to the start of the data section
    uint64_t size_bytes = 0;      // validated against the file
    uint32_t part = 0;            // split models: the file (0 = the first) whose data holds it
    uint64_t elements() const;
};

class GgufFile {
public:
    // Opens and validates. Throws Error(Io) if unreadable, Error(InvalidModelFile) if malformed.
    // A split model (llama.cpp's gguf-split: split.count > 1, files PREFIX-00001-of-0000N.gguf ...)
    // is opened by its first file: the others are found by name and opened too, and the tensor
    // table holds every part's tensors (tensor_data reads from the right file; metadata is the
    // first file's, as the format puts it there).
    static std::unique_ptr<GgufFile> open(const std::string& path);
    // Parses an in-memory image (fuzzing, tests). The bytes must outlive the object.
    static std::unique_ptr<GgufFile> from_memory(std::span<const uint8_t> bytes,
                                                 std::string name = "<memory>");
    ~GgufFile();

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t file_size() const { return bytes_.size(); }  // this file (the first part of a split model)
    uint32_t split_count() const { return static_cast<uint32_t>(parts_.size()) + 1; }

    const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
    const GgufValue* find(std::string_view key) const;
    // Typed getters: nullopt when missing; Error(InvalidModelFile) when present with a wrong type.
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::vector<std::string> get_string_array(std::string_view key) const;  // empty if missing
    std::vector<float> get_float_array(std::string_view key) const;
    std::vector<int64_t> get_int_array(std::string_view key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    // A tensor by name: a row view (add_row_view) first, then the file's own tensors.
    const GgufTensorInfo* find_tensor(std::string_view name) const;
    std::span<const uint8_t> tensor_data(const GgufTensorInfo& t) const;

    // Makes rows [first_row, first_row + rows) of the file's 2-D tensor `of` findable as `name`
    // (no copy: its data is a sub-span of the file's). How a model whose file fuses matrices
    // (Phi-3's attn_qkv, its gate+up in ffn_up) is read as the separate ones the loader stacks; a
    // view named like a file tensor takes its place. Not listed in tensors(). Throws
    // Error(InvalidModelFile) when `of` is missing, not 2-D, or shorter than the rows asked for.
    void add_row_view(const std::string& name, const std::string& of, uint64_t first_row, uint64_t rows);

private:
    GgufFile() = default;
    void parse();

    std::string path_;
    std::span<const uint8_t> bytes_;
    void* map_ = nullptr;
    size_t map_size_ = 0;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::map<std::string, GgufValue> metadata_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
    std::map<std::string, GgufTensorInfo, std::less<>> views_;  // add_row_view
    std::vector<std::unique_ptr<GgufFile>> parts_;              // a split model's files after the first
    static std::unique_ptr<GgufFile> open_one(const std::string& path);  // without following splits
    void open_split_parts();
};

// The file name of part `no` (1-based) of a split model: PREFIX-0000no-of-0000count.gguf, as
// llama.cpp's gguf-split names them.
std::string gguf_split_path(const std::string& prefix, uint32_t no, uint32_t count);

// The file's general.architecture ("llama", "qwen2", ...), read from its first 64 KiB only —
// llama.cpp writes that key first — so a list of many model files can say what each is without
// opening them. nullopt when the file is unreadable, not GGUF, or the key is not within that much.
std::optional<std::string> gguf_architecture(const std::string& path);
// The same for a file's first bytes (`bytes`, e.g. fetched by an HTTP Range request; `source`
// names it in messages): nullopt when they are no GGUF header or end before the key.
std::optional<std::string> gguf_architecture_of(std::span<const uint8_t> bytes, const std::string& source);
// The metadata entries a file's first `bytes` hold whole, in order (an empty list when they are
// no GGUF header): enough to know a model's shape before downloading it.
std::vector<std::pair<std::string, GgufValue>> gguf_leading_metadata(std::span<const uint8_t> bytes,
                                                                     const std::string& source);

// Bytes that `elements` values of a ggml type occupy (throws for unknown types or partial blocks).
uint64_t ggml_row_bytes(uint32_t type, uint64_t elements);

class GgufWriter {
public:
    void set_u16(const std::string& key, uint16_t v);
    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_string_array(const std::string& key, const std::vector<std::string>& v);
    void set_f32_array(const std::string& key, const std::vector<float>& v);
    void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
    // Adds a tensor whose data is already encoded in `type` (see quantize_row in ops/dequant.h).
    void add_tensor(const std::string& name, std::vector<uint64_t> shape, uint32_t type,
                    std::vector<uint8_t> data);
    std::vector<uint8_t> serialize(uint32_t version = 3, uint64_t alignment = 32) const;
    void write(const std::string& path, uint32_t version = 3) const;
    // Writes the model split into `parts` files as llama.cpp's gguf-split does (metadata and
    // split.no/count/tensors.count in the first, split.no/count in the others, the tensors in
    // order, about equally many per part); returns their paths (gguf_split_path).
    std::vector<std::string> write_split(const std::string& prefix, uint32_t parts,
                                         uint32_t version = 3) const;

private:
    struct Kv {
        std::string key;
        std::vector<uint8_t> encoded;  // type id + payload
    };
    struct Tensor {
        std::string name;
        std::vector<uint64_t> shape;
        uint32_t type;
        std::vector<uint8_t> data;
    };
    void put(const std::string& key, std::vector<uint8_t> encoded);
    std::vector<Kv> kvs_;
    std::vector<Tensor> tensors_;
};

}  // namespace lantern
