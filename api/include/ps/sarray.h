// SArray<V>: a shared, zero-copy array. Copies share the same memory;
// segment() views part of it; the memory is freed when the last SArray (or
// the message that carries it) lets go.
#ifndef PS_SARRAY_H_
#define PS_SARRAY_H_

#include <algorithm>
#include <cstring>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "ps/internal/logging.h"
#include "ps/range.h"

namespace ps {

// Where an array's memory lives (bytedance/ps-lite): the sender's side
// (src) and where the receiver should place it (dst). Caravan's ps-lite
// layer serves host memory; an array in GPU memory is refused by Send
// with an error saying so.
enum DeviceType { UNK, CPU, GPU };
static const char* const DeviceTypeName[] = {"UNK", "CPU", "GPU"};

template <typename V>
class SArray {
 public:
  SArray() {}
  ~SArray() {}

  // n elements, each `val`.
  explicit SArray(size_t size, V val = 0) { resize(size, val); }

  // A view of another SArray's memory as elements of V (byte sizes must
  // divide evenly).
  template <typename W>
  explicit SArray(const SArray<W>& arr) {
    *this = arr;
  }
  template <typename W>
  void operator=(const SArray<W>& arr) {
    size_ = arr.size() * sizeof(W);
    CHECK_EQ(size_ % sizeof(V), 0u) << "cannot view " << size_ << " bytes as elements of "
                                    << sizeof(V) << " bytes";
    size_ /= sizeof(V);
    capacity_ = arr.capacity() * sizeof(W) / sizeof(V);
    ptr_ = std::shared_ptr<V>(arr.ptr(), reinterpret_cast<V*>(arr.data()));
    src_device_type_ = arr.src_device_type_;
    src_device_id_ = arr.src_device_id_;
    dst_device_type_ = arr.dst_device_type_;
    dst_device_id_ = arr.dst_device_id_;
  }

  // Takes `data`; frees it with delete[] when `deletable`, else never.
  SArray(V* data, size_t size, bool deletable = false) {
    if (deletable) {
      reset(data, size, [](V* p) { delete[] p; });
    } else {
      reset(data, size, [](V*) {});
    }
  }
  // Takes `data`; frees it with `deleter`.
  template <typename Deleter>
  SArray(V* data, size_t size, Deleter deleter) {
    reset(data, size, deleter);
  }

  // Takes `data` with its devices (bytedance/ps-lite); deletable only for
  // host memory.
  SArray(V* data, size_t size, DeviceType src_device_type, int src_device_id,
         DeviceType dst_device_type, int dst_device_id, bool deletable = false) {
    if (deletable) {
      CHECK(src_device_type == CPU) << "only host memory can be deleted by SArray";
      reset(data, size, [](V* p) { delete[] p; }, src_device_type, src_device_id, dst_device_type,
            dst_device_id);
    } else {
      reset(data, size, [](V*) {}, src_device_type, src_device_id, dst_device_type,
            dst_device_id);
    }
  }

  // Copies a vector (ps-lite's SArray copies here too).
  SArray(const std::vector<V>& vec) { CopyFrom(vec.data(), vec.size()); }

  template <typename Deleter>
  void reset(V* data, size_t size, Deleter deleter, DeviceType src_device_type = CPU,
             int src_device_id = 0, DeviceType dst_device_type = CPU, int dst_device_id = 0) {
    size_ = size;
    capacity_ = size;
    ptr_.reset(data, deleter);
    src_device_type_ = src_device_type;
    src_device_id_ = src_device_id;
    dst_device_type_ = dst_device_type;
    dst_device_id_ = dst_device_id;
  }

  void CopyFrom(const V* data, size_t size) {
    resize(size);
    if (size) std::memcpy(this->data(), data, size * sizeof(V));
  }
  void CopyFrom(const SArray<V>& other) {
    if (this != &other) CopyFrom(other.data(), other.size());
  }
  template <typename ForwardIt>
  void CopyFrom(const ForwardIt& first, const ForwardIt& last) {
    size_t n = static_cast<size_t>(std::distance(first, last));
    resize(n);
    std::copy(first, last, data());
  }

