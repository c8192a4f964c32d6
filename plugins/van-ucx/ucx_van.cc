#include "ucx_van.h"

#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "events/send_checks.h"
#include "params.h"
#include "tcp/peer_links.h"
#include "tcp/tcp_address.h"

namespace caravan::van_ucx {

using plugin::Error;
using Clock = std::chrono::steady_clock;

constexpr int kProgressRounds = 4;  // ucp_worker_progress calls per progress()
constexpr size_t kLeastPieceBytes = 4096;

// UCX's callbacks, which reach the instance through their argument. Every
// one runs inside ucp_worker_progress or a UCX call the van makes, so
// under ucx_mu_.
struct Callbacks {
  static ucs_status_t message(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param) {
    auto* van = static_cast<UcxVan*>(arg);
    ucs_status_t answer = van->inbox_->arrived(header, header_length, data, length, param);
    if (van->inbox_->has_ready()) van->notify_poller();
    return answer;
  }
  static void sent(void* request, ucs_status_t status, void* user_data) {
    auto* op = static_cast<SendOp*>(user_data);
    ucp_request_free(request);
    op->van->send_done(*op, status);
  }
  static void flushed(void* request, ucs_status_t status, void* user_data) {
    auto* owner = static_cast<EndpointOwner*>(user_data);
    ucp_request_free(request);
    auto link = owner->link.lock();
    if (owner->van->finalizing_ || !link || link->closed || link->attempt != owner->attempt ||
        owner->failed)
      return;
    if (status == UCS_OK)
      owner->van->link_up(link);
    else
      owner->van->attempt_failed(*link, status);
  }
  // Endpoints are closed after progress returns (UcxVan::progress), not
  // from inside UCX's error callback.
  static void endpoint_failed(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* owner = static_cast<EndpointOwner*>(arg);
    if (owner->failed || owner->closed) return;
    owner->failed = true;
    owner->status = status;
    owner->van->failed_.push_back(owner);
  }
};

namespace {

std::string text(ucs_status_t status) { return ucs_status_string(status); }

// A random start for stream numbers, so streams of instances that follow
// each other in one process (or pid) are not taken for one another.
uint64_t first_stream() {
  uint64_t seed = 0;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = ::read(fd, &seed, sizeof seed);
    (void)n;
    ::close(fd);
  }
  return seed ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count());
}

// Whether UCX_TLS lets UCX use its TCP transport: unset means every
// transport; "^a,b" every one but those named.
bool tls_take_tcp() {
  const char* tls = std::getenv("UCX_TLS");
  if (!tls || !*tls) return true;
  bool except = tls[0] == '^';
  bool named = false;
  std::string list = tls + (except ? 1 : 0);
  for (size_t at = 0; at <= list.size();) {
    size_t end = std::min(list.find(',', at), list.size());
    std::string item = list.substr(at, end - at);
    named = named || item == "tcp" || (!except && item == "all");
    at = end + 1;
  }
  return except != named;
}

// The network interface that holds `host`'s address (a name or a literal),
// or "" when none here does (a wildcard, a name of another host).
std::string interface_of(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (host == "*" || getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return "";
  ifaddrs* ifs = nullptr;
  std::string found;
  if (getifaddrs(&ifs) == 0) {
    for (addrinfo* a = res; a && found.empty(); a = a->ai_next)
      for (ifaddrs* i = ifs; i && found.empty(); i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != a->ai_family) continue;
        bool same = a->ai_family == AF_INET
                        ? reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr ==
                              reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr
                        : std::memcmp(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr,
                                      &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr,
                                      sizeof(in6_addr)) == 0;
        if (same) found = i->ifa_name;
      }
    freeifaddrs(ifs);
  }
  freeaddrinfo(res);
  return found;
}

// Whether every lane of the endpoint is TCP, read from UCX's own account of
// the endpoint (UCX 1.13 has no query for its transports): its lines
// "lane[0]:  0:tcp/eth0.0 md[0] ...". False when none is found.
bool lanes_all_tcp(ucp_ep_h ep) {
  char* text = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (!f) return false;
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  std::istringstream lines(std::string(text, len));
  std::free(text);
  int lanes = 0;
  bool tcp = true;
  for (std::string line; std::getline(lines, line);)
    if (line.find("lane[") != std::string::npos) {
      ++lanes;
      tcp = tcp && line.find(":tcp/") != std::string::npos;
    }
  return lanes > 0 && tcp;
}

}  // namespace

