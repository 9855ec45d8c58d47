#include "http.h"

#include <algorithm>
#include <cstdio>

namespace lantern::server {

namespace {

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// RFC 9110 token characters (method and header names).
bool is_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
        if (!ok) return false;
    }
    return true;
}

HttpParse bad(int status, std::string message) {
    HttpParse p;
    p.state = HttpParse::State::Bad;
    p.status = status;
    p.message = std::move(message);
    return p;
}

// Tolerates a bare LF as a line end (RFC 9112 allows it), so a hand-typed request works too.
std::string_view next_line(std::string_view& rest) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
}

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (iequal(k, name)) return v;
    return {};
}

bool HttpRequest::keep_alive() const {
    const std::string c = header("Connection");
    if (version == "HTTP/1.0") return iequal(c, "keep-alive");
    return !iequal(c, "close");
}

std::string HttpRequest::path() const {
    return target.substr(0, target.find('?'));
}

HttpParse parse_http_request(std::string_view buffer, const HttpLimits& limits) {
    // RFC 9112: a server should ignore empty lines before the request line.
    size_t lead = 0;
    while (lead < buffer.size() && (buffer[lead] == '\r' || buffer[lead] == '\n')) ++lead;
    std::string_view data = buffer.substr(lead);
    size_t head_end = data.find("\r\n\r\n"), sep = 4;
    const size_t lf_end = data.find("\n\n");
    if (lf_end != std::string_view::npos && lf_end < head_end) head_end = lf_end, sep = 2;
    if (head_end == std::string_view::npos) {
        if (buffer.size() > limits.max_header_bytes)
            return bad(431,
                       "the request headers exceed " + std::to_string(limits.max_header_bytes) + " bytes");
        HttpParse more;
        more.needed = buffer.size() + 1;
        return more;
    }
    if (lead + head_end > limits.max_header_bytes)
        return bad(431, "the request headers exceed " + std::to_string(limits.max_header_bytes) + " bytes");

    std::string_view head = data.substr(0, head_end + sep / 2);  // through the last header's line end
    HttpParse p;
    HttpRequest& r = p.request;
    {
        std::string_view line = next_line(head);
        const size_t a = line.find(' '), b = line.rfind(' ');
        if (a == std::string_view::npos || b == a) return bad(400, "malformed request line");
        r.method = std::string(line.substr(0, a));
        r.target = std::string(line.substr(a + 1, b - a - 1));
        r.version = std::string(line.substr(b + 1));
        if (!is_token(r.method) || r.target.empty() || r.target.find(' ') != std::string::npos)
            return bad(400, "malformed request line");
        if (r.version != "HTTP/1.1" && r.version != "HTTP/1.0")
            return bad(505, "only HTTP/1.0 and HTTP/1.1 are served");
    }
    while (!head.empty()) {
        std::string_view line = next_line(head);
        if (line.empty()) break;
        if (line.front() == ' ' || line.front() == '\t')
            return bad(400, "folded header lines are not accepted");
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
            return bad(400, "malformed header line");
        r.headers.emplace_back(std::string(line.substr(0, colon)), std::string(trim(line.substr(colon + 1))));
    }

    if (!r.header("Transfer-Encoding").empty())
        return bad(501, "chunked request bodies are not supported; send Content-Length");
    size_t length = 0;
    bool has_length = false;
    for (const auto& [k, v] : r.headers) {
        if (!iequal(k, "Content-Length")) continue;
        if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos)
            return bad(400, "malformed Content-Length");
        const size_t n = std::stoull(v);
        if (has_length && n != length) return bad(400, "conflicting Content-Length headers");
        length = n;
        has_length = true;
    }
    if (!has_length && (r.method == "POST" || r.method == "PUT"))
        return bad(411, "a " + r.method + " request needs a Content-Length");
    if (length > limits.max_body_bytes)
        return bad(413, "the request body (" + std::to_string(length) + " bytes) exceeds " +
                            std::to_string(limits.max_body_bytes) + " bytes");
    if (limits.body_limit)
        if (const size_t useful = limits.body_limit(r); length > useful)
            return bad(413, "the request body (" + std::to_string(length) + " bytes) exceeds the " +
                                std::to_string(useful) + " bytes a " + r.method + " to " +
                                printable(r.path(), 64) + " can use here");
    const size_t body_start = lead + head_end + sep;
    if (buffer.size() - body_start < length) {
        HttpParse more;
        more.needed = body_start + length;
        return more;
    }
    r.body = std::string(buffer.substr(body_start, length));
    p.consumed = body_start + length;
    p.state = HttpParse::State::Complete;
    return p;
}

