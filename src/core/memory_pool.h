// A pool of tensor blocks that outlives single runs: a block whose last tensor is gone
// returns to the pool, and the next allocation of a similar size takes it back. After the
// first run of a given input shape, steady-state runs allocate nothing from the system.
//
// Best fit among free blocks of at most twice the request (so a small tensor never pins a
// big block). Thread-safe: concurrent runs of one session share it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "core/buffer.h"
#include "onnxkit/memory_stats.h"

namespace onnxkit {

// Where kernels' output tensors come from during a run (a MemoryPool, or an arena run that
// places them at planned offsets).
class BlockAllocator {
 public:
  virtual ~BlockAllocator() = default;
  // A writable block of at least `bytes`; zero-filled when `zero`.
  virtual std::shared_ptr<Buffer> allocate(size_t bytes, bool zero) = 0;
};

class MemoryPool final : public BlockAllocator,
                         public BlockOwner,
                         public std::enable_shared_from_this<MemoryPool> {
 public:
  static std::shared_ptr<MemoryPool> create();
  ~MemoryPool() override;

  // A block of at least `bytes`; zero-filled when `zero`.
  std::shared_ptr<Buffer> allocate(size_t bytes, bool zero) override;
  void give_back(std::byte* data, size_t capacity) override;
  MemoryPoolStats stats() const;
  void reset_peak();
  // Frees every cached block.
  void trim();
  // Frees every cached block and caches no more: blocks still lent (outputs a caller keeps
  // after its session is gone) go back to the system when released, instead of keeping
  // the pool's cache alive with them.
  void close();

 private:
  MemoryPool() = default;

  mutable std::mutex mutex_;
  std::multimap<size_t, std::byte*> free_;  // capacity -> block
  bool closed_ = false;
  MemoryPoolStats stats_;
};

}  // namespace onnxkit
