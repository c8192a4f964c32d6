#include "engine/base/timeline.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/base/config.h"
#include "engine/base/log.h"

namespace caravan {

std::unique_ptr<Timeline> Timeline::from_config(const JobConfig& c, std::string path,
                                                std::string process) {
  if (!c.trace_on) return nullptr;
  return std::make_unique<Timeline>(c.trace_start_step, c.trace_end_step,
                                    static_cast<size_t>(c.trace_max_events), std::move(path),
                                    std::move(process));
}

Timeline::Timeline(int start_step, int end_step, size_t max_events, std::string path,
                   std::string process)
    : start_step_(start_step),
      end_step_(end_step),
      max_events_(max_events),
      path_(std::move(path)),
      process_(std::move(process)) {
  // Shown whatever BYTEPS_LOG_LEVEL says: the user asked for the file.
  LogLine(CARAVAN_LOG_INFO) << "timeline: tracing steps " << start_step << " to " << end_step - 1
                            << " into " << path_ << " (BYTEPS_TRACE_ON=1)";
}

Timeline::~Timeline() { write(); }

int64_t Timeline::now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int Timeline::next_step(const std::string& row) {
  std::unique_lock<std::mutex> lock(mu_);
  int step = steps_[row]++;
  if (step >= end_step_ && !reached_end_) {
    reached_end_ = true;
    maybe_write_locked(lock);
  }
  return step;
}

void Timeline::saw_step(int step) {
  if (step < end_step_) return;
  std::unique_lock<std::mutex> lock(mu_);
  if (reached_end_) return;
  reached_end_ = true;
  maybe_write_locked(lock);
}

void Timeline::begin(int) {
  std::lock_guard<std::mutex> lock(mu_);
  ++open_;
}

void Timeline::end() {
  std::unique_lock<std::mutex> lock(mu_);
  if (open_ > 0) --open_;
  maybe_write_locked(lock);
}

void Timeline::maybe_write_locked(std::unique_lock<std::mutex>&) {
  if (reached_end_ && open_ == 0 && !written_) write_locked();
}

int Timeline::row_locked(const std::string& name) {
  auto [it, fresh] = rows_.emplace(name, static_cast<int>(row_names_.size()) + 1);
  if (fresh) row_names_.push_back(name);
  return it->second;
}

void Timeline::add(const char* stage, const std::string& row, int64_t start_us, int64_t end_us,
                   std::string args) {
  std::lock_guard<std::mutex> lock(mu_);
  if (written_) return;
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(Event{stage, row_locked(row), start_us,
                          end_us > start_us ? end_us - start_us : 0, std::move(args)});
}

std::string Timeline::json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool Timeline::write() {
  std::lock_guard<std::mutex> lock(mu_);
  return write_locked();
}

bool Timeline::write_locked() {
  if (written_) return true;
  written_ = true;
  std::error_code ec;
  std::filesystem::path file(path_);
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::string tmp = path_ + ".tmp";
  std::ofstream out(tmp, std::ios::trunc);
  if (!out) {
    Log::write(CARAVAN_LOG_ERROR, "timeline: cannot write " + tmp + " (BYTEPS_TRACE_DIR)" +
                                      (ec ? ": " + ec.message() : std::string()));
    return false;
  }
  int pid = static_cast<int>(getpid());
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"process\":" << json_string(process_)
      << ",\"start_step\":" << start_step_ << ",\"end_step\":" << end_step_
      << ",\"dropped_events\":" << dropped_ << "},\"traceEvents\":[\n";
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << pid
      << ",\"tid\":0,\"args\":{\"name\":" << json_string(process_) << "}}";
  for (size_t i = 0; i < row_names_.size(); ++i)
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << i + 1
        << ",\"args\":{\"name\":" << json_string(row_names_[i]) << "}}";
  for (const Event& e : events_)
    out << ",\n{\"name\":\"" << e.stage << "\",\"cat\":\"push_pull\",\"ph\":\"X\",\"pid\":" << pid
        << ",\"tid\":" << e.row << ",\"ts\":" << e.start_us << ",\"dur\":" << e.dur_us
        << ",\"args\":{" << e.args << "}}";
  out << "\n]}\n";
  out.close();
  if (!out || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    Log::write(CARAVAN_LOG_ERROR, "timeline: writing " + path_ + " failed (BYTEPS_TRACE_DIR)");
    return false;
  }
  LogLine(CARAVAN_LOG_INFO) << "timeline: wrote " << events_.size() << " events to " << path_
                            << (dropped_ ? " (" + std::to_string(dropped_) +
                                               " dropped past CARAVAN_TRACE_MAX_EVENTS)"
                                         : std::string());
  events_.clear();
  events_.shrink_to_fit();
  return true;
}

}  // namespace caravan
