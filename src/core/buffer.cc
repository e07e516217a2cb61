#include "core/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "core/block_alloc.h"
#include "core/memory_pool.h"
#include "core/resource_limits.h"
#include "core/status.h"

namespace onnxkit {

std::byte* allocate_block(size_t bytes, size_t& capacity) {
  constexpr size_t kHugePage = size_t{2} << 20;
  // Huge pages pay off from a few of them on; below, 64-byte granules.
  const size_t alignment = bytes >= 2 * kHugePage ? kHugePage : kTensorAlignment;
  // aligned_alloc needs a size that is a multiple of the alignment; never zero.
  capacity = (bytes + alignment - 1) / alignment * alignment;
  if (capacity == 0) capacity = alignment;
  void* memory = std::aligned_alloc(alignment, capacity);
  if (!memory) throw std::bad_alloc();
  if (alignment == kHugePage) ::madvise(memory, capacity, MADV_HUGEPAGE);
  return static_cast<std::byte*>(memory);
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  if (std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec)) {
    return true;
  }
  return std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec) &&
         std::filesystem::equivalent(a, b, ec);
}

namespace {

constexpr size_t kChunkBytes = size_t{32} << 20;
constexpr size_t kMinCarvedBytes = size_t{64} << 10;
constexpr size_t kMaxCarvedBytes = kChunkBytes / 4;

// One chunk of long-lived blocks. Its buffers hold it (as their owner); the allocator holds
// the chunk it is carving from.
class LongLivedChunk final : public BlockOwner {
 public:
  LongLivedChunk() { base_ = allocate_block(kChunkBytes, capacity_); }
  ~LongLivedChunk() override { std::free(base_); }
  // The chunk goes when its last buffer does; nothing to do per block.
  void give_back(std::byte*, size_t) override {}

  std::byte* carve(size_t bytes) {
    if (capacity_ - used_ < bytes) return nullptr;
    std::byte* block = base_ + used_;
    used_ += bytes;
    return block;
  }

 private:
  std::byte* base_ = nullptr;
  size_t capacity_ = 0;
  size_t used_ = 0;
};

}  // namespace

std::shared_ptr<Buffer> allocate_long_lived(size_t bytes) {
  if (bytes < kMinCarvedBytes || bytes > kMaxCarvedBytes) {
    return Buffer::allocate_uninitialized(bytes);
  }
  const size_t capacity = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  static std::mutex mutex;
  static std::weak_ptr<LongLivedChunk> current;
  std::lock_guard lock(mutex);
  // Weakly held: a chunk none of whose buffers is alive is freed at once, not kept for later.
  std::shared_ptr<LongLivedChunk> chunk = current.lock();
  std::byte* block = chunk ? chunk->carve(capacity) : nullptr;
  if (!block) {
    chunk = std::make_shared<LongLivedChunk>();
    current = chunk;
    block = chunk->carve(capacity);
  }
  return Buffer::lent(block, bytes, capacity, std::move(chunk));
}

std::shared_ptr<const FileMapping> FileMapping::open(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO (refused below) would otherwise wait for a writer that may
  // never come; reads of a regular file ignore the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("{}: cannot stat: {}", path.string(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file", path.string());
  }
  std::shared_ptr<FileMapping> mapping(new FileMapping());
  mapping->fd_ = fd;
  mapping->path_ = path;
  mapping->size_ = static_cast<size_t>(st.st_size);
  if (mapping->size_ > 0) {
    void* addr = ::mmap(nullptr, mapping->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) fail("{}: cannot map: {}", path.string(), std::strerror(errno));
    mapping->data_ = static_cast<const std::byte*>(addr);
    // Base pages only. Where the page cache holds the file in 2 MiB folios (a file just
    // written, on recent kernels), a huge mapping brings in the 2 MiB around every small
    // tensor a pass or a run reads, and keeps them, dropped weights included, until the end
    // (BERT-base exported a moment before: peak RSS 610 -> 491 MB).
    ::madvise(addr, mapping->size_, MADV_NOHUGEPAGE);
  }
  return mapping;
}

void FileMapping::release_pages(size_t offset, size_t bytes) const {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (!data_ || offset >= size_) return;
  bytes = std::min(bytes, size_ - offset);
  // Only pages wholly inside the range: a neighbour may still be in use.
  const auto base = reinterpret_cast<uintptr_t>(data_);
  const uintptr_t begin = (base + offset + page - 1) / page * page;
  const uintptr_t end = (base + offset + bytes) / page * page;
  if (begin < end) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

bool FileMapping::populate_pages(size_t offset, size_t bytes) const {
#ifdef MADV_POPULATE_READ
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (!data_ || offset >= size_ || bytes == 0) return true;
  bytes = std::min(bytes, size_ - offset);
  const auto base = reinterpret_cast<uintptr_t>(data_);
  const uintptr_t begin = (base + offset) / page * page;
  const uintptr_t end = base + offset + bytes;
  return ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0;
#else
  (void)offset;
  (void)bytes;
  return false;
#endif
}

FileMapping::~FileMapping() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

std::shared_ptr<Buffer> Buffer::allocate_uninitialized(size_t bytes) {
  AllocationCharge charge(bytes);
  std::shared_ptr<Buffer> buffer(new Buffer());
  size_t capacity = 0;
  buffer->data_ = allocate_block(bytes, capacity);
  buffer->size_ = bytes;
  buffer->capacity_ = capacity;
  buffer->owned_ = true;
  return hold_charge(std::move(buffer), std::move(charge));
}

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  auto buffer = allocate_uninitialized(bytes);
  std::memset(buffer->data_, 0, buffer->capacity_);
  return buffer;
}

std::shared_ptr<Buffer> Buffer::external(void* data, size_t bytes, bool read_only) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->data_ = static_cast<std::byte*>(data);
  buffer->size_ = bytes;
  buffer->capacity_ = bytes;
  buffer->owned_ = !read_only;
  buffer->external_ = true;
  return buffer;
}

std::shared_ptr<Buffer> Buffer::lent(std::byte* data, size_t bytes, size_t capacity,
                                     std::shared_ptr<BlockOwner> owner) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->data_ = data;
  buffer->size_ = bytes;
  buffer->capacity_ = capacity;
  buffer->owned_ = true;
  buffer->owner_ = std::move(owner);
  return buffer;
}

std::shared_ptr<Buffer> Buffer::view(std::shared_ptr<const FileMapping> file, size_t offset,
                                     size_t bytes) {
  if (offset > file->size() || bytes > file->size() - offset) {
    fail("{}: range [{}, {}) lies past the end of the file ({} bytes)", file->path().string(),
         offset, offset + bytes, file->size());
  }
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->data_ = const_cast<std::byte*>(file->data()) + offset;
  buffer->size_ = bytes;
  buffer->region_ = FileRegion{std::move(file), offset};
  return buffer;
}

Buffer::~Buffer() {
  if (region_.file) {
    // A dead view's pages leave the resident set (a folded weight's source, say), so a
    // big model's simplification does not hold both the source and the folded copy.
    region_.file->release_pages(region_.offset, size_);
  } else if (owner_) {
    owner_->give_back(data_, capacity_);
  } else if (owned_ && !external_) {
    std::free(data_);
  }
}

std::byte* Buffer::mutable_data() {
  if (!owned_) fail("internal: write to a read-only file view");
  return data_;
}

}  // namespace onnxkit
