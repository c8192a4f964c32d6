// A thread that wakes every PS_HEARTBEAT_INTERVAL seconds to send a
// heartbeat and to check who has been silent longer than
// PS_HEARTBEAT_TIMEOUT. It sleeps on a condition variable between ticks and
// stops at once when asked. A tick that comes more than two intervals after
// the last is told so (`after_stall`): this process itself was not running
// (stopped, or the machine stalled), so its peers' silence over that time
// is not theirs, and what they sent meanwhile has not been read yet.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "engine/base/thread_name.h"

namespace caravan {

class HeartbeatTimer {
 public:
  // `tick` runs on the timer's thread every interval_s seconds; interval 0
  // makes the timer do nothing.
  HeartbeatTimer(int interval_s, std::function<void(bool after_stall)> tick)
      : interval_(interval_s), tick_(std::move(tick)) {}
  ~HeartbeatTimer() { stop(); }

  void start() {
    if (interval_ <= 0) return;
    thread_ = std::thread([this] {
      name_this_thread("cv-heartbeat");
      std::unique_lock<std::mutex> lock(mu_);
      auto last = std::chrono::steady_clock::now();
      while (!cv_.wait_for(lock, std::chrono::seconds(interval_), [this] { return stop_; })) {
        lock.unlock();
        auto now = std::chrono::steady_clock::now();
        tick_(now - last > std::chrono::seconds(2 * interval_));
        last = now;
        lock.lock();
      }
    });
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

 private:
  int interval_;
  std::function<void(bool)> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace caravan
