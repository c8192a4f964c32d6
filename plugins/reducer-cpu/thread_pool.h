// A small fixed pool for splitting one large sum across cores. Idle workers
// sleep on a condition variable: a reducer is idle most of the time and must
// not burn the cores the training job needs.
#ifndef CARAVAN_REDUCER_CPU_THREAD_POOL_H
#define CARAVAN_REDUCER_CPU_THREAD_POOL_H

#include <pthread.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace caravan::reducer_cpu {

class ThreadPool {
 public:
  // `workers` threads besides the caller, who always takes part.
  explicit ThreadPool(size_t workers) {
    threads_.reserve(workers);
    try {
      for (size_t i = 0; i < workers; ++i)
        threads_.emplace_back([this] {
          pthread_setname_np(pthread_self(), "cv-reduce");  // for top -H and run.sh --cpu
          worker_loop();
        });
    } catch (...) {
      stop_and_join();
      throw;
    }
  }
  ~ThreadPool() { stop_and_join(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return threads_.size() + 1; }

  // Runs task(0) .. task(n-1) and returns when all are done. The engine may
  // call one instance from several threads; a call that finds the pool busy
  // runs its tasks itself rather than queue behind a job of unknown length.
  void run(size_t n, const std::function<void(size_t)>& task) {
    std::unique_lock<std::mutex> job(job_mu_, std::try_to_lock);
    if (!job.owns_lock() || threads_.empty()) {
      for (size_t i = 0; i < n; ++i) task(i);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      task_ = &task;
      num_tasks_ = n;
      next_ = 0;
      finished_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return finished_ == num_tasks_; });
    task_ = nullptr;
  }

 private:
  // Claims and runs tasks of the current job until none are left.
  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (task_ && next_ < num_tasks_) {
      size_t i = next_++;
      const std::function<void(size_t)>* task = task_;
      lock.unlock();
      (*task)(i);
      lock.lock();
      if (++finished_ == num_tasks_) done_.notify_all();
    }
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      work();
    }
  }

  void stop_and_join() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

  std::mutex job_mu_;  // held by the one caller whose job the workers serve
  std::mutex mu_;      // guards everything below
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t num_tasks_ = 0;
  size_t next_ = 0;
  size_t finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace caravan::reducer_cpu

#endif  // CARAVAN_REDUCER_CPU_THREAD_POOL_H
