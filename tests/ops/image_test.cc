// ImageDecoder: images encoded here (BMP and PNM by hand, PNG through libpng's writer) decode
// to the pixels they were made from, in RGB, BGR and Grayscale.
#include <gtest/gtest.h>
#include <png.h>

#include <cstring>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "type_rule_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// A 2x3 RGB image, row-major.
const std::vector<uint8_t> kPixels = {255, 0,  0,  0,   255, 0,  0,   0,   255,
                                      10,  20, 30, 200, 100, 50, 255, 255, 255};

Tensor encoded(const std::vector<uint8_t>& bytes) {
  return Tensor::from_vector<uint8_t>(DType::kUInt8, {static_cast<int64_t>(bytes.size())}, bytes);
}

void put32(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

// A bottom-up 24-bit BMP of kPixels (rows padded to 4 bytes, stored B, G, R).
std::vector<uint8_t> bmp() {
  const size_t stride = 12;  // 3 pixels * 3 bytes, padded to 12
  std::vector<uint8_t> out(54 + 2 * stride, 0);
  out[0] = 'B', out[1] = 'M';
  put32(out, 2, static_cast<uint32_t>(out.size()));
  put32(out, 10, 54);
  put32(out, 14, 40);
  put32(out, 18, 3);
  put32(out, 22, 2);
  out[26] = 1;
  out[28] = 24;
  for (size_t y = 0; y < 2; ++y) {
    for (size_t x = 0; x < 3; ++x) {
      const uint8_t* p = &kPixels[(y * 3 + x) * 3];
      uint8_t* q = &out[54 + (1 - y) * stride + x * 3];
      q[0] = p[2], q[1] = p[1], q[2] = p[0];
    }
  }
  return out;
}

std::vector<uint8_t> pnm() {
  const std::string header = "P6\n# a comment\n3 2\n255\n";
  std::vector<uint8_t> out(header.begin(), header.end());
  out.insert(out.end(), kPixels.begin(), kPixels.end());
  return out;
}

std::vector<uint8_t> png() {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = 3;
  image.height = 2;
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, kPixels.data(), 0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, kPixels.data(), 0, nullptr));
  out.resize(size);
  return out;
}

TEST(ImageDecoder, BmpPnmAndPngDecodeToTheirPixels) {
  for (const auto& bytes : {bmp(), pnm(), png()}) {
    Tensor out = run_one("ImageDecoder", {encoded(bytes)}, 20);
    EXPECT_EQ(out.dtype(), DType::kUInt8);
    EXPECT_EQ(out.shape(), (Shape{2, 3, 3}));
    EXPECT_EQ(values_of<uint8_t>(out), kPixels);
  }
}

TEST(ImageDecoder, BgrAndGrayscale) {
  Tensor bgr = run_one("ImageDecoder", {encoded(pnm())}, 20, with_string("pixel_format", "BGR"));
  EXPECT_EQ(values_of<uint8_t>(bgr)[0], 0);
  EXPECT_EQ(values_of<uint8_t>(bgr)[2], 255);
  Tensor gray =
      run_one("ImageDecoder", {encoded(png())}, 20, with_string("pixel_format", "Grayscale"));
  EXPECT_EQ(gray.shape(), (Shape{2, 3, 1}));
  // Pillow's luma: (R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16.
  EXPECT_EQ(values_of<uint8_t>(gray), (std::vector<uint8_t>{76, 150, 29, 18, 124, 255}));
}

TEST(ImageDecoder, ErrorsNameTheProblem) {
  EXPECT_NE(run_error("ImageDecoder", {encoded({1, 2, 3, 4})}, 20).find("unknown image format"),
            std::string::npos);
  std::vector<uint8_t> truncated = png();
  truncated.resize(truncated.size() / 2);
  EXPECT_NE(run_error("ImageDecoder", {encoded(truncated)}, 20).find("PNG"), std::string::npos);
  EXPECT_NE(run_error("ImageDecoder", {encoded(pnm())}, 20, with_string("pixel_format", "RGBA"))
                .find("pixel_format 'RGBA' is not RGB, BGR or Grayscale"),
            std::string::npos);
  EXPECT_EQ(
      type_text(infer_op_type("ImageDecoder", {ValueType::tensor(DType::kUInt8, dims({-1}))}, 20,
                              [](Node* n) { set_string(n, "pixel_format", "Grayscale"); })),
      "uint8[?,?,1]");
}

}  // namespace
}  // namespace onnxkit
