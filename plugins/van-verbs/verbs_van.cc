#include "verbs_van.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <random>

#include "params.h"

namespace caravan::van_verbs {

using plugin::Error;
using rendezvous::Transport;

namespace {

// Addresses the rendezvous protocol holds: a connection id, or (this bit set) a peer
// instance that any connection to it may serve.
constexpr uint64_t kInstanceBit = uint64_t{1} << 63;

// The first bytes of a rendezvous operation's context are ours while it is
// posted: the connection it went on (0 for receives), to account for its
// completion.
void set_tag(void* ctx, uint64_t conn) { std::memcpy(ctx, &conn, sizeof conn); }
uint64_t tag_of(const void* ctx) {
  uint64_t conn;
  std::memcpy(&conn, ctx, sizeof conn);
  return conn;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string errno_text(int e) { return std::strerror(e); }

void set_nonblocking(int fd, const char* what) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw Error(CARAVAN_STATUS_IO, std::string("fcntl on ") + what + ": " + errno_text(errno));
}

}  // namespace

VerbsVan::VerbsVan(const caravan_host_v1* host) : host_(host) {
  cfg_.eager_bytes = static_cast<size_t>(params::kEagerBytes.integer(host_));
  cfg_.max_registered_bytes = static_cast<size_t>(params::kMaxRegisteredBytes.integer(host_));
  cfg_.rx_depth = static_cast<size_t>(params::kRxDepth.integer(host_));
  send_depth_ = static_cast<size_t>(params::kSendDepth.integer(host_));
  resolve_timeout_ms_ =
      static_cast<int>(std::min<long long>(params::kResolveTimeoutMs.integer(host_), INT_MAX));
  if (cfg_.eager_bytes < 4096 || cfg_.eager_bytes > (size_t{64} << 20))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter EAGER_BYTES must be 4096 to 64 MiB");
  if (cfg_.rx_depth < 1)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "plugin parameter RX_DEPTH must be at least 1");
  if (send_depth_ < 1)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "plugin parameter SEND_DEPTH must be at least 1");
  cq_depth_ = cfg_.rx_depth + 8 * send_depth_;
  cfg_.cache_bytes =
      rendezvous::cache_bytes_param(rendezvous::kCacheBytes.given_integer(host_).value_or(
                                        static_cast<int64_t>(cfg_.max_registered_bytes / 4)),
                                    cfg_.max_registered_bytes);

  require_device();
  // Below this the receive ring alone cannot be registered.
  uint64_t need = (cfg_.rx_depth + 16) * uint64_t{cfg_.eager_bytes} + (uint64_t{1} << 20);
  check_memlock(host_, cfg_.max_registered_bytes, need);

  std::random_device rd;
  while (instance_ == 0)
    instance_ =
        ((uint64_t{rd()} << 32) ^ rd() ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) &
        ~kInstanceBit;
  try {
    events_ = rdma_create_event_channel();
    if (!events_)
      throw Error(
          CARAVAN_STATUS_UNAVAILABLE,
          "verbs van: rdma_create_event_channel failed: " + errno_text(errno) +
              " (is the rdma_ucm kernel module loaded and /dev/infiniband/rdma_cm accessible?)");
    set_nonblocking(events_->fd, "the rdma_cm event channel");
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw Error(CARAVAN_STATUS_IO, "eventfd: " + errno_text(errno));
    auto log = [h = host_](caravan_log_level level, const std::string& text) {
      h.log(level, text);
    };
    protocol_ = std::make_unique<rendezvous::Protocol>(*this, cfg_, log, hex(instance_));
    progress_ = std::thread([this] { run(); });
  } catch (...) {
    protocol_.reset();
    if (wake_fd_ >= 0) close(wake_fd_);
    if (events_) rdma_destroy_event_channel(events_);
    throw;
  }
}

VerbsVan::~VerbsVan() { shutdown(); }

