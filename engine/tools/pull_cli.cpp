#include "pull_cli.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "lantern/engine.h"
#include "lantern/hub.h"

namespace lantern {

namespace {

namespace fs = std::filesystem;

std::string mib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
    return buf;
}

}  // namespace

std::string default_models_dir() {
    const char* xdg = std::getenv("XDG_DATA_HOME");
    const char* home = std::getenv("HOME");
    const std::string data = xdg && *xdg == '/' ? xdg : std::string(home ? home : ".") + "/.local/share";
    return data + "/Lantern/Lantern/models";
}

int run_pull_command(const std::string& spec, const std::string& models_dir, std::ostream& out,
                     std::ostream& err) {
    const size_t colon = spec.find(':');
    const std::string repo = spec.substr(0, colon);
    const std::string quant = colon == std::string::npos ? "" : spec.substr(colon + 1);
    if (repo.find('/') == std::string::npos || repo.front() == '/' || repo.back() == '/') {
        err << "lantern-cli: --pull needs OWNER/REPO[:QUANT], e.g. Qwen/Qwen3-0.6B-GGUF:Q8_0\n";
        return 1;
    }
    const fs::path dir = fs::path(models_dir) / repo;
    std::vector<fs::path> created;  // what this pull wrote, removed if it fails
    try {
        hub::HubClient client(hub::HubOptions::from_environment());
        const auto files = client.gguf_files(repo);
        const auto parts = hub::choose_model(files, quant);
        if (parts.empty()) {
            std::string have;
            for (const auto& f : files) {
                if (f.split_index <= 1)
                    have += (have.empty() ? "" : ", ") + (f.quant.empty() ? f.path : f.quant);
            }
            err << "lantern-cli: " << repo << " has no GGUF model"
                << (quant.empty() ? std::string() : " in " + quant)
                << (have.empty() ? std::string() : " (it has: " + have + ")") << "\n";
            return 1;
        }
        const auto probed = client.probe(repo, parts.front().path);
        if (!probed.supported) {
            err << "lantern-cli: " << repo << "/" << parts.front().path << " is "
                << (probed.architecture.empty() ? std::string("not a GGUF model Lantern can read")
                                                : "a " + probed.architecture + " model")
                << "; Lantern runs llama, qwen2, qwen3, phi3, gemma2 and gemma3 models. Nothing was "
                   "downloaded.\n";
            return 1;
        }
        const bool terminal = isatty(STDERR_FILENO) != 0;
        std::string first_path;
        for (const auto& part : parts) {
            const std::string name =
                part.path.substr(part.path.rfind('/') == std::string::npos ? 0 : part.path.rfind('/') + 1);
            const fs::path target = dir / name;
            if (fs::exists(target) && !part.sha256.empty() &&
                hub::sha256_file(target.string()) == part.sha256) {
                err << "lantern-cli: " << name << " is already there\n";
                if (first_path.empty()) first_path = target.string();
                continue;
            }
            created.push_back(target);
            created.push_back(fs::path(target.string() + ".part"));
            int last_tenth = -1;
            const std::string path =
                hub::download(client, repo, part, dir.string(), [&](const hub::DownloadProgress& p) {
                    const double fraction =
                        p.total ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0;
                    const double left =
                        p.bytes_per_s > 0 ? static_cast<double>(p.total - p.done) / p.bytes_per_s : 0;
                    if (terminal) {
                        const int width = 30, filled = static_cast<int>(fraction * width);
                        char line[256];
                        std::snprintf(line, sizeof line, "\r%s [%s%s] %3.0f%% %s of %s, %s/s, %.0f s left ",
                                      name.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
                                      std::string(static_cast<size_t>(width - filled), '.').c_str(),
                                      fraction * 100, mib(p.done).c_str(), mib(p.total).c_str(),
                                      mib(static_cast<uint64_t>(p.bytes_per_s)).c_str(), std::ceil(left));
                        err << line << std::flush;
                    } else if (const int tenth = static_cast<int>(fraction * 10); tenth != last_tenth) {
                        last_tenth = tenth;
                        err << "lantern-cli: " << name << " " << tenth * 10 << "% (" << mib(p.done) << " of "
                            << mib(p.total) << ")\n";
                    }
                    return hub::Keep::Going;
                });
            if (terminal) err << "\n";
            err << "lantern-cli: " << name << " downloaded and verified (SHA-256)\n";
            if (first_path.empty()) first_path = path;
        }
        out << first_path << "\n";
        return 0;
    } catch (const hub::HubError& e) {
        std::error_code ec;
        for (const auto& p : created) fs::remove(p, ec);
        if (fs::is_empty(dir, ec)) fs::remove(dir, ec);
        err << "\nlantern-cli: " << e.what() << "\n";
        if (e.kind() == hub::HubError::Kind::Unauthorized)
            err << "lantern-cli: set HF_TOKEN to a token of an account that may read " << repo << "\n";
        return 1;
    }
}

}  // namespace lantern
