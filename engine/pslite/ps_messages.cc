// Member's messages: Send() of what a ps-lite program sends, and the
// routing of what arrives to its customer (through shared memory, into
// registered buffers, or held for a customer not yet made).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/ipc/messages.h"
#include "engine/pslite/ps_convert.h"
#include "engine/pslite/ps_member.h"
#include "ps/base.h"
#include "ps/internal/logging.h"

namespace caravan::psl {

int Member::Send(const ps::Message& msg) {
  const ps::Meta& m = msg.meta;
  if (msg.data.size() > 1 && (m.src_dev_type == ps::GPU || m.dst_dev_type == ps::GPU))
    throw ps_error("ps: values of key " + std::to_string(m.key) + " are in GPU memory (" +
                   (m.src_dev_type == ps::GPU ? "src GPU " + std::to_string(m.src_dev_id)
                                              : "dst GPU " + std::to_string(m.dst_dev_id)) +
                   "); Caravan's ps-lite layer moves host memory only: copy them to the host "
                   "first, or use byteps.torch, whose push_pull takes CUDA tensors");
  KVEndpoint* kv;
  int self;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) throw ps_error("ps: the job failed: " + failure_);
    if (!kv_) throw ps_error("ps: Send before ps::Start() or after ps::Finalize()");
    kv = kv_;
    self = my_node_.id;
    ++sends_in_progress_;
  }
  struct SendInProgress {
    Member& member;
    ~SendInProgress() {
      std::lock_guard<std::mutex> lock(member.mu_);
      if (--member.sends_in_progress_ == 0) member.cv_.notify_all();
    }
  } in_progress{*this};
  KVMessage out;
  out.head.cmd = m.head;
  out.head.app_id = m.app_id;
  out.head.customer_id = m.customer_id;
  out.head.timestamp = m.timestamp;
  out.head.priority = m.priority;
  out.head.flags = (m.request ? wire::kRequest : 0u) | (m.push ? wire::kPush : 0u) |
                   (m.pull ? wire::kPull : 0u) | (m.simple_app ? wire::kSimple : 0u);
  // A routed message carries no engine status: the field holds ps-lite's
  // val_len, which a pull request needs since it carries no values.
  out.head.status = m.val_len;
  if (m.dst_dev_type == ps::CPU) {
    out.head.device_type = static_cast<uint8_t>(ps::CPU);
    out.head.device_id = static_cast<int16_t>(m.dst_dev_id);
  }
  if (m.simple_app) {
    auto body = std::make_shared<std::string>(m.body);
    out.vals = Blob{body->data(), body->size(), body};
  } else {
    Blob* slots[3] = {&out.keys, &out.vals, &out.lens};
    for (size_t i = 0; i < msg.data.size() && i < 3; ++i) *slots[i] = blob_of(msg.data[i]);
  }
  int bytes = static_cast<int>(out.keys.len + out.vals.len + out.lens.len);
  if (m.recver == self) {
    // A group may include this node: deliver without the van, which has no
    // path to itself.
    out.head.type = wire::Type::kKV;
    out.head.flags |= wire::kRouted;
    out.head.sender = self;
    out.head.recipient = self;
    out.peer = "this process";
    route(std::move(out));
    return bytes;
  }
  if (shm_out_ || shm_in_) send_through_shm(msg, out);
  try {
    kv->send_routed(m.recver, std::move(out), nullptr);
  } catch (const Error& e) {
    throw ps_error(std::string("ps: sending to node ") + std::to_string(m.recver) +
                   " failed: " + e.what());
  }
  return bytes;
}