UcxVan::UcxVan(const caravan_host_v1* host) : host_(host) {
  retry_ms_ = static_cast<int>(std::min<long long>(params::kRetryMs.integer(host_), 60000));
  close_timeout_ms_ =
      static_cast<int>(std::min<long long>(params::kCloseTimeoutMs.integer(host_), 600000));
  std::string peer_failure = params::kPeerFailure.text(host_);
  if (peer_failure != "auto" && peer_failure != "0" && peer_failure != "1")
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter PEER_FAILURE='" + peer_failure + "': auto, 1 or 0");
  peer_failure_ = peer_failure != "0";
  peer_failure_auto_ = peer_failure == "auto";
  piece_bytes_ = static_cast<size_t>(params::kPieceBytes.integer(host_));
  if (piece_bytes_ && piece_bytes_ < kLeastPieceBytes)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter PIECE_BYTES='" + params::kPieceBytes.text(host_) +
                    "': 0, or at least " + std::to_string(kLeastPieceBytes));
  next_stream_ = first_stream();
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_ < 0 || wake_fd_ < 0) {
    int err = errno;
    for (int fd : {epoll_, wake_fd_})
      if (fd >= 0) ::close(fd);
    throw Error(CARAVAN_STATUS_UNAVAILABLE, std::string("epoll or eventfd: ") + std::strerror(err));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_fd_, &ev);
  std::string worker_address;
  try {
    worker_address = open_ucx("");
  } catch (...) {
    for (int fd : {epoll_, wake_fd_}) ::close(fd);
    throw;
  }
  exchange_ = std::make_unique<AddressExchange>(
      host_, worker_address,
      [this](uint64_t token, bool ok, const std::string& text) { fetched(token, ok, text); });
}

// Starts UCX: a context (UCX reads its UCX_* variables here), a worker and
// its active message handler. `net_devices`, when not empty, is
// UCX_NET_DEVICES for this context. Returns the worker's address. Throws
// UNAVAILABLE, leaving no UCX object behind.
std::string UcxVan::open_ucx(const std::string& net_devices) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    throw Error(CARAVAN_STATUS_UNAVAILABLE, "UCX configuration (UCX_* variables): " + text(st));
  // UCX 1.13's first protocols, its default, fail inside UCX when a peer
  // goes away mid-transfer (assertions on rendezvous requests left on an
  // endpoint, 7 conformance runs in 12); its second protocols, chosen here
  // unless UCX_PROTO_ENABLE says otherwise, do not. Later UCX versions
  // default to them.
  if (!std::getenv("UCX_PROTO_ENABLE")) ucp_config_modify(config, "PROTO_ENABLE", "y");
  // A node whose peer died with a rendezvous send to it in flight aborted
  // in ucp_cleanup (rcache.c:409, a registration still counted in use), 2
  // kill-test runs in 4; without UCX's registration cache, none in 4. The
  // cache saves registrations on RDMA devices: set UCX_RCACHE_ENABLE=try
  // there (docs/known-defects.md).
  if (!std::getenv("UCX_RCACHE_ENABLE")) ucp_config_modify(config, "RCACHE_ENABLE", "n");
  // Over TCP, UCX 1.13's second protocols send a large active message as
  // eager fragments of UCX_TCP_TX_SEG_SIZE (8 KiB by default), each through
  // a bounce buffer, and read them through UCX_TCP_RX_SEG_SIZE ones (64
  // KiB). 256 KiB fragments and 512 KiB receive buffers moved 4 MB at
  // 0.62-0.67x van-tcp's rate against 0.36-0.41x (docs/van-ucx.md); a
  // connection with a message on the way holds one of each. A TX segment as
  // large as the RX one made UCX abort at close with sends in flight
  // (uct_iface.h:884, from 64 KiB up), hence the RX one twice the TX. Their
  // names without the transport's prefix are the ones UCX applies here;
  // with no TCP transport to take them it would warn.
  if (!std::getenv("UCX_TCP_TX_SEG_SIZE") && !std::getenv("UCX_TCP_RX_SEG_SIZE") &&
      tls_take_tcp()) {
    ucp_config_modify(config, "TX_SEG_SIZE", "256K");
    ucp_config_modify(config, "RX_SEG_SIZE", "512K");
  }
  if (!net_devices.empty()) ucp_config_modify(config, "NET_DEVICES", net_devices.c_str());
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "caravan";
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) {
    context_ = nullptr;
    throw Error(CARAVAN_STATUS_UNAVAILABLE,
                "UCX could not start: " + text(st) + " (check UCX_TLS and UCX_NET_DEVICES)");
  }
  // Whether this UCX could move GPU memory itself, for caravan-info. The van
  // does not claim CARAVAN_VAN_CAP_V2_DEVICE_MEMORY yet: the engine stages
  // GPU tensors through host memory for every van, and no UCX with CUDA
  // transports has run this van (docs/van-ucx.md).
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  bool cuda = ucp_context_query(context_, &attr) == UCS_OK &&
              (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA));
  // Set once: properties() hands out its text for the instance's life, and
  // listen() may start UCX again.
  if (transport_.empty())
    transport_ = std::string("ucx (UCX ") + ucp_get_version_string() +
                 (cuda ? ", with CUDA transports" : ", without CUDA transports") + ")";

  auto fail = [&](const std::string& why) {
    if (worker_) ucp_worker_destroy(worker_);
    worker_ = nullptr;
    ucp_cleanup(context_);
    context_ = nullptr;
    throw Error(CARAVAN_STATUS_UNAVAILABLE, why);
  };
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // MULTI although ucx_mu_ serializes every call: UCX checks in its other
  // modes that one thread alone makes certain calls (an endpoint failing
  // inside progress asserted so), and the van calls from several.
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) {
    worker_ = nullptr;
    fail("UCX worker: " + text(st));
  }
  ucp_worker_attr_t wattr{};
  wattr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  st = ucp_worker_query(worker_, &wattr);
  if (st != UCS_OK) fail("UCX worker attributes: " + text(st));
  const size_t most_head = piece_head_bytes(CARAVAN_VAN_MAX_SEGMENTS_V2);
  if (wattr.max_am_header < most_head)
    fail("UCX active message headers hold " + std::to_string(wattr.max_am_header) +
         " bytes; the van needs " + std::to_string(most_head));
  most_inline_ = std::min(kMostInlineBytes, wattr.max_am_header - most_head);
  st = ucp_worker_get_efd(worker_, &worker_fd_);
  if (st != UCS_OK) fail("UCX event file descriptor: " + text(st));
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  am.id = kAmId;
  am.cb = &Callbacks::message;
  am.arg = this;
  am.flags = UCP_AM_FLAG_WHOLE_MSG;
  st = ucp_worker_set_am_recv_handler(worker_, &am);
  if (st != UCS_OK) fail("UCX active message handler: " + text(st));
  ucp_address_t* own = nullptr;
  size_t own_len = 0;
  st = ucp_worker_get_address(worker_, &own, &own_len);
  if (st != UCS_OK) fail("UCX worker address: " + text(st));
  std::string address(reinterpret_cast<const char*>(own), own_len);
  ucp_worker_release_address(worker_, own);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = worker_fd_;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, worker_fd_, &ev);
  inbox_ = std::make_unique<Inbox>(host_, worker_);
  return address;
}

