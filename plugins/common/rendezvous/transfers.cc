#include "rendezvous/transfers.h"

#include <string>

namespace caravan::rendezvous {

TransferTable::TransferTable(const Config& cfg, LogFn log, RegisteredMemory& mem,
                             SendCompletions& done)
    : cfg_(cfg), log_(std::move(log)), mem_(mem), done_(done) {}

uint64_t TransferTable::open(uint64_t stream, Prepared& p, SendTicket ticket) {
  uint64_t id = next_id_++;
  auto t = std::make_unique<Transfer>();
  t->stream = stream;
  t->staged = p.staged;
  t->regs = std::move(p.regs);
  t->charged = p.charged;
  p.staged = nullptr;
  p.regs.clear();
  p.charged = 0;
  if (t->staged)
    done_.finished(ticket, CARAVAN_STATUS_OK);
  else
    t->ticket = ticket;
  transfers_.emplace(id, std::move(t));
  return id;
}

void TransferTable::settle(uint64_t xfer, caravan_status status) {
  auto it = transfers_.find(xfer);
  if (it == transfers_.end()) return;
  Transfer& t = *it->second;
  mem_.deregister_segments(&t.regs, &t.charged);
  mem_.send_pool().put(t.staged);
  done_.finished(t.ticket, status);
  transfers_.erase(it);
}

bool TransferTable::on_notice(uint64_t xfer) {
  if (transfers_.count(xfer)) {
    settle(xfer, CARAVAN_STATUS_OK);
    return true;
  }
  return withdrawn_.erase(xfer) > 0;  // read (or failed) after its stream was disconnected
}

void TransferTable::orphan(uint64_t stream) {
  auto withdraw_at =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg_.orphan_grace_ms);
  for (auto& [xfer, t] : transfers_) {
    if (t->stream != stream || t->regs.empty() || t->orphan) continue;
    t->orphan = true;
    t->withdraw_at = withdraw_at;
    orphans_.push_back(xfer);
  }
}

void TransferTable::withdraw_due() {
  if (orphans_.empty()) return;
  auto now = std::chrono::steady_clock::now();
  size_t withdrawn = 0;
  for (auto it = orphans_.begin(); it != orphans_.end();) {
    auto t = transfers_.find(*it);
    if (t == transfers_.end()) {
      it = orphans_.erase(it);
    } else if (now >= t->second->withdraw_at) {
      withdrawn_.insert(*it);
      settle(*it, CARAVAN_STATUS_CLOSED);
      ++withdrawn;
      it = orphans_.erase(it);
    } else {
      ++it;
    }
  }
  if (withdrawn)
    log_(CARAVAN_LOG_INFO,
         std::to_string(withdrawn) + " transfer(s) to a disconnected peer not read within " +
             std::to_string(cfg_.orphan_grace_ms) +
             " ms (orphan grace): their memory is withdrawn and their sends end CLOSED");
}

void TransferTable::settle_all(caravan_status status) {
  while (!transfers_.empty()) settle(transfers_.begin()->first, status);
  orphans_.clear();
}

void TransferTable::clear() {
  orphans_.clear();
  withdrawn_.clear();
}

}  // namespace caravan::rendezvous
