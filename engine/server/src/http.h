// HTTP/1.1 for the API server: reading a request out of a connection's received bytes, and the
// bytes of a response — whole (Content-Length) or streamed (chunked, for server-sent events).
//
// Only what an API client sends is accepted: a request line, headers, and a body announced by
// Content-Length. Anything else gets the status that says why (400 malformed, 411 no length,
// 413 too large, 431 headers too large, 501 chunked request bodies, 505 not HTTP/1.x).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lantern::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
    std::string method, target, version;  // "POST", "/v1/chat/completions", "HTTP/1.1"
    HttpHeaders headers;
    std::string body;
    // Header value by case-insensitive name (the first one); empty when absent.
    std::string header(std::string_view name) const;
    // Whether the connection stays open after the response (HTTP/1.1 unless "Connection: close";
    // HTTP/1.0 only with "Connection: keep-alive").
    bool keep_alive() const;
    // The target without its query string.
    std::string path() const;
};

struct HttpLimits {
    size_t max_header_bytes = 32 * 1024;
    size_t max_body_bytes = 8 * 1024 * 1024;
    // Optional: the most body bytes a request with this head can use (at most max_body_bytes
    // applies either way). Asked once the head is whole, so a larger Content-Length is answered
    // 413 before a byte of the body is read.
    std::function<size_t(const HttpRequest& head)> body_limit;
};

struct HttpParse {
    enum class State { Incomplete, Complete, Bad } state = State::Incomplete;
    HttpRequest request;  // Complete
    size_t consumed = 0;  // Complete: bytes of `buffer` the request used (pipelined requests follow)
    int status = 0;       // Bad: the status to answer with
    std::string message;  // Bad: why
    // Incomplete: the buffer's size at which parsing again can give another answer (the whole
    // request once its head announced the body's length; else one byte more), so a caller need
    // not rescan a large body as it arrives.
    size_t needed = 0;
};

// Parses the first request in `buffer` (the bytes received so far on a connection). Empty lines
// before the request line (RFC 9112 lets a server ignore them) count against max_header_bytes.
HttpParse parse_http_request(std::string_view buffer, const HttpLimits& limits = {});

const char* http_reason(int status);  // "OK", "Bad Request", ...

// Whether an Authorization header value carries `key` as a bearer token: the scheme in any letter
// case (RFC 7235), then spaces, then exactly the key. The key is compared in time that does not
// depend on where the first wrong byte is, so a client cannot find it byte by byte.
bool bearer_token_matches(std::string_view authorization, std::string_view key);

// A URL path segment with its %XX escapes decoded ("Llama%203.2" -> "Llama 3.2"); a malformed
// escape stays as written.
std::string percent_decode(std::string_view text);

// `text` as it may be written to a log line: control characters and bytes >= 0x7f as \xNN, at
// most `max` bytes of it ("..." when cut). A client cannot forge log lines or the terminal's state.
std::string printable(std::string_view text, size_t max = 200);

// Whether a Host header value names this machine: localhost, an IP literal (IPv4 or [IPv6];
// DNS rebinding needs a name), or one of `names` (case-insensitive); a port after the host is
// ignored. An empty value is refused.
bool host_allowed(std::string_view host_header, const std::vector<std::string>& names);

// Whether a Content-Type header value is JSON: application/json with any parameters.
bool is_json_content_type(std::string_view content_type);

// A whole response. Content-Length is added; so is "Connection: close" when !keep_alive.
std::string http_response(int status, std::string_view content_type, std::string_view body,
                          const HttpHeaders& extra = {}, bool keep_alive = true);
// The head of a streamed response (Transfer-Encoding: chunked); then http_chunk() per piece and
// http_last_chunk() at the end.
std::string http_stream_head(int status, std::string_view content_type, const HttpHeaders& extra = {},
                             bool keep_alive = true);
std::string http_chunk(std::string_view data);
std::string http_last_chunk();

}  // namespace lantern::server
