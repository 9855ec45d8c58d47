// The Hugging Face Hub client against a local server that speaks the Hub's API
// (tests/fixtures/hub_server.py, started here; no internet): search, a repository's GGUF files with
// sizes, quantisation and SHA-256, licence, the header read before any download (an unsupported
// architecture is never downloaded), downloads verified byte for byte and resumed — after a dropped
// connection, after a pause — a wrong checksum refused with the file removed, a gated repository
// asking for a token, a missing one named, a cancel leaving nothing; and lantern-cli --pull.
#include <QProcess>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lantern/error.h"
#include "lantern/hub.h"
#include "test_support.h"

using namespace lantern;
namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

hub::HubError::Kind kind_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const hub::HubError& e) {
        return e.kind();
    }
    throw std::runtime_error("no HubError was thrown");
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const hub::HubError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

class HubTest : public QObject {
    Q_OBJECT
    std::unique_ptr<test::HubFixture> server_;
    std::string endpoint_;

    hub::HubClient client(const std::string& token = {}) {
        hub::HubOptions o;
        o.endpoint = endpoint_;
        o.token = token;
        o.read_timeout_s = 10;
        return hub::HubClient(o);
    }
    static std::string fresh_dir(const char* name) {
        const std::string dir = test::temp_dir() + "/" + name;
        fs::remove_all(dir);
        fs::create_directories(dir);
        return dir;
    }
    static hub::RepoFile file_named(const std::vector<hub::RepoFile>& files, const std::string& path) {
        for (const auto& f : files) {
            if (f.path == path) return f;
        }
        throw std::runtime_error("no file " + path);
    }

private slots:
    void initTestCase() {
        try {
            server_ = std::make_unique<test::HubFixture>();
        } catch (const Error& e) {
            QFAIL(e.what());
        }
        endpoint_ = server_->endpoint();
    }
    void cleanupTestCase() { server_.reset(); }

    void searchListsGgufRepositoriesAndTheirFiles() {
        auto hub = client();
        const auto found = hub.search("tiny", 20);
        QCOMPARE(found.size(), size_t{1});
        QCOMPARE(found[0].id, std::string("lantern-test/tiny-GGUF"));
        QVERIFY(found[0].downloads > 0);
        QVERIFY(hub.search("GATED", 20).at(0).gated);
        QCOMPARE(hub.repo_info("lantern-test/tiny-GGUF").license, std::string("mit"));
        const auto files = hub.gguf_files("lantern-test/tiny-GGUF");
        QCOMPARE(files.size(), size_t{4});  // README.md is not a model
        const auto q8 = file_named(files, "tiny-Q8_0.gguf");
        QCOMPARE(q8.quant, std::string("Q8_0"));
        QCOMPARE(q8.size,
                 static_cast<uint64_t>(fs::file_size(test::shared_path("models/stories260K-q8_0.gguf"))));
        QCOMPARE(q8.sha256, hub::sha256_file(test::shared_path("models/stories260K-q8_0.gguf")));
        const auto part2 = file_named(files, "F32/tiny-F32-00002-of-00002.gguf");
        QCOMPARE(part2.quant, std::string("F32"));
        QCOMPARE(part2.split_index, 2u);
        QCOMPARE(part2.split_count, 2u);
        // Choosing a model: the quantisation asked for, every part of a split one in order, or
        // the preferred one when none is asked for (no Q4_K_M, Q5_K_M or Q8_0 here but Q8_0).
        const auto f32 = hub::choose_model(files, "f32");
        QCOMPARE(f32.size(), size_t{2});
        QCOMPARE(f32[0].split_index, 1u);
        QCOMPARE(hub::choose_model(files, "").at(0).path, std::string("tiny-Q8_0.gguf"));
        QVERIFY(hub::choose_model(files, "Q2_K").empty());
    }

    void theHeaderSaysWhetherLanternRunsAFileBeforeItIsDownloaded() {
        auto hub = client();
        const auto tiny = hub.probe("lantern-test/tiny-GGUF", "tiny-Q8_0.gguf");
        QCOMPARE(tiny.architecture, std::string("llama"));
        QVERIFY(tiny.supported);
        const auto bert = hub.probe("lantern-test/bert-GGUF", "bert-F16.gguf");
        QCOMPARE(bert.architecture, std::string("bert"));
        QVERIFY(!bert.supported);
        // The shape, from the same bytes (stories260K: 5 layers of 64, 8 heads, 4 KV heads).
        QCOMPARE(tiny.n_layers, 5u);
        QCOMPARE(tiny.dim, 64u);
        QCOMPARE(tiny.n_heads, 8u);
        QCOMPARE(tiny.n_kv_heads, 4u);
        QCOMPARE(tiny.head_dim, 8u);
        QCOMPARE(tiny.context_length, 512u);
        QCOMPARE(tiny.vocab, 512u);
        // Said before downloading: it fits a roomy device at its context, a tight one only with a
        // shorter context, or not at all. (The plan is lantern::plan_memory's.)
        const uint64_t file = fs::file_size(test::shared_path("models/stories260K-q8_0.gguf"));
        DeviceInfo device;
        device.device_local_bytes = 1ull << 30;
        device.max_storage_buffer_range = 1ull << 30;
        device.max_allocation_bytes = 1ull << 30;
        const auto roomy = hub::fit_on_device(tiny, file, device, 4096);
        QCOMPARE(roomy.kind, hub::FitVerdict::Kind::Fits);
        QCOMPARE(roomy.context, 512u);  // at most the trained context
        device.device_local_bytes = file / 2;
        QCOMPARE(hub::fit_on_device(tiny, file, device, 512).kind, hub::FitVerdict::Kind::TooBig);
        QCOMPARE(hub::fit_on_device(bert, 4096, device, 512).kind, hub::FitVerdict::Kind::Unknown);
        // A long-context model whose full context does not fit but 2048 tokens do.
        hub::ProbedFile longer = tiny;
        longer.context_length = 1 << 20;
        device.device_local_bytes = 64ull << 20;
        const auto shorter = hub::fit_on_device(longer, file, device, 1 << 20);
        QCOMPARE(shorter.kind, hub::FitVerdict::Kind::ShorterContext);
        QCOMPARE(shorter.context, 2048u);
        QVERIFY(shorter.needed_bytes <= device.device_local_bytes);
    }