void VerbsVan::properties(caravan_van_properties_v2* out) const {
  out->caps = CARAVAN_VAN_CAP_V2_RDMA;
  out->max_message_bytes = SIZE_MAX;
  out->max_segments = CARAVAN_VAN_MAX_SEGMENTS_V2;
  out->transport = "ib";
}

// Under mu_. One device per instance: its PD is what remote keys are valid
// in, so every connection must be on it.
Device* VerbsVan::use_device(ibv_context* ctx, std::string* why) {
  if (!ctx) {
    *why = "the address is not on an RDMA device";
    return nullptr;
  }
  if (!dev_) {
    try {
      dev_ = std::make_unique<Device>(ctx, cfg_.rx_depth, send_depth_, cq_depth_);
    } catch (const std::exception& e) {
      *why = e.what();
      return nullptr;
    }
    live_dev_ = dev_.get();
    cv_.notify_all();
    host_.log(CARAVAN_LOG_INFO, "using RDMA device " + dev_->name() + " (" +
                                    std::to_string(dev_->send_depth()) + " sends per connection, " +
                                    std::to_string(dev_->send_budget()) + " in all; eager up to " +
                                    std::to_string(cfg_.eager_bytes) +
                                    " bytes, remote reads above)");
    wake();  // the progress thread adds the completion channel to its poll set
    return dev_.get();
  }
  if (dev_->context() != ctx) {
    *why = std::string("it is on RDMA device ") + ibv_get_device_name(ctx->device) +
           ", but this van uses " + dev_->name() +
           " (one device per instance; choose the interface with DMLC_INTERFACE)";
    return nullptr;
  }
  return dev_.get();
}

void VerbsVan::listen(const char* host, int port, char* addr_out, size_t addr_cap) {
  Call call(*this);
  if (!host || !*host || !addr_out)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "listen: host or address buffer missing");
  std::string where =
      "cannot listen on host '" + std::string(host) + "' port " + std::to_string(port);
  if (port < 0 || port > 65535)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, where + ": port out of range");
  sockaddr_storage addr{};
  std::string why;
  if (!lookup_host(host, port, &addr, &why))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, where + ": " + why);

  std::lock_guard<std::mutex> lock(mu_);
  if (listen_id_)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "listen: already listening at " + address_);
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(events_, &id, nullptr, RDMA_PS_TCP) != 0)
    throw Error(CARAVAN_STATUS_IO, where + ": rdma_create_id: " + errno_text(errno));
  auto give_up = [&](caravan_status s, const std::string& text) {
    rdma_destroy_id(id);
    throw Error(s, where + ": " + text);
  };
  bool bound = rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&addr)) == 0;
  int bind_err = errno;
  const bool specific = bound;
  if (!bound && is_loopback(reinterpret_cast<sockaddr*>(&addr))) {
    // No RDMA device owns a loopback address, but rdma_cm connects over
    // loopback through any device: listen on every address instead.
    sockaddr_storage any{};
    any.ss_family = addr.ss_family;
    if (addr.ss_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&any)->sin6_port = htons(static_cast<uint16_t>(port));
      reinterpret_cast<sockaddr_in6*>(&any)->sin6_addr = in6addr_any;
    } else {
      reinterpret_cast<sockaddr_in*>(&any)->sin_port = htons(static_cast<uint16_t>(port));
    }
    bound = rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&any)) == 0;
    if (!bound) bind_err = errno;
  }
  if (!bound)
    give_up(CARAVAN_STATUS_INVALID_ARGUMENT,
            "rdma_bind_addr: " + errno_text(bind_err) +
                " (the host must be an address of an interface with an RDMA device; pick one with "
                "DMLC_NODE_HOST or DMLC_INTERFACE)");
  if (id->verbs && !use_device(id->verbs, &why)) give_up(CARAVAN_STATUS_INVALID_ARGUMENT, why);
  if (rdma_listen(id, 128) != 0) give_up(CARAVAN_STATUS_IO, "rdma_listen: " + errno_text(errno));
  uint16_t bound_port = ntohs(rdma_get_src_port(id));
  if (addr.ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = htons(bound_port);
  else
    reinterpret_cast<sockaddr_in*>(&addr)->sin_port = htons(bound_port);
  std::string text = format_address(reinterpret_cast<sockaddr*>(&addr));
  if (text.size() + 1 > addr_cap)
    give_up(CARAVAN_STATUS_INVALID_ARGUMENT, "address buffer too small for " + text);
  listen_id_ = id;
  listen_addr_ = addr;
  listen_bound_ = specific;
  address_ = text;
  Greeting g;
  g.instance = instance_;
  g.listen_port = bound_port;
  encode_greeting(g, greeting_);
  std::memcpy(addr_out, text.c_str(), text.size() + 1);
  host_.log(CARAVAN_LOG_INFO,
            "listening at " + address_ + (id->verbs ? " on " + dev_->name() : ""));
}