// Stops what open_ucx started. Under ucx_mu_, with no endpoint made yet.
void UcxVan::close_ucx() {
  epoll_ctl(epoll_, EPOLL_CTL_DEL, worker_fd_, nullptr);
  inbox_.reset();
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
  worker_ = nullptr;
  context_ = nullptr;
}

// Sends not yet reported are dropped unreported and received messages not
// yet released freed, as van_v2.h's finalize says.
UcxVan::~UcxVan() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    wake();  // a poll() asleep in epoll_wait returns CLOSED
    cv_.wait(lock, [&] { return calls_ == 0; });
  }
  exchange_->stop();  // before ucx_mu_: its thread may wait for it
  std::lock_guard<std::mutex> lock(ucx_mu_);
  finalizing_ = true;  // endpoints failing now are not tried again
  settle_incoming();
  inbox_->shutdown(std::chrono::milliseconds(close_timeout_ms_));
  held_.clear();  // messages not released: their UCX buffers go back before the worker
  // Endpoints without peer failure detection (shared memory) are closed
  // first: ucp_worker_destroy, purging the sends still queued on such an
  // endpoint, aborts inside UCX 1.13 (stubs.c:102), where a forced close
  // ends them through their callbacks.
  std::vector<void*> closing;
  for (auto& owner : endpoints_)
    if (!owner->failed && !owner->peer_failure && owner->ep)
      if (void* r = force_close(*owner)) closing.push_back(r);
  auto deadline = Clock::now() + std::chrono::milliseconds(close_timeout_ms_);
  for (void* r : closing) {
    while (ucp_request_check_status(r) == UCS_INPROGRESS && Clock::now() < deadline)
      ucp_worker_progress(worker_);
    if (ucp_request_check_status(r) != UCS_INPROGRESS) ucp_request_free(r);
  }
  // Destroys every endpoint: sends in flight end (UCS_ERR_CANCELED) through
  // their callbacks, which free their ops.
  ucp_worker_destroy(worker_);
  for (SendOp* op : in_flight_) delete op;
  in_flight_.clear();
  inbox_.reset();
  ucp_cleanup(context_);
  for (int fd : {epoll_, wake_fd_}) ::close(fd);
}

