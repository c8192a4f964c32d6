// The libfabric van instance: a Fabric (opened by listen), the rendezvous
// protocol over it, and the progress thread that alone drives both.
// Methods throw plugin::Error; plugin_entry.cc turns that into statuses.
#ifndef CARAVAN_VAN_EFA_EFA_VAN_H
#define CARAVAN_VAN_EFA_EFA_VAN_H

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"
#include "caravan/plugin/van_v2_cxx.hpp"
#include "events/counted_call.h"
#include "fabric.h"
#include "rendezvous/protocol.h"

namespace caravan::van_efa {

class EfaVan {
  CARAVAN_VAN_V2_CLASS(EfaVan)

  // A call into the instance, which finalize waits for.
  using Call = plugin::CountedCall<EfaVan>;

 private:
  friend Call;
  void open(const char* node, const char* service);
  rendezvous::Protocol* protocol_or_open();
  void run() noexcept;
  bool drain() noexcept;
  void shutdown() noexcept;

  plugin::Host host_;
  std::string asked_;  // the provider asked for
  Offer offer_;
  rendezvous::Config cfg_;
  bool spin_ = false;  // poll without blocking while operations are in flight
  int close_timeout_ms_ = 5000;

  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  bool closing_ = false;
  bool interrupted_ = false;  // before the protocol exists; then its inbox's
  std::string address_;
  std::unique_ptr<Fabric> fabric_;
  std::unique_ptr<rendezvous::Protocol> protocol_;
  std::atomic<rendezvous::Protocol*> live_{nullptr};  // protocol_, once running
  std::atomic<bool> stop_{false};
  std::thread progress_;
};

}  // namespace caravan::van_efa

#endif  // CARAVAN_VAN_EFA_EFA_VAN_H