void VerbsVan::connect(uint64_t peer, const char* address) {
  Call call(*this);
  std::string where =
      "connect peer " + std::to_string(peer) + (address ? std::string(" at ") + address : "");
  if (!address || !*address)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, where + ": address missing");
  sockaddr_storage dst{};
  std::string why;
  if (!parse_address(address, &dst, &why))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, where + ": address " + why);
  uint64_t id_num;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (peers_.count(peer))
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, where + ": already connected");
    if (greeting_[0] == 0) {
      Greeting g;  // not listening: the peer can name us only by instance
      g.instance = instance_;
      encode_greeting(g, greeting_);
    }
    id_num = next_conn_++;
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(events_, &id, reinterpret_cast<void*>(static_cast<uintptr_t>(id_num)),
                       RDMA_PS_TCP) != 0)
      throw Error(CARAVAN_STATUS_IO, where + ": rdma_create_id: " + errno_text(errno));
    // From the listen address, so the connection takes the same device.
    sockaddr_storage src = listen_addr_;
    if (src.ss_family == AF_INET6)
      reinterpret_cast<sockaddr_in6*>(&src)->sin6_port = 0;
    else
      reinterpret_cast<sockaddr_in*>(&src)->sin_port = 0;
    if (rdma_resolve_addr(id, listen_bound_ ? reinterpret_cast<sockaddr*>(&src) : nullptr,
                          reinterpret_cast<sockaddr*>(&dst), resolve_timeout_ms_) != 0) {
      int e = errno;
      rdma_destroy_id(id);
      throw Error(CARAVAN_STATUS_IO, where + ": rdma_resolve_addr: " + errno_text(e));
    }
    auto c = std::make_unique<Conn>();
    c->id = id_num;
    c->cm = id;
    c->outbound = true;
    c->peer = peer;
    c->address = address;
    conns_.emplace(id_num, std::move(c));
    peers_[peer] = id_num;
  }
  try {
    protocol_->connect(peer, id_num);
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(mu_);
    peers_.erase(peer);
    conns_.at(id_num)->closing = true;
    wake();
    throw Error(e.status(), where + ": " + e.what());
  }
  wake();
  // Memory can be registered only once a device is chosen; the first
  // connection of an instance that does not listen chooses it.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(resolve_timeout_ms_ + 1000), [&] {
    auto it = conns_.find(id_num);
    return closing_ || live_dev_.load() || it == conns_.end() ||
           it->second->state == Conn::State::kDown;
  });
}

