// The ucx van: one UCP context and worker per instance; messages go as
// active messages (wire.h) on an endpoint of the sender's own per peer,
// made from the peer's worker address (fetched over TCP from the address
// the peer listens on: address_exchange.h), so UCX picks the transport per
// peer (shared memory on one host, TCP or RDMA between hosts; UCX_TLS
// chooses). A peer a node sends to gets an endpoint of its own; a node
// receives on the endpoints UCX makes for its peers' (as with van-tcp's
// connections, one per direction).
//
// One lock (ucx_mu_) guards every UCX call and everything UCX's callbacks
// touch. send() posts from the calling thread; poll() drives UCX's progress
// and sleeps on UCX's event file descriptor (ucp_worker_arm) and the van's
// eventfd, so an idle instance uses no CPU.
#ifndef CARAVAN_VAN_UCX_UCX_VAN_H
#define CARAVAN_VAN_UCX_UCX_VAN_H

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "address_exchange.h"
#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"
#include "caravan/plugin/van_v2_cxx.hpp"
#include "events/counted_call.h"
#include "events/held_messages.h"
#include "events/sent_events.h"
#include "inbox.h"
#include "wire.h"

namespace caravan::van_ucx {

class UcxVan;

// A send accepted and not yet reported: the caller's segments, and once
// posted the header and I/O vector UCX reads until it completes.
struct SendOp {
  UcxVan* van = nullptr;
  std::shared_ptr<struct Link> link;
  uint64_t send_id = 0;
  bool internal = false;  // a HELLO: no SENT event
  WireHead head{};
  // The header as sent: room for head, then the segments it carries.
  std::vector<unsigned char> header;
  size_t num_segments = 0;  // in iov: the segments the data holds
  ucp_dt_iov_t iov[CARAVAN_VAN_MAX_SEGMENTS_V2] = {};
  std::string text;  // a HELLO's data
  // Sent as pieces (wire.h): each piece's header, kept until UCX is done.
  std::vector<std::vector<unsigned char>> piece_headers;
  int unfinished = 0;            // UCX sends not completed
  ucs_status_t status = UCS_OK;  // the first that failed, else OK
};

// An endpoint and what its error callback must find (it outlives the
// endpoint, to the instance's end).
struct EndpointOwner {
  UcxVan* van = nullptr;
  ucp_ep_h ep = nullptr;
  std::weak_ptr<struct Link> link;  // a sending endpoint's link
  uint64_t attempt = 0;             // its connection attempt
  uint64_t stream = 0;              // the stream its messages carry (wire.h)
  uint64_t next_seq = 1;
  std::string name;          // for logs: "peer 3 at ucx://..." or "connection from ..."
  bool peer_failure = true;  // made in UCX's PEER error mode
  size_t piece_bytes = 0;    // a large segment goes in pieces of this size; 0: whole
  bool failed = false;
  ucs_status_t status = UCS_OK;  // why it failed
  bool closed = false;
};

// The path to one peer (connect()).
struct Link {
  uint64_t peer = 0;
  std::string address;
  sockaddr_storage target{};
  socklen_t target_len = 0;
  EndpointOwner* endpoint = nullptr;  // the current attempt's
  uint64_t attempt = 0;
  uint64_t token = 0;  // the current attempt's address fetch
  bool up = false;     // the attempt's HELLO is through: sends are posted
  bool ever_up = false;
  bool closed = false;                        // disconnected
  std::string failed;                         // why the link broke; empty while it works
  std::deque<std::unique_ptr<SendOp>> queue;  // accepted before the link was up
};

class UcxVan {
  CARAVAN_VAN_V2_CLASS(UcxVan)
  void lend(uint64_t slot, size_t segment, void* buf, size_t len);
  void unlend(uint64_t slot);

 private:
  friend struct Callbacks;

  // A call into the instance, which finalize waits for.
  using Call = plugin::CountedCall<UcxVan>;
  friend Call;

  // All under ucx_mu_.
  void start_attempt(const std::shared_ptr<Link>& link, int delay_ms);
  void fetched(uint64_t token, bool ok, const std::string& text);
  void attempt_failed(Link& link, ucs_status_t status);
  void link_up(const std::shared_ptr<Link>& link);
  void link_lost(Link& link, const std::string& why);
  void post(const std::shared_ptr<Link>& link, std::unique_ptr<SendOp> op);
  // Posts one UCX send of the op (a piece, or the whole message).
  void post_send(SendOp& op, ucp_ep_h ep, const std::vector<unsigned char>& header,
                 const void* buffer, size_t count, ucp_datatype_t datatype, uint32_t flags);
  // One of the op's UCX sends is over; the last reports the op.
  void send_done(SendOp& op, ucs_status_t status);
  void fail_queue(Link& link, caravan_status status);
  void progress();
  std::string open_ucx(const std::string& net_devices);
  // Builds the op's header and says which segments its data holds.
  void lay_out(SendOp& op, bool inline_small);
  void close_ucx();
  void restrict_to_interface(const std::string& host);
  void settle_incoming();
  void* force_close(EndpointOwner& owner);
  void sent(SendOp& op, ucs_status_t status);

  // Wakes a poll() asleep in epoll_wait.
  void wake();
  void notify_poller();

  plugin::Host host_;
  int retry_ms_ = 100;
  int close_timeout_ms_ = 5000;
  std::string transport_;          // properties()' text
  bool peer_failure_ = true;       // endpoints in PEER error mode (PEER_FAILURE)
  bool peer_failure_auto_ = true;  // falls back to none where the transports lack it
  size_t piece_bytes_ = 0;         // PIECE_BYTES

  // Instance state: closing, calls.
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  bool closing_ = false;

  std::mutex poll_mu_;  // one poller at a time
  int epoll_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> interrupted_{false};

  std::mutex ucx_mu_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int worker_fd_ = -1;
  size_t most_inline_ = 0;   // bytes of small segments a header may carry (wire.h)
  bool finalizing_ = false;  // the destructor has begun closing endpoints
  bool listened_ = false;
  std::string address_;  // listen()'s, the name our HELLOs give
  uint64_t next_token_ = 1;
  std::unordered_map<uint64_t, std::weak_ptr<Link>> fetching_;  // by token
  std::unique_ptr<Inbox> inbox_;
  std::unordered_map<uint64_t, std::shared_ptr<Link>> links_;  // by peer
  // Every endpoint made, to the instance's end. None is closed before: in
  // UCX 1.13 an endpoint closed after it failed could still be reached by
  // failure handling UCX had scheduled (a use after free inside
  // ucp_worker_progress), and ucp_worker_destroy closes them all.
  std::vector<std::unique_ptr<EndpointOwner>> endpoints_;
  // Working endpoints of disconnected links, by address: connecting the
  // address again goes on where they stopped, so messages sent before the
  // disconnect still arrive before those sent after (van_v2.h's order).
  std::unordered_map<std::string, EndpointOwner*> parked_;
  std::unordered_set<SendOp*> in_flight_;
  uint64_t next_stream_ = 0;
  std::deque<EndpointOwner*> failed_;  // endpoints UCX reported failed, to handle
  // Counts what a poller must look at (sends posted, events queued): one
  // about to sleep looks again when it moved since its progress.
  uint64_t epoch_ = 0;
  bool polling_ = false;  // a poller is (about to be) asleep

  // Last of the state it calls into, so it stops first.
  std::unique_ptr<AddressExchange> exchange_;

  plugin::SentEvents sent_;
  plugin::HeldMessages<Incoming> held_;
};

}  // namespace caravan::van_ucx

#endif  // CARAVAN_VAN_UCX_UCX_VAN_H
