#include "memory.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace caravan::conformance {

namespace {

class HostMemory : public Memory {
 public:
  bool host_visible() const override { return true; }
  void* allocate(size_t bytes) override {
    // 64-byte aligned, so that offset 0 really is aligned for every kernel.
    void* p = std::aligned_alloc(64, (bytes + 63) & ~size_t{63});
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) override { std::free(p); }
  void to_device(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void to_host(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void* stream() override { return nullptr; }
  std::string synchronize() override { return ""; }
};

}  // namespace

std::unique_ptr<Memory> host_memory() { return std::make_unique<HostMemory>(); }

Buffer::Buffer(Memory& memory, size_t bytes, size_t offset)
    : memory_(memory), bytes_(bytes), offset_(offset), total_(bytes + offset + 2 * kGuard) {
  base_ = memory_.allocate(total_);
  if (memory_.host_visible()) {
    host_ = static_cast<uint8_t*>(base_);
  } else {
    mirror_.resize(total_);
    host_ = mirror_.data();
  }
  std::memset(host_, kCanary, total_);
}

Buffer::~Buffer() { memory_.release(base_); }

void Buffer::upload(const uint8_t* data) {
  if (bytes_) std::memcpy(host_ + kGuard + offset_, data, bytes_);
  if (!memory_.host_visible()) memory_.to_device(base_, host_, total_);
}

void Buffer::download() {
  if (!memory_.host_visible()) memory_.to_host(host_, base_, total_);
}

bool Buffer::guards_intact() const {
  for (size_t i = 0; i < kGuard + offset_; ++i)
    if (host_[i] != kCanary) return false;
  for (size_t i = kGuard + offset_ + bytes_; i < total_; ++i)
    if (host_[i] != kCanary) return false;
  return true;
}

}  // namespace caravan::conformance
