// The ibverbs van instance: rdma_cm connections, the device they share, the
// rendezvous protocol over them, and the one progress thread that alone posts
// work requests and handles completions and connection events.
// Methods throw plugin::Error; plugin_entry.cc turns that into statuses.
//
// The rendezvous Transport is connectionless; this van maps it onto RC
// queue pairs: a rendezvous stream's address is its outbound connection, and
// the address a peer's hello resolves to names that peer's *instance*, so
// remote reads and completion notices take whichever connection to it is
// up (the outbound one first) and survive the other direction closing.
// Work requests a connection cannot take yet wait in its backlog instead of
// returning kAgain, which would stall every other peer behind it.
#ifndef CARAVAN_VAN_VERBS_VERBS_VAN_H
#define CARAVAN_VAN_VERBS_VERBS_VAN_H

#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"
#include "caravan/plugin/van_v2_cxx.hpp"
#include "connection.h"
#include "device.h"
#include "events/counted_call.h"
#include "rendezvous/protocol.h"

namespace caravan::van_verbs {

class VerbsVan : public rendezvous::Transport {
  CARAVAN_VAN_V2_CLASS(VerbsVan)

  // A call into the instance, which finalize waits for.
  using Call = plugin::CountedCall<VerbsVan>;

  // rendezvous::Transport; posting happens on the progress thread only.
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
  void wake() override;

 private:
  friend Call;
  Post post_rma(bool write, uint64_t peer, void* local, size_t len, void* desc, uint64_t raddr,
                uint64_t key, void* ctx, std::string* err);
  // A work request that will never complete on its own: handed back to the
  // protocol as failed, outside mu_ (the protocol calls back into us).
  struct Failed {
    void* ctx;
    std::string why;
  };
  using Fails = std::vector<Failed>;

  void run() noexcept;
  void handle_cm_events(Fails& fails);
  void poll_cq(Device& dev);
  void sweep(Fails& fails);
  Post enqueue(uint64_t to, const Pending& p, std::string* err);
  // The rest run under mu_.
  Device* use_device(ibv_context* ctx, std::string* why);
  Conn* route(uint64_t to);
  Conn* conn_of(rdma_cm_id* id);
  void fail_conn(Conn& c, const std::string& why, Fails& fails);
  void destroy(Conn& c);
  void accept(rdma_cm_id* id, const std::string& from, const Greeting& g,
              const rdma_conn_param& req);
  std::string who(const Conn& c) const;
  void shutdown() noexcept;

  plugin::Host host_;
  rendezvous::Config cfg_;
  size_t send_depth_ = 256;
  size_t cq_depth_ = 4096;
  int resolve_timeout_ms_ = 5000;
  uint64_t instance_ = 0;
  unsigned char greeting_[kGreetingBytes] = {};
  rdma_event_channel* events_ = nullptr;
  int wake_fd_ = -1;
  std::unique_ptr<rendezvous::Protocol> protocol_;

  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  bool closing_ = false;
  std::unique_ptr<Device> dev_;
  std::atomic<Device*> live_dev_{nullptr};
  rdma_cm_id* listen_id_ = nullptr;
  sockaddr_storage listen_addr_{};
  bool listen_bound_ = false;  // listen_addr_ is a device's address, usable as a source
  std::string address_;
  uint64_t next_conn_ = 1;
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;
  std::unordered_map<uint64_t, uint64_t> peers_;  // engine peer id -> outbound Conn::id
  size_t budget_used_ = 0;  // send-queue work requests in flight on all connections
  std::atomic<bool> stop_{false};
  std::thread progress_;
};

}  // namespace caravan::van_verbs

#endif  // CARAVAN_VAN_VERBS_VERBS_VAN_H
