// ps-lite's environment lookup, as programs such as ps-lite's benchmarks
// use it (Environment::Get()->find("NAME")).
#ifndef PS_INTERNAL_ENV_H_
#define PS_INTERNAL_ENV_H_

#include <cstdlib>

namespace ps {

class Environment {
 public:
  static Environment* Get() {
    static Environment e;
    return &e;
  }
  // The variable's value, or NULL when unset.
  const char* find(const char* k) { return std::getenv(k); }
};

}  // namespace ps

#endif  // PS_INTERNAL_ENV_H_
