// One GET over HTTP(S) for the Hub client (private): redirects followed by hand, so that the token
// goes only to the Hub's own host (never to the CDN a file redirects to), status codes turned into
// HubError kinds, and bodies either kept (API answers) or streamed to a sink (files).
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lantern/hub.h"

namespace lantern::hub {

struct HttpReply {
    int status = 0;
    std::string body;  // the whole body, or (with a sink) the start of an error's body
    uint64_t content_length = 0;
    std::string content_range;  // "bytes 100-199/1000" for a 206
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// GETs `url`. With a sink, a 2xx body goes to it in pieces (false from it stops: HubError::Cancelled).
// `on_status` (with a sink) hears the final status before the body's first byte.
HttpReply http_get(const HubOptions& options, const std::string& url, const HeaderList& headers,
                   const std::function<bool(const char*, size_t)>& sink = {},
                   const std::function<void(int status)>& on_status = {});

// Throws the HubError a status means for `what` ("repository Qwen/X", "file a.gguf").
void check_status(const HubOptions& options, const HttpReply& reply, const std::string& what);

std::string url_encode(const std::string& s);

}  // namespace lantern::hub
