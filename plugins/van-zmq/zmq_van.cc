#include "zmq_van.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <zmq.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "events/send_checks.h"
#include "params.h"
#include "tcp/peer_links.h"
#include "tcp/tcp_address.h"

namespace caravan::van_zmq {
namespace {

using plugin::Error;
using Clock = std::chrono::steady_clock;

// Below this size a copy is cheaper than zmq's per-frame allocation, and
// libzmq copies such frames itself anyway (without ever calling the free fn).
constexpr size_t kCopyBelow = 64;

std::string zmq_error() { return zmq_strerror(errno); }

caravan_status status_of_errno(int err) {
  return err == ETERM ? CARAVAN_STATUS_CLOSED : CARAVAN_STATUS_IO;
}

int int_param(const plugin::Host& host, const plugin::Param& param) {
  long long v = param.integer(host);
  if (v > INT_MAX)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                std::string("plugin parameter ") + param.info.name + " is too large");
  return static_cast<int>(v);
}

void set_int(void* sock, int option, int value) {
  if (zmq_setsockopt(sock, option, &value, sizeof value) != 0)
    throw Error(CARAVAN_STATUS_INTERNAL,
                "zmq_setsockopt(" + std::to_string(option) + ") failed: " + zmq_error());
}

bool is_numeric_host(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Something meant as an IPv4 literal (even a malformed one like
// "256.1.1.1") must not go to the resolver, whose lookup could block.
bool looks_dotted(const std::string& host) {
  return !host.empty() && host.find_first_not_of("0123456789.") == std::string::npos;
}

// zmq binds only to literals and interface names, but the ABI allows host
// names: bind to what the name resolves to and advertise the name itself.
std::string bindable_host(const std::string& host) {
  if (host == "*" || is_numeric_host(host) || looks_dotted(host)) return host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    // Not a resolvable name; zmq may still know it as an interface name.
    return host;
  char text[INET6_ADDRSTRLEN] = {0};
  int rc2 =
      getnameinfo(res->ai_addr, res->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST);
  freeaddrinfo(res);
  return rc2 == 0 ? std::string(text) : host;
}

}  // namespace

ZmqVan::ZmqVan(const caravan_host_v1* host) : host_(host) {
  int io_threads = int_param(host_, params::kIoThreads);
  if (io_threads < 1)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "plugin parameter IO_THREADS must be at least 1");
  sndhwm_ = int_param(host_, params::kSndHwm);
  rcvhwm_ = int_param(host_, params::kRcvHwm);
  linger_ms_ = int_param(host_, params::kLingerMs);
  sndbuf_ = plugin::tcp::send_buffer_setting(host_, params::kSndBuf);
  if (linger_ms_ < 1)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter LINGER_MS must be at least 1 (got " + std::to_string(linger_ms_) +
                    "): 0 lets libzmq abort the process");
  // -1 is zmq's spelling of "unlimited"; accept it beside 0.
  if (params::kMaxMessageBytes.given(host_) != "-1")
    max_message_bytes_ = static_cast<size_t>(params::kMaxMessageBytes.integer(host_));

  ctx_ = zmq_ctx_new();
  if (!ctx_) throw Error(CARAVAN_STATUS_UNAVAILABLE, "zmq_ctx_new failed: " + zmq_error());
  if (zmq_ctx_set(ctx_, ZMQ_IO_THREADS, io_threads) != 0) {
    std::string why = zmq_error();
    zmq_ctx_term(ctx_);
    ctx_ = nullptr;
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "IO_THREADS=" + std::to_string(io_threads) + " rejected by zmq: " + why);
  }
}

ZmqVan::~ZmqVan() { shutdown(); }

void ZmqVan::properties(caravan_van_properties_v2* out) const {
  out->caps = CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND;
  out->max_message_bytes = max_message_bytes_ ? max_message_bytes_ : SIZE_MAX;
  out->max_segments = CARAVAN_VAN_MAX_SEGMENTS_V2;
  out->transport = "tcp";
}

