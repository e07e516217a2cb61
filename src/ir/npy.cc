#include "ir/npy.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>

#include "core/resource_limits.h"

namespace onnxkit {
namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};

constexpr NpyType kTypes[] = {
    {"<f4", DType::kFloat},     {"<f8", DType::kDouble},      {"<f2", DType::kFloat16},
    {"|i1", DType::kInt8},      {"<i2", DType::kInt16},       {"<i4", DType::kInt32},
    {"<i8", DType::kInt64},     {"|u1", DType::kUInt8},       {"<u2", DType::kUInt16},
    {"<u4", DType::kUInt32},    {"<u8", DType::kUInt64},      {"|b1", DType::kBool},
    {"<c8", DType::kComplex64}, {"<c16", DType::kComplex128},
};

DType dtype_from_descr(std::string descr, const std::string& file) {
  // Single-byte types may be written with '<' or '=' instead of '|'.
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '=')) {
    if (descr[2] == '1') descr[0] = '|';
  }
  if (!descr.empty() && descr[0] == '=') descr[0] = '<';
  for (const auto& type : kTypes) {
    if (descr == type.descr) return type.dtype;
  }
  fail("{}: NumPy dtype '{}' is not supported (little-endian numbers and bool are)", file, descr);
}

}  // namespace

Result<Tensor> read_npy(const std::filesystem::path& path) {
  return capture([&] {
    const std::string file = path.string();
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open", file);
    char magic[8];
    if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
      fail("{}: not a .npy file", file);
    }
    uint32_t header_length = 0;
    if (magic[6] == 1) {
      unsigned char bytes[2];
      in.read(reinterpret_cast<char*>(bytes), 2);
      header_length = bytes[0] | (bytes[1] << 8);
    } else {
      unsigned char bytes[4];
      in.read(reinterpret_cast<char*>(bytes), 4);
      header_length = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (uint32_t(bytes[3]) << 24);
    }
    if (!in || header_length > (1u << 20)) fail("{}: corrupt .npy header", file);
    std::string header(header_length, '\0');
    if (!in.read(header.data(), header_length)) fail("{}: truncated .npy header", file);

    std::smatch match;
    if (!std::regex_search(header, match, std::regex(R"('descr'\s*:\s*'([^']+)')"))) {
      fail("{}: .npy header has no descr", file);
    }
    DType dtype = dtype_from_descr(match[1], file);
    if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"))) {
      fail("{}: Fortran-order arrays are not supported; save with np.ascontiguousarray", file);
    }
    if (!std::regex_search(header, match, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
      fail("{}: .npy header has no shape", file);
    }
    Shape shape;
    std::string dims = match[1];
    std::regex number(R"(\d+)");
    for (auto it = std::sregex_iterator(dims.begin(), dims.end(), number);
         it != std::sregex_iterator(); ++it) {
      shape.push_back(std::stoll(it->str()));
    }
    // The data must be in the file: check its size before allocating what the header claims
    // (a 417-byte file declared terabytes).
    int64_t numel = 1;
    for (int64_t dim : shape) numel = checked_mul(numel, dim, "the .npy shape's element count");
    const size_t needed = checked_nbytes(dtype, numel, shape_to_string(shape));
    const std::streamoff data_start = in.tellg();
    in.seekg(0, std::ios::end);
    const std::streamoff file_end = in.tellg();
    in.seekg(data_start);
    const auto available =
        static_cast<uint64_t>(std::max<std::streamoff>(file_end - data_start, 0));
    if (!in || available < needed) {
      fail("{}: truncated: shape {} needs {} bytes of data, the file holds {}", file,
           shape_to_string(shape), needed, available);
    }
    Tensor tensor(dtype, shape);
    if (tensor.nbytes() && !in.read(static_cast<char*>(tensor.mutable_raw_data()),
                                    static_cast<std::streamsize>(tensor.nbytes()))) {
      fail("{}: truncated: shape {} needs {} bytes of data", file, shape_to_string(shape),
           tensor.nbytes());
    }
    return tensor;
  });
}

Status write_npy(const Tensor& tensor, const std::filesystem::path& path) {
  return capture([&] {
    const NpyType* type = nullptr;
    for (const auto& candidate : kTypes) {
      if (candidate.dtype == tensor.dtype()) type = &candidate;
    }
    if (!type) {
      fail("{}: a {} tensor cannot be written as .npy", path.string(), dtype_name(tensor.dtype()));
    }
    std::string shape;
    for (int64_t dim : tensor.shape()) shape += std::to_string(dim) + ",";
    if (tensor.rank() > 1) shape.pop_back();
    std::string header = "{'descr': '" + std::string(type->descr) +
                         "', 'fortran_order': False, 'shape': (" + shape + "), }";
    // Pad so the data starts on a 64-byte boundary, header ends with '\n'.
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    unsigned char length[2] = {static_cast<unsigned char>(header.size() & 0xff),
                               static_cast<unsigned char>(header.size() >> 8)};
    out.write(reinterpret_cast<char*>(length), 2);
    out << header;
    if (tensor.nbytes()) {
      out.write(static_cast<const char*>(tensor.raw_data()),
                static_cast<std::streamsize>(tensor.nbytes()));
    }
    if (!out) fail("{}: write failed", path.string());
  });
}

}  // namespace onnxkit
