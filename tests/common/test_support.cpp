#include "test_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lantern/error.h"
#include "lantern/gguf.h"

namespace lantern::test {

QString isolate_app_settings(const QString& application) {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("LanternTest"));
    QCoreApplication::setApplicationName(application);
    static QTemporaryDir settings;
    if (!settings.isValid()) return QStringLiteral("no temporary directory for the settings");
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settings.path());
    if (!QSettings().fileName().startsWith(settings.path())) return QSettings().fileName();
    QSettings().clear();
    return {};
}

std::string shared_dir() {
    if (const char* env = std::getenv("LANTERN_SHARED"); env && *env) return env;
    return std::string(LANTERN_SOURCE_DIR) + "/../shared";
}

std::string shared_path(const std::string& relative) {
    std::string p = shared_dir() + "/" + relative;
    if (!std::filesystem::exists(p)) {
        throw Error(ErrorCode::Io,
                    "test data missing: " + p + " (set LANTERN_SHARED to the shared/ directory; see README)");
    }
    return p;
}

std::string source_path(const std::string& relative) {
    std::string p = std::string(LANTERN_SOURCE_DIR) + "/" + relative;
    if (!std::filesystem::exists(p)) throw Error(ErrorCode::Io, "test data missing: " + p);
    return p;
}

std::vector<std::string> split(const std::string& s, const std::string& separator) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t at; (at = s.find(separator, start)) != std::string::npos; start = at + separator.size())
        parts.push_back(s.substr(start, at - start));
    parts.push_back(s.substr(start));
    return parts;
}

std::vector<uint8_t> bpe_test_vocab(const std::string& pre, bool add_bos) {
    std::ifstream in(source_path("tests/data/bpe_vocab.txt"), std::ios::binary);
    std::vector<std::string> tokens, merges;
    std::vector<int32_t> types;
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("token ")) {
            const size_t space = line.find(' ', 6);
            types.push_back(std::stoi(line.substr(6, space - 6)));
            tokens.push_back(line.substr(space + 1));
        } else if (line.starts_with("merge ")) {
            merges.push_back(line.substr(6));
        }
    }
    const auto id_of = [&](const std::string& piece) {
        const auto it = std::find(tokens.begin(), tokens.end(), piece);
        if (it == tokens.end()) throw Error(ErrorCode::Internal, "tests/data/bpe_vocab.txt has no " + piece);
        return static_cast<uint32_t>(it - tokens.begin());
    };
    if (tokens.size() < 256 || merges.empty())
        throw Error(ErrorCode::Internal, "tests/data/bpe_vocab.txt is incomplete");
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", merges);
    w.set_u32("tokenizer.ggml.bos_token_id", id_of("<|begin_of_text|>"));
    w.set_u32("tokenizer.ggml.eos_token_id", id_of("<|eot_id|>"));
    w.set_u32("tokenizer.ggml.eot_token_id", id_of("<|eot_id|>"));
    w.set_bool("tokenizer.ggml.add_bos_token", add_bos);
    return w.serialize();
}

std::string bpe_test_vocab_file(const std::string& pre, bool add_bos) {
    const std::string path = temp_dir() + "/bpe-vocab-" + pre + (add_bos ? "-bos" : "") + ".gguf";
    const auto bytes = bpe_test_vocab(pre, add_bos);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw Error(ErrorCode::Io, "cannot write " + path);
    return path;
}

std::string template_corpus_dir() {
    if (const char* env = std::getenv("LANTERN_TEMPLATE_CORPUS")) return env;
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "/root") + "/.cache/lantern/template-corpus";
}

std::string corpus_template(const std::string& file_name) {
    const std::string path = template_corpus_dir() + "/" + file_name;
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw Error(ErrorCode::Io,
                    "chat-template corpus missing: " + path + " (run scripts/template-corpus)");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

HubFixture::HubFixture() : process_(std::make_unique<QProcess>()) {
    process_->start("python3", {QString::fromStdString(source_path("tests/fixtures/hub_server.py")),
                                "--shared", QString::fromStdString(shared_dir())});
    if (!process_->waitForStarted(10000) || !process_->waitForReadyRead(20000))
        throw Error(ErrorCode::Io, "the Hub fixture server did not start: " +
                                       process_->readAllStandardError().toStdString());
    const int port = process_->readLine().trimmed().toInt();
    if (port <= 0) throw Error(ErrorCode::Io, "the Hub fixture server gave no port");
    endpoint_ = "http://127.0.0.1:" + std::to_string(port);
}

HubFixture::~HubFixture() {
    process_->kill();
    process_->waitForFinished(5000);
}

std::string fixed_strftime(const std::string& format) {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 11;
    tm.tm_mday = 6;
    tm.tm_hour = 9;
    tm.tm_min = 30;
    tm.tm_wday = 0;
    tm.tm_yday = 339;
    char buf[256];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &tm);
#pragma GCC diagnostic pop
    return std::string(buf, n);
}

std::string temp_dir() {
    static QTemporaryDir dir;
    return dir.path().toStdString();
}

