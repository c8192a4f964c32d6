// A thread that wakes every PS_HEARTBEAT_INTERVAL seconds to send a
// heartbeat and to check who has been silent longer than
// PS_HEARTBEAT_TIMEOUT. It sleeps on a condition variable between ticks and
// stops at once when asked.
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
  HeartbeatTimer(int interval_s, std::function<void()> tick)
      : interval_(interval_s), tick_(std::move(tick)) {}
  ~HeartbeatTimer() { stop(); }

  void start() {
    if (interval_ <= 0) return;
    thread_ = std::thread([this] {
      name_this_thread("cv-heartbeat");
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, std::chrono::seconds(interval_), [this] { return stop_; })) {
        lock.unlock();
        tick_();
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
  std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace caravan