// UCX's worker address lists every network interface of the host, and a
// peer may pick one it cannot reach (a second network, a bridge of this
// host's own): the namespace hosts' job failed so. Unless UCX_NET_DEVICES
// says otherwise, UCX is started again on the interface of the address the
// engine advertises (DMLC_INTERFACE, DMLC_NODE_HOST), before any peer can
// fetch the address. Shared memory to peers on this host stays.
void UcxVan::restrict_to_interface(const std::string& host) {
  if (std::getenv("UCX_NET_DEVICES")) return;
  std::string device = interface_of(host);
  if (device.empty()) return;
  std::lock_guard<std::mutex> lock(ucx_mu_);
  if (!endpoints_.empty()) {
    host_.log(CARAVAN_LOG_INFO, "UCX keeps every interface: peers were connected before listen");
    return;
  }
  close_ucx();
  std::string address;
  try {
    address = open_ucx(device);
  } catch (const Error& e) {
    host_.log(CARAVAN_LOG_INFO,
              "UCX on interface " + device + " only: " + e.what() + "; every interface is kept");
    address = open_ucx("");
  }
  exchange_->set_worker_address(address);
  host_.log(CARAVAN_LOG_DEBUG, "UCX on interface " + device + " (UCX_NET_DEVICES unset)");
}

// Peers that fetched this node's address may still be wiring their
// endpoint up to it. UCX 1.13 aborts such a peer when this node goes away
// at that moment (an assertion, wireup_ep.c:241: the wire-up message it was
// sending when the connection closed is left counted as pending), so this
// node stays, progressing, until each such endpoint's HELLO has come: up
// to CLOSE_TIMEOUT_MS, and no time at all in a job's ordinary end. Under
// ucx_mu_.
void UcxVan::settle_incoming() {
  auto deadline = Clock::now() + std::chrono::milliseconds(close_timeout_ms_);
  while (inbox_->hellos() < exchange_->answered() && Clock::now() < deadline) {
    progress();
    if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) continue;
    epoll_event ev[2];
    epoll_wait(epoll_, ev, 2, 5);
  }
}

// Closes an endpoint at once (UCP_EP_CLOSE_FLAG_FORCE): its sends end
// with UCS_ERR_CANCELED. The close request to wait for, or null. Only for
// endpoints that have not failed (see endpoints_). Under ucx_mu_.
void* UcxVan::force_close(EndpointOwner& owner) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t r = ucp_ep_close_nbx(owner.ep, &p);
  owner.ep = nullptr;
  return r && !UCS_PTR_IS_ERR(r) ? r : nullptr;
}

void UcxVan::properties(caravan_van_properties_v2* out) const {
  out->caps = CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND;
  out->max_message_bytes = SIZE_MAX;
  out->max_segments = CARAVAN_VAN_MAX_SEGMENTS_V2;
  out->transport = transport_.c_str();
}

void UcxVan::listen(const char* host, int port, char* addr_out, size_t addr_cap) {
  Call call(*this);
  auto request = plugin::tcp::check_listen(host, port, addr_out);
  {
    std::lock_guard<std::mutex> lock(ucx_mu_);
    if (listened_)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "listen on " + request.where + ": already listening at " + address_);
    listened_ = true;  // claimed now so a racing second call fails
  }
  restrict_to_interface(request.host);
  int bound = 0;
  try {
    bound = exchange_->listen(request.host, port, request.where);
  } catch (...) {
    std::lock_guard<std::mutex> lock(ucx_mu_);
    listened_ = false;
    throw;
  }
  std::string advertised = plugin::tcp::endpoint(request.host, std::to_string(bound), "ucx");
  if (advertised.size() + 1 > addr_cap)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "address buffer too small for " + advertised);
  std::memcpy(addr_out, advertised.c_str(), advertised.size() + 1);
  {
    std::lock_guard<std::mutex> lock(ucx_mu_);
    address_ = advertised;
  }
  host_.log(CARAVAN_LOG_DEBUG, "listening on " + advertised);
}

void UcxVan::connect(uint64_t peer, const char* address) {
  Call call(*this);
  std::string who = "peer " + std::to_string(peer);
  std::string host, port;
  plugin::tcp::split_peer_endpoint(peer, address, "ucx", &host, &port);
  auto link = std::make_shared<Link>();
  link->peer = peer;
  link->address = address;
  std::string why;
  if (!plugin::tcp::resolve_stream(host, port, false, &link->target, &link->target_len, &why))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "connect " + who + " at " + address + ": " + why);
  std::lock_guard<std::mutex> lock(ucx_mu_);
  auto it = links_.find(peer);
  if (it != links_.end())
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "connect " + who + " at " + address +
                                                     ": already connected (to " +
                                                     it->second->address + ")");
  links_.emplace(peer, link);
  auto parked = parked_.find(link->address);
  if (parked != parked_.end()) {
    EndpointOwner& owner = *parked->second;
    parked_.erase(parked);
    owner.link = link;
    owner.attempt = ++link->attempt;
    owner.name = "peer " + std::to_string(peer) + " at " + link->address;
    link->endpoint = &owner;
    link->up = link->ever_up = true;
    return;
  }
  start_attempt(link, 0);
}