void VerbsVan::disconnect(uint64_t peer) {
  Call call(*this);
  try {
    protocol_->disconnect(peer);
  } catch (const Error& e) {
    throw Error(e.status(), "disconnect peer " + std::to_string(peer) + ": " + e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(peer);
    if (it != peers_.end()) {
      auto c = conns_.find(it->second);
      if (c != conns_.end()) c->second->closing = true;
      peers_.erase(it);
    }
  }
  wake();
}

void VerbsVan::send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segs, size_t n,
                    uint64_t send_id) {
  Call call(*this);
  std::string where = "send to peer " + std::to_string(peer);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, where + ": not connected");
    if (!live_dev_.load()) {
      auto c = conns_.find(it->second);
      throw Error(CARAVAN_STATUS_IO, where + ": its connection" +
                                         (c != conns_.end() ? " to " + c->second->address : "") +
                                         " never reached an RDMA device");
    }
  }
  try {
    protocol_->send(peer, slot, segs, n, send_id);
  } catch (const Error& e) {
    throw Error(e.status(), where + ": " + e.what());
  }
}

caravan_status VerbsVan::poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                              size_t* n) {
  Call call(*this);
  return protocol_->poll(timeout_ms, events, capacity, n);
}

void VerbsVan::release(const caravan_van_message_v2* msg) {
  Call call(*this);
  protocol_->release(msg);
}

void VerbsVan::interrupt() { protocol_->interrupt(); }

// ---- rendezvous::Transport ------------------------------------------------

std::string VerbsVan::who(const Conn& c) const {
  return (c.outbound ? "peer " + std::to_string(c.peer) + " at " : std::string("")) + c.address;
}

Conn* VerbsVan::route(uint64_t to) {
  if (!(to & kInstanceBit)) {
    auto it = conns_.find(to);
    return it == conns_.end() || it->second->state == Conn::State::kDown ? nullptr
                                                                         : it->second.get();
  }
  const uint64_t instance = to & ~kInstanceBit;
  Conn* best = nullptr;
  int best_score = -1;
  for (auto& [id, c] : conns_) {
    if (c->remote != instance || c->closing || c->state == Conn::State::kDown) continue;
    int score = (c->state == Conn::State::kUp ? 2 : 0) + (c->outbound ? 1 : 0);
    if (score > best_score) best = c.get(), best_score = score;
  }
  return best;
}

Transport::Post VerbsVan::enqueue(uint64_t to, const Pending& p, std::string* err) {
  std::lock_guard<std::mutex> lock(mu_);
  Device* dev = dev_.get();
  Conn* c = route(to);
  if (!dev || !c) {
    *err = to & kInstanceBit
               ? "no connection to verbs instance " + hex(to & ~kInstanceBit) + " is open"
               : "the connection is closed";
    return Post::kFailed;
  }
  set_tag(p.ctx, c->id);
  if (c->state == Conn::State::kUp && c->backlog.empty() && c->posted < dev->send_depth() &&
      budget_used_ < dev->send_budget()) {
    if (int rc = post(*c, p)) {
      *err = "ibv_post_send to " + who(*c) + ": " + errno_text(rc);
      return Post::kFailed;
    }
    ++c->posted;
    ++budget_used_;
  } else {
    c->backlog.push_back(p);
  }
  return Post::kPosted;
}

Transport::Post VerbsVan::post_send(uint64_t to, const void* buf, size_t len, void* desc, void* ctx,
                                    std::string* err) {
  Pending p;
  p.buf = const_cast<void*>(buf);
  p.len = len;
  p.lkey = static_cast<ibv_mr*>(desc)->lkey;
  p.ctx = ctx;
  return enqueue(to, p, err);
}

Transport::Post VerbsVan::post_read(uint64_t from, void* local, size_t len, void* desc,
                                    uint64_t raddr, uint64_t key, void* ctx, std::string* err) {
  return post_rma(false, from, local, len, desc, raddr, key, ctx, err);
}

Transport::Post VerbsVan::post_write(uint64_t to, const void* local, size_t len, void* desc,
                                     uint64_t raddr, uint64_t key, void* ctx, std::string* err) {
  return post_rma(true, to, const_cast<void*>(local), len, desc, raddr, key, ctx, err);
}

