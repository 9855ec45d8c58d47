// GGUF reader. Every read goes through Cursor, which checks the remaining length first, so a
// truncated or hostile file ends in Error(InvalidModelFile, "...: <what> at byte <offset> ...")
// and never in an out-of-bounds read, an endless loop or an unbounded allocation.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "lantern/error.h"
#include "lantern/gguf.h"

namespace lantern {
namespace {

constexpr uint64_t kMaxDims = 4;     // ggml tensors have at most 4 dimensions
constexpr int kMaxArrayNesting = 3;  // arrays of arrays are legal; bound the recursion
constexpr uint64_t kMaxStringBytes = 1ull << 30;

struct TypeTraits {
    uint32_t id;
    const char* name;
    uint32_t block_elements;
    uint32_t block_bytes;
};

// Block layouts per the GGUF / ggml spec (elements per block, bytes per block).
constexpr TypeTraits kTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},
};

const TypeTraits* traits(uint32_t type) {
    for (const auto& t : kTypes)
        if (t.id == type) return &t;
    return nullptr;
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
    return __builtin_mul_overflow(a, b, out);
}
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) {
    return __builtin_add_overflow(a, b, out);
}

class Cursor {
public:
    Cursor(std::span<const uint8_t> bytes, const std::string& name) : bytes_(bytes), name_(name) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw Error(ErrorCode::InvalidModelFile, "GGUF file " + name_ + ": " + what + " (at byte " +
                                                     std::to_string(pos_) + " of " +
                                                     std::to_string(bytes_.size()) + ")");
    }
    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return bytes_.size() - pos_; }

    void need(uint64_t n, const char* what) const {
        if (n > remaining())
            fail(std::string("file is truncated: ") + what + " needs " + std::to_string(n) + " bytes, only " +
                 std::to_string(remaining()) + " left");
    }
    template <typename T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::string read_string(const char* what) {
        uint64_t len = read<uint64_t>(what);
        if (len > kMaxStringBytes)
            fail(std::string(what) + ": string length " + std::to_string(len) + " is absurd");
        need(len, what);
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
        pos_ += len;
        return s;
    }

private:
    std::span<const uint8_t> bytes_;
    const std::string& name_;
    uint64_t pos_ = 0;
};

uint64_t min_encoded_size(GgufType t) {
    switch (t) {
        case GgufType::UInt8:
        case GgufType::Int8:
        case GgufType::Bool:
            return 1;
        case GgufType::UInt16:
        case GgufType::Int16:
            return 2;
        case GgufType::UInt32:
        case GgufType::Int32:
        case GgufType::Float32:
            return 4;
        case GgufType::UInt64:
        case GgufType::Int64:
        case GgufType::Float64:
            return 8;
        case GgufType::String:
            return 8;  // the length prefix
        case GgufType::Array:
            return 4 + 8;  // element type + count
    }
    return 1;
}

bool valid_type(uint32_t t) {
    return t <= static_cast<uint32_t>(GgufType::Float64);
}

GgufValue read_value(Cursor& c, GgufType type, const std::string& key, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
        case GgufType::UInt8:
            v.v = uint64_t{c.read<uint8_t>(key.c_str())};
            break;
        case GgufType::Int8:
            v.v = int64_t{c.read<int8_t>(key.c_str())};
            break;
        case GgufType::UInt16:
            v.v = uint64_t{c.read<uint16_t>(key.c_str())};
            break;
        case GgufType::Int16:
            v.v = int64_t{c.read<int16_t>(key.c_str())};
            break;
        case GgufType::UInt32:
            v.v = uint64_t{c.read<uint32_t>(key.c_str())};
            break;
        case GgufType::Int32:
            v.v = int64_t{c.read<int32_t>(key.c_str())};
            break;
        case GgufType::UInt64:
            v.v = c.read<uint64_t>(key.c_str());
            break;
        case GgufType::Int64:
            v.v = c.read<int64_t>(key.c_str());
            break;
        case GgufType::Float32:
            v.v = double{c.read<float>(key.c_str())};
            break;
        case GgufType::Float64:
            v.v = c.read<double>(key.c_str());
            break;
        case GgufType::Bool: {
            uint8_t b = c.read<uint8_t>(key.c_str());
            if (b > 1)
                c.fail("metadata \"" + key + "\": bool value " + std::to_string(b) + " is neither 0 nor 1");
            v.v = b != 0;
            break;
        }
        case GgufType::String:
            v.v = c.read_string(key.c_str());
            break;
        case GgufType::Array: {
            if (depth >= kMaxArrayNesting) c.fail("metadata \"" + key + "\": arrays nested too deeply");
            uint32_t et = c.read<uint32_t>("array element type");
            if (!valid_type(et))
                c.fail("metadata \"" + key + "\": unknown array element type " + std::to_string(et));
            uint64_t count = c.read<uint64_t>("array length");
            uint64_t min_bytes = 0;
            // The count must be payable from the bytes left: no huge allocation for a tiny file.
            if (mul_overflows(count, min_encoded_size(static_cast<GgufType>(et)), &min_bytes) ||
                min_bytes > c.remaining())
                c.fail("metadata \"" + key + "\": array of " + std::to_string(count) +
                       " elements does not fit in the rest of the file");
            auto arr = std::make_shared<GgufArray>();
            arr->element_type = static_cast<GgufType>(et);
            arr->items.reserve(count);
            for (uint64_t i = 0; i < count; ++i)
                arr->items.push_back(read_value(c, arr->element_type, key, depth + 1));
            v.v = std::move(arr);
            break;
        }
    }
    return v;
}

