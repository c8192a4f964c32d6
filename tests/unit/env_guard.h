// Sets and unsets environment variables for one test and puts back what was
// there before, so tests do not leak into each other.
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

namespace caravan::test {

class EnvGuard {
 public:
  EnvGuard() = default;
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  ~EnvGuard() {
    for (auto& [name, old] : saved_) {
      if (old)
        ::setenv(name.c_str(), old->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }

  EnvGuard& set(const std::string& name, const std::string& value) {
    remember(name);
    ::setenv(name.c_str(), value.c_str(), 1);
    return *this;
  }
  EnvGuard& unset(const std::string& name) {
    remember(name);
    ::unsetenv(name.c_str());
    return *this;
  }

 private:
  void remember(const std::string& name) {
    if (saved_.count(name)) return;
    const char* v = std::getenv(name.c_str());
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace caravan::test
