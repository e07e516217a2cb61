// Heap blocks for tensors: 64-byte aligned; large ones on 2 MiB boundaries with transparent
// huge pages requested, because first touches of fresh memory are page faults, and 4 KiB
// faults are slow on virtual machines (~16 us each here: 0.6 s to first write 154 MB, 15 ms
// with huge pages).
#pragma once

#include <cstddef>
#include <memory>

namespace onnxkit {

// A block of at least `bytes` (never zero), rounded to what was reserved in `capacity`.
// Throws std::bad_alloc. Freed with std::free.
std::byte* allocate_block(size_t bytes, size_t& capacity);

class Buffer;
// Uninitialized storage for data that lives as long as a session (prepacked weights): blocks
// of 64 KiB to 8 MiB are carved from shared 32 MiB chunks on 2 MiB pages, so that weights
// too small for pages of their own still get them (each run streams through them; on this
// VM, 4 KiB pages made GEMM-bound runs vary 1.5x). A chunk is freed when the last buffer in
// it dies. Other sizes get a block of their own (allocate_block).
std::shared_ptr<Buffer> allocate_long_lived(size_t bytes);

}  // namespace onnxkit