    void aDownloadIsTheFileTheHubListsByteForByte() {
        auto hub = client();
        const std::string dir = fresh_dir("plain");
        const auto file = file_named(hub.gguf_files("lantern-test/tiny-GGUF"), "tiny-Q8_0.gguf");
        std::vector<hub::DownloadProgress> seen;
        const std::string path =
            hub::download(hub, "lantern-test/tiny-GGUF", file, dir, [&](const hub::DownloadProgress& p) {
                seen.push_back(p);
                return hub::Keep::Going;
            });
        QCOMPARE(path, dir + "/tiny-Q8_0.gguf");
        QVERIFY(read_all(path) == read_all(test::shared_path("models/stories260K-q8_0.gguf")));
        QVERIFY(!fs::exists(path + ".part"));
        QVERIFY(!seen.empty());
        QCOMPARE(seen.back().done, file.size);
        QCOMPARE(seen.back().total, file.size);
    }

    void aDroppedConnectionIsResumedWhereItStopped() {
        auto hub = client();
        const std::string dir = fresh_dir("drop");
        const auto file = hub.gguf_files("lantern-test/drop-GGUF").at(0);
        const std::string path = hub::download(hub, "lantern-test/drop-GGUF", file, dir, {});
        QVERIFY(read_all(path) == read_all(test::shared_path("models/stories260K-q8_0.gguf")));
    }

    void aPausedDownloadKeepsItsPartAndResumes() {
        auto hub = client();
        const std::string dir = fresh_dir("pause");
        const auto file = hub.gguf_files("lantern-test/slow-GGUF").at(0);
        const auto pause_at_100k = [](const hub::DownloadProgress& p) {
            return p.done >= 100000 ? hub::Keep::Pause : hub::Keep::Going;
        };
        QCOMPARE(kind_of([&] { hub::download(hub, "lantern-test/slow-GGUF", file, dir, pause_at_100k); }),
                 hub::HubError::Kind::Cancelled);
        const std::string part = dir + "/tiny-F16.gguf.part";
        QVERIFY(fs::exists(part));
        const auto kept = fs::file_size(part);
        QVERIFY2(kept >= 100000 && kept < file.size, std::to_string(kept).c_str());
        uint64_t first_seen = 0;
        const std::string path =
            hub::download(hub, "lantern-test/slow-GGUF", file, dir, [&](const hub::DownloadProgress& p) {
                if (first_seen == 0) first_seen = p.done;
                return hub::Keep::Going;
            });
        QVERIFY2(first_seen >= kept, "the resumed download starts from what the .part held");
        QVERIFY(read_all(path) == read_all(test::shared_path("models/stories260K-f16.gguf")));
        QVERIFY(!fs::exists(part));
    }

    void aCancelledDownloadLeavesNothing() {
        auto hub = client();
        const std::string dir = fresh_dir("cancel");
        const auto file = hub.gguf_files("lantern-test/slow-GGUF").at(0);
        const auto cancel = [](const hub::DownloadProgress& p) {
            return p.done >= 50000 ? hub::Keep::Cancel : hub::Keep::Going;
        };
        QCOMPARE(kind_of([&] { hub::download(hub, "lantern-test/slow-GGUF", file, dir, cancel); }),
                 hub::HubError::Kind::Cancelled);
        QVERIFY(fs::is_empty(dir));
    }

    void aWrongChecksumIsRefusedAndTheFileRemoved() {
        auto hub = client();
        const std::string dir = fresh_dir("badsum");
        const auto file = hub.gguf_files("lantern-test/badsum-GGUF").at(0);
        const std::string message =
            message_of([&] { hub::download(hub, "lantern-test/badsum-GGUF", file, dir, {}); });
        QVERIFY2(message.find("is not the file the Hub lists") != std::string::npos, message.c_str());
        QCOMPARE(kind_of([&] { hub::download(hub, "lantern-test/badsum-GGUF", file, dir, {}); }),
                 hub::HubError::Kind::Checksum);
        QVERIFY(fs::is_empty(dir));
    }

