#include "rendezvous/grant_table.h"

namespace caravan::rendezvous {

const Grant* GrantTable::lend(const InMsg& m) {
  if (!m.slot || closed_) return nullptr;
  uint64_t id = m.grant;
  if (id) {
    grants_.at(id).busy = false;
  } else {
    StreamSlot slot{m.src->stream, m.slot};
    if (grant_of_.count(slot) || lent_bytes_ + m.pooled->capacity > cache_bytes_) return nullptr;
    id = next_id_++;
    grants_[id] = Grant{id, m.src, m.slot, m.pooled, false};
    grant_of_[slot] = id;
    lent_bytes_ += m.pooled->capacity;
    ++lent_;
  }
  return &grants_.at(id);
}

Grant* GrantTable::claim(uint64_t id, const Source* src, uint64_t total) {
  auto g = grants_.find(id);
  if (g == grants_.end() || g->second.src != src || g->second.busy ||
      total > g->second.buf->capacity)
    return nullptr;
  g->second.busy = true;
  return &g->second;
}

Buffer* GrantTable::take_back(uint64_t stream, uint64_t id) {
  auto g = grants_.find(id);
  if (g == grants_.end() || g->second.src->stream != stream || g->second.busy) return nullptr;
  Buffer* b = g->second.buf;
  grant_of_.erase({stream, g->second.slot});
  lent_bytes_ -= b->capacity;
  grants_.erase(g);
  return b;
}

void GrantTable::offer(uint64_t stream, uint64_t slot, const RemoteGrant& g) {
  offers_[{stream, slot}] = g;
}

bool GrantTable::take_offer(uint64_t stream, uint64_t slot, RemoteGrant* out) {
  auto it = offers_.find({stream, slot});
  if (it == offers_.end()) return false;
  *out = it->second;
  offers_.erase(it);
  return true;
}

void GrantTable::forget_offers(uint64_t stream) {
  auto it = offers_.lower_bound({stream, 0});
  while (it != offers_.end() && it->first.first == stream) it = offers_.erase(it);
}

void GrantTable::clear() {
  grants_.clear();
  grant_of_.clear();
  offers_.clear();
}

}  // namespace caravan::rendezvous
