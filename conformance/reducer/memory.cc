#include "memory.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <new>

namespace caravan::conformance {

namespace {

class HostMemory : public Memory {
 public:
  ~HostMemory() override {
    for (auto& block : free_) std::free(block.second);
  }
  bool host_visible() const override { return true; }
  // Freed blocks are kept for the next array: fresh pages from the kernel
  // (faulted in and zeroed) would otherwise cost more than the sums tested.
  void* allocate(size_t bytes) override {
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->first >= bytes) {
        void* p = it->second;
        sizes_[p] = it->first;
        free_.erase(it);
        return p;
      }
    // 64-byte aligned, so that offset 0 really is aligned for every kernel.
    size_t rounded = (bytes + 63) & ~size_t{63};
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    sizes_[p] = rounded;
    return p;
  }
  void release(void* p) override {
    free_.emplace(sizes_.at(p), p);
    sizes_.erase(p);
  }
  void to_device(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void to_host(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void* stream() override { return nullptr; }
  std::string synchronize() override { return ""; }

 private:
  std::multimap<size_t, void*> free_;  // by size, so the smallest that fits is found first
  std::map<void*, size_t> sizes_;
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
  // The array itself is written by upload().
  std::memset(host_, kCanary, kGuard + offset_);
  std::memset(host_ + kGuard + offset_ + bytes_, kCanary, kGuard);
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