std::string percent_decode(std::string_view text) {
    const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
            out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

std::string printable(std::string_view text, size_t max) {
    std::string out;
    for (const char ch : text.substr(0, max)) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c >= 0x7f) {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            out += ch;
        }
    }
    if (text.size() > max) out += "...";
    return out;
}

bool host_allowed(std::string_view host, const std::vector<std::string>& names) {
    host = trim(host);
    if (host.empty()) return false;
    std::string_view name = host;
    if (name.front() == '[') {  // [IPv6]:port
        const size_t close = name.find(']');
        if (close == std::string_view::npos) return false;
        const std::string_view rest = name.substr(close + 1);
        if (!rest.empty() &&
            (rest.front() != ':' || rest.find_first_not_of("0123456789", 1) != std::string_view::npos))
            return false;
        return name.substr(1, close - 1).find_first_not_of("0123456789abcdefABCDEF:.") ==
               std::string_view::npos;
    }
    if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
        if (name.substr(colon + 1).find_first_not_of("0123456789") != std::string_view::npos) return false;
        name = name.substr(0, colon);
    }
    if (name.empty()) return false;
    if (iequal(name, "localhost")) return true;
    // An IPv4 literal: four decimal parts.
    int parts = 0;
    bool literal = true;
    for (std::string_view rest = name;;) {
        const size_t dot = rest.find('.');
        const std::string_view part = rest.substr(0, dot);
        if (part.empty() || part.size() > 3 ||
            part.find_first_not_of("0123456789") != std::string_view::npos) {
            literal = false;
            break;
        }
        ++parts;
        if (dot == std::string_view::npos) break;
        rest.remove_prefix(dot + 1);
    }
    if (literal && parts == 4) return true;
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return iequal(n, name); });
}

bool is_json_content_type(std::string_view content_type) {
    const std::string_view type = trim(content_type.substr(0, content_type.find(';')));
    return iequal(type, "application/json");
}

const char* http_reason(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 204:
            return "No Content";
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 411:
            return "Length Required";
        case 413:
            return "Content Too Large";
        case 415:
            return "Unsupported Media Type";
        case 431:
            return "Request Header Fields Too Large";
        case 500:
            return "Internal Server Error";
        case 501:
            return "Not Implemented";
        case 503:
            return "Service Unavailable";
        case 505:
            return "HTTP Version Not Supported";
        default:
            return "Unknown";
    }
}

namespace {
std::string head(int status, std::string_view content_type, const HttpHeaders& extra, bool keep_alive) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + http_reason(status) + "\r\n";
    out += "Server: lantern\r\n";
    if (!content_type.empty()) out += "Content-Type: " + std::string(content_type) + "\r\n";
    for (const auto& [k, v] : extra) out += k + ": " + v + "\r\n";
    if (!keep_alive) out += "Connection: close\r\n";
    return out;
}
}  // namespace

std::string http_response(int status, std::string_view content_type, std::string_view body,
                          const HttpHeaders& extra, bool keep_alive) {
    std::string out = head(status, content_type, extra, keep_alive);
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    out += body;
    return out;
}

std::string http_stream_head(int status, std::string_view content_type, const HttpHeaders& extra,
                             bool keep_alive) {
    return head(status, content_type, extra, keep_alive) + "Transfer-Encoding: chunked\r\n\r\n";
}

std::string http_chunk(std::string_view data) {
    if (data.empty()) return {};  // an empty chunk would end the stream
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return size + std::string(data) + "\r\n";
}

std::string http_last_chunk() {
    return "0\r\n\r\n";
}

bool bearer_token_matches(std::string_view authorization, std::string_view key) {
    constexpr std::string_view scheme = "bearer";
    bool ok = authorization.size() > scheme.size();
    for (size_t i = 0; ok && i < scheme.size(); ++i)
        ok = (static_cast<unsigned char>(authorization[i]) | 0x20) == static_cast<unsigned char>(scheme[i]);
    if (!ok || authorization[scheme.size()] != ' ') return false;
    std::string_view token = authorization.substr(scheme.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    // Every byte of the longer of the two is looked at, whatever differs first.
    unsigned char diff = token.size() == key.size() ? 0 : 1;
    for (size_t i = 0; i < std::max(token.size(), key.size()); ++i) {
        const unsigned char a = i < token.size() ? static_cast<unsigned char>(token[i]) : 0;
        const unsigned char b = i < key.size() ? static_cast<unsigned char>(key[i]) : 0;
        diff = static_cast<unsigned char>(diff | (a ^ b));
    }
    return diff == 0;
}

}  // namespace lantern::server