const char* value_type_name(GgufType t) {
    static const char* names[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                  "bool",  "string", "array",  "uint64", "int64",  "float64"};
    auto i = static_cast<uint32_t>(t);
    return i < 13 ? names[i] : "?";
}

}  // namespace

const char* ggml_type_name(uint32_t type) {
    const auto* t = traits(type);
    return t ? t->name : "unknown";
}

uint64_t ggml_row_bytes(uint32_t type, uint64_t elements) {
    const auto* t = traits(type);
    if (!t) throw Error(ErrorCode::UnsupportedTensorType, "unknown ggml type id " + std::to_string(type));
    if (elements % t->block_elements != 0)
        throw Error(ErrorCode::InvalidModelFile, std::string("a row of ") + std::to_string(elements) + " " +
                                                     t->name + " values is not a whole number of " +
                                                     std::to_string(t->block_elements) + "-element blocks");
    return elements / t->block_elements * t->block_bytes;
}

uint64_t GgufTensorInfo::elements() const {
    uint64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

std::optional<int64_t> GgufValue::as_int() const {
    if (auto* u = std::get_if<uint64_t>(&v)) {
        if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
        return static_cast<int64_t>(*u);
    }
    if (auto* i = std::get_if<int64_t>(&v)) return *i;
    if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
    return std::nullopt;
}
std::optional<double> GgufValue::as_float() const {
    if (auto* d = std::get_if<double>(&v)) return *d;
    if (auto i = as_int()) return static_cast<double>(*i);
    return std::nullopt;
}
const std::string* GgufValue::as_string() const {
    return std::get_if<std::string>(&v);
}
const GgufArray* GgufValue::as_array() const {
    auto* p = std::get_if<std::shared_ptr<GgufArray>>(&v);
    return p ? p->get() : nullptr;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
    auto f = open_one(path);
    if (f->get_int("split.count").value_or(1) > 1) f->open_split_parts();
    return f;
}

std::unique_ptr<GgufFile> GgufFile::open_one(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(ErrorCode::Io, "cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(ErrorCode::Io, path + " is not a regular file");
    }
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->path_ = path;
    if (st.st_size > 0) {
        void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        ::close(fd);
        if (m == MAP_FAILED) throw Error(ErrorCode::Io, "cannot map " + path + ": " + std::strerror(errno));
        f->map_ = m;
        f->map_size_ = static_cast<size_t>(st.st_size);
        f->bytes_ = {static_cast<const uint8_t*>(m), f->map_size_};
    } else {
        ::close(fd);
    }
    f->parse();
    return f;
}

std::string gguf_split_path(const std::string& prefix, uint32_t no, uint32_t count) {
    char tail[40];
    std::snprintf(tail, sizeof tail, "-%05u-of-%05u.gguf", no, count);
    return prefix + tail;
}

// The first file of a split model names the count; the others must be named as gguf-split
// names them, sit beside it and say which part they are.
void GgufFile::open_split_parts() {
    const int64_t count = *get_int("split.count");
    const int64_t no = get_int("split.no").value_or(0);
    if (count > 65535)
        throw Error(ErrorCode::InvalidModelFile,
                    path_ + ": split.count " + std::to_string(count) + " is absurd");
    if (no != 0) {
        std::string first = "its first part";
        const std::string own =
            gguf_split_path("", static_cast<uint32_t>(no + 1), static_cast<uint32_t>(count));
        if (no > 0 && path_.size() > own.size() &&
            path_.compare(path_.size() - own.size(), own.size(), own) == 0)
            first =
                gguf_split_path(path_.substr(0, path_.size() - own.size()), 1, static_cast<uint32_t>(count));
        throw Error(ErrorCode::InvalidModelFile, path_ + " is part " + std::to_string(no + 1) + " of " +
                                                     std::to_string(count) + " of a split model; open " +
                                                     first);
    }
    const std::string tail = gguf_split_path("", 1, static_cast<uint32_t>(count));
    if (path_.size() <= tail.size() || path_.compare(path_.size() - tail.size(), tail.size(), tail) != 0)
        throw Error(ErrorCode::InvalidModelFile,
                    path_ + " is the first of " + std::to_string(count) +
                        " parts of a split model, but its name does not end in " + tail +
                        ", so the other parts cannot be found");
    const std::string prefix = path_.substr(0, path_.size() - tail.size());
    for (uint32_t i = 1; i < count; ++i) {
        const std::string p = gguf_split_path(prefix, i + 1, static_cast<uint32_t>(count));
        std::unique_ptr<GgufFile> part;
        try {
            part = open_one(p);
        } catch (const Error& e) {
            throw Error(e.code(), "part " + std::to_string(i + 1) + " of " + std::to_string(count) + " of " +
                                      path_ + " is missing or unreadable: " + e.what());
        }
        if (part->get_int("split.no").value_or(-1) != i || part->get_int("split.count").value_or(-1) != count)
            throw Error(ErrorCode::InvalidModelFile, p + " does not say it is part " + std::to_string(i + 1) +
                                                         " of " + std::to_string(count) +
                                                         " (split.no / split.count)");
        for (auto t : part->tensors_) {
            t.part = i;
            if (!tensor_index_.emplace(t.name, tensors_.size()).second)
                throw Error(ErrorCode::InvalidModelFile,
                            p + ": tensor " + t.name + " is also in an earlier part");
            tensors_.push_back(std::move(t));
        }
        parts_.push_back(std::move(part));
    }
    if (auto n = get_int("split.tensors.count"); n && *n != static_cast<int64_t>(tensors_.size()))
        throw Error(ErrorCode::InvalidModelFile, path_ + ": split.tensors.count says " + std::to_string(*n) +
                                                     " tensors, the parts hold " +
                                                     std::to_string(tensors_.size()));
}

std::optional<std::string> gguf_architecture(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return std::nullopt;
    std::vector<uint8_t> head(64 * 1024);
    f.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(f.gcount()));
    return gguf_architecture_of(head, path);
}

