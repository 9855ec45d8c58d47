// Helpers every Lantern test uses:
//  - shared_path(): finds test data in ../shared (env LANTERN_SHARED overrides). Missing data is a
//    hard failure (throws), never a skip: CI must not count an absent reference as a pass.
//  - ValidatedContext: a Vulkan context with VK_LAYER_KHRONOS_validation and a debug messenger that
//    records every warning/error; tests call expect_clean() (or use LANTERN_VERIFY_CLEAN) so any
//    validation message fails the test.
#pragma once
#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QTest>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lantern/engine.h"
#include "vulkan/context.h"

namespace lantern::test {

std::string shared_dir();
std::string shared_path(const std::string& relative);
// A file of the project's own test data (tests/data); missing is a hard failure too.
std::string source_path(const std::string& relative);
std::string temp_dir();  // a per-process scratch directory (removed at exit)
// Keeps an app test's settings and data out of the user's and out of any other run's: Qt's test
// paths, the organization and `application` names, QSettings in a per-process directory, cleared.
// (A settings file shared by two runs at once let one clear what the other had just set.)
// Returns "" or what went wrong.
QString isolate_app_settings(const QString& application);
// The chat-template corpus (scripts/template-corpus: $LANTERN_TEMPLATE_CORPUS, default
// ~/.cache/lantern/template-corpus), and one template of it read whole. Missing: a hard failure.
std::string template_corpus_dir();
std::string corpus_template(const std::string& file_name);
// The local server that speaks the Hugging Face Hub's API (tests/fixtures/hub_server.py, with
// ../shared's stories260K files and injected faults), started for as long as this object lives.
// Throws when it cannot start.
class HubFixture {
public:
    HubFixture();
    ~HubFixture();
    HubFixture(const HubFixture&) = delete;
    HubFixture& operator=(const HubFixture&) = delete;
    const std::string& endpoint() const { return endpoint_; }  // http://127.0.0.1:PORT

private:
    std::unique_ptr<QProcess> process_;
    std::string endpoint_;
};

// strftime of the fixed time the Jinja tests give both renderers: 2026-12-06 09:30:00 (a Sunday).
std::string fixed_strftime(const std::string& format);
// `s` cut at every `separator` (n separators give n + 1 parts), as test-vector files are read.
std::vector<std::string> split(const std::string& s, const std::string& separator);
// The byte-level BPE test vocabulary (tests/data/bpe_vocab.txt, see scripts/bpe-tokenizer-vectors)
// as the vocab-only GGUF llama.cpp tokenized the vectors with: tokenizer.ggml.pre = `pre`,
// add_bos_token = `add_bos`, BOS <|begin_of_text|>, EOS and EOT <|eot_id|>. In memory, or written
// to a file in temp_dir().
std::vector<uint8_t> bpe_test_vocab(const std::string& pre, bool add_bos);
std::string bpe_test_vocab_file(const std::string& pre, bool add_bos);

class ValidationLog {
public:
    void add(const std::string& m);
    std::vector<std::string> take();

private:
    std::mutex mutex_;
    std::vector<std::string> messages_;
};

// One validated Vulkan context per test process (creating a device per test case is slow on lavapipe).
vk::Context& context();
ValidationLog& validation_log();
vk::ContextOptions validated_options();  // for tests that create their own engine/context
// Engine options with validation on and every message going to validation_log().
EngineOptions validated_engine_options();

// Llama 2 7B's shape (32 layers of 4096, 32 heads and KV heads of 128, FFN 11008, vocab 32000,
// trained on 4096 tokens) as a file of `file_bytes` would describe it: for memory plans of a model
// too big to load here.
ModelInfo llama2_7b_shape(uint64_t file_bytes);

// ../shared/reference/stories260K_reference.json, and a JSON array of token ids as a vector.
QJsonObject stories_reference();
std::vector<int32_t> token_ids(const QJsonArray& array);

// A minimal HTTP client for tests of the API server (blocking POSIX sockets on 127.0.0.1).
struct HttpReply {
    int status = 0;
    std::string head, body;                             // body with chunked framing removed
    std::string header(const std::string& name) const;  // by case-insensitive name; "" when absent
};
int http_connect(uint16_t port);  // throws std::runtime_error when nothing listens
void http_send(int fd, const std::string& data);
std::string http_read_to_end(int fd);
HttpReply http_parse(const std::string& raw);
// A request with "Connection: close" (so the reply ends when the server closes) and, for POST,
// a JSON body.
std::string http_request(const std::string& method, const std::string& path, const std::string& body = {},
                         const std::string& extra_headers = {});
HttpReply http_call(uint16_t port, const std::string& raw_request);

// Fails the current test if the validation layer reported anything since the last call.
bool no_validation_messages(QString* report);

}  // namespace lantern::test

#define LANTERN_VERIFY_NO_VALIDATION()                                                                    \
    do {                                                                                                  \
        QString lantern_report_;                                                                          \
        if (!lantern::test::no_validation_messages(&lantern_report_)) QFAIL(qPrintable(lantern_report_)); \
    } while (0)
