#include "tokenize_cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>

#include "lantern/error.h"
#include "lantern/gguf.h"
#include "lantern/tokenizer.h"

namespace lantern {

namespace {

// A GGUF model (its tokenizer.ggml.* metadata) or a sentencepiece .model file, told apart by the
// GGUF magic rather than by the file name.
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorCode::Io, "cannot open " + path);
    char magic[4] = {};
    in.read(magic, sizeof magic);
    if (in.gcount() == 4 && std::string_view(magic, 4) == "GGUF") {
        const auto gguf = GgufFile::open(path);
        return Tokenizer::from_gguf(*gguf);
    }
    return Tokenizer::from_model_file(path);
}

std::string escape_control_characters(const std::string& piece) {
    std::string out;
    for (char c : piece) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (byte < 0x20 || byte == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", byte);
            out += hex;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::vector<int32_t> parse_ids(const std::string& csv, const Tokenizer& tokenizer) {
    std::vector<int32_t> ids;
    size_t pos = 0;
    while (pos < csv.size()) {
        const size_t end = std::min(csv.find(',', pos), csv.size());
        std::string_view item(csv.data() + pos, end - pos);
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
        if (!item.empty()) {
            int64_t id = 0;
            const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
            if (ec != std::errc() || ptr != item.data() + item.size())
                throw Error(ErrorCode::InvalidArgument, "\"" + std::string(item) + "\" is not a token id");
            if (id < 0 || id >= tokenizer.vocab_size())
                throw Error(ErrorCode::InvalidArgument, "token id " + std::to_string(id) +
                                                            " is outside the vocabulary (0.." +
                                                            std::to_string(tokenizer.vocab_size() - 1) + ")");
            ids.push_back(static_cast<int32_t>(id));
        }
        pos = end + 1;
    }
    return ids;
}

}  // namespace

int run_tokenize_command(const std::string& model_path, const std::string& text, std::ostream& out,
                         std::ostream& err) {
    try {
        const auto tokenizer = open_tokenizer(model_path);
        const auto ids = tokenizer->encode(text, false);
        for (size_t i = 0; i < ids.size(); ++i) out << (i ? " " : "") << ids[i];
        out << "\n";
        // As the sampling panel shows them: sentencepiece pieces as stored ("▁world"), byte-level
        // BPE pieces as their text (" world", not "Ġworld").
        for (int32_t id : ids) out << escape_control_characters(tokenizer->display_piece(id)) << "\n";
        return 0;
    } catch (const Error& e) {
        err << "error: " << e.what() << "\n";
        return 1;
    }
}

int run_detokenize_command(const std::string& model_path, const std::string& ids_csv, std::ostream& out,
                           std::ostream& err) {
    try {
        const auto tokenizer = open_tokenizer(model_path);
        const auto ids = parse_ids(ids_csv, *tokenizer);
        out << tokenizer->decode(ids) << "\n";
        return 0;
    } catch (const Error& e) {
        err << "error: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace lantern