std::vector<std::pair<std::string, GgufValue>> gguf_leading_metadata(std::span<const uint8_t> bytes,
                                                                     const std::string& source) {
    std::vector<std::pair<std::string, GgufValue>> out;
    const std::vector<uint8_t> head(bytes.begin(), bytes.end());
    if (head.size() < 4 || std::memcmp(head.data(), "GGUF", 4) != 0) return out;
    try {
        // The entries in order, as parse() reads them; one that runs past the bytes (the
        // vocabulary, usually) ends the list.
        Cursor c(head, source);
        c.read<uint32_t>("magic");
        const uint32_t version = c.read<uint32_t>("version");
        if (version != 2 && version != 3) return out;
        c.read<uint64_t>("tensor count");
        const uint64_t n_kv = c.read<uint64_t>("metadata count");
        for (uint64_t i = 0; i < n_kv; ++i) {
            std::string key = c.read_string("metadata key");
            const uint32_t type = c.read<uint32_t>("metadata value type");
            if (!valid_type(type)) return out;
            GgufValue v = read_value(c, static_cast<GgufType>(type), key, 0);
            out.emplace_back(std::move(key), std::move(v));
        }
    } catch (const Error&) {
    }
    return out;
}

std::optional<std::string> gguf_architecture_of(std::span<const uint8_t> bytes, const std::string& source) {
    for (const auto& [key, value] : gguf_leading_metadata(bytes, source)) {
        if (key != "general.architecture") continue;
        if (const std::string* arch = value.as_string()) return *arch;
        return std::nullopt;
    }
    return std::nullopt;
}

std::unique_ptr<GgufFile> GgufFile::from_memory(std::span<const uint8_t> bytes, std::string name) {
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->path_ = std::move(name);
    f->bytes_ = bytes;
    f->parse();
    return f;
}

GgufFile::~GgufFile() {
    if (map_) munmap(map_, map_size_);
}