  // Grows or shrinks; new elements are `val`. Never shrinks the memory.
  void resize(size_t size, V val = 0) {
    size_t old = size_;
    if (capacity_ >= size) {
      size_ = size;
    } else {
      V* fresh = new V[size + 5];
      if (old) std::memcpy(fresh, data(), old * sizeof(V));
      reset(fresh, size, [](V* p) { delete[] p; });
      capacity_ = size + 5;
    }
    if (size <= old) return;
    V* p = data() + old;
    if (val == 0) {
      std::memset(static_cast<void*>(p), 0, (size - old) * sizeof(V));
    } else {
      std::fill(p, p + (size - old), val);
    }
  }
  void reserve(size_t size) {
    if (capacity_ >= size) return;
    size_t old = size_;
    resize(size);
    size_ = old;
  }
  void clear() {
    size_ = 0;
    capacity_ = 0;
    ptr_.reset();
  }

  bool empty() const { return size() == 0; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }

  void push_back(const V& val) {
    if (size_ == capacity_) reserve(size_ * 2 + 5);
    data()[size_++] = val;
  }
  void pop_back() {
    if (size_) --size_;
  }
  void append(const SArray<V>& arr) {
    if (arr.empty()) return;
    size_t old = size_;
    resize(size_ + arr.size());
    std::memcpy(data() + old, arr.data(), arr.size() * sizeof(V));
  }

  // Elements [begin, end) sharing this array's memory.
  SArray<V> segment(size_t begin, size_t end) const {
    CHECK_GE(end, begin);
    CHECK_LE(end, size());
    SArray<V> out;
    out.ptr_ = std::shared_ptr<V>(ptr_, data() + begin);
    out.size_ = end - begin;
    out.capacity_ = end - begin;
    out.src_device_type_ = src_device_type_;
    out.src_device_id_ = src_device_id_;
    out.dst_device_type_ = dst_device_type_;
    out.dst_device_id_ = dst_device_id_;
    return out;
  }

  // "[N bytes, CPU[0]->CPU[0]]", as bytedance/ps-lite prints an array.
  std::string DebugString() const {
    std::ostringstream os;
    os << "[" << size_ * sizeof(V) << " bytes, " << DeviceName(src_device_type_) << "["
       << src_device_id_ << "]->" << DeviceName(dst_device_type_) << "[" << dst_device_id_ << "]]";
    return os.str();
  }

  V back() const {
    CHECK(!empty());
    return data()[size_ - 1];
  }
  V front() const {
    CHECK(!empty());
    return data()[0];
  }
  V* data() const { return ptr_.get(); }
  V& operator[](int i) { return data()[i]; }
  const V& operator[](int i) const { return data()[i]; }
  V* begin() { return data(); }
  const V* begin() const { return data(); }
  V* end() { return data() + size(); }
  const V* end() const { return data() + size(); }

  const std::shared_ptr<V>& ptr() const { return ptr_; }

  // Public, as in bytedance/ps-lite, whose programs read them directly.
  DeviceType src_device_type_ = CPU;
  int src_device_id_ = 0;
  DeviceType dst_device_type_ = CPU;
  int dst_device_id_ = 0;

 private:
  static const char* DeviceName(DeviceType t) {
    return t >= UNK && t <= GPU ? DeviceTypeName[t] : "?";
  }

  size_t size_ = 0;
  size_t capacity_ = 0;
  std::shared_ptr<V> ptr_;
};

// The positions [pos of first element >= lower, pos of first >= upper) in a
// sorted array.
template <typename V>
Range FindRange(const SArray<V>& arr, V lower, V upper) {
  if (upper <= lower) return Range(0, 0);
  auto lb = std::lower_bound(arr.begin(), arr.end(), lower);
  auto ub = std::lower_bound(arr.begin(), arr.end(), upper);
  return Range(static_cast<uint64_t>(lb - arr.begin()), static_cast<uint64_t>(ub - arr.begin()));
}

template <typename V>
std::ostream& operator<<(std::ostream& os, const SArray<V>& obj) {
  os << "[";
  size_t n = obj.size();
  for (size_t i = 0; i < std::min<size_t>(n, 10); ++i) os << (i ? " " : "") << obj[i];
  if (n > 10) os << " ... (" << n << " elements)";
  return os << "]";
}

}  // namespace ps

#endif  // PS_SARRAY_H_