void ValidationLog::add(const std::string& m) {
    std::lock_guard lock(mutex_);
    messages_.push_back(m);
}

std::vector<std::string> ValidationLog::take() {
    std::lock_guard lock(mutex_);
    return std::exchange(messages_, {});
}

// A validation message is a test failure: messages a test did not take (and expect) fail the
// whole test process at exit, printed, whatever the test functions reported.
void fail_on_untaken_validation_messages() {
    auto msgs = validation_log().take();
    if (msgs.empty()) return;
    std::fprintf(stderr, "FAIL: Vulkan validation reported %zu message(s) during this test:\n", msgs.size());
    for (const auto& m : msgs) std::fprintf(stderr, "  %s\n", m.c_str());
    std::fflush(stderr);
    std::_Exit(3);
}

ValidationLog& validation_log() {
    static ValidationLog log;
    // Registered after `log` exists, so it runs before `log` is destroyed.
    [[maybe_unused]] static const bool checked_at_exit =
        std::atexit(fail_on_untaken_validation_messages) == 0;
    return log;
}

vk::ContextOptions validated_options() {
    vk::ContextOptions o;
    o.validation = true;
    o.on_validation_message = [](const std::string& m) { validation_log().add(m); };
    o.pipeline_cache_dir = temp_dir() + "/pipeline-cache";
    return o;
}

EngineOptions validated_engine_options() {
    EngineOptions o;
    auto vo = validated_options();
    o.validation = true;
    o.on_validation_message = vo.on_validation_message;
    o.pipeline_cache_dir = vo.pipeline_cache_dir;
    return o;
}

ModelInfo llama2_7b_shape(uint64_t file_bytes) {
    ModelInfo m;
    m.name = "Llama 2 7B";
    m.architecture = "llama";
    m.n_layers = 32;
    m.dim = 4096;
    m.n_heads = 32;
    m.n_kv_heads = 32;
    m.head_dim = 128;
    m.ffn_dim = 11008;
    m.vocab = 32000;
    m.context_length = 4096;
    m.file_bytes = file_bytes;
    return m;
}

QJsonObject stories_reference() {
    QFile f(QString::fromStdString(shared_path("reference/stories260K_reference.json")));
    if (!f.open(QIODevice::ReadOnly))
        throw Error(ErrorCode::Io, "cannot read the stories260K reference JSON");
    return QJsonDocument::fromJson(f.readAll()).object();
}

std::vector<int32_t> token_ids(const QJsonArray& array) {
    std::vector<int32_t> v;
    for (const auto& x : array) v.push_back(x.toInt());
    return v;
}

vk::Context& context() {
    static std::unique_ptr<vk::Context> ctx = std::make_unique<vk::Context>(validated_options());
    return *ctx;
}

int http_connect(uint16_t port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        ::close(fd);
        throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
    }
    return fd;
}

void http_send(int fd, const std::string& data) {
    for (size_t off = 0; off < data.size();) {
        const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
        if (n <= 0) throw std::runtime_error("send failed");
        off += static_cast<size_t>(n);
    }
}

std::string HttpReply::header(const std::string& name) const {
    const auto lower = [](std::string s) {
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    const std::string want = lower(name) + ":";
    for (const std::string& line : split(head, "\r\n")) {
        if (lower(line.substr(0, want.size())) != want) continue;
        std::string value = line.substr(want.size());
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        return value;
    }
    return {};
}

std::string http_read_to_end(int fd) {
    std::string out;
    char buf[8192];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
}

std::string http_request(const std::string& method, const std::string& path, const std::string& body,
                         const std::string& extra_headers) {
    std::string r =
        method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + extra_headers;
    if (method == "POST")
        r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    return r + "\r\n" + body;
}

HttpReply http_parse(const std::string& raw) {
    HttpReply r;
    const size_t end = raw.find("\r\n\r\n");
    if (end == std::string::npos || raw.size() < 12)
        throw std::runtime_error("no HTTP response head in: " + raw);
    r.head = raw.substr(0, end);
    r.status = std::stoi(raw.substr(9, 3));
    const std::string body = raw.substr(end + 4);
    if (r.head.find("Transfer-Encoding: chunked") == std::string::npos) {
        r.body = body;
        return r;
    }
    for (size_t pos = 0; pos < body.size();) {
        const size_t nl = body.find("\r\n", pos);
        const size_t size = std::stoul(body.substr(pos, nl - pos), nullptr, 16);
        if (size == 0) break;
        r.body += body.substr(nl + 2, size);
        pos = nl + 2 + size + 2;
    }
    return r;
}

HttpReply http_call(uint16_t port, const std::string& raw_request) {
    const int fd = http_connect(port);
    http_send(fd, raw_request);
    const std::string got = http_read_to_end(fd);
    ::close(fd);
    return http_parse(got);
}

bool no_validation_messages(QString* report) {
    auto msgs = validation_log().take();
    if (msgs.empty()) return true;
    QString r = QString("Vulkan validation reported %1 message(s):").arg(msgs.size());
    for (const auto& m : msgs) r += "\n  " + QString::fromStdString(m);
    *report = r;
    return false;
}

}  // namespace lantern::test