void ZmqVan::listen(const char* host, int port, char* addr_out, size_t addr_cap) {
  // Not a structured binding: the lambdas below capture `where` (C++17
  // captures no structured binding).
  const plugin::tcp::ListenRequest checked = plugin::tcp::check_listen(host, port, addr_out);
  const std::string& name = checked.host;
  const std::string& where = checked.where;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) throw Error(CARAVAN_STATUS_CLOSED, "listen on " + where + ": van is closing");
    if (listened_)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "listen on " + where + ": already listening");
    listened_ = true;  // claimed now so a racing second call fails
  }
  std::string bind_host = bindable_host(name);
  std::string endpoint = plugin::tcp::endpoint(bind_host, port ? std::to_string(port) : "*");

  void* sock = zmq_socket(ctx_, ZMQ_ROUTER);
  auto fail = [&](caravan_status status, const std::string& why) {
    if (sock) zmq_close(sock);
    std::lock_guard<std::mutex> lock(mu_);
    listened_ = false;
    throw Error(status, "cannot listen on " + where + " (" + endpoint + "): " + why);
  };
  if (!sock) fail(status_of_errno(errno), zmq_error());
  try {
    set_int(sock, ZMQ_LINGER, 0);
    set_int(sock, ZMQ_RCVHWM, rcvhwm_);
    if (bind_host.find(':') != std::string::npos) set_int(sock, ZMQ_IPV6, 1);
    // zmq checks this per frame, so it never trips on a message whose total
    // is within the limit; a peer that exceeds it is disconnected.
    int64_t max_frame = max_message_bytes_ ? static_cast<int64_t>(max_message_bytes_) : -1;
    if (zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max_frame, sizeof max_frame) != 0)
      throw Error(CARAVAN_STATUS_INTERNAL, "setting ZMQ_MAXMSGSIZE: " + zmq_error());
    // Without a ZAP domain libzmq takes a peer whose first byte is not
    // ZMTP 3's 0xFF for a ZMTP 1.0 peer and hands whatever it sends (random
    // bytes, a raw Caravan header, an HTTP request) to the engine as
    // messages, keeping the connection. With one it refuses such a peer
    // and closes the connection at the handshake. No ZAP handler runs in
    // this context, so every ZMTP 3 peer is still let in.
    static const char kZapDomain[] = "caravan";
    if (zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, kZapDomain, sizeof kZapDomain - 1) != 0)
      throw Error(CARAVAN_STATUS_INTERNAL, "setting ZMQ_ZAP_DOMAIN: " + zmq_error());
  } catch (const Error& e) {
    fail(e.status(), e.what());
  }
  if (zmq_bind(sock, endpoint.c_str()) != 0) {
    int err = errno;
    fail(err == ETERM ? CARAVAN_STATUS_CLOSED : CARAVAN_STATUS_INVALID_ARGUMENT, zmq_strerror(err));
  }
  char last[CARAVAN_VAN_MAX_ADDRESS_V2] = {0};
  size_t last_len = sizeof last;
  if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, last, &last_len) != 0)
    fail(CARAVAN_STATUS_IO, "reading the bound port: " + zmq_error());
  const char* colon = std::strrchr(last, ':');
  if (!colon) fail(CARAVAN_STATUS_INTERNAL, std::string("unexpected bound endpoint ") + last);

  // Advertise the name the engine gave (it may be a host name) with the
  // port zmq actually bound.
  std::string advertised = plugin::tcp::endpoint(name, colon + 1);
  if (advertised.size() + 1 > addr_cap)
    fail(CARAVAN_STATUS_INVALID_ARGUMENT, "address buffer too small for " + advertised);
  std::memcpy(addr_out, advertised.c_str(), advertised.size() + 1);

  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) {
      zmq_close(sock);
      throw Error(CARAVAN_STATUS_CLOSED, "listen on " + where + ": van is closing");
    }
    router_ = sock;
    own_host_ = name;
  }
  completions_.wake();  // a poll() already waiting takes the ROUTER in
  host_.log(CARAVAN_LOG_DEBUG, "listening on " + advertised + " (bound " + last + ")");
}