void GgufFile::parse() {
    Cursor c(bytes_, path_);
    if (bytes_.size() < 4 || std::memcmp(bytes_.data(), "GGUF", 4) != 0)
        c.fail("not a GGUF file (the first four bytes are not \"GGUF\")");
    c.read<uint32_t>("magic");
    version_ = c.read<uint32_t>("version");
    if (version_ != 2 && version_ != 3)
        c.fail("GGUF version " + std::to_string(version_) + " is not supported (only 2 and 3)");
    uint64_t n_tensors = c.read<uint64_t>("tensor count");
    uint64_t n_kv = c.read<uint64_t>("metadata count");
    // Each entry needs at least a key length, a type and a value: bound counts by the file size.
    if (n_kv > c.remaining() / (8 + 4 + 1))
        c.fail("metadata count " + std::to_string(n_kv) + " cannot fit in the file");
    if (n_tensors > c.remaining() / (8 + 4 + 8 + 4 + 8))
        c.fail("tensor count " + std::to_string(n_tensors) + " cannot fit in the file");

    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.read_string("metadata key");
        uint32_t type = c.read<uint32_t>("metadata value type");
        if (!valid_type(type))
            c.fail("metadata \"" + key + "\" has unknown value type " + std::to_string(type));
        GgufValue v = read_value(c, static_cast<GgufType>(type), key, 0);
        if (!metadata_.emplace(key, std::move(v)).second)
            c.fail("metadata key \"" + key + "\" appears twice");
    }
    if (const auto* a = find("general.alignment")) {
        auto al = a->as_int();
        if (!al || *al <= 0 || (*al & (*al - 1)) != 0)
            c.fail("general.alignment must be a power of two (got " +
                   (al ? std::to_string(*al) : "non-integer") + ")");
        if (*al > (1 << 20))  // padding of up to the alignment per tensor: refuse absurd values
            c.fail("general.alignment of " + std::to_string(*al) +
                   " bytes is above the 1 MiB this reader accepts");
        alignment_ = static_cast<uint64_t>(*al);
    }

    tensors_.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensorInfo t;
        t.name = c.read_string("tensor name");
        uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
        if (n_dims == 0 || n_dims > kMaxDims)
            c.fail("tensor \"" + t.name + "\" has " + std::to_string(n_dims) +
                   " dimensions (1 to 4 allowed)");
        uint64_t elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            uint64_t dim = c.read<uint64_t>("tensor dimension");
            if (dim == 0 || dim > (1ull << 40))
                c.fail("tensor \"" + t.name + "\" has dimension " + std::to_string(dim));
            if (mul_overflows(elements, dim, &elements))
                c.fail("tensor \"" + t.name + "\": element count overflows 64 bits");
            t.shape.push_back(dim);
        }
        t.type = c.read<uint32_t>("tensor type");
        t.offset = c.read<uint64_t>("tensor data offset");
        const auto* tr = traits(t.type);
        if (!tr) c.fail("tensor \"" + t.name + "\" has unknown ggml type " + std::to_string(t.type));
        if (t.shape[0] % tr->block_elements != 0)
            c.fail("tensor \"" + t.name + "\": row length " + std::to_string(t.shape[0]) +
                   " is not a multiple of the " + tr->name + " block size " +
                   std::to_string(tr->block_elements));
        uint64_t blocks = elements / tr->block_elements;
        if (mul_overflows(blocks, tr->block_bytes, &t.size_bytes))
            c.fail("tensor \"" + t.name + "\": byte size overflows 64 bits");
        if (t.offset % alignment_ != 0)
            c.fail("tensor \"" + t.name + "\": data offset " + std::to_string(t.offset) +
                   " is not aligned to " + std::to_string(alignment_));
        if (!tensor_index_.emplace(t.name, tensors_.size()).second)
            c.fail("tensor name \"" + t.name + "\" appears twice");
        tensors_.push_back(std::move(t));
    }
    uint64_t end_of_header = c.pos();
    data_offset_ = (end_of_header + alignment_ - 1) / alignment_ * alignment_;
    if (n_tensors > 0 && data_offset_ > bytes_.size())
        c.fail("file is truncated before the tensor data section (which starts at " +
               std::to_string(data_offset_) + ")");

    // Tensor extents: inside the file, and no two overlapping.
    std::vector<const GgufTensorInfo*> by_offset;
    for (const auto& t : tensors_) {
        uint64_t start, end;
        if (add_overflows(data_offset_, t.offset, &start) || add_overflows(start, t.size_bytes, &end) ||
            end > bytes_.size())
            throw Error(ErrorCode::InvalidModelFile,
                        "GGUF file " + path_ + ": tensor \"" + t.name + "\" (" +
                            std::to_string(t.size_bytes) + " bytes at data offset " +
                            std::to_string(t.offset) + ") extends past the end of the file (" +
                            std::to_string(bytes_.size()) + " bytes): the file is truncated or corrupt");
        by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i - 1]->offset + by_offset[i - 1]->size_bytes > by_offset[i]->offset)
            throw Error(ErrorCode::InvalidModelFile, "GGUF file " + path_ + ": tensors \"" +
                                                         by_offset[i - 1]->name + "\" and \"" +
                                                         by_offset[i]->name + "\" overlap");
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = metadata_.find(std::string(key));
    return it == metadata_.end() ? nullptr : &it->second;
}