Transport::Post VerbsVan::post_rma(bool write, uint64_t peer, void* local, size_t len, void* desc,
                                   uint64_t raddr, uint64_t key, void* ctx, std::string* err) {
  Pending p;
  p.read = !write;
  p.write = write;
  p.buf = local;
  p.len = len;
  p.lkey = static_cast<ibv_mr*>(desc)->lkey;
  p.raddr = raddr;
  p.rkey = static_cast<uint32_t>(key);
  p.ctx = ctx;
  return enqueue(peer, p, err);
}

Transport::Post VerbsVan::post_recv(void* buf, size_t len, void* desc, void* ctx,
                                    std::string* err) {
  Device* dev = live_dev_.load();
  if (!dev) {
    *err = "no RDMA device in use yet";
    return Post::kFailed;
  }
  set_tag(ctx, 0);
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(buf);
  sge.length = static_cast<uint32_t>(len);
  sge.lkey = static_cast<ibv_mr*>(desc)->lkey;
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = reinterpret_cast<uintptr_t>(ctx);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (int rc = ibv_post_srq_recv(dev->srq(), &wr, &bad)) {
    *err = "ibv_post_srq_recv: " + errno_text(rc);
    return Post::kFailed;
  }
  return Post::kPosted;
}

uint64_t VerbsVan::resolve(const std::string& name) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(name.c_str(), &end, 16);
  if (name.size() != 16 || *end != '\0' || v == 0 || (v & kInstanceBit))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "'" + name + "' is not a verbs instance name");
  return kInstanceBit | v;
}

std::string VerbsVan::describe(const std::string& name) {
  uint64_t instance = std::strtoull(name.c_str(), nullptr, 16);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, c] : conns_)
    if (c->remote == instance && instance != 0) return c->address;
  return "verbs instance " + name;
}

rendezvous::Registration VerbsVan::register_memory(void* p, size_t len) {
  Device* dev = live_dev_.load();
  if (!dev) throw Error(CARAVAN_STATUS_IO, "no RDMA device in use yet (listen or connect first)");
  // Read by a peer after a request to send, or written by one into a
  // receive buffer lent for the remote-buffer cache.
  ibv_mr* mr = ibv_reg_mr(
      dev->pd(), p, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  if (!mr) {
    int e = errno;
    throw Error(CARAVAN_STATUS_NO_MEMORY,
                "ibv_reg_mr of " + std::to_string(len) + " bytes on " + dev->name() +
                    " failed: " + errno_text(e) +
                    (e == ENOMEM || e == EPERM || e == EAGAIN
                         ? " (check RLIMIT_MEMLOCK: ulimit -l, /etc/security/limits.conf)"
                         : ""));
  }
  rendezvous::Registration r;
  r.handle = mr;
  r.desc = mr;
  r.key = mr->rkey;
  r.remote_base = reinterpret_cast<uintptr_t>(p);
  return r;
}

void VerbsVan::deregister(const rendezvous::Registration& r) {
  if (r.handle) ibv_dereg_mr(static_cast<ibv_mr*>(r.handle));
}

void VerbsVan::wake() {
  uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the thread will wake.
  ssize_t n = write(wake_fd_, &one, sizeof one);
  (void)n;
}

// ---- progress thread ------------------------------------------------------

Conn* VerbsVan::conn_of(rdma_cm_id* id) {
  auto it = conns_.find(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(id->context)));
  return it == conns_.end() || it->second->cm != id ? nullptr : it->second.get();
}

void VerbsVan::fail_conn(Conn& c, const std::string& why, Fails& fails) {
  bool was_down = c.state == Conn::State::kDown;
  c.state = Conn::State::kDown;
  for (const Pending& p : c.backlog) fails.push_back({p.ctx, why});
  c.backlog.clear();
  if (!was_down) cv_.notify_all();
}

// Only once nothing of ours is on its send queue, and never with an
// unacknowledged event of the id (events are acknowledged on arrival).
void VerbsVan::destroy(Conn& c) {
  if (c.has_qp) rdma_destroy_qp(c.cm);
  rdma_destroy_id(c.cm);
  conns_.erase(c.id);
}

