// One reliable-connected queue pair to a peer, set up with rdma_cm, and the
// text and bytes that connection set-up exchanges: the "verbs://ip:port"
// address and the private data each side sends in its connect request and
// accept reply.
#ifndef CARAVAN_VAN_VERBS_CONNECTION_H
#define CARAVAN_VAN_VERBS_CONNECTION_H

#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

namespace caravan::van_verbs {

class Device;

// "verbs://10.0.0.5:9001" or "verbs://[fe80::1]:9001"; numeric hosts only,
// since the text is what listen() wrote.
std::string format_address(const sockaddr* sa);
bool parse_address(const std::string& text, sockaddr_storage* out, std::string* why);
// A host name or literal and a port; false (with why) when it does not resolve.
bool lookup_host(const std::string& host, int port, sockaddr_storage* out, std::string* why);
bool is_loopback(const sockaddr* sa);
uint16_t port_of(const sockaddr* sa);

// Connection private data: who is calling, so the rendezvous protocol's
// replies (remote reads, completion notices) can take any queue pair to the
// same instance. IB CM leaves 56 bytes for a connect request; this is 16.
struct Greeting {
  uint64_t instance = 0;     // the sender's instance id (its rendezvous name)
  uint16_t listen_port = 0;  // where it listens, for naming it in logs; 0: not listening
};
constexpr size_t kGreetingBytes = 16;
void encode_greeting(const Greeting& g, unsigned char out[kGreetingBytes]);
bool decode_greeting(const void* data, size_t len, Greeting* out);

// A work request the connection could not take yet (not up, or its send
// queue or the shared completion queue full). Kept in order per connection.
struct Pending {
  bool read = false;
  bool write = false;
  void* buf = nullptr;
  size_t len = 0;
  uint32_t lkey = 0;
  uint64_t raddr = 0;
  uint32_t rkey = 0;
  void* ctx = nullptr;
};

struct Conn {
  enum class State { kResolving, kConnecting, kUp, kDown };
  uint64_t id = 0;
  rdma_cm_id* cm = nullptr;
  bool outbound = false;
  bool has_qp = false;
  bool closing = false;       // disconnect() asked: close once the send queue drains
  bool disconnected = false;  // rdma_disconnect called or the peer's arrived
  uint64_t peer = 0;          // the engine's id, outbound only
  uint64_t remote = 0;        // the peer's instance id; 0 until known
  std::string address;        // for messages: the peer's listen address if known
  State state = State::kResolving;
  size_t posted = 0;  // send-queue work requests in flight
  std::deque<Pending> backlog;
};

// Creates the RC queue pair of `id` on the device's PD, CQ and SRQ; returns
// 0 or an errno.
int create_qp(rdma_cm_id* id, const Device& dev);
// Connection parameters for rdma_connect, or for rdma_accept of `request`
// (the read depths are then lowered to what the requester offered).
rdma_conn_param conn_param(const Device& dev, const unsigned char* greeting,
                           const rdma_conn_param* request = nullptr);
// Posts one work request on the connection's queue pair; 0 or an errno.
int post(Conn& c, const Pending& p);

}  // namespace caravan::van_verbs

#endif  // CARAVAN_VAN_VERBS_CONNECTION_H
