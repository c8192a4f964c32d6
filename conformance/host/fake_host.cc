#include "fake_host.h"

#include <cstdio>
#include <cstdlib>

namespace caravan::conformance {

FakeHost::FakeHost(std::string plugin_name, Params params, std::optional<Params> env)
    : name_(std::move(plugin_name)), params_(std::move(params)), env_(std::move(env)) {
  table_.struct_size = sizeof table_;
  table_.host_ctx = this;
  table_.log = [](void* ctx, caravan_log_level level, const char* message) {
    auto* self = static_cast<FakeHost*>(ctx);
    std::string text = message ? message : "";
    // Warnings and errors are what a reader of a failed test wants to see;
    // the rest is kept for the test alone.
    if (level >= CARAVAN_LOG_WARNING)
      std::fprintf(stderr, "[%s %d] %s\n", self->name_.c_str(), static_cast<int>(level),
                   text.c_str());
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->lines_.push_back({level, std::move(text)});
  };
  table_.get_param = [](void* ctx, const char* name) -> const char* {
    auto* self = static_cast<FakeHost*>(ctx);
    auto it = self->params_.find(name);
    return it == self->params_.end() ? nullptr : it->second.c_str();
  };
  table_.get_env = [](void* ctx, const char* name) -> const char* {
    auto* self = static_cast<FakeHost*>(ctx);
    if (!self->env_) return std::getenv(name);
    auto it = self->env_->find(name);
    return it == self->env_->end() ? nullptr : it->second.c_str();
  };
  table_.set_error = [](void* ctx, const char* message) {
    auto* self = static_cast<FakeHost*>(ctx);
    std::lock_guard<std::mutex> lock(self->mutex_);
    self->error_ = message ? message : "";
  };
}

std::string FakeHost::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void FakeHost::clear_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  error_.clear();
}

std::vector<std::string> FakeHost::lines(caravan_log_level at_least) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const Line& l : lines_)
    if (l.level >= at_least) out.push_back(l.text);
  return out;
}

std::string FakeHost::find_line(const std::string& start) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Line& l : lines_)
    if (l.text.compare(0, start.size(), start) == 0) return l.text;
  return "";
}

bool add_param(const std::string& name_value, Params* params) {
  size_t eq = name_value.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  (*params)[name_value.substr(0, eq)] = name_value.substr(eq + 1);
  return true;
}

}  // namespace caravan::conformance
