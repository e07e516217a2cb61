#include "core/memory_pool.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/block_alloc.h"
#include "core/resource_limits.h"

namespace onnxkit {
namespace {

// Rounded block sizes: small blocks to the alignment, large ones to 4 KiB, so blocks of
// nearby sizes are interchangeable.
size_t block_size(size_t bytes) {
  const size_t granule = bytes < 64 * 1024 ? kTensorAlignment : 4096;
  size_t rounded = (bytes + granule - 1) / granule * granule;
  return rounded == 0 ? kTensorAlignment : rounded;
}

}  // namespace

std::shared_ptr<MemoryPool> MemoryPool::create() {
  return std::shared_ptr<MemoryPool>(new MemoryPool());
}

MemoryPool::~MemoryPool() {
  for (auto& [capacity, block] : free_) std::free(block);
}

std::shared_ptr<Buffer> MemoryPool::allocate(size_t bytes, bool zero) {
  AllocationCharge charge(bytes);
  const size_t wanted = block_size(bytes);
  std::byte* block = nullptr;
  size_t capacity = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = free_.lower_bound(wanted);
    if (it != free_.end() && it->first <= 2 * wanted) {
      capacity = it->first;
      block = it->second;
      free_.erase(it);
      stats_.bytes_free -= capacity;
      ++stats_.reuses;
    } else {
      ++stats_.system_allocations;
    }
    capacity = block ? capacity : wanted;
    stats_.bytes_in_use += capacity;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  }
  if (!block) {
    try {
      size_t reserved = 0;
      block = allocate_block(capacity, reserved);
    } catch (const std::bad_alloc&) {
      std::lock_guard lock(mutex_);
      stats_.bytes_in_use -= capacity;
      throw;
    }
  }
  if (zero) std::memset(block, 0, bytes);
  return hold_charge(Buffer::lent(block, bytes, capacity, shared_from_this()), std::move(charge));
}

void MemoryPool::give_back(std::byte* data, size_t capacity) {
  std::lock_guard lock(mutex_);
  stats_.bytes_in_use -= capacity;
  if (closed_) {
    std::free(data);
    return;
  }
  free_.emplace(capacity, data);
  stats_.bytes_free += capacity;
}

MemoryPoolStats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void MemoryPool::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void MemoryPool::close() {
  trim();
  std::lock_guard lock(mutex_);
  closed_ = true;
}

void MemoryPool::trim() {
  std::lock_guard lock(mutex_);
  for (auto& [capacity, block] : free_) std::free(block);
  free_.clear();
  stats_.bytes_free = 0;
}

}  // namespace onnxkit
