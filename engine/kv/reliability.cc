#include "engine/kv/reliability.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "engine/base/log.h"
#include "engine/base/metrics.h"

namespace caravan {
namespace {

constexpr uint32_t kKindFlags = wire::kRequest | wire::kRouted | wire::kSimple;
// A copy of a message can only arrive while its sender still resends it,
// which ends with the operation's deadline at the latest; ten minutes past
// the last delivery is far beyond any resend interval used in practice.
constexpr auto kSeenHorizon = std::chrono::minutes(10);

}  // namespace

Signature signature_of(const wire::Header& h) {
  return Signature{h.sender,      h.recipient, h.app_id,
                   h.customer_id, h.timestamp, h.flags & kKindFlags};
}

Signature request_signature_of(const wire::Header& response) {
  wire::Header request = response;
  request.sender = response.recipient;
  request.recipient = response.sender;
  request.flags = wire::kRequest;
  return signature_of(request);
}

wire::Header ack_of(const wire::Header& h) {
  wire::Header ack = h;
  ack.type = wire::Type::kAck;
  ack.seg_len[0] = ack.seg_len[1] = ack.seg_len[2] = 0;
  return ack;
}

Reliability::Reliability(int resend_timeout_ms, int drop_percent)
    : timeout_(resend_timeout_ms),
      drop_percent_(drop_percent),
      next_purge_(Clock::now() + kSeenHorizon),
      rng_(static_cast<uint32_t>(getpid())) {
  if (drop_percent_ > 0) {
    CARAVAN_LOG(WARNING) << "PS_DROP_MSG=" << drop_percent_
                         << ": dropping that percentage of received data messages (testing only)";
  }
}

void Reliability::keep(const wire::Header& h, Resend resend) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_[signature_of(h)] = Kept{std::move(resend), Clock::now() + timeout_, 0};
}

void Reliability::acknowledged(const Signature& s) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.erase(s);
}

bool Reliability::first_delivery(const wire::Header& h) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = seen_.emplace(signature_of(h), Clock::now());
  if (!fresh) it->second = Clock::now();
  return fresh;
}

bool Reliability::drop() {
  if (drop_percent_ <= 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return std::uniform_int_distribution<int>(0, 99)(rng_) < drop_percent_;
}

void Reliability::tick() {
  auto now = Clock::now();
  std::vector<std::pair<Signature, Resend>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Called once per received message: scanning every time would cost
    // O(kept) per message under load.
    if (now < next_scan_) return;
    next_scan_ = now + std::max<Clock::duration>(timeout_ / 4, std::chrono::milliseconds(10));
    for (auto& [sig, k] : kept_) {
      if (k.due > now) continue;
      ++k.attempts;
      k.due = now + timeout_;
      due.emplace_back(sig, k.resend);
    }
    if (now >= next_purge_) {
      for (auto it = seen_.begin(); it != seen_.end();)
        it = now - it->second > kSeenHorizon ? seen_.erase(it) : std::next(it);
      next_purge_ = now + kSeenHorizon;
    }
  }
  for (auto& [sig, resend] : due) {
    CARAVAN_VLOG(1) << "resending message " << sig.timestamp << " to node " << sig.recipient
                    << ": no acknowledgement within " << timeout_.count()
                    << " ms (PS_RESEND_TIMEOUT)";
    metrics::registry().resends.add();
    resend();
  }
}

void Reliability::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.clear();
}

}  // namespace caravan
