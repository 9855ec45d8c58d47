// The Hub's JSON API as the client reads it: search, repository info, the file tree, and a GGUF
// header read by a Range request. Answers that are not what the Hub sends are HubError::Server.
#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>

#include "http.h"
#include "lantern/engine.h"
#include "lantern/gguf.h"
#include "lantern/hub.h"
#include "lantern/memory_plan.h"

namespace lantern::hub {

namespace {

using Json = nlohmann::json;

Json parse_json(const HttpReply& reply, const std::string& what) {
    try {
        return Json::parse(reply.body);
    } catch (const Json::exception&) {
        throw HubError(HubError::Kind::Server, what + ": the answer is not the Hub's JSON", reply.status);
    }
}

bool gated_of(const Json& j) {
    const auto it = j.find("gated");
    if (it == j.end()) return false;
    if (it->is_boolean()) return it->get<bool>();
    return it->is_string() && !it->get<std::string>().empty();  // "auto", "manual"
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

}  // namespace

HubOptions HubOptions::from_environment() {
    HubOptions o;
    if (const std::string e = env("HF_ENDPOINT"); !e.empty()) o.endpoint = e;
    while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
    o.token = env("HF_TOKEN");
    if (o.token.empty()) o.token = env("HUGGING_FACE_HUB_TOKEN");
    std::string proxy = env("https_proxy");
    if (proxy.empty()) proxy = env("HTTPS_PROXY");
    if (!proxy.empty()) {
        const size_t scheme = proxy.find("://");
        if (scheme != std::string::npos) proxy = proxy.substr(scheme + 3);
        if (!proxy.empty() && proxy.back() == '/') proxy.pop_back();
        const size_t colon = proxy.rfind(':');
        o.proxy_host = colon == std::string::npos ? proxy : proxy.substr(0, colon);
        o.proxy_port = colon == std::string::npos ? 80 : std::atoi(proxy.c_str() + colon + 1);
    }
    return o;
}

HubClient::HubClient(HubOptions options) : options_(std::move(options)) {
    while (!options_.endpoint.empty() && options_.endpoint.back() == '/') options_.endpoint.pop_back();
}

std::string HubClient::file_url(const std::string& repo, const std::string& path) const {
    return options_.endpoint + "/" + repo + "/resolve/main/" + path;
}

std::vector<RepoSummary> HubClient::search(const std::string& query, int limit) {
    const HttpReply r =
        http_get(options_,
                 options_.endpoint + "/api/models?search=" + url_encode(query) +
                     "&filter=gguf&sort=downloads&direction=-1&limit=" + std::to_string(limit),
                 {});
    check_status(options_, r, "the search for \"" + query + "\"");
    const Json j = parse_json(r, "search");
    if (!j.is_array()) throw HubError(HubError::Kind::Server, "search: the answer is not a list of models");
    std::vector<RepoSummary> out;
    for (const Json& m : j) {
        if (!m.is_object()) continue;
        RepoSummary s;
        s.id = m.value("id", m.value("modelId", std::string()));
        if (s.id.empty()) continue;
        s.downloads = m.value("downloads", uint64_t{0});
        s.likes = m.value("likes", uint64_t{0});
        s.gated = gated_of(m);
        out.push_back(std::move(s));
    }
    return out;
}

RepoInfo HubClient::repo_info(const std::string& repo) {
    const HttpReply r = http_get(options_, options_.endpoint + "/api/models/" + repo, {});
    check_status(options_, r, "repository " + repo);
    const Json j = parse_json(r, "repository " + repo);
    RepoInfo info;
    info.id = j.value("id", repo);
    info.gated = gated_of(j);
    if (const auto card = j.find("cardData"); card != j.end() && card->is_object()) {
        const auto lic = card->find("license");
        if (lic != card->end() && lic->is_string()) info.license = lic->get<std::string>();
    }
    if (info.license.empty()) {
        if (const auto tags = j.find("tags"); tags != j.end() && tags->is_array()) {
            for (const Json& t : *tags) {
                if (t.is_string() && t.get<std::string>().rfind("license:", 0) == 0)
                    info.license = t.get<std::string>().substr(8);
            }
        }
    }
    return info;
}

std::vector<RepoFile> HubClient::gguf_files(const std::string& repo) {
    const HttpReply r =
        http_get(options_, options_.endpoint + "/api/models/" + repo + "/tree/main?recursive=true", {});
    check_status(options_, r, "repository " + repo);
    const Json j = parse_json(r, "repository " + repo);
    if (!j.is_array())
        throw HubError(HubError::Kind::Server, "repository " + repo + ": the file list is not a list");
    static const std::regex kSplit(R"(-(\d{5})-of-(\d{5})\.gguf$)", std::regex::icase);
    static const std::regex kQuant(R"((?:^|[-_.])((?:I?Q[1-8](?:_[A-Z0-9]+)*)|BF16|F16|F32)(?=[-_.]))",
                                   std::regex::icase);
    std::vector<RepoFile> out;
    for (const Json& e : j) {
        if (!e.is_object() || e.value("type", std::string()) != "file") continue;
        RepoFile f;
        f.path = e.value("path", std::string());
        if (f.path.size() < 5 || f.path.compare(f.path.size() - 5, 5, ".gguf") != 0) continue;
        f.size = e.value("size", uint64_t{0});
        if (const auto lfs = e.find("lfs"); lfs != e.end() && lfs->is_object()) {
            f.sha256 = lfs->value("oid", lfs->value("sha256", std::string()));
            f.size = lfs->value("size", f.size);
        }
        const std::string name =
            f.path.substr(f.path.rfind('/') == std::string::npos ? 0 : f.path.rfind('/') + 1);
        std::smatch m;
        if (std::regex_search(name, m, kSplit)) {
            f.split_index = static_cast<uint32_t>(std::stoul(m[1]));
            f.split_count = static_cast<uint32_t>(std::stoul(m[2]));
        }
        std::smatch q;
        if (std::regex_search(name, q, kQuant)) {
            f.quant = q[1];
            std::transform(f.quant.begin(), f.quant.end(), f.quant.begin(),
                           [](unsigned char c) { return std::toupper(c); });
        }
        out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
    return out;
}

ProbedFile HubClient::probe(const std::string& repo, const std::string& path) {
    constexpr size_t kHead = 1 << 20;
    std::string head;
    HttpReply r;
    for (int attempt = 0;; ++attempt) {
        head.clear();
        try {
            r = http_get(options_, file_url(repo, path), {{"Range", "bytes=0-" + std::to_string(kHead - 1)}},
                         [&](const char* data, size_t n) {
                             head.append(data, std::min(n, kHead - std::min(kHead, head.size())));
                             return head.size() < kHead;
                         });
            break;
        } catch (const HubError& e) {
            if (e.kind() == HubError::Kind::Cancelled && head.size() >= kHead) {  // enough read (a 2xx body)
                r.status = 206;
                break;
            }
            if (e.kind() != HubError::Kind::Network || attempt >= 2) throw;
        }
    }
    check_status(options_, r, "file " + path);
    ProbedFile p;
    const auto* bytes = reinterpret_cast<const uint8_t*>(head.data());
    const auto metadata =
        gguf_leading_metadata(std::span<const uint8_t>(bytes, head.size()), repo + "/" + path);
    const auto find = [&](const std::string& key) -> const GgufValue* {
        for (const auto& [k, v] : metadata) {
            if (k == key) return &v;
        }
        return nullptr;
    };
    if (const GgufValue* arch = find("general.architecture"); arch && arch->as_string()) {
        p.architecture = *arch->as_string();
        p.supported = supported_architecture(p.architecture);
    }
    const auto number = [&](const std::string& key) -> uint32_t {
        const GgufValue* v = find(p.architecture + "." + key);
        if (!v) return 0;
        if (const GgufArray* a = v->as_array()) {  // per-layer values: the largest
            int64_t most = 0;
            for (const GgufValue& item : a->items) most = std::max(most, item.as_int().value_or(0));
            return static_cast<uint32_t>(most);
        }
        return static_cast<uint32_t>(std::max<int64_t>(0, v->as_int().value_or(0)));
    };
    p.n_layers = number("block_count");
    p.dim = number("embedding_length");
    p.ffn_dim = number("feed_forward_length");
    p.n_heads = number("attention.head_count");
    p.n_kv_heads = number("attention.head_count_kv");
    if (p.n_kv_heads == 0) p.n_kv_heads = p.n_heads;
    p.head_dim = number("attention.key_length");
    if (p.head_dim == 0 && p.n_heads > 0) p.head_dim = p.dim / p.n_heads;
    p.context_length = number("context_length");
    p.sliding_window = number("attention.sliding_window");
    p.vocab = number("vocab_size");
    if (const GgufValue* tokens = find("tokenizer.ggml.tokens"); p.vocab == 0 && tokens && tokens->as_array())
        p.vocab = static_cast<uint32_t>(tokens->as_array()->items.size());
    return p;
}

FitVerdict fit_on_device(const ProbedFile& probed, uint64_t file_bytes, const DeviceInfo& device,
                         uint32_t context) {
    FitVerdict verdict;
    verdict.device_bytes = device.device_local_bytes;
    if (probed.n_layers == 0 || probed.dim == 0 || probed.n_heads == 0 || probed.head_dim == 0)
        return verdict;
    ModelInfo m;
    m.architecture = probed.architecture;
    m.n_layers = probed.n_layers;
    m.dim = probed.dim;
    m.n_heads = probed.n_heads;
    m.n_kv_heads = probed.n_kv_heads;
    m.head_dim = probed.head_dim;
    m.ffn_dim = probed.ffn_dim;
    m.vocab =
        probed.vocab ? probed.vocab : 32000;  // the logits' size, when the vocabulary is past the first MiB
    m.context_length = probed.context_length ? probed.context_length : context;
    m.file_bytes = file_bytes;
    const auto plan = [&](uint32_t ctx) {
        EngineOptions o;
        o.context_length = std::min(ctx, m.context_length);
        o.max_sequences = 1;
        return plan_memory(m, device, o);
    };
    const uint32_t wanted = std::min(context, m.context_length);
    MemoryPlan p = plan(wanted);
    verdict.needed_bytes = p.total_bytes();
    if (p.fits()) {
        verdict.kind = FitVerdict::Kind::Fits;
        verdict.context = p.context_length;
        return verdict;
    }
    for (const uint32_t shorter : {2048u, 1024u, 512u}) {
        if (shorter >= wanted) continue;
        p = plan(shorter);
        verdict.needed_bytes = p.total_bytes();
        if (p.fits()) {
            verdict.kind = FitVerdict::Kind::ShorterContext;
            verdict.context = p.context_length;
            return verdict;
        }
    }
    verdict.kind = FitVerdict::Kind::TooBig;
    return verdict;
}

std::vector<RepoFile> choose_model(const std::vector<RepoFile>& files, const std::string& quant) {
    const auto upper = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
        return s;
    };
    const auto parts_of = [&](const RepoFile& first) {
        std::vector<RepoFile> parts;
        if (first.split_count == 0) return std::vector<RepoFile>{first};
        const std::string prefix =
            first.path.substr(0, first.path.size() - std::string("-00001-of-00001.gguf").size());
        for (const RepoFile& f : files) {
            if (f.split_count == first.split_count && f.path.rfind(prefix, 0) == 0) parts.push_back(f);
        }
        std::sort(parts.begin(), parts.end(),
                  [](const RepoFile& a, const RepoFile& b) { return a.split_index < b.split_index; });
        if (parts.size() != first.split_count) return std::vector<RepoFile>{};
        return parts;
    };
    const auto firsts = [&](const std::string& q) {
        std::vector<const RepoFile*> out;
        for (const RepoFile& f : files) {
            if (f.split_index > 1) continue;
            if (q.empty() || upper(f.quant) == upper(q) || f.path == q) out.push_back(&f);
        }
        return out;
    };
    if (!quant.empty()) {
        const auto m = firsts(quant);
        return m.empty() ? std::vector<RepoFile>{} : parts_of(*m.front());
    }
    for (const char* preferred : {"Q4_K_M", "Q5_K_M", "Q8_0"}) {
        const auto m = firsts(preferred);
        if (!m.empty()) return parts_of(*m.front());
    }
    const auto all = firsts("");
    if (all.empty()) return {};
    const RepoFile* smallest = *std::min_element(
        all.begin(), all.end(), [](const RepoFile* a, const RepoFile* b) { return a->size < b->size; });
    return parts_of(*smallest);
}

}  // namespace lantern::hub
