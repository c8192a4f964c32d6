#include "connection.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>

#include "device.h"

namespace caravan::van_verbs {

namespace {
constexpr char kScheme[] = "verbs://";
constexpr uint32_t kMagic = 0x42565243;  // "CRVB"
constexpr uint16_t kVersion = 1;

template <class T>
void put(unsigned char* out, size_t at, T v) {
  std::memcpy(out + at, &v, sizeof v);
}
template <class T>
T get(const unsigned char* in, size_t at) {
  T v;
  std::memcpy(&v, in + at, sizeof v);
  return v;
}
}  // namespace

std::string format_address(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, host, sizeof host);
    return std::string(kScheme) + "[" + host + "]:" + std::to_string(port_of(sa));
  }
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, host, sizeof host);
  return std::string(kScheme) + host + ":" + std::to_string(port_of(sa));
}

uint16_t port_of(const sockaddr* sa) {
  if (sa->sa_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
  if (sa->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  return 0;
}

bool is_loopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  return false;
}

bool lookup_host(const std::string& host, int port, sockaddr_storage* out, std::string* why) {
  std::string node = host;
  if (node.size() > 2 && node.front() == '[' && node.back() == ']')
    node = node.substr(1, node.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(node.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    *why = gai_strerror(rc);
    return false;
  }
  // IPv4 first: rdma_cm over RoCE and IPoIB is most often configured for it.
  const addrinfo* pick = res;
  for (const addrinfo* a = res; a; a = a->ai_next)
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  std::memset(out, 0, sizeof *out);
  std::memcpy(out, pick->ai_addr, pick->ai_addrlen);
  freeaddrinfo(res);
  return true;
}

bool parse_address(const std::string& text, sockaddr_storage* out, std::string* why) {
  const size_t n = sizeof kScheme - 1;
  if (text.compare(0, n, kScheme) != 0) {
    *why = "does not start with verbs://";
    return false;
  }
  std::string rest = text.substr(n);
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    *why = "has no host:port";
    return false;
  }
  std::string host = rest.substr(0, colon), port_text = rest.substr(colon + 1);
  if (host.front() == '[') {
    if (host.back() != ']') {
      *why = "has an unclosed [";
      return false;
    }
    host = host.substr(1, host.size() - 2);
  }
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (*end != '\0' || port < 1 || port > 65535) {
    *why = "has port '" + port_text + "'";
    return false;
  }
  std::memset(out, 0, sizeof *out);
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    return true;
  }
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    return true;
  }
  *why = "has host '" + host + "', not an IP address";
  return false;
}

void encode_greeting(const Greeting& g, unsigned char out[kGreetingBytes]) {
  put<uint32_t>(out, 0, kMagic);
  put<uint16_t>(out, 4, kVersion);
  put<uint16_t>(out, 6, g.listen_port);
  put<uint64_t>(out, 8, g.instance);
}

// Transports may pad private data, so only a short one is refused.
bool decode_greeting(const void* data, size_t len, Greeting* out) {
  if (!data || len < kGreetingBytes) return false;
  auto* in = static_cast<const unsigned char*>(data);
  if (get<uint32_t>(in, 0) != kMagic || get<uint16_t>(in, 4) != kVersion) return false;
  out->listen_port = get<uint16_t>(in, 6);
  out->instance = get<uint64_t>(in, 8);
  return out->instance != 0;
}

int create_qp(rdma_cm_id* id, const Device& dev) {
  ibv_qp_init_attr qa{};
  qa.send_cq = dev.cq();
  qa.recv_cq = dev.cq();
  qa.srq = dev.srq();
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 1;
  qa.cap.max_send_wr = static_cast<uint32_t>(dev.send_depth());
  qa.cap.max_send_sge = 1;
  if (rdma_create_qp(id, dev.pd(), &qa) != 0) return errno ? errno : EIO;
  return 0;
}

rdma_conn_param conn_param(const Device& dev, const unsigned char* greeting,
                           const rdma_conn_param* request) {
  rdma_conn_param p{};
  p.private_data = greeting;
  p.private_data_len = kGreetingBytes;
  // Remote reads are the rendezvous path: allow as many outstanding as the
  // device does, both ways (rdma_cm lowers them to what the peer offers).
  p.initiator_depth = dev.max_rd_atomic();
  p.responder_resources = dev.max_dest_rd_atomic();
  if (request) {
    p.initiator_depth = std::min(p.initiator_depth, request->responder_resources);
    p.responder_resources = std::min(p.responder_resources, request->initiator_depth);
  }
  p.retry_count = 7;
  p.rnr_retry_count = 7;  // a receiver out of posted buffers: wait, never fail
  return p;
}

int post(Conn& c, const Pending& p) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(p.buf);
  sge.length = static_cast<uint32_t>(p.len);
  sge.lkey = p.lkey;
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = reinterpret_cast<uintptr_t>(p.ctx);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (p.read || p.write) {
    // A reliable connection acknowledges a write once it is placed, so its
    // completion may be followed by the notice that hands it over.
    wr.opcode = p.read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = p.raddr;
    wr.wr.rdma.rkey = p.rkey;
  } else {
    wr.opcode = IBV_WR_SEND;
  }
  return ibv_post_send(c.cm->qp, &wr, &bad);
}

}  // namespace caravan::van_verbs