void VerbsVan::accept(rdma_cm_id* id, const std::string& from, const Greeting& g,
                      const rdma_conn_param& req) {
  std::string why;
  Device* dev = use_device(id->verbs, &why);
  int rc = 0;
  if (dev && (rc = create_qp(id, *dev)) != 0) why = "creating its queue pair: " + errno_text(rc);
  if (!dev || rc) {
    host_.log(CARAVAN_LOG_ERROR, "refused an RDMA connection from " + from + ": " + why);
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    return;
  }
  auto c = std::make_unique<Conn>();
  c->id = next_conn_++;
  c->cm = id;
  c->has_qp = true;
  c->remote = g.instance;
  c->address = from;
  c->state = Conn::State::kConnecting;
  id->context = reinterpret_cast<void*>(static_cast<uintptr_t>(c->id));
  if (greeting_[0] == 0) {
    Greeting mine;
    mine.instance = instance_;
    encode_greeting(mine, greeting_);
  }
  rdma_conn_param p = conn_param(*dev, greeting_, &req);
  if (rdma_accept(id, &p) != 0) {
    host_.log(CARAVAN_LOG_ERROR,
              "accepting the RDMA connection from " + from + ": " + errno_text(errno));
    rdma_destroy_qp(id);
    rdma_destroy_id(id);
    return;
  }
  conns_.emplace(c->id, std::move(c));
}

void VerbsVan::handle_cm_events(Fails& fails) {
  for (;;) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(events_, &ev) != 0) return;  // EAGAIN: none left
    // Copy what is needed and acknowledge at once, so destroying an id
    // never waits on its own unacknowledged event.
    const rdma_cm_event_type type = ev->event;
    const int status = ev->status;
    rdma_cm_id* id = ev->id;
    rdma_conn_param param = ev->param.conn;
    Greeting g;
    // Only these two carry the other side's private data.
    bool greeted = (type == RDMA_CM_EVENT_CONNECT_REQUEST || type == RDMA_CM_EVENT_ESTABLISHED) &&
                   decode_greeting(param.private_data, param.private_data_len, &g);
    param.private_data = nullptr;
    param.private_data_len = 0;
    rdma_ack_cm_event(ev);

    std::lock_guard<std::mutex> lock(mu_);
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      sockaddr* peer_sa = rdma_get_peer_addr(id);
      sockaddr_storage named{};
      std::memcpy(&named, peer_sa,
                  peer_sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
      // Name the caller by where it listens, as the engine knows it.
      if (greeted && g.listen_port) {
        if (named.ss_family == AF_INET6)
          reinterpret_cast<sockaddr_in6*>(&named)->sin6_port = htons(g.listen_port);
        else
          reinterpret_cast<sockaddr_in*>(&named)->sin_port = htons(g.listen_port);
      }
      std::string from = format_address(reinterpret_cast<sockaddr*>(&named));
      if (closing_ || !greeted) {
        if (!greeted)
          host_.log(CARAVAN_LOG_WARNING,
                    "refused an RDMA connection from " + from + ": not a Caravan verbs van");
        rdma_reject(id, nullptr, 0);
        rdma_destroy_id(id);
        continue;
      }
      accept(id, from, g, param);
      continue;
    }
    Conn* c = conn_of(id);
    if (!c) continue;  // a connection already torn down
    std::string why;
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED: {
        Device* dev = use_device(id->verbs, &why);
        if (!dev) {
          fail_conn(*c, why, fails);
          host_.log(CARAVAN_LOG_ERROR, "connection to " + who(*c) + " failed: " + why);
        } else if (rdma_resolve_route(id, resolve_timeout_ms_) != 0) {
          why = "rdma_resolve_route: " + errno_text(errno);
          fail_conn(*c, why, fails);
          host_.log(CARAVAN_LOG_ERROR, "connection to " + who(*c) + " failed: " + why);
        }
        break;
      }
      case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        int rc = dev_ ? create_qp(id, *dev_) : ENODEV;
        if (rc == 0) {
          c->has_qp = true;
          rdma_conn_param p = conn_param(*dev_, greeting_);
          if (rdma_connect(id, &p) != 0)
            rc = errno;
          else
            c->state = Conn::State::kConnecting;
        }
        if (rc) {
          why = "setting up its queue pair: " + errno_text(rc);
          fail_conn(*c, why, fails);
          host_.log(CARAVAN_LOG_ERROR, "connection to " + who(*c) + " failed: " + why);
        }
        break;
      }
      case RDMA_CM_EVENT_ESTABLISHED:
        if (c->outbound && greeted) c->remote = g.instance;
        c->state = Conn::State::kUp;
        host_.log(CARAVAN_LOG_DEBUG, "connected: " + who(*c));
        break;
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_REJECTED:
        why = std::string(rdma_event_str(type)) + " (status " + std::to_string(status) + ")";
        fail_conn(*c, why, fails);
        host_.log(CARAVAN_LOG_ERROR, "connection to " + who(*c) + " failed: " + why);
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
        // Moves our side of the queue pair to error too, so what is still
        // posted on it flushes back and the connection can be torn down.
        if (!c->disconnected) rdma_disconnect(id);
        c->disconnected = true;
        fail_conn(*c, "the connection to " + who(*c) + " closed", fails);
        host_.log(c->closing ? CARAVAN_LOG_DEBUG : CARAVAN_LOG_INFO, "disconnected: " + who(*c));
        break;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        host_.log(CARAVAN_LOG_ERROR, "RDMA device removed under the connection to " + who(*c));
        fail_conn(*c, "RDMA device removed", fails);
        break;
      default:
        break;
    }
  }
}

