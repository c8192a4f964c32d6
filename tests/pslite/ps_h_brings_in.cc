// Compiled, never run: what a ps-lite program may use after including
// ps/ps.h alone, because ps-lite's ps.h brings it in (its customer.h, van.h
// and dmlc-core's logging.h). dmlc/ps-lite's test_kv_app_multi_workers uses
// std::thread this way; the others print with std::cout.
#include "ps/ps.h"

namespace {

[[maybe_unused]] void uses_what_ps_h_brings_in() {
  std::thread idle;
  std::atomic<int> counter{0};
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<int, int> by_key;
  std::unordered_set<int> seen;
  std::vector<std::pair<int, int>> pairs;
  std::unique_ptr<int> owned;
  std::function<void()> callback;
  std::time_t now = std::time(nullptr);
  std::cout << counter.load() << by_key.size() << seen.size() << pairs.size() << (owned ? 1 : 0)
            << (callback ? 1 : 0) << now << std::endl;
}

}  // namespace

namespace {

// The check macros take any comparable operands, as ps-lite's do (the
// bytedance fork's tests compare iterators); an operand that cannot be
// printed is named so in the failure message.
[[maybe_unused]] void checks_take_iterators() {
  std::unordered_map<int, int> by_key;
  CHECK_EQ(by_key.find(1), by_key.end());
  CHECK_NE(by_key.find(1), by_key.begin()) << "an iterator is not printable";
  CHECK_LT(1, 2) << "numbers still are";
}

}  // namespace
