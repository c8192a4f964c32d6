#include "engine/server/round.h"

#include <algorithm>

namespace caravan {

std::string Round::twice(int rank, uint64_t key, const char* did) const {
  if (!pushed_[static_cast<size_t>(rank)]) return "";
  return "worker " + std::to_string(rank) + " " + did + " key " + std::to_string(key) +
         " twice in one round";
}

void Round::join(int rank, Waiter w) {
  pushed_[static_cast<size_t>(rank)] = true;
  waiting_.push_back(std::move(w));
}

Round Round::roll_over() {
  Round done = std::move(*this);
  pushed_.assign(done.pushed_.size(), false);
  waiting_.clear();
  values = Blob{};
  root = -1;
  traced = false;
  number_ = done.number_ + 1;
  return done;
}

std::vector<Waiter> Round::clear() {
  std::vector<Waiter> told = std::move(waiting_);
  waiting_.clear();
  std::fill(pushed_.begin(), pushed_.end(), false);
  values = Blob{};
  root = -1;
  traced = false;
  return told;
}

}  // namespace caravan
