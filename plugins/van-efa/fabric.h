// libfabric set-up and the rendezvous::Transport over one reliable-datagram
// endpoint: tagged sends and receives, remote reads and writes, one completion queue.
#ifndef CARAVAN_VAN_EFA_FABRIC_H
#define CARAVAN_VAN_EFA_FABRIC_H

#include <rdma/fabric.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "rendezvous/protocol.h"

namespace caravan::van_efa {

// What fi_getinfo offers for a provider, checked once at init.
struct Offer {
  std::string provider;  // libfabric's full name, e.g. "tcp;ofi_rxm"
  bool rma = false;
};

// Fails with UNAVAILABLE, naming `provider` and the providers present, when
// no reliable-datagram endpoint of that provider is on offer.
Offer probe(const std::string& provider, bool want_rma);

// True for providers that take an IP host and port for their own address.
bool speaks_ip(const std::string& provider);

class Fabric : public rendezvous::Transport {
 public:
  // Opens fabric, domain, address vector, completion queue and endpoint.
  // node/service (both or neither) choose the local address.
  Fabric(const std::string& provider, bool rma, const char* node, const char* service);
  ~Fabric() override;
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  const std::string& provider() const { return provider_; }
  const std::string& name() const { return name_; }
  bool rma() const { return rma_; }
  size_t max_msg_size() const { return max_msg_size_; }

  // Hands completions to the protocol: without waiting when timeout_ms is 0,
  // otherwise blocking up to timeout_ms until one comes or wake() is called.
  // Returns how many it handled.
  int progress(rendezvous::Protocol& protocol, int timeout_ms);
  // Closes the endpoint, so no operation touches registered memory after.
  void close_endpoint();

  Post post_send(uint64_t to, const void* buf, size_t len, void* desc, void* ctx,
                 std::string* err) override;
  Post post_recv(void* buf, size_t len, void* desc, void* ctx, std::string* err) override;
  Post post_read(uint64_t from, void* local, size_t len, void* desc, uint64_t raddr, uint64_t key,
                 void* ctx, std::string* err) override;
  Post post_write(uint64_t to, const void* local, size_t len, void* desc, uint64_t raddr,
                  uint64_t key, void* ctx, std::string* err) override;
  uint64_t resolve(const std::string& name) override;
  std::string describe(const std::string& name) override;
  rendezvous::Registration register_memory(void* p, size_t len) override;
  void deregister(const rendezvous::Registration& r) override;
  bool cancel(void* ctx) override;
  void wake() override;

 private:
  void close_all() noexcept;

  std::string provider_;
  bool rma_;
  std::string name_;
  size_t max_msg_size_ = 0;
  bool virt_addr_ = false;
  bool cq_waits_ = false;  // false: the provider's queue cannot block
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;

  std::mutex av_mu_;
  std::map<std::string, uint64_t> addrs_;
  std::atomic<uint64_t> next_key_{1};

  // Stands in for a blocking queue when the provider has none.
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool woken_ = false;
};

}  // namespace caravan::van_efa

#endif  // CARAVAN_VAN_EFA_FABRIC_H