    void aGatedRepositoryAsksForAToken() {
        auto anonymous = client();
        QCOMPARE(kind_of([&] { anonymous.gguf_files("lantern-test/gated-GGUF"); }),
                 hub::HubError::Kind::Unauthorized);
        const std::string message = message_of([&] { anonymous.gguf_files("lantern-test/gated-GGUF"); });
        QVERIFY2(message.find("needs a Hugging Face access token") != std::string::npos, message.c_str());
        auto wrong = client("hf_wrong");
        QVERIFY(message_of([&] { wrong.gguf_files("lantern-test/gated-GGUF"); }).find("token was refused") !=
                std::string::npos);
        auto allowed = client("hf_good_token");
        const auto file = allowed.gguf_files("lantern-test/gated-GGUF").at(0);
        const std::string path =
            hub::download(allowed, "lantern-test/gated-GGUF", file, fresh_dir("gated"), {});
        QVERIFY(read_all(path) == read_all(test::shared_path("models/stories260K-q8_0.gguf")));
    }

    void aMissingRepositoryOrFileIsNamed() {
        auto hub = client();
        QCOMPARE(kind_of([&] { hub.gguf_files("lantern-test/nope-GGUF"); }), hub::HubError::Kind::NotFound);
        QVERIFY(message_of([&] {
                    hub.gguf_files("lantern-test/nope-GGUF");
                }).find("lantern-test/nope-GGUF") != std::string::npos);
        hub::RepoFile ghost;
        ghost.path = "ghost.gguf";
        ghost.size = 10;
        QCOMPARE(
            kind_of([&] { hub::download(hub, "lantern-test/tiny-GGUF", ghost, fresh_dir("ghost"), {}); }),
            hub::HubError::Kind::NotFound);
        // Nothing listens here: a network error, said as one.
        hub::HubOptions dead;
        dead.endpoint = "http://127.0.0.1:9";
        hub::HubClient nowhere(dead);
        QCOMPARE(kind_of([&] { nowhere.search("x", 1); }), hub::HubError::Kind::Network);
    }

    // lantern-cli --pull: the model into the folder the app lists, every part, nothing left
    // behind when it fails (an unsupported architecture is not even downloaded).
    void cliPullsAModelIntoTheModelsFolder() {
        const std::string models = fresh_dir("models");
        const auto pull = [&](const QString& spec, const QStringList& env = {}) {
            QProcess p;
            QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
            e.insert("HF_ENDPOINT", QString::fromStdString(endpoint_));
            e.remove("HF_TOKEN");
            for (const QString& kv : env) e.insert(kv.section('=', 0, 0), kv.section('=', 1));
            p.setProcessEnvironment(e);
            p.start(LANTERN_CLI_PATH, {"--pull", spec, "--models-dir", QString::fromStdString(models)});
            p.waitForFinished(120000);
            return std::make_tuple(p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()).trimmed(),
                                   QString::fromUtf8(p.readAllStandardError()));
        };
        const auto [ok, path, log] = pull("lantern-test/tiny-GGUF:F32");
        QVERIFY2(ok == 0, qPrintable(log));
        QCOMPARE(path.toStdString(), models + "/lantern-test/tiny-GGUF/tiny-F32-00001-of-00002.gguf");
        QVERIFY(fs::exists(models + "/lantern-test/tiny-GGUF/tiny-F32-00002-of-00002.gguf"));
        QVERIFY2(log.contains("downloaded and verified"), qPrintable(log));
        const auto [bert, bert_out, bert_log] = pull("lantern-test/bert-GGUF");
        QCOMPARE(bert, 1);
        QVERIFY2(bert_log.contains("is a bert model") && bert_log.contains("Nothing was downloaded"),
                 qPrintable(bert_log));
        QVERIFY(!fs::exists(models + "/lantern-test/bert-GGUF"));
        const auto [bad, bad_out, bad_log] = pull("lantern-test/badsum-GGUF");
        QCOMPARE(bad, 1);
        QVERIFY(!fs::exists(models + "/lantern-test/badsum-GGUF"));
        const auto [gated, gated_out, gated_log] = pull("lantern-test/gated-GGUF");
        QCOMPARE(gated, 1);
        QVERIFY2(gated_log.contains("HF_TOKEN"), qPrintable(gated_log));
        const auto [token, token_out, token_log] =
            pull("lantern-test/gated-GGUF:Q8_0", {"HF_TOKEN=hf_good_token"});
        QVERIFY2(token == 0, qPrintable(token_log));
        const auto [missing, missing_out, missing_log] = pull("lantern-test/tiny-GGUF:Q2_K");
        QCOMPARE(missing, 1);
        QVERIFY2(missing_log.contains("no GGUF model in Q2_K") && missing_log.contains("Q8_0"),
                 qPrintable(missing_log));
    }
};

QTEST_GUILESS_MAIN(HubTest)
#include "test_hub.moc"
