// Resumable, verified downloads: DIR/NAME.part grows by Range requests until the file is whole,
// its SHA-256 is the Hub's, and it becomes DIR/NAME. Free space is checked first; a dropped
// connection goes on from where it stopped.
#include <openssl/evp.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "http.h"
#include "lantern/hub.h"

namespace lantern::hub {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Sha256 {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
    Sha256() { EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr); }
    void update(const char* data, size_t n) { EVP_DigestUpdate(ctx.get(), data, n); }
    std::string hex() {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        EVP_DigestFinal_ex(ctx.get(), digest, &len);
        std::string out;
        char buf[3];
        for (unsigned int i = 0; i < len; ++i) {
            std::snprintf(buf, sizeof buf, "%02x", digest[i]);
            out += buf;
        }
        return out;
    }
};

// Hashes what a .part already holds, so the digest covers the whole file once it is complete.
uint64_t hash_existing(const std::string& path, Sha256& sha) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return 0;
    std::vector<char> buf(1 << 20);
    uint64_t total = 0;
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto n = static_cast<size_t>(in.gcount());
        sha.update(buf.data(), n);
        total += n;
    }
    return total;
}

}  // namespace

std::string sha256_file(const std::string& path) {
    Sha256 sha;
    hash_existing(path, sha);
    return sha.hex();
}

std::string download(HubClient& hub, const std::string& repo, const RepoFile& file, const std::string& dir,
                     const std::function<Keep(const DownloadProgress&)>& on_progress, int retries) {
    const std::string name =
        file.path.substr(file.path.rfind('/') == std::string::npos ? 0 : file.path.rfind('/') + 1);
    const fs::path final_path = fs::path(dir) / name;
    const fs::path part_path = fs::path(dir) / (name + ".part");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw HubError(HubError::Kind::DiskFull, "cannot create " + dir + ": " + ec.message());

    Sha256 sha;
    uint64_t have = hash_existing(part_path.string(), sha);
    if (file.size > 0 && have > file.size) {  // not this file's start: begin again
        fs::remove(part_path, ec);
        sha = Sha256();
        have = 0;
    }
    if (file.size > have) {
        const fs::space_info space = fs::space(dir, ec);
        if (!ec && space.available < file.size - have)
            throw HubError(HubError::Kind::DiskFull,
                           name + " needs " + std::to_string((file.size - have) >> 20) + " MiB more, and " +
                               dir + " has " + std::to_string(space.available >> 20) + " MiB free");
    }

    DownloadProgress progress{have, file.size, 0};
    std::deque<std::pair<Clock::time_point, uint64_t>> window{{Clock::now(), have}};
    auto last_report = Clock::now() - std::chrono::seconds(1);
    Keep decision = Keep::Going;
    const auto report = [&](bool force) {
        const auto now = Clock::now();
        if (!force && now - last_report < std::chrono::milliseconds(100)) return decision;
        last_report = now;
        window.emplace_back(now, progress.done);
        while (window.size() > 2 && now - window.front().first > std::chrono::seconds(3)) window.pop_front();
        const double seconds = std::chrono::duration<double>(now - window.front().first).count();
        progress.bytes_per_s =
            seconds > 0 ? static_cast<double>(progress.done - window.front().second) / seconds : 0;
        decision = on_progress ? on_progress(progress) : Keep::Going;
        return decision;
    };

    int attempts = 0;
    while (file.size == 0 || progress.done < file.size) {
        std::ofstream out(part_path, std::ios::binary | std::ios::app);
        if (!out) throw HubError(HubError::Kind::DiskFull, "cannot write " + part_path.string());
        try {
            HeaderList headers;
            if (progress.done > 0)
                headers.emplace_back("Range", "bytes=" + std::to_string(progress.done) + "-");
            const HttpReply r = http_get(
                hub.options(), hub.file_url(repo, file.path), headers,
                [&](const char* data, size_t n) {
                    out.write(data, static_cast<std::streamsize>(n));
                    if (!out) return false;
                    sha.update(data, n);
                    progress.done += n;
                    return report(false) == Keep::Going;
                },
                [&](int status) {
                    if (status != 200 || headers.empty()) return;
                    // The server ignored the Range and sends the whole file: start it again.
                    out.close();
                    out.open(part_path, std::ios::binary | std::ios::trunc);
                    sha = Sha256();
                    progress.done = 0;
                });
            check_status(hub.options(), r, "file " + file.path + " of " + repo);
            if (!out)
                throw HubError(HubError::Kind::DiskFull,
                               "cannot write " + part_path.string() + " (is the disk full?)");
            if (file.size == 0) break;  // size unknown: one whole answer is the file
            if (progress.done < file.size)
                throw HubError(HubError::Kind::Network, "the connection closed early");
        } catch (const HubError& e) {
            out.close();
            if (e.kind() == HubError::Kind::Cancelled || decision != Keep::Going) {
                if (decision == Keep::Cancel) fs::remove(part_path, ec);
                throw HubError(HubError::Kind::Cancelled,
                               decision == Keep::Pause
                                   ? name + ": paused (" + part_path.string() + " keeps what came)"
                                   : name + ": cancelled");
            }
            if (e.kind() != HubError::Kind::Network || ++attempts > retries) throw;
            std::this_thread::sleep_for(std::chrono::milliseconds(200 * attempts));
            continue;
        }
    }
    report(true);
    const std::string digest = sha.hex();
    if (!file.sha256.empty() && digest != file.sha256) {
        fs::remove(part_path, ec);
        throw HubError(HubError::Kind::Checksum, name + " is not the file the Hub lists: its SHA-256 is " +
                                                     digest + ", not " + file.sha256 +
                                                     " (the download was removed)");
    }
    fs::rename(part_path, final_path, ec);
    if (ec)
        throw HubError(HubError::Kind::DiskFull, "cannot rename " + part_path.string() + ": " + ec.message());
    return final_path.string();
}

}  // namespace lantern::hub
