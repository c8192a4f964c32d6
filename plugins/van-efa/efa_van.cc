#include "efa_van.h"

#include <chrono>
#include <climits>
#include <cstring>

#include "address.h"
#include "params.h"

namespace caravan::van_efa {

using plugin::Error;

EfaVan::EfaVan(const caravan_host_v1* host) : host_(host) {
  // libfabric reads FI_PROVIDER itself too; the host's view wins so the
  // job's configuration, not just this process's, decides.
  auto param = params::kProvider.given(host_);
  auto env = host_.env("FI_PROVIDER");
  asked_ = param && !param->empty() ? *param : env && !env->empty() ? *env : "efa";
  cfg_.eager_bytes = static_cast<size_t>(params::kEagerBytes.integer(host_));
  cfg_.max_registered_bytes = static_cast<size_t>(params::kMaxRegisteredBytes.integer(host_));
  cfg_.rx_depth = static_cast<size_t>(params::kRxDepth.integer(host_));
  bool want_rma = params::kRma.integer(host_) != 0;
  spin_ = params::kSpin.integer(host_) != 0;
  int64_t close_ms = params::kCloseTimeoutMs.integer(host_);
  if (close_ms < 0 || close_ms > 3600 * 1000)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter CLOSE_TIMEOUT_MS must be 0 to 3600000");
  close_timeout_ms_ = static_cast<int>(close_ms);
  if (cfg_.eager_bytes < 4096 || cfg_.eager_bytes > (size_t{64} << 20))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter EAGER_BYTES must be 4096 to 64 MiB");
  if (cfg_.rx_depth < 1)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "plugin parameter RX_DEPTH must be at least 1");
  offer_ = probe(asked_, want_rma);
  cfg_.rma = offer_.rma;
  cfg_.zero_copy = cfg_.rma && params::kZeroCopy.integer(host_) != 0;
  cfg_.cache_bytes =
      rendezvous::cache_bytes_param(rendezvous::kCacheBytes.given_integer(host_).value_or(
                                        static_cast<int64_t>(cfg_.max_registered_bytes / 4)),
                                    cfg_.max_registered_bytes);
  if (!cfg_.rma) cfg_.cache_bytes = 0;
  if (want_rma && !offer_.rma)
    host_.log(CARAVAN_LOG_WARNING,
              "provider " + offer_.provider +
                  " has no remote reads (FI_RMA): large messages go as chunked eager sends");
}

EfaVan::~EfaVan() { shutdown(); }

void EfaVan::properties(caravan_van_properties_v2* out) const {
  out->caps = (cfg_.rma ? CARAVAN_VAN_CAP_V2_RDMA : 0) |
              (cfg_.zero_copy ? CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND : 0);
  out->max_message_bytes = SIZE_MAX;
  out->max_segments = CARAVAN_VAN_MAX_SEGMENTS_V2;
  out->transport = "efa";
}

void EfaVan::open(const char* node, const char* service) {
  // Called under mu_.
  auto fabric = std::make_unique<Fabric>(asked_, cfg_.rma, node, service);
  rendezvous::Config cfg = cfg_;
  cfg.eager_bytes = std::min(cfg.eager_bytes, fabric->max_msg_size());
  cfg.read_chunk = std::min<size_t>(cfg.read_chunk, fabric->max_msg_size());
  address_ = encode_address(fabric->provider(), fabric->name());
  if (address_.size() + 1 > CARAVAN_VAN_MAX_ADDRESS_V2)
    throw Error(CARAVAN_STATUS_INTERNAL, "endpoint name of " +
                                             std::to_string(fabric->name().size()) +
                                             " bytes does not fit an address");
  auto log = [host = host_](caravan_log_level level, const std::string& text) {
    host.log(level, text);
  };
  protocol_ = std::make_unique<rendezvous::Protocol>(*fabric, cfg, log, fabric->name());
  fabric_ = std::move(fabric);
  progress_ = std::thread([this] { run(); });
  live_ = protocol_.get();
  cv_.notify_all();
  host_.log(CARAVAN_LOG_INFO, "endpoint " + address_ + " (eager up to " +
                                  std::to_string(cfg.eager_bytes) + " bytes, " +
                                  (cfg.rma ? "remote reads" : "chunked sends") + " above)");
}