// A connection attempt: the peer's worker address fetched (after
// `delay_ms`), then an endpoint from it, a HELLO on it and a flush, which
// completes once the peer has the HELLO (the link is up) or fails. A
// failure before the link was ever up is tried again, as the peer may not
// listen yet (the engine bounds the wait with CARAVAN_CONNECT_TIMEOUT and
// names the peer).
void UcxVan::start_attempt(const std::shared_ptr<Link>& link, int delay_ms) {
  ++link->attempt;
  link->up = false;
  link->token = next_token_++;
  fetching_[link->token] = link;
  exchange_->fetch(link->token, link->target, link->target_len, delay_ms);
}

void UcxVan::fetched(uint64_t token, bool ok, const std::string& address) {
  std::lock_guard<std::mutex> lock(ucx_mu_);
  auto it = fetching_.find(token);
  if (it == fetching_.end()) return;
  std::shared_ptr<Link> link = it->second.lock();
  fetching_.erase(it);
  if (!link || link->closed || link->token != token) return;
  if (!ok) {
    host_.log(CARAVAN_LOG_DEBUG, "connecting to peer " + std::to_string(link->peer) + " at " +
                                     link->address + ": " + address + "; trying again in " +
                                     std::to_string(retry_ms_) + " ms");
    return start_attempt(link, retry_ms_);
  }
  endpoints_.push_back(std::make_unique<EndpointOwner>());
  EndpointOwner& owner = *endpoints_.back();
  owner.van = this;
  owner.link = link;
  owner.attempt = link->attempt;
  owner.stream = next_stream_++;
  owner.name = "peer " + std::to_string(link->peer) + " at " + link->address;
  link->endpoint = &owner;
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(address.data());
  ep.err_handler.cb = &Callbacks::endpoint_failed;
  ep.err_handler.arg = &owner;
  // UCX's peer failure detection, where the transports have it: a dead
  // peer's sends end with an error at once. Shared memory has none (UCX
  // then finds no transport in PEER mode); there the endpoint is made
  // without, and the engine's heartbeats find a dead peer.
  ucs_status_t st = UCS_ERR_UNREACHABLE;
  if (peer_failure_) {
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    st = ucp_ep_create(worker_, &ep, &owner.ep);
    if (st != UCS_OK && peer_failure_auto_) {
      peer_failure_ = false;
      host_.log(CARAVAN_LOG_INFO,
                "the UCX transports to peer " + std::to_string(link->peer) + " at " +
                    link->address +
                    " cannot report a dead peer (shared memory cannot); endpoints are made "
                    "without (PEER_FAILURE=auto), and dead peers are found by heartbeats");
    }
  }
  if (!peer_failure_) {
    ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    owner.peer_failure = false;
    st = ucp_ep_create(worker_, &ep, &owner.ep);
  }
  if (st != UCS_OK) {
    // No transport reaches the peer (UCX_TLS, UCX_NET_DEVICES): trying
    // again cannot help.
    owner.ep = nullptr;
    link->endpoint = nullptr;
    const char* tls = std::getenv("UCX_TLS");
    return link_lost(*link, "no UCX transport reaches it (UCX_TLS=" +
                                std::string(tls ? tls : "unset") + "): " + text(st));
  }
  owner.piece_bytes = piece_bytes_ && lanes_all_tcp(owner.ep) ? piece_bytes_ : 0;
  auto hello = std::make_unique<SendOp>();
  hello->internal = true;
  hello->text = address_.empty() ? "a node that does not listen" : address_;
  hello->head.kind = Kind::kHello;
  post(link, std::move(hello));
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &Callbacks::flushed;
  p.user_data = &owner;
  ucs_status_ptr_t r = ucp_ep_flush_nbx(owner.ep, &p);
  if (r == nullptr)
    link_up(link);
  else if (UCS_PTR_IS_ERR(r))
    attempt_failed(*link, UCS_PTR_STATUS(r));
  notify_poller();  // the flush needs progress
}

void UcxVan::attempt_failed(Link& link, ucs_status_t status) {
  if (link.closed || finalizing_) return;
  link.endpoint = nullptr;
  if (link.ever_up)
    return link_lost(link, "connection to " + link.address + " lost: " + text(status));
  host_.log(CARAVAN_LOG_DEBUG, "connecting to peer " + std::to_string(link.peer) + " at " +
                                   link.address + ": " + text(status) + "; trying again in " +
                                   std::to_string(retry_ms_) + " ms");
  auto self = links_.find(link.peer);
  if (self != links_.end() && self->second.get() == &link) start_attempt(self->second, retry_ms_);
}