void Member::send_through_shm(const ps::Message& msg, KVMessage& out) {
  const ps::Meta& m = msg.meta;
  std::optional<std::vector<uint8_t>> descriptor;
  if (shm_in_ && !m.request && m.pull && !m.simple_app) {
    // A server's answer to a pull that came through shared memory goes
    // into its slot; one without values still settles it.
    const bool has_vals = msg.data.size() >= 2;
    descriptor =
        shm_in_->answer(m.recver, m.customer_id, m.timestamp,
                        has_vals ? msg.data[1].data() : nullptr, has_vals ? msg.data[1].size() : 0);
  } else if (shm_out_ && m.request && !m.simple_app && !(m.push && m.pull) &&
             msg.data.size() >= 2 && msg.data[0].size() == sizeof(ps::Key)) {
    // One key a request, and not both ways at once: bytedance/ps-lite's
    // IPC requests.
    uint64_t key;
    std::memcpy(&key, msg.data[0].data(), sizeof key);
    size_t bytes = m.push ? msg.data[1].size() : m.pull_bytes;
    if (auto slot = shm_out_->take(m.recver, m.customer_id, m.timestamp, key, m.pull,
                                   msg.data[1].data(), bytes, msg.data[0]))
      descriptor = ipc::encode_descriptor(slot->where);
  }
  if (!descriptor) return;
  auto body = std::make_shared<std::vector<uint8_t>>(std::move(*descriptor));
  out.vals = Blob{body->data(), body->size(), body};
  out.head.flags |= wire::kShm;
}

void Member::attach(KVMessage&& req) {
  KVEndpoint* kv;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kv = kv_;
  }
  if (!kv) return;
  std::string why = "BYTEPS_ENABLE_IPC is not set on this server (set it on every node)";
  if (shm_in_ && shm_in_->attach(req, &why)) {
    kv->respond(req.head, KVMessage(), nullptr);
    return;
  }
  KVMessage refused;
  refused.head.status = CARAVAN_ERR_SERVER;
  auto text = std::make_shared<std::string>(why);
  refused.vals = Blob{text->data(), text->size(), text};
  kv->respond(req.head, std::move(refused), nullptr);
}

void Member::receive_through_shm(const KVMessage& km, ps::Message& msg) {
  const wire::Header& h = km.head;
  try {
    if (msg.meta.request) {
      if (!shm_in_) throw Error(CARAVAN_ERR_SERVER, "BYTEPS_ENABLE_IPC is not set on this server");
      if (msg.meta.push)
        msg.data[1] = view(shm_in_->values(h.sender, km.vals));
      else
        shm_in_->expect_answer(h.sender, h.customer_id, h.timestamp, km.vals);
    } else if (shm_out_) {
      // A pull's answer, in this node's own slot: the values of the key it
      // asked for.
      if (auto a =
              shm_out_->answered(h.sender, h.customer_id, h.timestamp, km.vals.data, km.vals.len)) {
        msg.data[0] = a->keys;
        msg.data[1] = a->vals;
      }
    }
  } catch (const std::exception& e) {
    // Delivered without values: the application's checks name the key.
    CARAVAN_LOG(ERROR) << "ps: values of request " << h.timestamp << " from node " << h.sender
                       << " through shared memory: " << e.what();
  }
}

void Member::RegisterRecvBuffer(ps::Message& msg) {
  if (msg.data.size() < 2 || msg.data[0].size() < sizeof(ps::Key))
    throw ps_error("ps::KVServer::RegisterRecvBuffer: give keys and values");
  customers_.register_buffer(msg.meta.sender, msg.meta.key, msg.data[1]);
}