void EfaVan::listen(const char* host, int port, char* addr_out, size_t addr_cap) {
  Call call(*this);
  if (!host || !*host || !addr_out)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "listen: host or address buffer missing");
  if (port < 0 || port > 65535)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cannot listen on host '" + std::string(host) +
                                                     "' port " + std::to_string(port) +
                                                     ": port out of range");
  std::lock_guard<std::mutex> lock(mu_);
  if (fabric_)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "listen: already listening at " + address_);
  std::string node = host;
  if (node.size() > 2 && node.front() == '[' && node.back() == ']')
    node = node.substr(1, node.size() - 2);
  std::string service = std::to_string(port);
  // Non-IP fabrics (efa) address the device, not a host and port.
  bool ip = speaks_ip(offer_.provider);
  open(ip ? node.c_str() : nullptr, ip ? service.c_str() : nullptr);
  if (address_.size() + 1 > addr_cap)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "address buffer too small for " + address_);
  std::memcpy(addr_out, address_.c_str(), address_.size() + 1);
}

rendezvous::Protocol* EfaVan::protocol_or_open() {
  rendezvous::Protocol* p = live_.load();
  if (p) return p;
  std::lock_guard<std::mutex> lock(mu_);
  // Connecting before listening: an endpoint on any local address.
  if (!fabric_) open(nullptr, nullptr);
  return protocol_.get();
}

void EfaVan::connect(uint64_t peer, const char* address) {
  Call call(*this);
  std::string who = "connect peer " + std::to_string(peer);
  if (!address || !*address)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, who + ": address missing");
  std::string provider, name, why;
  if (!decode_address(address, &provider, &name, &why))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, who + " at " + address + ": address " + why);
  rendezvous::Protocol* protocol = protocol_or_open();
  if (provider != fabric_->provider())
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, who + " at " + address +
                                                     ": address is for provider " + provider +
                                                     ", this van uses " + fabric_->provider());
  try {
    protocol->connect(peer, fabric_->resolve(name));
  } catch (const Error& e) {
    throw Error(e.status(), who + " at " + address + ": " + e.what());
  }
}

void EfaVan::disconnect(uint64_t peer) {
  Call call(*this);
  rendezvous::Protocol* protocol = live_.load();
  if (!protocol)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "disconnect peer " + std::to_string(peer) + ": not connected");
  try {
    protocol->disconnect(peer);
  } catch (const Error& e) {
    throw Error(e.status(), "disconnect peer " + std::to_string(peer) + ": " + e.what());
  }
}

void EfaVan::send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segs, size_t n,
                  uint64_t send_id) {
  Call call(*this);
  rendezvous::Protocol* protocol = live_.load();
  try {
    if (!protocol) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "not connected");
    protocol->send(peer, slot, segs, n, send_id);
  } catch (const Error& e) {
    throw Error(e.status(), "send to peer " + std::to_string(peer) + ": " + e.what());
  }
}

caravan_status EfaVan::poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                            size_t* n) {
  Call call(*this);
  rendezvous::Protocol* protocol = live_.load();
  if (!protocol) {
    // Nothing can happen before listen(): no send can be accepted and no
    // message arrive. Wait for it like for an event.
    std::unique_lock<std::mutex> lock(mu_);
    auto up = [&] { return closing_ || interrupted_ || live_.load(); };
    if (timeout_ms < 0)
      cv_.wait(lock, up);
    else if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), up))
      return CARAVAN_STATUS_TIMEOUT;
    if (closing_) return CARAVAN_STATUS_CLOSED;
    if (interrupted_) {
      interrupted_ = false;
      return CARAVAN_STATUS_TIMEOUT;
    }
    protocol = live_.load();
    lock.unlock();
    return protocol->poll(0, events, capacity, n);
  }
  return protocol->poll(timeout_ms, events, capacity, n);
}

