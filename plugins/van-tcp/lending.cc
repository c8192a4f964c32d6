#include "lending.h"

#include <cstdlib>
#include <cstring>

namespace caravan::van_tcp {

Lend::~Lend() { std::free(moved); }

std::unique_lock<std::mutex> Lend::lock_for_writing() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return !revoking.load(); });
  return lock;
}

void Lending::lend(uint64_t slot, size_t segment, void* buf, size_t len) {
  auto fresh = std::make_shared<Lend>(static_cast<unsigned char*>(buf), len, segment);
  std::shared_ptr<Lend> old;
  bool taken = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& entry = by_slot_[slot];
    old = std::move(entry);
    if (old) taken = old->taken;
    entry = std::move(fresh);
  }
  if (taken) take_back(*old);
}

void Lending::unlend(uint64_t slot) {
  std::shared_ptr<Lend> old;
  bool taken = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_slot_.find(slot);
    if (it == by_slot_.end()) return;
    old = std::move(it->second);
    taken = old->taken;
    by_slot_.erase(it);
  }
  if (taken) take_back(*old);
}

void Lending::take_back(Lend& lend) {
  // 64-byte aligned like the van's own memory (the engine sums in place
  // with vector loads); had before the lock, which the poller waits for.
  void* p = nullptr;
  if (posix_memalign(&p, 64, lend.len ? lend.len : 64) != 0) p = nullptr;
  lend.revoking = true;
  std::lock_guard<std::mutex> lock(lend.mu);
  lend.revoking = false;
  lend.cv.notify_all();  // the poller goes on, after this returns, at the new place
  if (lend.handed_out || lend.moved || !p) {
    // No memory: the buffer must still not be written, so the message goes.
    if (!p && !lend.handed_out && !lend.moved) lend.dead = true;
    std::free(p);
    return;
  }
  // The bytes not written yet are copied too: the poller goes on writing
  // at the same offsets.
  std::memcpy(p, lend.buf, lend.len);
  lend.moved = static_cast<unsigned char*>(p);
}

std::shared_ptr<Lend> Lending::claim(uint64_t slot, const uint64_t* lens, size_t num_segments) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_slot_.find(slot);
  if (it == by_slot_.end()) return nullptr;
  Lend& l = *it->second;
  if (l.taken || l.segment >= num_segments || lens[l.segment] != l.len) return nullptr;
  l.taken = true;
  return it->second;
}

void Lending::unclaim(uint64_t slot, const std::shared_ptr<Lend>& lend) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_slot_.find(slot);
  if (it != by_slot_.end() && it->second == lend) lend->taken = false;
}

unsigned char* Lending::hand_out(uint64_t slot, const std::shared_ptr<Lend>& lend) {
  unsigned char* at;
  {
    std::lock_guard<std::mutex> lock(lend->mu);
    lend->handed_out = true;
    at = lend->where();
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_slot_.find(slot);
  if (it != by_slot_.end() && it->second == lend) by_slot_.erase(it);
  return at;
}

}  // namespace caravan::van_tcp
