// Adapts a van plugin's C table (ABI major 1) to the engine's Van class.
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "engine/base/error.h"
#include "engine/core/config.h"
#include "engine/plugin/host_services.h"
#include "engine/plugin/loader.h"
#include "engine/van/van.h"

namespace caravan {
namespace {

class PluginVan final : public Van {
 public:
  PluginVan(std::unique_ptr<PluginLibrary> lib)
      : lib_(std::move(lib)),
        ops_(static_cast<const caravan_van_ops_v1*>(lib_->descriptor->ops)),
        name_(lib_->descriptor->name),
        host_(CARAVAN_PLUGIN_KIND_VAN, name_) {
    if (ops_->struct_size < CARAVAN_VAN_OPS_V1_0_SIZE)
      throw Error(CARAVAN_ERR_PLUGIN, "van plugin '" + name_ + "' (" + lib_->path +
                                          ") has an ops table of " +
                                          std::to_string(ops_->struct_size) + " bytes, fewer than ABI 1.0's " +
                                          std::to_string(CARAVAN_VAN_OPS_V1_0_SIZE));
    // A 1.0 table ends before send_slot.
    if (ops_->struct_size >= offsetof(caravan_van_ops_v1, send_slot) + sizeof ops_->send_slot)
      send_slot_ = ops_->send_slot;
    caravan_status s = ops_->init(host_.table(), &ctx_);
    if (s != CARAVAN_STATUS_OK)
      throw Error(CARAVAN_ERR_PLUGIN, "van plugin '" + name_ + "' (" + lib_->path +
                                          ") failed to start: " + describe_plugin_failure(s));
    lender_->ops = ops_;
    lender_->ctx = ctx_;
    props_.struct_size = sizeof props_;
    s = ops_->properties(ctx_, &props_);
    if (s != CARAVAN_STATUS_OK) fail("properties", s);
    if (!props_.transport) props_.transport = "unknown";
  }

  ~PluginVan() override {
    if (!ctx_) return;
    {
      // Not held across finalize: the done callbacks it runs may drop the
      // last hold on a received message (a sum sent from a push's memory).
      std::unique_lock<std::shared_mutex> lock(lender_->mu);
      lender_->ctx = nullptr;
    }
    ops_->finalize(ctx_);
  }

  const std::string& name() const override { return name_; }
  const caravan_van_properties_v1& properties() const override { return props_; }

  std::string listen(const std::string& host, int port) override {
    char addr[CARAVAN_VAN_MAX_ADDRESS_V1] = {0};
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

  void send(uint64_t peer, uint64_t slot, const caravan_segment_v1* segments, size_t n,
            SendDone done) override {
    auto* cookie = new SendDone(std::move(done));
    caravan_status s = send_slot_ && slot
                           ? send_slot_(ctx_, peer, slot, segments, n, &PluginVan::on_sent, cookie)
                           : ops_->send(ctx_, peer, segments, n, &PluginVan::on_sent, cookie);
    if (s != CARAVAN_STATUS_OK) {
      delete cookie;
      fail("send to node " + std::to_string(peer), s);
    }
  }

  std::unique_ptr<Received> recv(int timeout_ms) override {
    auto r = std::make_unique<PluginReceived>(lender_);
    caravan_status s = ops_->recv(ctx_, timeout_ms, &r->message);
    if (s == CARAVAN_STATUS_TIMEOUT) return nullptr;
    if (s != CARAVAN_STATUS_OK) {
      r->owned = false;
      fail("receive", s);
    }
    r->num_segments = std::min<size_t>(r->message.num_segments, CARAVAN_VAN_MAX_SEGMENTS_V1);
    std::memcpy(r->segments, r->message.segments, sizeof r->segments);
    r->peer = r->message.peer ? r->message.peer : "unknown";
    return r;
  }

 private:
  // What a received message needs to give its memory back. Shared, since
  // a message may outlive the van: an application keeps what it received
  // (a ps-lite SArray) as long as it likes. Finalizing frees every message
  // not yet released (van_v1.h), so from its start a release is skipped.
  struct Lender {
    std::shared_mutex mu;  // shared: releasing; exclusive: finalizing
    const caravan_van_ops_v1* ops = nullptr;
    void* ctx = nullptr;   // null once finalized
  };

  struct PluginReceived final : Received {
    explicit PluginReceived(std::shared_ptr<Lender> l) : lender(std::move(l)) {
      std::memset(&message, 0, sizeof message);
      message.struct_size = sizeof message;
    }
    ~PluginReceived() override {
      if (!owned) return;
      std::shared_lock<std::shared_mutex> lock(lender->mu);
      if (lender->ctx) lender->ops->release(lender->ctx, &message);
    }
    std::shared_ptr<Lender> lender;
    caravan_van_message_v1 message;
    bool owned = true;
  };

  static void on_sent(void* cookie, caravan_status status) {
    std::unique_ptr<SendDone> done(static_cast<SendDone*>(cookie));
    if (*done) (*done)(status);
  }

  [[noreturn]] void fail(const std::string& what, caravan_status s) const {
    int code = (s == CARAVAN_STATUS_INVALID_ARGUMENT) ? CARAVAN_ERR_INVALID_ARGUMENT
                                                      : CARAVAN_ERR_TRANSPORT;
    throw Error(code, "van '" + name_ + "': " + what + " failed: " + describe_plugin_failure(s));
  }

  std::unique_ptr<PluginLibrary> lib_;
  const caravan_van_ops_v1* ops_;
  decltype(caravan_van_ops_v1::send_slot) send_slot_ = nullptr;
  std::string name_;
  HostServices host_;
  void* ctx_ = nullptr;
  std::shared_ptr<Lender> lender_ = std::make_shared<Lender>();
  caravan_van_properties_v1 props_{};
};

}  // namespace

std::unique_ptr<Van> open_van(const JobConfig& config) {
  auto lib = load_plugin(CARAVAN_PLUGIN_KIND_VAN, CARAVAN_VAN_ABI_MAJOR_V1, config.van,
                         config.van_source, config.plugin_path);
  return std::make_unique<PluginVan>(std::move(lib));
}

}  // namespace caravan
