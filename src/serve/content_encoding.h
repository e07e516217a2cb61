// HTTP content codings of request and response bodies (zlib): gzip and deflate request
// bodies (Content-Encoding) inflated under a size bound, so a small compressed body cannot
// expand past the server's body limit; gzip responses for clients that accept them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace onnxkit::serve {

// The body a request carries under `content_encoding` ("", "identity", "gzip", "x-gzip",
// "deflate"; a list such as "gzip, identity" is decoded right to left). Throws RequestError:
// 415 naming an unknown coding, 400 for corrupt or truncated data, 413 when the decoded
// body would exceed `max_bytes`.
std::string decode_content(std::string body, std::string_view content_encoding, size_t max_bytes);

// Whether an Accept-Encoding value admits gzip (listed, or "*", with a q-value above 0).
bool accepts_gzip(std::string_view accept_encoding);

// `body` gzip-compressed (level 1: responses are mostly incompressible floats; the saving
// is in JSON text).
std::string gzip(std::string_view body);

}  // namespace onnxkit::serve
