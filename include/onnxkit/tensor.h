// Tensor: dtype + shape + shared storage. Copies share bytes; writers copy first.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "onnxkit/dtype.h"
#include "onnxkit/status.h"

namespace onnxkit {

// Storage behind a tensor (core/buffer.h): owned memory, a pool block, the caller's memory
// or a view of a mapped file. Only onnxkit's own code looks inside.
class Buffer;
struct FileRegion;

// A tensor's dims, outermost first; {} is a scalar.
using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a scalar). Throws on negative dims or overflow.
int64_t shape_numel(std::span<const int64_t> shape);
// "[2,3,4]".
std::string shape_to_string(std::span<const int64_t> shape);

// A dense tensor: element type, shape and row-major data. Copies are cheap and share the
// bytes; the first write through a copy (mutable_data) copies them. Creating one throws
// Error for a negative dim, a dtype without an element size or data that does not fit.
class Tensor {
 public:
  Tensor() = default;
  // Owned, zero-filled storage (strings: empty strings).
  Tensor(DType dtype, Shape shape);
  // Wraps existing bytes (for example a file view); `buffer` must hold the whole tensor.
  static Tensor from_buffer(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer);
  // A tensor over the caller's memory, which must outlive it (IO binding). Writing to
  // the mutable form writes to that memory; the const form is read-only (copied on write).
  static Tensor external(DType dtype, Shape shape, void* data);
  static Tensor external(DType dtype, Shape shape, const void* data);
  // A kString tensor, one string per element.
  static Tensor from_strings(Shape shape, std::vector<std::string> values);
  // A tensor holding a copy of `values` (sizeof(T) must be the dtype's size and
  // values.size() the shape's element count; throws Error otherwise).
  template <typename T>
  static Tensor from_vector(DType dtype, Shape shape, const std::vector<T>& values);

  // False for a default-constructed tensor.
  bool defined() const { return dtype_ != DType::kUndefined; }
  // Element type, dims, rank and element count.
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return numel_; }
  // Bytes of element data (0 for strings).
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  // The element bytes, row-major (not for string tensors).
  const void* raw_data() const;
  // Copies the bytes first if they are shared with another tensor or are a file view.
  void* mutable_raw_data();
  // The elements as T (T must match the dtype: float for kFloat, int64_t for kInt64...).
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  T* mutable_data() {
    return static_cast<T*>(mutable_raw_data());
  }
  // The elements of a kString tensor.
  const std::vector<std::string>& strings() const;
  std::vector<std::string>& mutable_strings();

  // Set when the bytes are a view into a mapped file (model file or external data).
  const FileRegion* file_region() const;
  // For a view of a mapped file: drops its whole pages from the resident set (read back
  // from the file when touched again), e.g. once a kernel has packed its own copy. A no-op
  // for other tensors.
  void release_mapped_pages() const;
  // For a view of a mapped file: maps all its pages in one call before a pass over them.
  void populate_mapped_pages() const;
  // The storage (null for string and default-constructed tensors).
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  // Same dtype, shape and element bytes (or strings).
  bool same_contents(const Tensor& other) const;

  // Metadata an ONNX TensorProto carries besides the data.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& doc_string() const { return doc_string_; }
  void set_doc_string(std::string doc) { doc_string_ = std::move(doc); }

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<Buffer> buffer_;
  std::shared_ptr<std::vector<std::string>> strings_;
  std::string name_;
  std::string doc_string_;
};

template <typename T>
Tensor Tensor::from_vector(DType dtype, Shape shape, const std::vector<T>& values) {
  Tensor tensor(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != tensor.numel() || sizeof(T) != dtype_size(dtype)) {
    throw Error("Tensor::from_vector: size or element type mismatch");
  }
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed: copy one by one
    bool* out = tensor.mutable_data<bool>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  } else if (!values.empty()) {
    std::memcpy(tensor.mutable_raw_data(), values.data(), tensor.nbytes());
  }
  return tensor;
}

}  // namespace onnxkit
