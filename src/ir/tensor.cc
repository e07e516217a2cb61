#include "onnxkit/tensor.h"

#include <cstring>
#include <limits>

#include "core/buffer.h"
#include "core/resource_limits.h"
#include "core/status.h"

namespace onnxkit {

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) fail("invalid shape {}: negative dimension", shape_to_string(shape));
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim) {
      fail("invalid shape {}: element count overflows", shape_to_string(shape));
    }
    count *= dim;
  }
  return count;
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ",";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(shape_numel(shape_)) {
  if (dtype_ == DType::kString) {
    // Checked against the run's bounds like a numeric tensor, though not held by them.
    AllocationCharge(checked_nbytes(dtype_, numel_, shape_to_string(shape_))).release();
    strings_ = std::make_shared<std::vector<std::string>>(static_cast<size_t>(numel_));
  } else {
    if (dtype_size(dtype_) == 0) fail("cannot create a tensor of type {}", dtype_name(dtype_));
    buffer_ = Buffer::allocate(checked_nbytes(dtype_, numel_, shape_to_string(shape_)));
  }
}

Tensor Tensor::from_buffer(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer) {
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.numel_ = shape_numel(tensor.shape_);
  if (dtype == DType::kString || dtype_size(dtype) == 0) {
    fail("cannot wrap raw bytes as a tensor of type {}", dtype_name(dtype));
  }
  if (!buffer ||
      buffer->size() < checked_nbytes(dtype, tensor.numel_, shape_to_string(tensor.shape_))) {
    fail("tensor of shape {} needs {} bytes, the buffer has {}", shape_to_string(tensor.shape_),
         tensor.nbytes(), buffer ? buffer->size() : 0);
  }
  tensor.buffer_ = std::move(buffer);
  return tensor;
}

Tensor Tensor::external(DType dtype, Shape shape, void* data) {
  const size_t bytes = checked_nbytes(dtype, shape_numel(shape), shape_to_string(shape));
  return from_buffer(dtype, std::move(shape), Buffer::external(data, bytes, false));
}

Tensor Tensor::external(DType dtype, Shape shape, const void* data) {
  const size_t bytes = checked_nbytes(dtype, shape_numel(shape), shape_to_string(shape));
  return from_buffer(dtype, std::move(shape),
                     Buffer::external(const_cast<void*>(data), bytes, true));
}

Tensor Tensor::from_strings(Shape shape, std::vector<std::string> values) {
  Tensor tensor;
  tensor.dtype_ = DType::kString;
  tensor.shape_ = std::move(shape);
  tensor.numel_ = shape_numel(tensor.shape_);
  if (static_cast<int64_t>(values.size()) != tensor.numel_) {
    fail("string tensor of shape {} needs {} values, got {}", shape_to_string(tensor.shape_),
         tensor.numel_, values.size());
  }
  tensor.strings_ = std::make_shared<std::vector<std::string>>(std::move(values));
  return tensor;
}

const FileRegion* Tensor::file_region() const {
  return buffer_ ? buffer_->file_region() : nullptr;
}

void Tensor::release_mapped_pages() const {
  if (const FileRegion* region = file_region())
    region->file->release_pages(region->offset, nbytes());
}

void Tensor::populate_mapped_pages() const {
  if (const FileRegion* region = file_region())
    region->file->populate_pages(region->offset, nbytes());
}

const void* Tensor::raw_data() const {
  if (dtype_ == DType::kString) fail("raw_data() on a string tensor");
  return buffer_ ? buffer_->data() : nullptr;
}

void* Tensor::mutable_raw_data() {
  if (dtype_ == DType::kString) fail("mutable_raw_data() on a string tensor");
  if (!buffer_) return nullptr;
  if (!buffer_->writable() || buffer_.use_count() > 1) {
    auto copy = Buffer::allocate_uninitialized(nbytes());
    if (nbytes()) std::memcpy(copy->mutable_data(), buffer_->data(), nbytes());
    buffer_ = std::move(copy);
  }
  return buffer_->mutable_data();
}

const std::vector<std::string>& Tensor::strings() const {
  if (dtype_ != DType::kString) fail("strings() on a {} tensor", dtype_name(dtype_));
  return *strings_;
}

std::vector<std::string>& Tensor::mutable_strings() {
  if (dtype_ != DType::kString) fail("mutable_strings() on a {} tensor", dtype_name(dtype_));
  if (strings_.use_count() > 1) strings_ = std::make_shared<std::vector<std::string>>(*strings_);
  return *strings_;
}

bool Tensor::same_contents(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (!defined()) return true;
  if (dtype_ == DType::kString) return strings() == other.strings();
  return nbytes() == 0 || std::memcmp(raw_data(), other.raw_data(), nbytes()) == 0;
}

}  // namespace onnxkit