void ZmqVan::connect(uint64_t peer, const char* address) {
  std::string who = "peer " + std::to_string(peer);
  if (!address || !*address)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "connect " + who + ": address missing");
  std::unique_lock<std::shared_mutex> lock(links_mu_);
  if (closing_) throw Error(CARAVAN_STATUS_CLOSED, "connect " + who + ": van is closing");
  auto it = links_.find(peer);
  if (it != links_.end())
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "connect " + who + " at " + address +
                                                     ": already connected (to " +
                                                     it->second->address + ")");

  void* sock = zmq_socket(ctx_, ZMQ_DEALER);
  if (!sock)
    throw Error(status_of_errno(errno), "connect " + who + " at " + address + ": " + zmq_error());
  try {
    // Not 0: a link closed with linger 0 while zmq's I/O thread is part
    // way through one of its multipart messages, whose connection then
    // fails (the peer died), makes libzmq 4.3 assert and abort the whole
    // process (session_base.cpp:260, clean_pipes). With a linger the
    // closing pipe stays readable, so the half-sent message is cleaned up;
    // the price is that finalize waits up to linger_ms_ for messages
    // queued to a peer that is gone (docs/known-defects.md).
    set_int(sock, ZMQ_LINGER, linger_ms_);
    set_int(sock, ZMQ_SNDHWM, sndhwm_);
    set_int(sock, ZMQ_RCVHWM, rcvhwm_);
    std::string own;
    {
      std::lock_guard<std::mutex> own_lock(mu_);
      own = own_host_;
    }
    if (int bytes = plugin::tcp::send_buffer_for(address, own, sndbuf_))
      set_int(sock, ZMQ_SNDBUF, bytes);
    set_int(sock, ZMQ_TCP_KEEPALIVE, 1);
    if (std::strchr(address, '[')) set_int(sock, ZMQ_IPV6, 1);
    if (zmq_connect(sock, address) != 0) {
      int err = errno;
      throw Error(err == ETERM ? CARAVAN_STATUS_CLOSED : CARAVAN_STATUS_INVALID_ARGUMENT,
                  zmq_strerror(err));
    }
  } catch (const Error& e) {
    zmq_close(sock);
    throw Error(e.status(), "connect " + who + " at " + address + ": " + e.what());
  }
  auto link = std::make_shared<Link>();
  link->sock = sock;
  link->address = address;
  links_.emplace(peer, std::move(link));
}

void ZmqVan::close_link(Link& link) noexcept {
  std::lock_guard<std::mutex> lock(link.mu);
  // Set before closing, so frames zmq discards report CLOSED.
  link.dropped->store(true, std::memory_order_release);
  if (link.sock) zmq_close(link.sock);
  link.sock = nullptr;
}

void ZmqVan::disconnect(uint64_t peer) {
  std::shared_ptr<Link> link;
  {
    std::unique_lock<std::shared_mutex> lock(links_mu_);
    link = plugin::tcp::take_link(links_, peer);
  }
  // Queued messages may go on being sent for up to LINGER_MS; zmq's reaper
  // then drops the rest. Either way their free functions (and so their
  // events, with CLOSED) run on zmq's threads after this returns.
  close_link(*link);
}