void UcxVan::link_up(const std::shared_ptr<Link>& link) {
  link->up = link->ever_up = true;
  host_.log(CARAVAN_LOG_DEBUG,
            "connected to peer " + std::to_string(link->peer) + " at " + link->address);
  while (!link->queue.empty() && link->up) {
    std::unique_ptr<SendOp> op = std::move(link->queue.front());
    link->queue.pop_front();
    post(link, std::move(op));
  }
}

void UcxVan::link_lost(Link& link, const std::string& why) {
  if (!link.failed.empty()) return;
  link.failed = why;
  link.up = false;
  host_.log(CARAVAN_LOG_WARNING, "peer " + std::to_string(link.peer) + ": " + why);
  link.endpoint = nullptr;
  fail_queue(link, CARAVAN_STATUS_IO);
}

void UcxVan::fail_queue(Link& link, caravan_status status) {
  for (auto& op : link.queue)
    if (!op->internal) sent_.push(op->send_id, status);
  if (!link.queue.empty()) notify_poller();
  link.queue.clear();
}

void UcxVan::disconnect(uint64_t peer) {
  Call call(*this);
  std::lock_guard<std::mutex> lock(ucx_mu_);
  std::shared_ptr<Link> link = plugin::tcp::take_link(links_, peer);
  link->closed = true;
  link->failed = "disconnected";
  exchange_->cancel(link->token);
  fetching_.erase(link->token);
  fail_queue(*link, CARAVAN_STATUS_CLOSED);
  // Sends in flight go on; each is reported when UCX is done with it, as
  // CLOSED (sent()). A working endpoint waits for the address to be
  // connected again.
  // Without peer failure detection, sends to a dead peer might never end:
  // the endpoint is closed instead, which ends them (UCS_ERR_CANCELED).
  EndpointOwner* owner = link->endpoint;
  link->endpoint = nullptr;
  if (owner && link->up && !owner->failed && owner->peer_failure) {
    owner->link.reset();
    parked_[link->address] = owner;
  } else if (owner && !owner->failed && !owner->peer_failure && owner->ep) {
    if (void* r = force_close(*owner)) ucp_request_free(r);  // nothing waits for it
  }
}

void UcxVan::send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments,
                  size_t num_segments, uint64_t send_id) {
  Call call(*this);
  auto who = [&] { return "send to peer " + std::to_string(peer); };
  plugin::checked_send_bytes(segments, num_segments, who());
  auto op = std::make_unique<SendOp>();
  op->send_id = send_id;
  op->head.kind = Kind::kData;
  op->head.slot = slot;
  op->head.num_segments = static_cast<uint32_t>(num_segments);
  for (size_t i = 0; i < num_segments; ++i) {
    op->head.lens[i] = segments[i].len;
    if (segments[i].len)
      op->iov[op->num_segments++] = {const_cast<void*>(segments[i].data), segments[i].len};
  }
  std::lock_guard<std::mutex> lock(ucx_mu_);
  auto it = links_.find(peer);
  if (it == links_.end()) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, who() + ": not connected");
  const std::shared_ptr<Link>& link = it->second;
  if (!link->failed.empty())
    throw Error(link->closed ? CARAVAN_STATUS_CLOSED : CARAVAN_STATUS_IO,
                who() + " at " + link->address + ": " + link->failed);
  if (!link->up)
    link->queue.push_back(std::move(op));
  else
    post(link, std::move(op));
}