void VerbsVan::poll_cq(Device& dev) {
  ibv_wc wc[32];
  for (;;) {
    int n = ibv_poll_cq(dev.cq(), 32, wc);
    if (n <= 0) {
      if (n < 0) host_.log(CARAVAN_LOG_ERROR, "ibv_poll_cq failed");
      return;
    }
    std::string names[32];
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < n; ++i) {
        uint64_t conn = tag_of(reinterpret_cast<void*>(static_cast<uintptr_t>(wc[i].wr_id)));
        if (conn == 0) continue;  // a receive
        --budget_used_;
        auto it = conns_.find(conn);
        if (it == conns_.end()) continue;
        --it->second->posted;
        if (wc[i].status != IBV_WC_SUCCESS) names[i] = who(*it->second);
      }
    }
    for (int i = 0; i < n; ++i) {
      std::string err;
      if (wc[i].status != IBV_WC_SUCCESS)
        err = std::string(ibv_wc_status_str(wc[i].status)) + " (vendor error " +
              std::to_string(wc[i].vendor_err) + ")" +
              (names[i].empty() ? "" : " on the connection to " + names[i]);
      protocol_->complete(reinterpret_cast<void*>(static_cast<uintptr_t>(wc[i].wr_id)),
                          wc[i].status == IBV_WC_SUCCESS, wc[i].byte_len, err);
    }
  }
}

