#include "serve/content_encoding.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <vector>

#include "serve/inference_protocol.h"

namespace onnxkit::serve {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The comma-separated items of a header value, trimmed, empty ones dropped.
std::vector<std::string_view> list_items(std::string_view value) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string_view::npos) end = value.size();
    const std::string_view item = trim(value.substr(start, end - start));
    if (!item.empty()) items.push_back(item);
    start = end + 1;
  }
  return items;
}

// Inflates gzip (window bits 15 + 16) or zlib-wrapped deflate (15; raw deflate, which some
// clients send for "deflate", is tried when the zlib header is missing).
std::string inflate_body(std::string_view in, bool gzip_wrapped, size_t max_bytes,
                         std::string_view coding) {
  auto attempt = [&](int window_bits, std::string& out) -> int {
    z_stream stream{};
    if (inflateInit2(&stream, window_bits) != Z_OK) {
      throw RequestError(500, "cannot start zlib to decode a " + std::string(coding) + " body");
    }
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    stream.avail_in = static_cast<uInt>(in.size());
    char chunk[64 * 1024];
    int status = Z_OK;
    while (status == Z_OK) {
      stream.next_out = reinterpret_cast<Bytef*>(chunk);
      stream.avail_out = sizeof chunk;
      status = inflate(&stream, Z_NO_FLUSH);
      const size_t produced = sizeof chunk - stream.avail_out;
      if (produced > max_bytes - out.size()) {
        inflateEnd(&stream);
        throw RequestError(413, "request body decoded from " + std::string(coding) +
                                    " is larger than the server's limit of " +
                                    std::to_string(max_bytes) + " bytes");
      }
      out.append(chunk, produced);
      // Z_BUF_ERROR with a fresh output chunk: no input left before the stream's end.
    }
    const bool trailing = stream.avail_in != 0;
    inflateEnd(&stream);
    if (status == Z_STREAM_END && trailing) return Z_DATA_ERROR;
    return status;
  };
  if (in.size() > std::numeric_limits<uInt>::max()) {
    throw RequestError(413, "compressed request body too large");
  }
  std::string out;
  int status = attempt(gzip_wrapped ? 15 + 16 : 15, out);
  if (!gzip_wrapped && status == Z_DATA_ERROR && out.empty()) {
    status = attempt(-15, out);
  }
  if (status != Z_STREAM_END) {
    throw RequestError(400, "request body is not valid " + std::string(coding) + " data" +
                                (status == Z_BUF_ERROR ? " (truncated)" : ""));
  }
  return out;
}

}  // namespace

std::string decode_content(std::string body, std::string_view content_encoding, size_t max_bytes) {
  const auto codings = list_items(content_encoding);
  // Codings apply in the order listed, so they come off in reverse.
  for (auto it = codings.rbegin(); it != codings.rend(); ++it) {
    const std::string coding = lower(*it);
    if (coding == "identity") continue;
    if (coding == "gzip" || coding == "x-gzip") {
      body = inflate_body(body, true, max_bytes, coding);
    } else if (coding == "deflate") {
      body = inflate_body(body, false, max_bytes, coding);
    } else {
      throw RequestError(415, "Content-Encoding '" + std::string(*it) +
                                  "' is not supported (gzip, deflate, identity)");
    }
  }
  return body;
}

bool accepts_gzip(std::string_view accept_encoding) {
  bool star = false;
  std::optional<bool> gzip_listed;
  for (std::string_view item : list_items(accept_encoding)) {
    std::string_view coding = item;
    double q = 1;
    if (const size_t semicolon = item.find(';'); semicolon != std::string_view::npos) {
      coding = trim(item.substr(0, semicolon));
      const std::string parameter = lower(trim(item.substr(semicolon + 1)));
      if (parameter.rfind("q=", 0) == 0) {
        try {
          q = std::stod(parameter.substr(2));
        } catch (const std::exception&) {
          q = 0;
        }
      }
    }
    const std::string name = lower(coding);
    if (name == "gzip" || name == "x-gzip") gzip_listed = q > 0;
    if (name == "*") star = q > 0;
  }
  return gzip_listed.value_or(star);
}

std::string gzip(std::string_view body) {
  z_stream stream{};
  if (deflateInit2(&stream, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw Error("cannot start zlib to compress a response");
  }
  std::string out(deflateBound(&stream, body.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  stream.avail_in = static_cast<uInt>(body.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  out.resize(out.size() - stream.avail_out);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw Error("zlib failed to compress a response");
  return out;
}

}  // namespace onnxkit::serve
