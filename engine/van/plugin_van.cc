// Adapts a van plugin's C table to the engine's Van class: an ABI 2 table
// as it is, an ABI 1 table through the lift (van_v1_lift.h).
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "engine/base/config.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/plugin/host_services.h"
#include "engine/plugin/loader.h"
#include "engine/van/van.h"
#include "engine/van/van_v1_lift.h"

namespace caravan {
namespace {

// Events taken from the van per poll() call; more simply wait for the next.
constexpr size_t kEventsPerPoll = 64;

class PluginVan final : public Van {
 public:
  explicit PluginVan(std::unique_ptr<PluginLibrary> lib)
      : lib_(std::move(lib)), name_(lib_->descriptor->name), host_(CARAVAN_PLUGIN_KIND_VAN, name_) {
    caravan_status s;
    if (lib_->descriptor->abi_major == CARAVAN_VAN_ABI_MAJOR_V1) {
      auto* v1 = static_cast<const caravan_van_ops_v1*>(lib_->descriptor->ops);
      if (v1->struct_size < CARAVAN_VAN_OPS_V1_0_SIZE)
        refuse_table(v1->struct_size, CARAVAN_VAN_OPS_V1_0_SIZE, "1.0");
      ops_ = van_v1_lifted_ops();
      s = open_lifted_van_v1(v1, host_.table(), &ctx_);
    } else {
      ops_ = static_cast<const caravan_van_ops_v2*>(lib_->descriptor->ops);
      if (ops_->struct_size < CARAVAN_VAN_OPS_V2_0_SIZE)
        refuse_table(ops_->struct_size, CARAVAN_VAN_OPS_V2_0_SIZE, "2.0");
      s = ops_->init(host_.table(), &ctx_);
    }
    if (s != CARAVAN_STATUS_OK)
      throw Error(CARAVAN_ERR_PLUGIN, "van plugin '" + name_ + "' (" + lib_->path +
                                          ") failed to start: " + describe_plugin_failure(s));
    lender_->ops = ops_;
    lender_->ctx = ctx_;
    props_.struct_size = sizeof props_;
    s = ops_->properties(ctx_, &props_);
    if (s != CARAVAN_STATUS_OK) {
      // The constructor throws, so no destructor will: the instance init
      // made is finalized here.
      lender_->ctx = nullptr;
      ops_->finalize(ctx_);
      ctx_ = nullptr;
      fail("properties", s);
    }
    if (!props_.transport) props_.transport = "unknown";
    // Minor 1's entries, where the table is long enough to have them and
    // the van fills both.
    lends_ = ops_->struct_size >= sizeof(caravan_van_ops_v2) && ops_->lend && ops_->unlend;
  }

  ~PluginVan() override {
    if (!ctx_) return;
    {
      std::unique_lock<std::shared_mutex> lock(lender_->mu);
      lender_->ctx = nullptr;
    }
    ops_->finalize(ctx_);
    // Sends never reported are over now (van_v2.h, finalize): their memory
    // goes with sending_, and nobody polls any more to be told.
  }

  const std::string& name() const override { return name_; }
  const caravan_van_properties_v2& properties() const override { return props_; }

  std::string listen(const std::string& host, int port) override {
    char addr[CARAVAN_VAN_MAX_ADDRESS_V2] = {0};
    caravan_status s = ops_->listen(ctx_, host.c_str(), port, addr, sizeof addr);
    if (s != CARAVAN_STATUS_OK) fail("listen on " + host + ":" + std::to_string(port), s);
    addr[sizeof addr - 1] = '\0';
    return addr;
  }

  void connect(uint64_t peer, const std::string& address) override {
    caravan_status s = ops_->connect(ctx_, peer, address.c_str());
    if (s != CARAVAN_STATUS_OK) fail("connect to " + address, s);
  }

  void disconnect(uint64_t peer) override {
    caravan_status s = ops_->disconnect(ctx_, peer);
    if (s != CARAVAN_STATUS_OK) fail("disconnect from node " + std::to_string(peer), s);
  }

  void send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments, size_t n,
            std::shared_ptr<Sending> sending) override {
    uint64_t id;
    {
      // Registered before the van sees it: its SENT event may come out of
      // a poll() on another thread before send() returns here.
      std::lock_guard<std::mutex> lock(sending_mu_);
      id = next_send_id_++;
      sending_.emplace(id, std::move(sending));
    }
    caravan_status s = ops_->send(ctx_, peer, slot, segments, n, id);
    if (s != CARAVAN_STATUS_OK) {
      {
        std::lock_guard<std::mutex> lock(sending_mu_);
        sending_.erase(id);
      }
      fail("send to node " + std::to_string(peer), s);
    }
  }

