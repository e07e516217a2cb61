// Request bodies in gzip and deflate: decoded exactly, bounded once inflated (a zip bomb is
// a 413), corrupt data a 400, unknown codings a 415; gzip answers for clients that accept it.
#include <gtest/gtest.h>

#include <zlib.h>

#include "serve/content_encoding.h"
#include "serve/inference_protocol.h"

namespace onnxkit::serve {
namespace {

// zlib's compress2 (zlib wrapper) or a raw deflate stream (window bits -15).
std::string deflate_body(const std::string& body, int window_bits) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, body.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  stream.avail_in = static_cast<uInt>(body.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - stream.avail_out);
  deflateEnd(&stream);
  return out;
}

int status_of(const std::string& body, std::string_view encoding, size_t max_bytes) {
  try {
    decode_content(body, encoding, max_bytes);
  } catch (const RequestError& e) {
    return e.http_status();
  }
  return 200;
}

std::string sample_body() {
  std::string body = R"({"inputs":[{"name":"x","shape":[1000],"datatype":"FP32","data":[)";
  for (int i = 0; i < 1000; ++i) body += (i ? "," : "") + std::to_string(i * 0.25);
  return body + "]}]}";
}

TEST(ContentEncodingTest, GzipAndDeflateBodiesDecodeExactly) {
  const std::string body = sample_body();
  EXPECT_EQ(decode_content(gzip(body), "gzip", 1 << 20), body);
  EXPECT_EQ(decode_content(gzip(body), "X-GZIP", 1 << 20), body);
  EXPECT_EQ(decode_content(deflate_body(body, 15), "deflate", 1 << 20), body);
  EXPECT_EQ(decode_content(deflate_body(body, -15), "deflate", 1 << 20), body);
  EXPECT_EQ(decode_content(body, "identity", 1 << 20), body);
  // Listed codings were applied in order: gzip first, then deflate.
  EXPECT_EQ(decode_content(deflate_body(gzip(body), 15), "gzip, deflate", 1 << 20), body);
  EXPECT_EQ(decode_content(gzip(""), "gzip", 0), "");
}

TEST(ContentEncodingTest, AZipBombIs413AtTheBound) {
  const std::string zeros(64 << 20, '\0');
  const std::string bomb = gzip(zeros);
  ASSERT_LT(bomb.size(), 1u << 20);
  try {
    decode_content(bomb, "gzip", 1 << 20);
    FAIL() << "accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.http_status(), 413);
    EXPECT_NE(std::string(e.what()).find("limit of 1048576 bytes"), std::string::npos) << e.what();
  }
  const std::string body = sample_body();
  EXPECT_EQ(decode_content(gzip(body), "gzip", body.size()), body);
  EXPECT_EQ(status_of(gzip(body), "gzip", body.size() - 1), 413);
}

TEST(ContentEncodingTest, CorruptTruncatedAndUnknownBodies) {
  const std::string packed = gzip(sample_body());
  EXPECT_EQ(status_of("not gzip at all", "gzip", 1 << 20), 400);
  EXPECT_EQ(status_of(packed.substr(0, packed.size() / 2), "gzip", 1 << 20), 400);
  EXPECT_EQ(status_of(packed + "trailing", "gzip", 1 << 20), 400);
  std::string flipped = packed;
  flipped[flipped.size() - 6] ^= 0x55;  // the CRC no longer matches
  EXPECT_EQ(status_of(flipped, "gzip", 1 << 20), 400);
  EXPECT_EQ(status_of(packed, "br", 1 << 20), 415);
  EXPECT_EQ(status_of(packed, "gzip, zstd", 1 << 20), 415);
}

TEST(ContentEncodingTest, AcceptEncodingQValues) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, GZip;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("*, gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("br, deflate"));
}

}  // namespace
}  // namespace onnxkit::serve
