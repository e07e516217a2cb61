// Op family: image — ImageDecoder (opset 20): an encoded image (a 1-D uint8 tensor) decoded
// to (H, W, C) uint8 pixels, RGB, BGR or Grayscale.
//
// The formats the ONNX spec names: JPEG (libjpeg), PNG (libpng), WebP (libwebp), TIFF
// (libtiff), JPEG 2000 (openjpeg), and BMP and binary PNM read here. Grayscale from a color
// image uses the ITU-R 601-2 luma weights in the 16-bit fixed point Pillow uses (the ONNX
// reference decodes with Pillow), so the pixels match it exactly.
#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

// clang-format off: libjpeg's header needs <cstdio> first
#include <jpeglib.h>
// clang-format on
#include <openjpeg.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>

#include "core/status.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

// Decoded pixels: rows of width * channels bytes, channels 1 (gray) or 3 (RGB).
struct Image {
  int64_t height = 0, width = 0, channels = 3;
  std::vector<uint8_t> pixels;
};

using Bytes = std::span<const uint8_t>;

bool starts_with(Bytes data, std::initializer_list<uint8_t> magic) {
  return data.size() >= magic.size() && std::equal(magic.begin(), magic.end(), data.begin());
}

// ---- JPEG --------------------------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

Image decode_jpeg(Bytes data) {
  jpeg_decompress_struct info;
  JpegError error;
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = jpeg_error_exit;
  Image image;
  // Nothing with a destructor may be created between setjmp and the end of the decode.
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&info);
    fail("invalid JPEG data: {}", error.message);
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&info, TRUE);
  const bool gray = info.jpeg_color_space == JCS_GRAYSCALE;
  info.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  image.height = info.output_height;
  image.width = info.output_width;
  image.channels = info.output_components;
  image.pixels.resize(static_cast<size_t>(image.height * image.width * image.channels));
  const size_t row = static_cast<size_t>(image.width * image.channels);
  while (info.output_scanline < info.output_height) {
    JSAMPROW line = image.pixels.data() + info.output_scanline * row;
    jpeg_read_scanlines(&info, &line, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return image;
}

// ---- PNG ---------------------------------------------------------------------------------

Image decode_png(Bytes data) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, data.data(), data.size())) {
    fail("invalid PNG data: {}", png.message);
  }
  Image image;
  const bool gray = (png.format & PNG_FORMAT_FLAG_COLOR) == 0;
  png.format = gray ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  image.height = png.height;
  image.width = png.width;
  image.channels = gray ? 1 : 3;
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
    const std::string message = png.message;
    png_image_free(&png);
    fail("invalid PNG data: {}", message);
  }
  return image;
}

// ---- WebP --------------------------------------------------------------------------------