  bool poll(int timeout_ms, Inbox& inbox) override {
    caravan_van_event_v2 events[kEventsPerPoll];
    size_t n = 0;
    caravan_status s = ops_->poll(ctx_, timeout_ms, events, kEventsPerPoll, &n);
    if (s == CARAVAN_STATUS_TIMEOUT) return false;
    if (s != CARAVAN_STATUS_OK) fail("poll", s);
    for (size_t i = 0; i < n && i < kEventsPerPoll; ++i) {
      const caravan_van_event_v2& e = events[i];
      if (e.type == CARAVAN_VAN_EVENT_SENT) {
        finish_send(e.send_id, e.status);
      } else if (e.type == CARAVAN_VAN_EVENT_RECEIVED) {
        inbox.received(receive(e.message));
      } else {
        throw Error(CARAVAN_ERR_TRANSPORT, "van '" + name_ +
                                               "': poll returned an event of unknown type " +
                                               std::to_string(e.type));
      }
    }
    return n > 0;
  }

  void interrupt() override { ops_->interrupt(ctx_); }

  bool lend(uint64_t slot, size_t segment, void* buf, size_t len) override {
    if (!lends_) return false;
    caravan_status s = ops_->lend(ctx_, slot, segment, buf, len);
    if (s != CARAVAN_STATUS_OK) fail("lend for slot " + std::to_string(slot), s);
    return true;
  }

  // Called on the way out of failed operations, so it reports rather than throws.
  void unlend(uint64_t slot) override {
    if (!lends_) return;
    caravan_status s = ops_->unlend(ctx_, slot);
    if (s != CARAVAN_STATUS_OK) {
      CARAVAN_LOG(ERROR) << "van '" << name_ << "': unlend of slot " << slot
                         << " failed: " << describe_plugin_failure(s);
    }
  }

 private:
  // What a received message needs to give its memory back. Shared, since
  // a message may outlive the van: an application keeps what it received
  // (a ps-lite SArray) as long as it likes. Finalizing frees every message
  // not yet released (van_v2.h), so from its start a release is skipped.
  struct Lender {
    std::shared_mutex mu;  // shared: releasing; exclusive: finalizing
    const caravan_van_ops_v2* ops = nullptr;
    void* ctx = nullptr;  // null once finalized
  };

  struct PluginReceived final : Received {
    PluginReceived(std::shared_ptr<Lender> l, const caravan_van_message_v2& m)
        : lender(std::move(l)), message(m) {}
    ~PluginReceived() override {
      std::shared_lock<std::shared_mutex> lock(lender->mu);
      if (lender->ctx) lender->ops->release(lender->ctx, &message);
    }
    std::shared_ptr<Lender> lender;
    caravan_van_message_v2 message;
  };

  std::unique_ptr<Received> receive(const caravan_van_message_v2& m) {
    auto r = std::make_unique<PluginReceived>(lender_, m);
    r->num_segments = std::min<size_t>(m.num_segments, CARAVAN_VAN_MAX_SEGMENTS_V2);
    std::memcpy(r->segments, m.segments, sizeof r->segments);
    r->peer = m.peer ? m.peer : "unknown";
    return r;
  }

  void finish_send(uint64_t id, caravan_status status) {
    std::shared_ptr<Sending> s;
    {
      std::lock_guard<std::mutex> lock(sending_mu_);
      auto it = sending_.find(id);
      if (it == sending_.end()) {
        CARAVAN_LOG(ERROR) << "van '" << name_ << "' reported send " << id
                           << " over, which it was never given or reported before; ignored";
        return;
      }
      s = std::move(it->second);
      sending_.erase(it);
    }
    s->sent(status);
  }

  [[noreturn]] void refuse_table(size_t have, size_t least, const char* abi) const {
    throw Error(CARAVAN_ERR_PLUGIN, "van plugin '" + name_ + "' (" + lib_->path +
                                        ") has an ops table of " + std::to_string(have) +
                                        " bytes, fewer than ABI " + abi + "'s " +
                                        std::to_string(least));
  }

  [[noreturn]] void fail(const std::string& what, caravan_status s) const {
    int code = (s == CARAVAN_STATUS_INVALID_ARGUMENT) ? CARAVAN_ERR_INVALID_ARGUMENT
                                                      : CARAVAN_ERR_TRANSPORT;
    throw Error(code, "van '" + name_ + "': " + what + " failed: " + describe_plugin_failure(s));
  }

  std::unique_ptr<PluginLibrary> lib_;
  const caravan_van_ops_v2* ops_ = nullptr;
  std::string name_;
  HostServices host_;
  void* ctx_ = nullptr;
  std::shared_ptr<Lender> lender_ = std::make_shared<Lender>();
  caravan_van_properties_v2 props_{};
  bool lends_ = false;  // the van receives into lent memory (minor 1)
  std::mutex sending_mu_;
  uint64_t next_send_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Sending>> sending_;
};

}  // namespace

std::unique_ptr<Van> open_van(const JobConfig& config) {
  auto lib =
      load_plugin(CARAVAN_PLUGIN_KIND_VAN, CARAVAN_VAN_ABI_MAJOR_V1, CARAVAN_VAN_ABI_MAJOR_V2,
                  config.van, config.van_source, config.plugin_path);
  return std::make_unique<PluginVan>(std::move(lib));
}

}  // namespace caravan
