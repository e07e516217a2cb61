// Heap blocks for tensors: 64-byte aligned; large ones on 2 MiB boundaries with transparent
// huge pages requested, because first touches of fresh memory are page faults, and 4 KiB
// faults are slow on virtual machines (~16 us each here: 0.6 s to first write 154 MB, 15 ms
// with huge pages).
#pragma once

#include <cstddef>

namespace onnxkit {

// A block of at least `bytes` (never zero), rounded to what was reserved in `capacity`.
// Throws std::bad_alloc. Freed with std::free.
std::byte* allocate_block(size_t bytes, size_t& capacity);

}  // namespace onnxkit