void Member::route(KVMessage&& km) {
  ps::Message msg;
  const wire::Header& h = km.head;
  msg.meta.head = h.cmd;
  msg.meta.app_id = h.app_id;
  msg.meta.customer_id = h.customer_id;
  msg.meta.timestamp = h.timestamp;
  msg.meta.sender = h.sender;
  msg.meta.recver = h.recipient;
  msg.meta.priority = h.priority;
  msg.meta.request = h.flags & wire::kRequest;
  msg.meta.push = h.flags & wire::kPush;
  msg.meta.pull = h.flags & wire::kPull;
  msg.meta.simple_app = h.flags & wire::kSimple;
  if (msg.meta.simple_app) {
    msg.meta.body.assign(static_cast<const char*>(km.vals.data), km.vals.len);
  } else if (km.keys.len || (h.flags & wire::kShm)) {
    msg.data.push_back(view(km.keys));
    msg.data.push_back((h.flags & wire::kShm) ? ps::SArray<char>() : view(km.vals));
    if (km.lens.len) msg.data.push_back(view(km.lens));
    if (h.flags & wire::kShm) receive_through_shm(km, msg);
    if (msg.data[0].size() >= sizeof(ps::Key))
      std::memcpy(&msg.meta.key, msg.data[0].data(), sizeof(ps::Key));
    msg.meta.val_len = h.status;
    ps::SArray<char>& vals = msg.data[1];
    msg.meta.dst_dev_type = ps::CPU;
    msg.meta.dst_dev_id = h.device_type == ps::CPU ? h.device_id : 0;
    vals.dst_device_type_ = ps::CPU;
    vals.dst_device_id_ = msg.meta.dst_dev_id;
  }
  // An answer through the van to a request that took a slot: a push's,
  // or a pull's that the server could not write there. Frees the slot.
  if (shm_out_ && !msg.meta.request && !(h.flags & wire::kShm))
    shm_out_->answered(h.sender, h.customer_id, h.timestamp, nullptr, 0);
  bool worker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    worker = role_ == Role::kWorker;
  }
  // As in ps-lite: a worker routes by the message's customer; servers and
  // the scheduler run one customer per app, whose id is the app id.
  auto key = std::make_pair(h.app_id, worker ? h.customer_id : h.app_id);
  if (msg.meta.request && msg.meta.push && msg.data.size() > 1) receive_into_registered(msg);
  if (customers_.deliver(key, std::move(msg))) {
    int sender = h.sender;
    std::thread([this, key, sender] { watch_unclaimed(key, sender); }).detach();
  }
}

void Member::receive_into_registered(ps::Message& msg) {
  ps::SArray<char> into;
  if (!customers_.registered(msg.meta.sender, msg.meta.key, &into)) return;
  ps::SArray<char>& vals = msg.data[1];
  if (into.size() != vals.size()) {
    // Delivered where the van put it: the handler sees the values, and
    // this says why they are not in the registered memory.
    CARAVAN_LOG(ERROR) << "ps: a push of key " << msg.meta.key << " from node " << msg.meta.sender
                       << " has " << vals.size() << " bytes but the buffer registered for it"
                       << " holds " << into.size() << "; not received into it";
    return;
  }
  // The van received the bytes elsewhere: this is the one copy into the
  // memory the server registered (an RDMA van writes there directly).
  std::memcpy(into.data(), vals.data(), vals.size());
  into.dst_device_type_ = vals.dst_device_type_;
  into.dst_device_id_ = vals.dst_device_id_;
  vals = into;
}

std::string Member::unclaimed(const std::pair<int, int>& key, int sender) const {
  return "messages for app " + std::to_string(key.first) + ", customer " +
         std::to_string(key.second) + " came from node " + std::to_string(sender) + " but this " +
         role_name(role()) + " node has no such customer: the program never " +
         "made its KVServer, KVWorker or SimpleApp (bytedance/ps-lite's test_benchmark makes " +
         "DMLC_GROUP_SIZE servers: set DMLC_GROUP_SIZE=1)";
}

void Member::watch_unclaimed(std::pair<int, int> key, int sender) {
  // Half of CARAVAN_OP_TIMEOUT when shorter, so this says why before the
  // waits of the job run out and say only that they did.
  const int seconds = std::max(1, std::min(kUnclaimedSeconds, op_timeout_s() / 2));
  if (customers_.claimed_within(key, std::chrono::seconds(seconds))) return;
  {
    std::lock_guard<std::mutex> done(mu_);
    if (stage_ == 4) return;  // left the job: nothing is waiting on this node
  }
  // ps-lite dies here too (after 5 s); waiting on would leave the sender
  // waiting for an answer that never comes. Exiting drops this node's
  // control connection, so every node learns at once which one failed.
  Log::write(CARAVAN_LOG_FATAL, "ps: " + unclaimed(key, sender) + ", after " +
                                    std::to_string(seconds) + " s; ending this process");
  std::_Exit(1);
}

}  // namespace caravan::psl