// Posts a send on the link's endpoint. Its header and I/O vector live in
// the op, which UCX reads until the send completes.
//
// Over TCP, UCX 1.13's second protocols send an active message larger than
// a receive buffer (UCX_TCP_RX_SEG_SIZE) as eager fragments copied through
// bounce buffers, and the receiver's UCX copies them together into a buffer
// of its own; one that fits goes zero-copy and is read in one piece. So to
// a peer reached over TCP alone, a large segment goes as pieces (wire.h),
// forced eager so that the receiver finds each one whole in its handler:
// 4 MB moved at 0.74-0.93x van-tcp's rate against 0.68-0.71x whole
// (docs/van-ucx.md).
void UcxVan::post(const std::shared_ptr<Link>& link, std::unique_ptr<SendOp> owned) {
  SendOp* op = owned.release();
  op->van = this;
  op->link = link;
  op->head.magic = kWireMagic;
  op->head.stream = link->endpoint->stream;
  op->head.seq = op->head.kind == Kind::kHello ? 0 : link->endpoint->next_seq++;
  lay_out(*op, link->endpoint->peer_failure);
  in_flight_.insert(op);
  ucp_ep_h ep = link->endpoint->ep;
  const size_t piece = link->endpoint->piece_bytes;
  // One more than the sends, taken back last: no piece's completion can
  // report the op while pieces are still being posted.
  op->unfinished = 1;
  if (op->head.kind == Kind::kHello) {
    post_send(*op, ep, op->header, op->text.data(), op->text.size(), ucp_dt_make_contig(1), 0);
  } else if (op->head.data_segment != kEverySegment && piece && op->iov[0].length > piece) {
    const auto* data = static_cast<const unsigned char*>(op->iov[0].buffer);
    const size_t len = op->iov[0].length, head_bytes = wire_head_bytes(op->head.num_segments);
    op->head.kind = Kind::kPiece;
    std::memcpy(op->header.data(), &op->head, head_bytes);
    // UCX reads each header until its send completes: its bytes live in
    // their own vector, which growing piece_headers moves without copying.
    for (uint64_t at = 0; at < len && op->status == UCS_OK; at += piece) {
      // The first piece's header carries the small segments after its offset.
      std::vector<unsigned char>& h = op->piece_headers.emplace_back(
          at ? piece_head_bytes(op->head.num_segments) : op->header.size() + sizeof at);
      std::memcpy(h.data(), op->header.data(), head_bytes);
      std::memcpy(h.data() + head_bytes, &at, sizeof at);
      if (!at)
        std::memcpy(h.data() + head_bytes + sizeof at, op->header.data() + head_bytes,
                    op->header.size() - head_bytes);
      post_send(*op, ep, h, data + at, std::min(piece, len - at), ucp_dt_make_contig(1),
                UCP_AM_SEND_FLAG_EAGER);
    }
  } else if (op->num_segments <= 1) {
    // One segment goes as contiguous memory, which every UCX protocol
    // takes (its zero-copy ones included); several as an I/O vector.
    post_send(*op, ep, op->header, op->num_segments ? op->iov[0].buffer : nullptr,
              op->num_segments ? op->iov[0].length : 0, ucp_dt_make_contig(1), 0);
  } else {
    post_send(*op, ep, op->header, op->iov, op->num_segments, ucp_dt_make_iov(), 0);
  }
  ++epoch_;  // a poller about to sleep progresses these sends first
  send_done(*op, UCS_OK);
  if (polling_) wake();
}

void UcxVan::post_send(SendOp& op, ucp_ep_h ep, const std::vector<unsigned char>& header,
                       const void* buffer, size_t count, ucp_datatype_t datatype, uint32_t flags) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = &Callbacks::sent;
  p.user_data = &op;
  p.datatype = datatype;
  p.flags = flags;
  ++op.unfinished;
  ucs_status_ptr_t r = ucp_am_send_nbx(ep, kAmId, header.data(), header.size(), buffer, count, &p);
  if (r == nullptr)
    send_done(op, UCS_OK);
  else if (UCS_PTR_IS_ERR(r))
    send_done(op, UCS_PTR_STATUS(r));
}

void UcxVan::send_done(SendOp& op, ucs_status_t status) {
  if (status != UCS_OK && op.status == UCS_OK) op.status = status;
  if (--op.unfinished == 0) sent(op, op.status);
}

// Builds the op's header (wire.h): the small segments ride in it, and the
// largest goes alone as contiguous data, where the endpoint detects a lost
// peer. An endpoint without (shared memory only) keeps I/O vectors: UCX
// 1.13.1 loses a contiguous rendezvous send cut short by the endpoint's
// close, and ucp_worker_destroy then crashes reporting its request
// (Lending.AMessageCutShort...). There UCX copies I/O vectors in fragments
// where it would read contiguous memory across processes (CMA) in one copy.
void UcxVan::lay_out(SendOp& op, bool inline_small) {
  size_t n = op.head.num_segments;
  size_t head_bytes = wire_head_bytes(n);
  op.head.data_segment = kEverySegment;
  size_t largest = 0, small = 0;
  for (size_t i = 0; i < n; ++i) {
    small += op.head.lens[i];
    if (op.head.lens[i] > op.head.lens[largest]) largest = i;
  }
  small -= n ? op.head.lens[largest] : 0;
  if (op.head.kind != Kind::kData || op.num_segments < 2 || !inline_small || small > most_inline_) {
    op.header.resize(head_bytes);
    std::memcpy(op.header.data(), &op.head, head_bytes);
    return;
  }
  op.head.data_segment = static_cast<uint32_t>(largest);
  op.header.resize(head_bytes + small);
  std::memcpy(op.header.data(), &op.head, head_bytes);
  unsigned char* to = op.header.data() + head_bytes;
  ucp_dt_iov_t data{};
  for (size_t i = 0, k = 0; i < n; ++i) {
    if (!op.head.lens[i]) continue;
    const ucp_dt_iov_t& seg = op.iov[k++];  // the nonempty segments, in order
    if (i == largest) {
      data = seg;
    } else {
      std::memcpy(to, seg.buffer, seg.length);
      to += seg.length;
    }
  }
  op.iov[0] = data;
  op.num_segments = 1;
}

