// GGUF writer for tests and synthetic benchmark models (little-endian, v2/v3 layout).
#include <cstring>
#include <fstream>

#include "lantern/error.h"
#include "lantern/gguf.h"

namespace lantern {
namespace {

template <typename T>
void put_raw(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
}
void put_str(std::vector<uint8_t>& out, const std::string& s) {
    put_raw<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}
std::vector<uint8_t> typed(GgufType t) {
    std::vector<uint8_t> e;
    put_raw<uint32_t>(e, static_cast<uint32_t>(t));
    return e;
}

}  // namespace

void GgufWriter::put(const std::string& key, std::vector<uint8_t> encoded) {
    for (auto& kv : kvs_)
        if (kv.key == key) {
            kv.encoded = std::move(encoded);
            return;
        }
    kvs_.push_back({key, std::move(encoded)});
}

void GgufWriter::set_u16(const std::string& key, uint16_t v) {
    auto e = typed(GgufType::UInt16);
    put_raw(e, v);
    put(key, std::move(e));
}
void GgufWriter::set_u32(const std::string& key, uint32_t v) {
    auto e = typed(GgufType::UInt32);
    put_raw(e, v);
    put(key, std::move(e));
}
void GgufWriter::set_i32(const std::string& key, int32_t v) {
    auto e = typed(GgufType::Int32);
    put_raw(e, v);
    put(key, std::move(e));
}
void GgufWriter::set_f32(const std::string& key, float v) {
    auto e = typed(GgufType::Float32);
    put_raw(e, v);
    put(key, std::move(e));
}
void GgufWriter::set_bool(const std::string& key, bool v) {
    auto e = typed(GgufType::Bool);
    put_raw<uint8_t>(e, v ? 1 : 0);
    put(key, std::move(e));
}
void GgufWriter::set_string(const std::string& key, const std::string& v) {
    auto e = typed(GgufType::String);
    put_str(e, v);
    put(key, std::move(e));
}
void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
    auto e = typed(GgufType::Array);
    put_raw<uint32_t>(e, static_cast<uint32_t>(GgufType::String));
    put_raw<uint64_t>(e, v.size());
    for (const auto& s : v) put_str(e, s);
    put(key, std::move(e));
}
void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
    auto e = typed(GgufType::Array);
    put_raw<uint32_t>(e, static_cast<uint32_t>(GgufType::Float32));
    put_raw<uint64_t>(e, v.size());
    for (float f : v) put_raw(e, f);
    put(key, std::move(e));
}
void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    auto e = typed(GgufType::Array);
    put_raw<uint32_t>(e, static_cast<uint32_t>(GgufType::Int32));
    put_raw<uint64_t>(e, v.size());
    for (int32_t i : v) put_raw(e, i);
    put(key, std::move(e));
}

void GgufWriter::add_tensor(const std::string& name, std::vector<uint64_t> shape, uint32_t type,
                            std::vector<uint8_t> data) {
    uint64_t n = 1;
    for (auto d : shape) n *= d;
    uint64_t want = ggml_row_bytes(type, shape.empty() ? 0 : shape[0]) * (shape.empty() ? 0 : n / shape[0]);
    if (data.size() != want)
        throw Error(ErrorCode::InvalidArgument,
                    "GgufWriter: tensor " + name + " has " + std::to_string(data.size()) +
                        " bytes, its shape and type need " + std::to_string(want));
    tensors_.push_back({name, std::move(shape), type, std::move(data)});
}

std::vector<uint8_t> GgufWriter::serialize(uint32_t version, uint64_t alignment) const {
    std::vector<uint8_t> out;
    put_raw<uint32_t>(out, 0x46554747u);  // "GGUF" read as a little-endian uint32
    put_raw<uint32_t>(out, version);
    put_raw<uint64_t>(out, tensors_.size());
    bool has_alignment = false;
    for (const auto& kv : kvs_) has_alignment |= kv.key == "general.alignment";
    put_raw<uint64_t>(out, kvs_.size() + (alignment != 32 && !has_alignment ? 1 : 0));
    for (const auto& kv : kvs_) {
        put_str(out, kv.key);
        out.insert(out.end(), kv.encoded.begin(), kv.encoded.end());
    }
    if (alignment != 32 && !has_alignment) {
        put_str(out, "general.alignment");
        put_raw<uint32_t>(out, static_cast<uint32_t>(GgufType::UInt32));
        put_raw<uint32_t>(out, static_cast<uint32_t>(alignment));
    }
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
        put_str(out, t.name);
        put_raw<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
        for (auto d : t.shape) put_raw<uint64_t>(out, d);
        put_raw<uint32_t>(out, t.type);
        put_raw<uint64_t>(out, offset);
        offset += (t.data.size() + alignment - 1) / alignment * alignment;
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
    for (const auto& t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
    }
    return out;
}

void GgufWriter::write(const std::string& path, uint32_t version) const {
    auto bytes = serialize(version);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::Io, "cannot write " + path);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw Error(ErrorCode::Io, "write failed: " + path);
}

std::vector<std::string> GgufWriter::write_split(const std::string& prefix, uint32_t parts,
                                                 uint32_t version) const {
    if (parts < 1 || parts > tensors_.size() || parts > 65535)
        throw Error(ErrorCode::InvalidArgument, "cannot split " + std::to_string(tensors_.size()) +
                                                    " tensors into " + std::to_string(parts) + " parts");
    std::vector<std::string> paths;
    for (uint32_t i = 0; i < parts; ++i) {
        GgufWriter part;
        if (i == 0) part.kvs_ = kvs_;
        part.set_u16("split.no", static_cast<uint16_t>(i));
        part.set_u16("split.count", static_cast<uint16_t>(parts));
        if (i == 0) part.set_i32("split.tensors.count", static_cast<int32_t>(tensors_.size()));
        const size_t begin = tensors_.size() * i / parts, end = tensors_.size() * (i + 1) / parts;
        part.tensors_.assign(tensors_.begin() + static_cast<ptrdiff_t>(begin),
                             tensors_.begin() + static_cast<ptrdiff_t>(end));
        paths.push_back(gguf_split_path(prefix, i + 1, parts));
        part.write(paths.back(), version);
    }
    return paths;
}

}  // namespace lantern