Image decode_webp(Bytes data) {
  int width = 0, height = 0;
  uint8_t* rgb = WebPDecodeRGB(data.data(), data.size(), &width, &height);
  if (!rgb) fail("invalid WebP data");
  Image image;
  image.height = height;
  image.width = width;
  image.pixels.assign(rgb, rgb + static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  WebPFree(rgb);
  return image;
}

// ---- TIFF (read from memory through libtiff's client I/O) -----------------------------------

struct MemoryFile {
  Bytes data;
  toff_t position = 0;
};

tsize_t tiff_read(thandle_t handle, tdata_t buffer, tsize_t size) {
  auto* file = static_cast<MemoryFile*>(handle);
  const toff_t left = file->position < file->data.size() ? file->data.size() - file->position : 0;
  const auto n = static_cast<toff_t>(size) < left ? static_cast<toff_t>(size) : left;
  std::memcpy(buffer, file->data.data() + file->position, n);
  file->position += n;
  return static_cast<tsize_t>(n);
}
tsize_t tiff_write(thandle_t, tdata_t, tsize_t) {
  return 0;
}
toff_t tiff_seek(thandle_t handle, toff_t offset, int whence) {
  auto* file = static_cast<MemoryFile*>(handle);
  if (whence == SEEK_SET) file->position = offset;
  if (whence == SEEK_CUR) file->position += offset;
  if (whence == SEEK_END) file->position = file->data.size() + offset;
  return file->position;
}
int tiff_close(thandle_t) {
  return 0;
}
toff_t tiff_size(thandle_t handle) {
  return static_cast<MemoryFile*>(handle)->data.size();
}
int tiff_map(thandle_t, tdata_t*, toff_t*) {
  return 0;
}
void tiff_unmap(thandle_t, tdata_t, toff_t) {}

Image decode_tiff(Bytes data) {
  MemoryFile file{data, 0};
  TIFFSetErrorHandler(nullptr);  // errors come back as return values, not stderr
  TIFFSetWarningHandler(nullptr);
  std::unique_ptr<TIFF, void (*)(TIFF*)> tiff(
      TIFFClientOpen("image", "rm", &file, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                     tiff_map, tiff_unmap),
      TIFFClose);
  if (!tiff) fail("invalid TIFF data");
  uint32_t width = 0, height = 0;
  TIFFGetField(tiff.get(), TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tiff.get(), TIFFTAG_IMAGELENGTH, &height);
  std::vector<uint32_t> raster(static_cast<size_t>(width) * height);
  if (raster.empty() || !TIFFReadRGBAImageOriented(tiff.get(), width, height, raster.data(),
                                                   ORIENTATION_TOPLEFT, 0)) {
    fail("invalid TIFF data: cannot read a {}x{} image", width, height);
  }
  Image image;
  image.height = height;
  image.width = width;
  image.pixels.resize(raster.size() * 3);
  for (size_t i = 0; i < raster.size(); ++i) {
    image.pixels[3 * i] = static_cast<uint8_t>(TIFFGetR(raster[i]));
    image.pixels[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
    image.pixels[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
  }
  return image;
}

// ---- JPEG 2000 (a JP2 file or a raw J2K codestream, read from memory) ----------------------

OPJ_SIZE_T opj_read(void* buffer, OPJ_SIZE_T size, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  if (file->position >= file->data.size()) return static_cast<OPJ_SIZE_T>(-1);
  const OPJ_SIZE_T n = std::min<OPJ_SIZE_T>(size, file->data.size() - file->position);
  std::memcpy(buffer, file->data.data() + file->position, n);
  file->position += n;
  return n;
}
OPJ_OFF_T opj_skip(OPJ_OFF_T offset, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  file->position += static_cast<toff_t>(offset);
  return offset;
}
OPJ_BOOL opj_seek(OPJ_OFF_T offset, void* user) {
  auto* file = static_cast<MemoryFile*>(user);
  if (offset < 0 || static_cast<toff_t>(offset) > file->data.size()) return OPJ_FALSE;
  file->position = static_cast<toff_t>(offset);
  return OPJ_TRUE;
}

Image decode_jpeg2000(Bytes data, bool jp2) {
  MemoryFile file{data, 0};
  std::unique_ptr<opj_stream_t, void (*)(opj_stream_t*)> stream(
      opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE), opj_stream_destroy);
  opj_stream_set_user_data(stream.get(), &file, nullptr);
  opj_stream_set_user_data_length(stream.get(), data.size());
  opj_stream_set_read_function(stream.get(), opj_read);
  opj_stream_set_skip_function(stream.get(), opj_skip);
  opj_stream_set_seek_function(stream.get(), opj_seek);
  std::unique_ptr<opj_codec_t, void (*)(opj_codec_t*)> codec(
      opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K), opj_destroy_codec);
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  opj_image_t* raw = nullptr;
  if (!opj_setup_decoder(codec.get(), &parameters) ||
      !opj_read_header(stream.get(), codec.get(), &raw)) {
    if (raw) opj_image_destroy(raw);
    fail("invalid JPEG 2000 data");
  }
  std::unique_ptr<opj_image_t, void (*)(opj_image_t*)> decoded(raw, opj_image_destroy);
  if (!opj_decode(codec.get(), stream.get(), decoded.get()) ||
      !opj_end_decompress(codec.get(), stream.get())) {
    fail("invalid JPEG 2000 data");
  }
  const opj_image_t& j = *decoded;
  if (j.numcomps != 1 && j.numcomps < 3) fail("JPEG 2000 image has {} components", j.numcomps);
  const opj_image_comp_t& first = j.comps[0];
  Image image;
  image.height = first.h;
  image.width = first.w;
  image.channels = j.numcomps == 1 ? 1 : 3;
  const auto count = static_cast<size_t>(image.height * image.width);
  image.pixels.resize(count * static_cast<size_t>(image.channels));
  for (int64_t c = 0; c < image.channels; ++c) {
    const opj_image_comp_t& comp = j.comps[c];
    if (comp.w != first.w || comp.h != first.h) fail("JPEG 2000 components are subsampled");
    for (size_t i = 0; i < count; ++i) {
      int32_t v = comp.data[i] + (comp.sgnd ? 1 << (comp.prec - 1) : 0);
      if (comp.prec > 8) v >>= comp.prec - 8;
      if (comp.prec < 8) v <<= 8 - comp.prec;
      image.pixels[i * static_cast<size_t>(image.channels) + static_cast<size_t>(c)] =
          static_cast<uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return image;
}

// ---- BMP (uncompressed 24- and 32-bit) ---------------------------------------------------

uint32_t little_endian(Bytes data, size_t at, size_t bytes) {
  if (at + bytes > data.size()) fail("truncated BMP data");
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint32_t>(data[at + i]) << (8 * i);
  return v;
}

Image decode_bmp(Bytes data) {
  const uint32_t pixel_offset = little_endian(data, 10, 4);
  const auto width = static_cast<int32_t>(little_endian(data, 18, 4));
  const auto height = static_cast<int32_t>(little_endian(data, 22, 4));
  const uint32_t bits = little_endian(data, 28, 2);
  const uint32_t compression = little_endian(data, 30, 4);
  // BI_RGB, or BI_BITFIELDS with the default masks of a 32-bit image.
  if ((bits != 24 && bits != 32) || (compression != 0 && compression != 3) || width <= 0 ||
      height == 0) {
    fail("unsupported BMP: {} bits per pixel, compression {}, {}x{}", bits, compression, width,
         height);
  }
  Image image;
  image.width = width;
  image.height = height < 0 ? -static_cast<int64_t>(height) : height;
  const size_t step = bits / 8;
  const size_t stride = (static_cast<size_t>(width) * step + 3) / 4 * 4;
  if (pixel_offset + stride * static_cast<size_t>(image.height) > data.size()) {
    fail("truncated BMP data");
  }
  image.pixels.resize(static_cast<size_t>(image.height * image.width) * 3);
  for (int64_t y = 0; y < image.height; ++y) {
    const int64_t source_row = height > 0 ? image.height - 1 - y : y;  // bottom-up by default
    const uint8_t* in = data.data() + pixel_offset + static_cast<size_t>(source_row) * stride;
    uint8_t* out = image.pixels.data() + static_cast<size_t>(y * image.width) * 3;
    for (int64_t x = 0; x < image.width; ++x, in += step, out += 3) {
      out[0] = in[2];  // stored B, G, R
      out[1] = in[1];
      out[2] = in[0];
    }
  }
  return image;
}

// ---- PNM (binary P5 gray and P6 color, maxval up to 255) ---------------------------------

Image decode_pnm(Bytes data) {
  size_t at = 2;
  auto next_number = [&]() -> int64_t {
    while (at < data.size() && (std::isspace(data[at]) || data[at] == '#')) {
      if (data[at] == '#') {
        while (at < data.size() && data[at] != '\n') ++at;
      } else {
        ++at;
      }
    }
    int64_t v = 0;
    bool any = false;
    while (at < data.size() && std::isdigit(data[at]) && v < (int64_t{1} << 32)) {
      v = v * 10 + (data[at++] - '0');
      any = true;
    }
    if (!any) fail("invalid PNM header");
    return v;
  };
  Image image;
  image.channels = data[1] == '5' ? 1 : 3;
  image.width = next_number();
  image.height = next_number();
  const int64_t maxval = next_number();
  ++at;  // the one whitespace byte before the pixels
  if (maxval < 1 || maxval > 255) fail("unsupported PNM maxval {}", maxval);
  const auto size = static_cast<size_t>(image.width * image.height * image.channels);
  if (at + size > data.size()) fail("truncated PNM data");
  image.pixels.assign(data.begin() + static_cast<std::ptrdiff_t>(at),
                      data.begin() + static_cast<std::ptrdiff_t>(at + size));
  if (maxval != 255) {
    for (uint8_t& v : image.pixels) v = static_cast<uint8_t>((v * 255 + maxval / 2) / maxval);
  }
  return image;
}

Image decode_image(Bytes data) {
  if (starts_with(data, {0xFF, 0xD8, 0xFF})) return decode_jpeg(data);
  if (starts_with(data, {0x89, 'P', 'N', 'G'})) return decode_png(data);
  if (starts_with(data, {'R', 'I', 'F', 'F'}) && data.size() >= 12 &&
      std::memcmp(data.data() + 8, "WEBP", 4) == 0) {
    return decode_webp(data);
  }
  if (starts_with(data, {'I', 'I', 42, 0}) || starts_with(data, {'M', 'M', 0, 42})) {
    return decode_tiff(data);
  }
  if (starts_with(data, {0, 0, 0, 12, 'j', 'P', ' ', ' '})) return decode_jpeg2000(data, true);
  if (starts_with(data, {0xFF, 0x4F, 0xFF, 0x51})) return decode_jpeg2000(data, false);
  if (starts_with(data, {'B', 'M'})) return decode_bmp(data);
  if (starts_with(data, {'P', '5'}) || starts_with(data, {'P', '6'})) return decode_pnm(data);
  fail("unknown image format (JPEG, PNG, WebP, TIFF, JPEG 2000, BMP and binary PNM are known)");
}

enum class PixelFormat { kRgb, kBgr, kGrayscale };

class ImageDecoderKernel : public OpKernel {
 public:
  explicit ImageDecoderKernel(const KernelCreateContext& context) {
    const std::string format = context.attr_string("pixel_format", "RGB");
    if (format == "RGB") {
      format_ = PixelFormat::kRgb;
    } else if (format == "BGR") {
      format_ = PixelFormat::kBgr;
    } else if (format == "Grayscale") {
      format_ = PixelFormat::kGrayscale;
    } else {
      context.fail("pixel_format '{}' is not RGB, BGR or Grayscale", format);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& encoded = context.input(0);
    if (encoded.dtype() != DType::kUInt8 || encoded.rank() != 1) {
      context.fail("encoded_stream must be a 1-D uint8 tensor, got {} {}",
                   dtype_name(encoded.dtype()), shape_to_string(encoded.shape()));
    }
    Image image;
    try {
      image = decode_image(Bytes(encoded.data<uint8_t>(), static_cast<size_t>(encoded.numel())));
    } catch (const Error& e) {
      context.fail("{}", e.what());
    }
    const int64_t channels = format_ == PixelFormat::kGrayscale ? 1 : 3;
    Tensor& out = context.allocate_output_uninitialized(0, DType::kUInt8,
                                                        {image.height, image.width, channels});
    uint8_t* dst = out.mutable_data<uint8_t>();
    const uint8_t* src = image.pixels.data();
    const int64_t pixels = image.height * image.width;
    for (int64_t i = 0; i < pixels; ++i, src += image.channels) {
      if (image.channels == 1) {
        std::fill_n(dst, channels, src[0]);
      } else if (format_ == PixelFormat::kGrayscale) {
        // Pillow's RGB -> L: ITU-R 601-2 luma in 16-bit fixed point, rounded.
        dst[0] =
            static_cast<uint8_t>((src[0] * 19595 + src[1] * 38470 + src[2] * 7471 + 0x8000) >> 16);
      } else if (format_ == PixelFormat::kBgr) {
        dst[0] = src[2], dst[1] = src[1], dst[2] = src[0];
      } else {
        dst[0] = src[0], dst[1] = src[1], dst[2] = src[2];
      }
      dst += channels;
    }
  }

 private:
  PixelFormat format_ = PixelFormat::kRgb;
};

// image: uint8 [H, W, C], C 1 for Grayscale and 3 otherwise; H and W come from the data.
void infer_image_decoder(TypeInferenceContext& context) {
  const Attribute* format = context.node().find_attribute("pixel_format");
  const bool gray = format && format->s == "Grayscale";
  context.set_output(
      0, tensor_type(DType::kUInt8, std::vector<Dim>{Dim{}, Dim{}, Dim::known(gray ? 1 : 3)}));
}

}  // namespace

void register_image_ops(OpRegistry& registry) {
  registry.add("ImageDecoder", {20},
               OpDefinition(kernel_factory<ImageDecoderKernel>()).with_types(infer_image_decoder));
}

}  // namespace onnxkit
