// KVEndpoint::probe: each van path a node opened carries a round trip
// before any traffic, so a path that cannot (a wrong address, a firewall,
// an interface the peer cannot reach) is named at start-up.
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/kv/kv_endpoint.h"

namespace caravan {

// Shared with the handlers of the probes' sends, which run on the
// receiving thread, possibly after probe() returned.
struct KVEndpoint::ProbeRound {
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, std::string> unanswered;  // peer -> why, when a send failed
  bool send_failed = false;
  bool job_failed = false;

  void failed(int peer, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = unanswered.find(peer);
    if (it == unanswered.end()) return;
    it->second = why;
    send_failed = true;
    cv.notify_all();
  }
};

void KVEndpoint::probe_failed(ProbeRound& round) {
  std::lock_guard<std::mutex> lock(round.mu);
  round.job_failed = true;
  round.cv.notify_all();
}

std::map<int, std::string> KVEndpoint::probe(const std::vector<int>& peers,
                                             std::chrono::steady_clock::time_point deadline) {
  auto round = std::make_shared<ProbeRound>();
  for (int p : peers) round->unanswered[p] = "";
  {
    std::lock_guard<std::mutex> lock(mu_);
    round->job_failed = failed_code_ != 0;
    probe_ = round;
  }
  for (int p : peers) {
    wire::Header h;
    h.type = wire::Type::kProbe;
    h.flags = wire::kRequest;
    h.sender = my_id_;
    h.recipient = p;
    try {
      send_header(p, h, [round, p](caravan_status s) {
        if (s != CARAVAN_STATUS_OK)
          round->failed(p, "the van could not send the probe (status " + std::to_string(s) + ")");
      });
    } catch (const Error& e) {
      round->failed(p, std::string("the van could not send the probe: ") + e.what());
    }
  }
  std::map<int, std::string> out;
  {
    std::unique_lock<std::mutex> lock(round->mu);
    round->cv.wait_until(lock, deadline, [&] {
      return round->unanswered.empty() || round->send_failed || round->job_failed;
    });
    out = round->unanswered;
  }
  std::lock_guard<std::mutex> lock(mu_);
  probe_.reset();
  return out;
}

void KVEndpoint::on_probe(const wire::Header& h, const std::string& peer) {
  if (h.flags & wire::kRequest) {
    wire::Header echo = h;
    echo.flags = 0;
    echo.sender = my_id_;
    echo.recipient = h.sender;
    try {
      send_header(h.sender, echo, nullptr);
    } catch (const Error& e) {
      // The prober names the path when its probe goes unanswered.
      CARAVAN_LOG(WARNING) << "kv: cannot answer the van probe of node " << h.sender << " (" << peer
                           << "): " << e.what();
    }
    return;
  }
  std::shared_ptr<ProbeRound> round;
  {
    std::lock_guard<std::mutex> lock(mu_);
    round = probe_;
  }
  if (round) {
    std::lock_guard<std::mutex> lock(round->mu);
    if (round->unanswered.erase(h.sender)) {
      round->cv.notify_all();
      return;
    }
  }
  CARAVAN_VLOG(1) << "kv: ignoring a probe echo from node " << h.sender << " (" << peer
                  << "), which this node is not waiting for";
}

}  // namespace caravan