void EfaVan::interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  if (rendezvous::Protocol* protocol = live_.load()) {
    protocol->interrupt();
    return;
  }
  interrupted_ = true;
  cv_.notify_all();
}

void EfaVan::release(const caravan_van_message_v2* msg) {
  Call call(*this);
  rendezvous::Protocol* protocol = live_.load();
  if (!protocol) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: nothing was received");
  protocol->release(msg);
}

// Blocks in the completion queue while idle; while operations of ours are
// in flight it keeps polling, since providers with manual progress (tcp)
// only move data when asked.
void EfaVan::run() noexcept {
  rendezvous::Protocol& protocol = *protocol_;
  try {
    while (!stop_.load(std::memory_order_acquire)) {
      int n = fabric_->progress(protocol, 0);
      bool did = protocol.pump();
      if (n > 0 || did) continue;
      if (protocol.busy() && spin_) {
        std::this_thread::yield();
        continue;
      }
      if (protocol.busy()) {
        fabric_->progress(protocol, 1);
        continue;
      }
      fabric_->progress(protocol, 100);
    }
  } catch (const std::exception& e) {
    host_.log(CARAVAN_LOG_FATAL, std::string("progress thread stopped: ") + e.what());
  }
}

// tcp;ofi_rxm's fi_close of an endpoint walks the operations still posted
// on it and crashes when it meets one in flight, so every operation is
// taken back first: receives are cancelled, sends and reads run to their
// completion (or failure) here, on the only thread left driving progress.
bool EfaVan::drain() noexcept {
  protocol_->cancel_receives();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(close_timeout_ms_);
  try {
    while (protocol_->posted() > 0 && std::chrono::steady_clock::now() < deadline)
      fabric_->progress(*protocol_, 10);
  } catch (const std::exception& e) {
    host_.log(CARAVAN_LOG_ERROR,
              std::string("finalize: draining the endpoint failed: ") + e.what());
    return false;
  }
  return protocol_->posted() == 0;
}

void EfaVan::shutdown() noexcept {
  {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }
  if (protocol_) {
    stop_ = true;
    fabric_->wake();
    if (progress_.joinable()) progress_.join();
    protocol_->close();
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return calls_ == 0; });
  }
  if (!protocol_) return;
  rendezvous::PoolStats s = protocol_->stats();
  host_.log(CARAVAN_LOG_INFO,
            "registered memory: peak " + std::to_string(s.peak_bytes) + " bytes, " +
                std::to_string(s.registered_bytes) + " bytes in " + std::to_string(s.buffers) +
                " buffers at finalize, " + std::to_string(s.registrations) +
                " registrations of pool buffers, " + std::to_string(s.caller_registrations) +
                " of callers' memory, limit " + std::to_string(s.limit_bytes) + " bytes");
  host_.log(CARAVAN_LOG_INFO, rendezvous::describe(protocol_->counts()));
  if (!drain()) {
    // Closing now could crash inside libfabric or let it write into freed
    // buffers; leaking the endpoint and its buffers is the lesser harm.
    host_.log(CARAVAN_LOG_WARNING, "finalize: after " + std::to_string(close_timeout_ms_) +
                                       " ms (CLOSE_TIMEOUT_MS) endpoint " + address_ +
                                       " still has " + protocol_->describe_posted() +
                                       " posted; leaving it and its registered buffers open");
    // Deregistering callers' memory is safe even so: reads of it then fail.
    protocol_->settle_transfers(CARAVAN_STATUS_CLOSED);
    (void)protocol_.release();
    (void)fabric_.release();
    return;
  }
  fabric_->close_endpoint();
  protocol_->free();
  protocol_.reset();
  fabric_.reset();
}

}  // namespace caravan::van_efa
