// Where a reducer's arrays live: host memory, or GPU memory when the reducer
// reports CAP_DEVICE_MEMORY. Arrays sit at a chosen byte offset with canary
// bytes on both sides, so a kernel that writes past either end is caught.
#ifndef CARAVAN_TESTS_REDUCER_CONFORMANCE_MEMORY_H
#define CARAVAN_TESTS_REDUCER_CONFORMANCE_MEMORY_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace caravan::conformance {

class Memory {
 public:
  virtual ~Memory() = default;
  // Host memory is used in place; device memory goes through a host mirror.
  virtual bool host_visible() const = 0;
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void to_host(void* dst, const void* src, size_t bytes) = 0;
  // What the reducer gets as `stream`, and the wait for its work.
  virtual void* stream() = 0;
  // Empty when the work finished; otherwise what went wrong.
  virtual std::string synchronize() = 0;
};

std::unique_ptr<Memory> host_memory();
// NULL with *why_not set when this build or machine has no GPU memory.
std::unique_ptr<Memory> device_memory(std::string* why_not);

class Buffer {
 public:
  Buffer(Memory& memory, size_t bytes, size_t offset);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* ptr() { return static_cast<uint8_t*>(base_) + kGuard + offset_; }
  // Fills the array (which starts out indeterminate) and, for device
  // memory, copies it and the canaries over.
  void upload(const uint8_t* data);
  // After this, data() holds what the reducer wrote.
  void download();
  const uint8_t* data() const { return host_ + kGuard + offset_; }
  bool guards_intact() const;

 private:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kCanary = 0xA5;
  Memory& memory_;
  size_t bytes_, offset_, total_;
  void* base_;
  std::vector<uint8_t> mirror_;
  uint8_t* host_;
};

}  // namespace caravan::conformance

#endif  // CARAVAN_TESTS_REDUCER_CONFORMANCE_MEMORY_H