void UcxVan::sent(SendOp& op, ucs_status_t status) {
  std::unique_ptr<SendOp> owned(&op);
  in_flight_.erase(&op);
  if (op.internal) return;  // a HELLO: the flush tells how the attempt went
  caravan_status result = CARAVAN_STATUS_OK;
  if (status != UCS_OK) {
    bool closed = op.link && op.link->closed;
    result = closed ? CARAVAN_STATUS_CLOSED : CARAVAN_STATUS_IO;
    if (!closed && op.link)
      host_.log(CARAVAN_LOG_DEBUG, "send to peer " + std::to_string(op.link->peer) + " at " +
                                       op.link->address + " failed: " + text(status));
  }
  sent_.push(op.send_id, result);
  notify_poller();
}

void UcxVan::notify_poller() {
  ++epoch_;
  if (polling_) wake();
}

void UcxVan::wake() {
  uint64_t one = 1;
  ssize_t r = ::write(wake_fd_, &one, sizeof one);
  (void)r;
}

// UCX's progress, then what it left for after: endpoints that failed.
// Under ucx_mu_.
void UcxVan::progress() {
  // A few rounds at most, and none once a message is whole: under a stream
  // of large messages UCX always has more to do, and poll() must hand out
  // what is whole (and let senders take ucx_mu_) meanwhile. A pipelined
  // tensor's first sums came back only after its last partition left.
  for (int round = 0; round < kProgressRounds && !inbox_->has_ready(); ++round)
    if (ucp_worker_progress(worker_) == 0) break;
  while (!failed_.empty()) {
    EndpointOwner* owner = failed_.front();
    failed_.pop_front();
    auto link = owner->link.lock();
    if (link && !link->closed && link->attempt == owner->attempt && link->endpoint == owner) {
      attempt_failed(*link, owner->status);
    } else {
      for (auto it = parked_.begin(); it != parked_.end(); ++it)
        if (it->second == owner) {
          parked_.erase(it);
          break;
        }
    }
  }
}

caravan_status UcxVan::poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                            size_t* num_events) {
  Call call(*this);
  std::lock_guard<std::mutex> one_poller(poll_mu_);
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 0);
  auto hand_out = [&](std::unique_ptr<Incoming> in) { return held_.hand_out(std::move(in)); };
  for (;;) {
    size_t got = 0;
    uint64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(ucx_mu_);
      progress();
      got = inbox_->take(events, capacity, hand_out);
      seen = epoch_;
    }
    got += sent_.take(events + got, capacity - got);
    if (got) {
      *num_events = got;
      return CARAVAN_STATUS_OK;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return CARAVAN_STATUS_CLOSED;
    }
    if (interrupted_.exchange(false)) return CARAVAN_STATUS_TIMEOUT;
    int wait = -1;
    if (timeout_ms >= 0) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (timeout_ms == 0 || left <= 0) return CARAVAN_STATUS_TIMEOUT;
      wait = static_cast<int>(std::min<long long>(left, INT_MAX));
    }
    {
      std::lock_guard<std::mutex> lock(ucx_mu_);
      // Anything since this loop's progress (a send posted, an event
      // queued by another thread's progress) is looked at before sleeping.
      if (epoch_ != seen) continue;
      if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) continue;
      polling_ = true;
    }
    epoll_event ev[2];
    int n = epoll_wait(epoll_, ev, 2, wait);
    {
      std::lock_guard<std::mutex> lock(ucx_mu_);
      polling_ = false;
    }
    for (int i = 0; i < n; ++i)
      if (ev[i].data.fd == wake_fd_) {
        uint64_t count;
        ssize_t r = ::read(wake_fd_, &count, sizeof count);
        (void)r;
      }
  }
}

void UcxVan::release(const caravan_van_message_v2* message) {
  std::unique_ptr<Incoming> in = held_.take_back(message);
  if (!in->kept) return;
  std::lock_guard<std::mutex> lock(ucx_mu_);  // UCX's buffer goes back to its worker
  in.reset();
}

void UcxVan::interrupt() {
  interrupted_ = true;
  wake();
}

void UcxVan::lend(uint64_t slot, size_t segment, void* buf, size_t len) {
  Call call(*this);
  std::lock_guard<std::mutex> lock(ucx_mu_);
  inbox_->lend(slot, segment, buf, len);
}

void UcxVan::unlend(uint64_t slot) {
  Call call(*this);
  std::lock_guard<std::mutex> lock(ucx_mu_);
  inbox_->unlend(slot);
  if (inbox_->has_ready()) notify_poller();
}

}  // namespace caravan::van_ucx