// The slot is not used: a TCP stream keeps nothing per kind of message.
void ZmqVan::send(uint64_t peer, uint64_t /*slot*/, const caravan_segment_v2* segments,
                  size_t num_segments, uint64_t send_id) {
  // Built only on failure: send is the hot path.
  std::shared_ptr<Link> link;
  auto who = [&] {
    return "send to peer " + std::to_string(peer) + (link ? " at " + link->address : std::string());
  };
  size_t total = plugin::checked_send_bytes(segments, num_segments, who());
  if (max_message_bytes_ && total > max_message_bytes_)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                who() + ": " + std::to_string(total) +
                    " bytes exceed MAX_MESSAGE_BYTES=" + std::to_string(max_message_bytes_));

  {
    std::shared_lock<std::shared_mutex> lock(links_mu_);
    auto it = links_.find(peer);
    if (it != links_.end()) link = it->second;
  }
  if (!link) {
    if (closing_) throw Error(CARAVAN_STATUS_CLOSED, who() + ": van is closing");
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, who() + ": not connected");
  }

  auto* rec = new SendRecord(completions_, send_id, link->dropped);
  zmq_msg_t frames[CARAVAN_VAN_MAX_SEGMENTS_V2];
  size_t built = 0;
  // Refuses the whole send: nothing reached zmq, so there is no event.
  auto refuse = [&](size_t from, caravan_status status, const std::string& why) {
    for (size_t i = from; i < built; ++i) zmq_msg_close(&frames[i]);
    rec->cancel();
    rec->release();
    throw Error(status, who() + ": " + why);
  };
  for (; built < num_segments; ++built) {
    const caravan_segment_v2& seg = segments[built];
    zmq_msg_t* f = &frames[built];
    if (seg.len < kCopyBelow) {
      if (zmq_msg_init_size(f, seg.len) != 0) refuse(0, CARAVAN_STATUS_NO_MEMORY, zmq_error());
      if (seg.len) std::memcpy(zmq_msg_data(f), seg.data, seg.len);
      continue;
    }
    void* data = const_cast<void*>(seg.data);
    if (zmq_msg_init_data(f, data, seg.len, &SendRecord::free_frame, rec) != 0)
      refuse(0, CARAVAN_STATUS_NO_MEMORY, zmq_error());
    // Only a frame that still points at the caller's memory gets its free
    // function called; a libzmq that copied it keeps nothing of ours.
    if (zmq_msg_data(f) == data) rec->add_ref();
  }

  std::unique_lock<std::mutex> lock(link->mu);
  if (!link->sock) {
    lock.unlock();
    refuse(0, CARAVAN_STATUS_CLOSED, "link closed");
  }
  rec->handed_to_zmq();
  for (size_t i = 0; i < num_segments; ++i) {
    int flags = i + 1 < num_segments ? ZMQ_SNDMORE : 0;
    int rc;
    do rc = zmq_msg_send(&frames[i], link->sock, flags);
    while (rc < 0 && errno == EINTR);
    if (rc >= 0) continue;
    int err = errno;
    caravan_status status = status_of_errno(err);
    if (i == 0) {
      lock.unlock();
      refuse(0, status, zmq_strerror(err));
    }
    // Part of the message is inside zmq and cannot be taken back; a later
    // send would be glued onto it, so the link is unusable from here on.
    for (size_t j = i; j < num_segments; ++j) zmq_msg_close(&frames[j]);
    rec->fail(status);
    link->dropped->store(true, std::memory_order_release);
    zmq_close(link->sock);
    link->sock = nullptr;
    lock.unlock();
    host_.log(CARAVAN_LOG_ERROR,
              who() + " failed mid-message (" + zmq_strerror(err) + "); link closed");
    rec->release();
    return;  // accepted: its event reports the failure
  }
  lock.unlock();
  rec->release();
}

caravan_status ZmqVan::poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                            size_t* num_events) {
  // Negative means wait without limit, like zmq_poll.
  const bool forever = timeout_ms < 0;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(forever ? 0 : timeout_ms);
  auto remaining_ms = [&]() -> long {
    if (forever) return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<long>(left) : 0;
  };

  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  size_t& n = *num_events;
  for (;;) {
    if (closing_) return CARAVAN_STATUS_CLOSED;
    void* router;
    {
      std::lock_guard<std::mutex> lock(mu_);
      router = router_;
    }
    n = completions_.take(events, capacity);
    // Everything already here, without waiting: ends of sends first, so the
    // engine frees a partition's credit before it handles its answer.
    while (n < capacity && router) {
      caravan_van_event_v2& e = events[n];
      std::memset(&e, 0, sizeof e);
      Read r = read_message(router, &e.message);
      if (r == Read::kMessage) {
        e.type = CARAVAN_VAN_EVENT_RECEIVED;
        ++n;
      } else if (r == Read::kClosed) {
        return n ? CARAVAN_STATUS_OK : CARAVAN_STATUS_CLOSED;
      } else if (r == Read::kNone) {
        break;
      }
    }
    if (n > 0) return CARAVAN_STATUS_OK;
    if (interrupted_.exchange(false)) return CARAVAN_STATUS_TIMEOUT;
    long wait = remaining_ms();
    if (wait == 0) return CARAVAN_STATUS_TIMEOUT;
    // The eventfd says a send ended, the ROUTER became ready to poll
    // (listen), interrupt() was called or the van is closing.
    zmq_pollitem_t items[2] = {{nullptr, completions_.fd(), ZMQ_POLLIN, 0},
                               {router, 0, ZMQ_POLLIN, 0}};
    int rc = zmq_poll(items, router ? 2 : 1, wait);
    if (rc < 0) {
      if (errno == EINTR) continue;
      if (errno == ETERM) return CARAVAN_STATUS_CLOSED;
      throw Error(CARAVAN_STATUS_IO, "poll: zmq_poll failed: " + zmq_error());
    }
    if (items[0].revents) completions_.drain();
  }
}

void ZmqVan::interrupt() {
  interrupted_ = true;
  completions_.wake();
}

