#include "http.h"

#include <httplib.h>

#include <algorithm>

namespace lantern::hub {

namespace {

struct SplitUrl {
    std::string origin;  // scheme://host[:port]
    std::string target;  // /path?query
};

SplitUrl split_url(const std::string& url) {
    const size_t scheme = url.find("://");
    if (scheme == std::string::npos) throw HubError(HubError::Kind::Server, "not a URL: " + url);
    const size_t slash = url.find('/', scheme + 3);
    if (slash == std::string::npos) return {url, "/"};
    return {url.substr(0, slash), url.substr(slash)};
}

std::string host_of(const std::string& origin) {
    const size_t scheme = origin.find("://");
    return origin.substr(scheme == std::string::npos ? 0 : scheme + 3);
}

}  // namespace

std::string url_encode(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

HttpReply http_get(const HubOptions& options, const std::string& url, const HeaderList& headers,
                   const std::function<bool(const char*, size_t)>& sink,
                   const std::function<void(int)>& on_status) {
    const std::string endpoint_origin = split_url(options.endpoint).origin;
    std::string current = url;
    for (int hop = 0; hop < 8; ++hop) {
        const SplitUrl u = split_url(current);
        httplib::Client client(u.origin);
        client.set_follow_location(false);
        client.set_connection_timeout(options.connect_timeout_s, 0);
        client.set_read_timeout(options.read_timeout_s, 0);
        if (!options.proxy_host.empty()) client.set_proxy(options.proxy_host, options.proxy_port);
        httplib::Headers h;
        for (const auto& [k, v] : headers) h.emplace(k, v);
        // The token goes to the Hub's own host only, never to where a file redirects.
        if (!options.token.empty() && u.origin == endpoint_origin)
            h.emplace("Authorization", "Bearer " + options.token);
        HttpReply reply;
        bool stopped = false;
        httplib::Result result = [&] {
            if (!sink) return client.Get(u.target, h);
            return client.Get(
                u.target, h,
                [&](const httplib::Response& r) {
                    reply.status = r.status;
                    reply.content_length = r.has_header("Content-Length")
                                               ? std::stoull(r.get_header_value("Content-Length"))
                                               : 0;
                    reply.content_range = r.get_header_value("Content-Range");
                    if (r.status >= 300 && r.status < 400) {
                        reply.body = r.get_header_value("Location");
                    } else if (on_status) {
                        on_status(r.status);
                    }
                    return true;
                },
                [&](const char* data, size_t n) {
                    if (reply.status < 200 || reply.status >= 300) {
                        if (reply.body.size() < 4096 && !(reply.status >= 300 && reply.status < 400))
                            reply.body.append(data, std::min<size_t>(n, 4096));
                        return true;
                    }
                    if (!sink(data, n)) {
                        stopped = true;
                        return false;
                    }
                    return true;
                });
        }();
        if (!result) {
            if (stopped) throw HubError(HubError::Kind::Cancelled, "stopped");
            const std::string host = host_of(u.origin);
            switch (result.error()) {
                case httplib::Error::Connection:
                    throw HubError(HubError::Kind::Network, "cannot connect to " + host);
                case httplib::Error::Read:
                case httplib::Error::Write:
                    throw HubError(HubError::Kind::Network, "the connection to " + host + " dropped");
                case httplib::Error::SSLConnection:
                case httplib::Error::SSLLoadingCerts:
                case httplib::Error::SSLServerVerification:
                    throw HubError(HubError::Kind::Network,
                                   "the secure (TLS) connection to " + host +
                                       " failed: " + httplib::to_string(result.error()));
                default:
                    throw HubError(HubError::Kind::Network,
                                   "cannot reach " + host + ": " + httplib::to_string(result.error()));
            }
        }
        if (!sink) {
            reply.status = result->status;
            reply.body = result->body;
            if (reply.status >= 300 && reply.status < 400) reply.body = result->get_header_value("Location");
        }
        if (reply.status >= 300 && reply.status < 400 && reply.status != 304) {
            const std::string& location = reply.body;
            if (location.empty())
                throw HubError(HubError::Kind::Server, "a redirect without a Location", reply.status);
            current = location.find("://") != std::string::npos
                          ? location
                          : u.origin + (location[0] == '/' ? "" : "/") + location;
            continue;
        }
        return reply;
    }
    throw HubError(HubError::Kind::Server, "too many redirects for " + url);
}

void check_status(const HubOptions& options, const HttpReply& reply, const std::string& what) {
    if (reply.status >= 200 && reply.status < 300) return;
    if (reply.status == 401 || reply.status == 403) {
        throw HubError(HubError::Kind::Unauthorized,
                       options.token.empty()
                           ? what + " needs a Hugging Face access token: it is gated or private (HTTP " +
                                 std::to_string(reply.status) + ")"
                           : what + ": the access token was refused (HTTP " + std::to_string(reply.status) +
                                 "; a gated model may need its terms accepted on the Hub first)",
                       reply.status);
    }
    if (reply.status == 404)
        throw HubError(HubError::Kind::NotFound, what + " was not found on " + options.endpoint, 404);
    throw HubError(HubError::Kind::Server,
                   what + ": the server answered HTTP " + std::to_string(reply.status), reply.status);
}

}  // namespace lantern::hub
