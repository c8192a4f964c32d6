// This process's tensors by name, for the workers that sum without the
// servers' help: count and dtype fixed at first use, one push_pull in
// flight at a time, rounds counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace caravan {

class TensorSegment;

struct LocalTensor {
  LocalTensor(std::string n, size_t c, int d, bool b);
  ~LocalTensor();

  const std::string name;
  const size_t count;
  const int dtype;
  const bool broadcast;  // used for broadcast, not push_pull
  // Guarded by the registry's mutex:
  uint64_t rounds = 0;  // push_pulls started
  bool in_flight = false;
  int failure_code = 0;  // once it failed for good, every later use fails so
  std::string failure;
  // Set at first use, then left alone (local groups only).
  std::unique_ptr<TensorSegment> segment;
};

class TensorRegistry {
 public:
  // Finds or declares `name`, checks count, dtype and the kind of operation
  // (push_pull or broadcast), and marks it in flight for round
  // `t.rounds - 1`. Throws MISMATCH, BUSY, or the tensor's failure. The
  // caller holds mutex().
  LocalTensor& start(const std::string& name, size_t count, int dtype, bool broadcast);
  // Clears in_flight; with a code, the tensor fails so from now on.
  void finish(LocalTensor& t, int code = 0, const std::string& error = "");
  // Tensors in flight now.
  int in_flight() const { return in_flight_; }

  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  int in_flight_ = 0;
  std::unordered_map<std::string, std::unique_ptr<LocalTensor>> tensors_;
};

}  // namespace caravan