// Reads one multipart message: the ROUTER's identity frame, then the
// segments. zmq delivers multipart messages whole, so once the first frame
// is there the rest are too.
ZmqVan::Read ZmqVan::read_message(void* router, caravan_van_message_v2* out) {
  auto recv_frame = [&](zmq_msg_t* f, int flags) -> int {
    zmq_msg_init(f);
    int rc;
    do rc = zmq_msg_recv(f, router, flags);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
      int err = errno;
      zmq_msg_close(f);
      errno = err;
    }
    return rc;
  };
  zmq_msg_t identity;
  if (recv_frame(&identity, ZMQ_DONTWAIT) < 0) {
    if (errno == EAGAIN) return Read::kNone;
    if (errno == ETERM) return Read::kClosed;
    throw Error(CARAVAN_STATUS_IO, "poll: reading a frame failed: " + zmq_error());
  }
  bool more = zmq_msg_more(&identity);
  zmq_msg_close(&identity);

  auto rec = std::make_unique<RecvRecord>();
  size_t extra = 0;  // frames beyond the ABI's limit, counted and dropped
  while (more) {
    zmq_msg_t scratch;
    bool keep = rec->num_frames < CARAVAN_VAN_MAX_SEGMENTS_V2;
    zmq_msg_t* f = keep ? &rec->frames[rec->num_frames] : &scratch;
    if (recv_frame(f, 0) < 0) {
      if (errno == ETERM) return Read::kClosed;
      throw Error(CARAVAN_STATUS_IO, "poll: reading a frame from " +
                                         (rec->peer.empty() ? std::string("unknown") : rec->peer) +
                                         " failed: " + zmq_error());
    }
    if (rec->peer.empty()) {
      const char* ip = zmq_msg_gets(f, "Peer-Address");
      rec->peer = ip && *ip ? std::string("tcp://") + ip : "unknown";
    }
    more = zmq_msg_more(f);
    if (keep) {
      ++rec->num_frames;
    } else {
      zmq_msg_close(f);
      ++extra;
    }
  }
  if (extra || rec->num_frames == 0) {
    host_.log(CARAVAN_LOG_WARNING,
              "dropped a message of " + std::to_string(rec->num_frames + extra) +
                  " segments from " + (rec->peer.empty() ? std::string("unknown") : rec->peer) +
                  " (1 to " + std::to_string(CARAVAN_VAN_MAX_SEGMENTS_V2) + " allowed)");
    return Read::kDropped;
  }

  out->num_segments = rec->num_frames;
  for (size_t i = 0; i < rec->num_frames; ++i) {
    out->segments[i].data = zmq_msg_data(&rec->frames[i]);
    out->segments[i].len = zmq_msg_size(&rec->frames[i]);
  }
  out->peer = rec->peer.c_str();
  out->van_token = held_.hand_out(std::move(rec));
  return Read::kMessage;
}

void ZmqVan::release(const caravan_van_message_v2* message) { held_.take_back(message); }

// Why no send is still in flight when this returns: all of our frames live
// inside this instance's zmq context. Closing a socket hands its queued and
// half-written messages to zmq's reaper, and zmq_ctx_term() waits until the
// reaper and the I/O threads have sent them (within LINGER_MS) or destroyed
// them, which calls each frame's free function. So once zmq_ctx_term()
// returns, every SendRecord has reached zero and zmq reads none of the
// engine's memory; their events go to a queue nobody polls any more, as
// van_v2.h allows. zmq_ctx_shutdown() comes first so that a poll() blocked
// in zmq_poll, or a send() blocked on a high-water mark, returns at once
// and lets go of the socket we are about to close.
void ZmqVan::shutdown() noexcept {
  if (!ctx_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  completions_.wake();  // a poll() waiting on the eventfd alone
  zmq_ctx_shutdown(ctx_);
  {
    std::lock_guard<std::mutex> poll_lock(poll_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    if (router_) zmq_close(router_);
    router_ = nullptr;
  }
  std::unordered_map<uint64_t, std::shared_ptr<Link>> links;
  {
    std::unique_lock<std::shared_mutex> lock(links_mu_);
    links.swap(links_);
  }
  for (auto& entry : links) close_link(*entry.second);
  while (zmq_ctx_term(ctx_) != 0 && errno == EINTR) {
  }
  ctx_ = nullptr;
  // The ABI makes unreleased messages invalid now; free them.
  held_.clear();
}

}  // namespace caravan::van_zmq
