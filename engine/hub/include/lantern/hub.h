// lantern/hub.h — models from the Hugging Face Hub (or a mirror of it): search, a repository's GGUF
// files, whether Lantern runs one (its header read by an HTTP Range request, before any download),
// and resumable, verified downloads. Qt-free: lantern-cli --pull and the app's Models dialog use
// the same code.
//
//   hub::HubClient hub(hub::HubOptions::from_environment());      // HF_ENDPOINT, HF_TOKEN
//   auto repos = hub.search("qwen3 0.6b", 20);
//   auto files = hub.gguf_files("Qwen/Qwen3-0.6B-GGUF");         // sizes, quantisation, SHA-256
//   hub.probe(repo, file).architecture                            // "qwen3"
//   hub::download(hub, repo, file, dir, on_progress);             // DIR/NAME.part, then DIR/NAME
//
// Blocking calls, each safe to run on a thread of its own (one HubClient per thread). Failures
// throw HubError with a kind a front end can act on (ask for a token, say it is missing, retry).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lantern/device.h"

namespace lantern::hub {

struct HubOptions {
    std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT (mirrors: https://hf-mirror.com)
    std::string token;                                // HF_TOKEN: gated and private repositories
    std::string proxy_host;                           // empty: no proxy
    int proxy_port = 0;
    int connect_timeout_s = 15;
    int read_timeout_s = 60;
    // HF_ENDPOINT and HF_TOKEN (also HUGGING_FACE_HUB_TOKEN), and https_proxy/HTTPS_PROXY.
    static HubOptions from_environment();
};

class HubError : public std::runtime_error {
public:
    enum class Kind {
        Network,       // unreachable, dropped, timed out (a retry may work)
        Unauthorized,  // 401/403: a gated or private repository; a token is needed (or another)
        NotFound,      // 404: no such repository or file
        Server,        // another HTTP status, or an answer that is not what the Hub sends
        Checksum,      // the downloaded bytes are not the file the Hub lists (the file is removed)
        DiskFull,      // not enough free space for the file (checked before downloading)
        Cancelled,     // the caller stopped it
    };
    HubError(Kind kind, const std::string& message, int status = 0)
        : std::runtime_error(message), kind_(kind), status_(status) {}
    Kind kind() const { return kind_; }
    int status() const { return status_; }  // the HTTP status, when one came

private:
    Kind kind_;
    int status_;
};

struct RepoSummary {
    std::string id;  // "Qwen/Qwen3-0.6B-GGUF"
    uint64_t downloads = 0;
    uint64_t likes = 0;
    bool gated = false;
};

struct RepoFile {
    std::string path;    // in the repository: "Qwen3-0.6B-Q8_0.gguf", "Q4_K_M/x-00001-of-00002.gguf"
    uint64_t size = 0;   // bytes
    std::string sha256;  // the LFS object id (lower-case hex); empty when the Hub lists none
    std::string quant;   // from the name: "Q4_K_M", "Q8_0", "F16", "IQ4_XS" ("" when none)
    uint32_t split_index = 0, split_count = 0;  // "-00001-of-00003": 1 and 3; 0 when not split
};

struct RepoInfo {
    std::string id;
    std::string license;  // the model card's (cardData.license, or a "license:" tag); "" when none
    bool gated = false;
};

struct ProbedFile {
    std::string architecture;  // general.architecture ("" when the header does not say within 1 MiB)
    bool supported = false;    // Lantern runs it (lantern::supported_architecture)
    // The shape its header gives (0 where the first MiB does not say): what the memory plan needs.
    uint32_t n_layers = 0, dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn_dim = 0, vocab = 0;
    uint32_t context_length = 0;  // trained
    uint32_t sliding_window = 0;
};

// Whether a model will run on a device, said before downloading it.
struct FitVerdict {
    enum class Kind { Fits, ShorterContext, TooBig, Unknown };
    Kind kind = Kind::Unknown;
    uint32_t context = 0;       // Fits: the context asked for; ShorterContext: the longest that fits
    uint64_t needed_bytes = 0;  // weights + KV + work at that context (or at the shortest, TooBig)
    uint64_t device_bytes = 0;
};
// lantern::plan_memory for a probed file of `file_bytes` (all parts) at `context` tokens (at most
// the trained context), one conversation: Fits, else the longest of 2048/1024/512 tokens that
// fits, else TooBig; Unknown when the header did not give the shape.
FitVerdict fit_on_device(const ProbedFile& probed, uint64_t file_bytes, const DeviceInfo& device,
                         uint32_t context);

class HubClient {
public:
    explicit HubClient(HubOptions options);
    const HubOptions& options() const { return options_; }

    // GET /api/models?search=QUERY&filter=gguf: GGUF repositories, most downloaded first.
    std::vector<RepoSummary> search(const std::string& query, int limit);
    // GET /api/models/REPO: licence and gating.
    RepoInfo repo_info(const std::string& repo);
    // GET /api/models/REPO/tree/main (recursively): the .gguf files, by path.
    std::vector<RepoFile> gguf_files(const std::string& repo);
    // The first bytes of the file (HTTP Range), read as a GGUF header.
    ProbedFile probe(const std::string& repo, const std::string& path);

    // The file's URL: ENDPOINT/REPO/resolve/main/PATH.
    std::string file_url(const std::string& repo, const std::string& path) const;

private:
    friend struct DownloadAccess;
    HubOptions options_;
};

// The files of one model among a repository's: the split parts of `quant` (or of the single file
// named `path_or_quant`), in order. Empty when none matches. `quant` matches case-insensitively
// ("q4_k_m"); with an empty `quant`, the preferred one a repository has (Q4_K_M, Q5_K_M, Q8_0,
// then the smallest).
std::vector<RepoFile> choose_model(const std::vector<RepoFile>& files, const std::string& quant);

struct DownloadProgress {
    uint64_t done = 0;       // bytes of the file on disk (a resumed download starts where it stopped)
    uint64_t total = 0;      // the file's size
    double bytes_per_s = 0;  // over the last few seconds
};

enum class Keep { Going, Pause, Cancel };

// Downloads `file` of `repo` into `dir` as DIR/NAME.part (resumed with a Range request when one is
// there), checks its SHA-256 against the Hub's and renames it to DIR/NAME (NAME: the file's name
// without folders). `on_progress` is told every ~100 ms; Pause stops keeping the .part, Cancel
// stops removing it (both then throw HubError::Cancelled). A dropped connection is retried from
// where it stopped (`retries` times). A wrong checksum removes the file (HubError::Checksum).
// Returns the final path. Throws HubError::DiskFull before starting when the rest will not fit.
std::string download(HubClient& hub, const std::string& repo, const RepoFile& file, const std::string& dir,
                     const std::function<Keep(const DownloadProgress&)>& on_progress, int retries = 5);

// SHA-256 of a file, lower-case hex (what the Hub's LFS ids are).
std::string sha256_file(const std::string& path);

}  // namespace lantern::hub