namespace {
[[noreturn]] void wrong_type(const std::string& path, std::string_view key, GgufType got, const char* want) {
    throw Error(ErrorCode::InvalidModelFile, "GGUF file " + path + ": metadata \"" + std::string(key) +
                                                 "\" is " + value_type_name(got) + ", expected " + want);
}
}  // namespace

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
    const auto* v = find(key);
    if (!v) return std::nullopt;
    auto i = v->as_int();
    if (!i || v->type == GgufType::Float32 || v->type == GgufType::Float64)
        wrong_type(path_, key, v->type, "an integer");
    return i;
}
std::optional<double> GgufFile::get_float(std::string_view key) const {
    const auto* v = find(key);
    if (!v) return std::nullopt;
    auto d = v->as_float();
    if (!d) wrong_type(path_, key, v->type, "a number");
    return d;
}
std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const auto* v = find(key);
    if (!v) return std::nullopt;
    if (!v->as_string()) wrong_type(path_, key, v->type, "a string");
    return *v->as_string();
}
std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const auto* v = find(key);
    if (!v) return std::nullopt;
    if (auto* b = std::get_if<bool>(&v->v)) return *b;
    wrong_type(path_, key, v->type, "a bool");
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
    const auto* v = find(key);
    if (!v) return {};
    const auto* a = v->as_array();
    if (!a || a->element_type != GgufType::String) wrong_type(path_, key, v->type, "an array of strings");
    std::vector<std::string> out;
    out.reserve(a->items.size());
    for (const auto& it : a->items) out.push_back(*it.as_string());
    return out;
}
std::vector<float> GgufFile::get_float_array(std::string_view key) const {
    const auto* v = find(key);
    if (!v) return {};
    const auto* a = v->as_array();
    if (!a || a->element_type == GgufType::String || a->element_type == GgufType::Array)
        wrong_type(path_, key, v->type, "an array of numbers");
    std::vector<float> out;
    out.reserve(a->items.size());
    for (const auto& it : a->items) out.push_back(static_cast<float>(*it.as_float()));
    return out;
}
std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
    const auto* v = find(key);
    if (!v) return {};
    const auto* a = v->as_array();
    if (!a || (!a->items.empty() && !a->items[0].as_int()) || a->element_type == GgufType::Float32 ||
        a->element_type == GgufType::Float64)
        wrong_type(path_, key, v->type, "an array of integers");
    std::vector<int64_t> out;
    out.reserve(a->items.size());
    for (const auto& it : a->items) out.push_back(it.as_int().value_or(0));
    return out;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    if (auto v = views_.find(name); v != views_.end()) return &v->second;
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::add_row_view(const std::string& name, const std::string& of, uint64_t first_row,
                            uint64_t rows) {
    const auto it = tensor_index_.find(of);
    if (it == tensor_index_.end())
        throw Error(ErrorCode::InvalidModelFile, path_ + ": tensor " + of + " is missing");
    const GgufTensorInfo& t = tensors_[it->second];
    if (t.shape.size() != 2 || t.shape[1] == 0 || t.size_bytes % t.shape[1] != 0 || rows == 0 ||
        rows > t.shape[1] || first_row > t.shape[1] - rows)
        throw Error(ErrorCode::InvalidModelFile, path_ + ": tensor " + of + " is not a matrix of at least " +
                                                     std::to_string(first_row + rows) + " rows (to read " +
                                                     name + " from it)");
    const uint64_t row_bytes = t.size_bytes / t.shape[1];
    GgufTensorInfo v = t;
    v.name = name;
    v.shape = {t.shape[0], rows};
    v.offset = t.offset + first_row * row_bytes;
    v.size_bytes = rows * row_bytes;
    views_[name] = std::move(v);
}

std::span<const uint8_t> GgufFile::tensor_data(const GgufTensorInfo& t) const {
    const GgufFile& f = t.part == 0 ? *this : *parts_.at(t.part - 1);
    return f.bytes_.subspan(f.data_offset_ + t.offset, t.size_bytes);
}

}  // namespace lantern
