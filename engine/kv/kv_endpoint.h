// Key-value messaging over a van: requests with a response each, matched by
// timestamp; incoming requests handed to the application's handler. One
// thread receives from the van; nothing spins.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/kv/kv_message.h"
#include "engine/kv/message_seal.h"
#include "engine/kv/reliability.h"
#include "engine/van/van.h"

namespace caravan {

class KVEndpoint {
 public:
  // Runs on the receive thread.
  using RequestHandler = std::function<void(KVMessage&& request)>;
  // The response, or an error response (head.status < 0) made locally when
  // the request could not be sent (the van's SENT event failed, and
  // PS_RESEND is off) or the job failed. Runs once.
  using ResponseHandler = std::function<void(KVMessage&& response)>;
  // The van no longer reads the request's memory (status OK or an error).
  using SentHandler = std::function<void(caravan_status)>;

  KVEndpoint(Van& van, int my_id, RequestHandler on_request);

  // Messages flagged kRouted (requests and responses alike) go to this
  // handler instead; set before start().
  void set_routed_handler(RequestHandler on_routed) { on_routed_ = std::move(on_routed); }
  // PS_RESEND (timeout in ms, 0 = off) and PS_DROP_MSG; set before start().
  void set_reliability(int resend_timeout_ms, int drop_percent) {
    reliability_ = std::make_unique<Reliability>(resend_timeout_ms, drop_percent);
  }
  // CARAVAN_JOB_TOKEN: seal every message sent and drop every received
  // one whose seal is missing or wrong; set before start(). Throws a config
  // error when the van carries fewer than the 5 segments this needs.
  void set_seal(std::unique_ptr<MessageSeal> seal);
  // The job's generation (the scheduler's NODE_TABLE says it; a suspend or
  // a regroup starts the next): every request carries it, and a message of
  // another is refused, never summed (a node from before a regroup,
  // paused and woken). Routed messages (ps-lite's) are not checked.
  void set_generation(int32_t generation) { generation_ = generation; }
  // Sends a kRouted message as it is (sender filled in); throws when the
  // job already failed.
  void send_routed(int recipient, KVMessage msg, SentHandler on_sent);
  ~KVEndpoint();

  void start();
  // Stops receiving; requests from now on throw. Sends in flight stay
  // with the van, which finishes or drops them; their handlers no longer
  // run, since this endpoint's thread was the only one polling.
  void stop();
  int id() const { return my_id_; }  // this node's id

  // Sends a request to node `recipient`; fills head.sender/recipient/
  // timestamp and the request flag. Throws when the job already failed.
  void request(int recipient, KVMessage msg, ResponseHandler on_response, SentHandler on_sent);
  // Lets the answer to a request about `key` land in `buf` (van_v2.h,
  // lend): the values of the next message on that key with exactly `len`
  // bytes of them. False where the van cannot, and where this endpoint
  // resends or seals: a resent or a stranger's message could then write
  // into memory that is still being sent. After unlend_values() nothing
  // more is written there.
  bool lend_values(uint64_t key, void* buf, size_t len);
  void unlend_values(uint64_t key);
  // Answers `request_head` with `msg` (keys, vals, status set by caller).
  void respond(const wire::Header& request_head, KVMessage msg, SentHandler on_sent);
  // Every pending and later request fails with `why` (code < 0).
  void fail_all(int code, const std::string& why);

  // Sends a probe to each of `peers` and waits until each has echoed it
  // over its own connection back, a send failed, the job failed
  // (fail_all) or `deadline` passed. Returns the peers not heard from,
  // each with what is known (a send error, else empty); empty when every
  // path works both ways. After start(); before any other traffic.
  std::map<int, std::string> probe(const std::vector<int>& peers,
                                   std::chrono::steady_clock::time_point deadline);

 private:
  struct Pending {
    int recipient;
    ResponseHandler on_response;
  };
  struct Outgoing;
  struct VanSend;
  class Inbox;
  void loop();
  void deliver(std::unique_ptr<Van::Received> received);
  // Sends `msg` (head filled in) and keeps it for resending under
  // PS_RESEND. Throws as Van::send.
  void transmit(int recipient, KVMessage& msg, SentHandler on_sent);
  // Hands `out` to the van, sealed when there is a seal; `first` is false
  // for a resend, whose end nobody waits for. Throws as Van::send.
  void van_send(int recipient, const std::shared_ptr<Outgoing>& out, bool first);
  // A message of a header alone (acknowledgement, probe); throws as
  // Van::send does.
  void send_header(int recipient, const wire::Header& h, SentHandler on_sent);
  // Handles kAck, kWantAck and PS_DROP_MSG; false when `h`'s message is
  // not to be delivered.
  bool reliability_filter(const wire::Header& h, const std::string& peer);
  bool lends() const;  // whether lend_values may lend at all
  static KVMessage local_error(const wire::Header& request, int code, const std::string& why);
  // Request `ts` to `recipient` can never be answered: its handler gets a
  // local error with `why` (nothing when it was answered already).
  void unanswerable(int32_t ts, int recipient, const std::string& why);
  // A probe arrived: echo a request, or note an echo.
  void on_probe(const wire::Header& h, const std::string& peer);

  Van& van_;
  int my_id_;
  RequestHandler on_request_;
  RequestHandler on_routed_;
  std::unique_ptr<Reliability> reliability_;
  std::unique_ptr<MessageSeal> seal_;
  std::atomic<int32_t> generation_{0};
  std::mutex mu_;
  std::unordered_map<int32_t, Pending> pending_;
  int32_t next_timestamp_ = 1;
  int failed_code_ = 0;
  std::string failure_;
  struct ProbeRound;
  // The job failed during probe(): it stops waiting.
  static void probe_failed(ProbeRound& round);
  std::shared_ptr<ProbeRound> probe_;  // the probe() under way; guarded by mu_
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace caravan
