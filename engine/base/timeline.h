// BytePS's communication timeline (BYTEPS_TRACE_ON=1): the stages each
// partition of a push_pull passes, on workers and on servers, as Chrome
// trace events (chrome://tracing, Perfetto). Only the steps from
// BYTEPS_TRACE_START_STEP up to (not including) BYTEPS_TRACE_END_STEP are
// kept, a step being one push_pull of a tensor (a round of a key on a
// server), counted per tensor as BytePS does; the file is written once
// every traced step has finished and some tensor has reached the end step,
// or at shutdown. At most CARAVAN_TRACE_MAX_EVENTS events are held: the
// rest are counted, and the file says how many were dropped.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace caravan {

struct JobConfig;

class Timeline {
 public:
  // The worker's or server's timeline as JobConfig sets it, writing to
  // `path`, its events labelled `process` ("worker 0 (pid 12 at ...)");
  // nullptr when BYTEPS_TRACE_ON is not 1.
  static std::unique_ptr<Timeline> from_config(const JobConfig& config, std::string path,
                                               std::string process);
  Timeline(int start_step, int end_step, size_t max_events, std::string path, std::string process);
  ~Timeline();  // writes the file if it was not written yet

  // Microseconds since the Unix epoch: one clock for every node of a host.
  static int64_t now_us();

  // The step of the push_pull of `row` that starts now (0 for its first),
  // counted whether or not it is traced.
  int next_step(const std::string& row);
  bool traced(int step) const { return step >= start_step_ && step < end_step_; }
  // A traced step begins and ends: the file is written when none is open
  // and some step has reached end_step.
  void begin(int step);
  void end();
  // A step at or past end_step was seen (a server learns it from rounds).
  void saw_step(int step);

  // One complete event ("ph": "X") on the row named `row` (a tensor, or a
  // key on a server). `args` is the body of a JSON object, already escaped
  // (json_string below).
  void add(const char* stage, const std::string& row, int64_t start_us, int64_t end_us,
           std::string args);

  // Writes the file now (if not yet written); returns false, logging why,
  // when it cannot.
  bool write();

  static std::string json_string(const std::string& s);

 private:
  struct Event {
    const char* stage;
    int row;
    int64_t start_us, dur_us;
    std::string args;
  };
  int row_locked(const std::string& name);
  void maybe_write_locked(std::unique_lock<std::mutex>& lock);
  bool write_locked();

  const int start_step_, end_step_;
  const size_t max_events_;
  const std::string path_, process_;
  std::mutex mu_;
  std::unordered_map<std::string, int> steps_;  // next step per row name
  std::unordered_map<std::string, int> rows_;   // row name -> tid
  std::vector<std::string> row_names_;
  std::vector<Event> events_;
  uint64_t dropped_ = 0;
  int open_ = 0;
  bool reached_end_ = false, written_ = false;
};

}  // namespace caravan