// Posts backlogs that now fit, and closes what disconnect() or the peer
// asked to close once its send queue has drained.
void VerbsVan::sweep(Fails& fails) {
  std::lock_guard<std::mutex> lock(mu_);
  Device* dev = dev_.get();
  std::vector<Conn*> dead;
  for (auto& [id, cp] : conns_) {
    Conn& c = *cp;
    while (dev && c.state == Conn::State::kUp && !c.backlog.empty() &&
           c.posted < dev->send_depth() && budget_used_ < dev->send_budget()) {
      Pending p = c.backlog.front();
      c.backlog.pop_front();
      if (int rc = post(c, p)) {
        fails.push_back({p.ctx, "ibv_post_send to " + who(c) + ": " + errno_text(rc)});
        continue;
      }
      ++c.posted;
      ++budget_used_;
    }
    if (c.closing && c.state != Conn::State::kUp && c.state != Conn::State::kDown)
      fail_conn(c, "disconnected before the connection was up", fails);
    if (c.closing && c.state == Conn::State::kUp && c.backlog.empty() && c.posted == 0 &&
        !c.disconnected) {
      rdma_disconnect(c.cm);  // its DISCONNECTED event finishes the job
      c.disconnected = true;
    }
    if (c.state == Conn::State::kDown && c.posted == 0) dead.push_back(&c);
  }
  // peers_ keeps naming a destroyed outbound connection until disconnect(),
  // so sends to it fail as closed rather than as to an unknown peer.
  for (Conn* c : dead) destroy(*c);
}

void VerbsVan::run() noexcept {
  try {
    while (!stop_.load(std::memory_order_acquire)) {
      Device* dev = live_dev_.load();
      bool did = dev ? protocol_->pump() : false;
      pollfd fds[3] = {{events_->fd, POLLIN, 0},
                       {wake_fd_, POLLIN, 0},
                       {dev ? dev->channel_fd() : -1, POLLIN, 0}};
      // The timeout only bounds how long a stop request can go unseen.
      int n = ::poll(fds, dev ? 3 : 2, did ? 0 : 100);
      if (stop_.load(std::memory_order_acquire)) break;
      if (n < 0 && errno != EINTR) {
        host_.log(CARAVAN_LOG_FATAL, "progress thread: poll failed: " + errno_text(errno));
        return;
      }
      if (fds[1].revents & POLLIN) {
        uint64_t v;
        ssize_t r = read(wake_fd_, &v, sizeof v);
        (void)r;
      }
      Fails fails;
      if (fds[0].revents & POLLIN) handle_cm_events(fails);
      if (dev) {
        if (fds[2].revents & POLLIN) dev->rearm();
        poll_cq(*dev);
      }
      sweep(fails);
      for (const Failed& f : fails) protocol_->complete(f.ctx, false, 0, f.why);
    }
  } catch (const std::exception& e) {
    host_.log(CARAVAN_LOG_FATAL, std::string("progress thread stopped: ") + e.what());
  }
}

void VerbsVan::shutdown() noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }
  stop_ = true;
  if (progress_.joinable()) {
    wake();
    progress_.join();
  }
  // Settles unsent messages and wakes the poller.
  if (protocol_) protocol_->close();
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return calls_ == 0; });
    // Queue pairs first: after that the device touches none of our memory.
    for (auto& [id, c] : conns_) {
      if (c->state == Conn::State::kUp && !c->disconnected) rdma_disconnect(c->cm);
      if (c->has_qp) rdma_destroy_qp(c->cm);
      rdma_destroy_id(c->cm);
    }
    conns_.clear();
    peers_.clear();
    if (listen_id_) rdma_destroy_id(listen_id_);
    listen_id_ = nullptr;
  }
  if (protocol_) {
    rendezvous::PoolStats s = protocol_->stats();
    host_.log(CARAVAN_LOG_INFO, "registered memory: peak " + std::to_string(s.peak_bytes) +
                                    " bytes, " + std::to_string(s.registered_bytes) + " bytes in " +
                                    std::to_string(s.buffers) + " buffers at finalize, " +
                                    std::to_string(s.registrations) + " registrations, limit " +
                                    std::to_string(s.limit_bytes) + " bytes");
    host_.log(CARAVAN_LOG_INFO, rendezvous::describe(protocol_->counts()));
    protocol_->free();  // deregisters every buffer while the PD still stands
    protocol_.reset();
  }
  live_dev_ = nullptr;
  dev_.reset();
  if (events_) rdma_destroy_event_channel(events_);
  events_ = nullptr;
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
}

}  // namespace caravan::van_verbs
