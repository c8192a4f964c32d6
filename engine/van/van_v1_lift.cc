#include "engine/van/van_v1_lift.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace caravan {
namespace {

// How long the lift's receiving thread waits in the van's recv() before
// looking again whether the instance is closing.
constexpr int kRecvSliceMs = 100;

struct Lift {
  const caravan_van_ops_v1* ops = nullptr;
  decltype(caravan_van_ops_v1::send_slot) send_slot = nullptr;  // NULL in a 1.0 table
  const caravan_host_v1* host = nullptr;
  void* van = nullptr;  // the ABI 1 instance

  std::mutex mu;
  std::condition_variable cv;
  std::deque<caravan_van_event_v2> events;
  bool interrupted = false;
  bool closing = false;
  caravan_status recv_failed = CARAVAN_STATUS_OK;  // what stopped the receiving thread
  bool listening = false;  // recv() before listen() would be the van's misuse
  std::thread receiver;

  void push(const caravan_van_event_v2& e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
    }
    cv.notify_one();
  }

  void receive_loop() {
    for (;;) {
      caravan_van_message_v1 m;
      std::memset(&m, 0, sizeof m);
      m.struct_size = sizeof m;
      caravan_status s = ops->recv(van, kRecvSliceMs, &m);
      if (s == CARAVAN_STATUS_TIMEOUT) {
        std::lock_guard<std::mutex> lock(mu);
        if (closing) return;
        continue;
      }
      if (s != CARAVAN_STATUS_OK) {
        {
          std::lock_guard<std::mutex> lock(mu);
          recv_failed = s;
        }
        cv.notify_all();
        return;
      }
      caravan_van_event_v2 e;
      std::memset(&e, 0, sizeof e);
      e.type = CARAVAN_VAN_EVENT_RECEIVED;
      e.message.num_segments = m.num_segments;
      static_assert(CARAVAN_VAN_MAX_SEGMENTS_V2 == CARAVAN_VAN_MAX_SEGMENTS_V1,
                    "same segment limit");
      for (size_t i = 0; i < CARAVAN_VAN_MAX_SEGMENTS_V1; ++i)
        e.message.segments[i] = {m.segments[i].data, m.segments[i].len};
      e.message.peer = m.peer ? m.peer : "unknown";
      e.message.van_token = m.van_token;
      push(e);
      std::lock_guard<std::mutex> lock(mu);
      if (closing) return;  // finalize waits for this thread before it frees the van
    }
  }
};

// What an ABI 1 done call needs to become an event.
struct PendingSend {
  Lift* lift;
  uint64_t send_id;
};

void on_done(void* cookie, caravan_status status) {
  auto* p = static_cast<PendingSend*>(cookie);
  caravan_van_event_v2 e;
  std::memset(&e, 0, sizeof e);
  e.type = CARAVAN_VAN_EVENT_SENT;
  e.status = status;
  e.send_id = p->send_id;
  p->lift->push(e);
  delete p;
}

Lift* lift_of(void* ctx) { return static_cast<Lift*>(ctx); }

void set_error(const Lift& l, const char* what) {
  if (l.host && l.host->set_error) l.host->set_error(l.host->host_ctx, what);
}

caravan_status lifted_init(const caravan_host_v1* host, void**) {
  if (host && host->set_error)
    host->set_error(host->host_ctx, "an ABI 1 van is opened with open_lifted_van_v1()");
  return CARAVAN_STATUS_UNSUPPORTED;
}

caravan_status lifted_finalize(void* ctx) {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  Lift* l = lift_of(ctx);
  {
    std::lock_guard<std::mutex> lock(l->mu);
    l->closing = true;
  }
  l->cv.notify_all();
  // The receiving thread ends first, within one recv slice: ABI 1 lets
  // finalize run while recv() blocks, but the thread could also be between
  // two calls, and a recv entered after finalize freed the instance read
  // freed memory (ASan, VanConformance.v1skeleton). The done calls finalize
  // makes for unsent messages land in the queue, which lives until delete.
  if (l->receiver.joinable()) l->receiver.join();
  caravan_status s = l->ops->finalize(l->van);
  delete l;
  return s;
}

caravan_status lifted_properties(void* ctx, caravan_van_properties_v2* out) {
  if (!ctx || !out || out->struct_size < sizeof(caravan_van_properties_v2))
    return CARAVAN_STATUS_INVALID_ARGUMENT;
  Lift* l = lift_of(ctx);
  caravan_van_properties_v1 p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  caravan_status s = l->ops->properties(l->van, &p);
  if (s != CARAVAN_STATUS_OK) return s;
  out->caps = p.caps;  // the bits kept their meaning in ABI 2
  out->max_message_bytes = p.max_message_bytes;
  out->max_segments = p.max_segments;
  out->transport = p.transport;
  return CARAVAN_STATUS_OK;
}

caravan_status lifted_listen(void* ctx, const char* host, int port, char* addr_out,
                             size_t addr_cap) {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  Lift* l = lift_of(ctx);
  caravan_status s = l->ops->listen(l->van, host, port, addr_out, addr_cap);
  if (s != CARAVAN_STATUS_OK) return s;
  std::lock_guard<std::mutex> lock(l->mu);
  if (!l->listening && !l->closing) {
    l->listening = true;
    l->receiver = std::thread([l] { l->receive_loop(); });
  }
  return s;
}

caravan_status lifted_connect(void* ctx, uint64_t peer, const char* address) {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  return lift_of(ctx)->ops->connect(lift_of(ctx)->van, peer, address);
}

caravan_status lifted_disconnect(void* ctx, uint64_t peer) {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  return lift_of(ctx)->ops->disconnect(lift_of(ctx)->van, peer);
}

caravan_status lifted_send(void* ctx, uint64_t peer, uint64_t slot,
                           const caravan_segment_v2* segments, size_t num_segments,
                           uint64_t send_id) {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  Lift* l = lift_of(ctx);
  if (num_segments > CARAVAN_VAN_MAX_SEGMENTS_V1) {
    set_error(*l, "send: more segments than ABI 1 allows");
    return CARAVAN_STATUS_INVALID_ARGUMENT;
  }
  // The two segment structs have the same members; copied, not cast, so
  // nothing rests on their layouts agreeing.
  caravan_segment_v1 v1[CARAVAN_VAN_MAX_SEGMENTS_V1];
  for (size_t i = 0; i < num_segments; ++i) v1[i] = {segments[i].data, segments[i].len};
  auto* pending = new PendingSend{l, send_id};
  caravan_status s = l->send_slot && slot
                         ? l->send_slot(l->van, peer, slot, v1, num_segments, &on_done, pending)
                         : l->ops->send(l->van, peer, v1, num_segments, &on_done, pending);
  if (s != CARAVAN_STATUS_OK) delete pending;  // ABI 1: no done call then
  return s;
}

caravan_status lifted_poll(void* ctx, int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                           size_t* num_events) {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  Lift* l = lift_of(ctx);
  if (!events || capacity == 0 || !num_events) {
    set_error(*l, "poll: no room for events");
    return CARAVAN_STATUS_INVALID_ARGUMENT;
  }
  *num_events = 0;
  std::unique_lock<std::mutex> lock(l->mu);
  auto ready = [&] {
    return !l->events.empty() || l->interrupted || l->closing ||
           l->recv_failed != CARAVAN_STATUS_OK;
  };
  if (timeout_ms < 0)
    l->cv.wait(lock, ready);
  else
    l->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  while (*num_events < capacity && !l->events.empty()) {
    events[(*num_events)++] = l->events.front();
    l->events.pop_front();
  }
  if (*num_events > 0) return CARAVAN_STATUS_OK;
  if (l->closing) return CARAVAN_STATUS_CLOSED;
  if (l->recv_failed != CARAVAN_STATUS_OK) return l->recv_failed;
  l->interrupted = false;
  return CARAVAN_STATUS_TIMEOUT;
}

caravan_status lifted_release(void* ctx, const caravan_van_message_v2* message) {
  if (!ctx || !message) return CARAVAN_STATUS_INVALID_ARGUMENT;
  Lift* l = lift_of(ctx);
  caravan_van_message_v1 m;
  std::memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  m.num_segments = message->num_segments;
  for (size_t i = 0; i < CARAVAN_VAN_MAX_SEGMENTS_V1; ++i)
    m.segments[i] = {message->segments[i].data, message->segments[i].len};
  m.peer = message->peer;
  m.van_token = message->van_token;
  return l->ops->release(l->van, &m);
}

caravan_status lifted_interrupt(void* ctx) {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  Lift* l = lift_of(ctx);
  {
    std::lock_guard<std::mutex> lock(l->mu);
    l->interrupted = true;
  }
  l->cv.notify_all();
  return CARAVAN_STATUS_OK;
}

constexpr caravan_van_ops_v2 kLiftedOps = {
    sizeof(caravan_van_ops_v2),
    lifted_init,
    lifted_finalize,
    lifted_properties,
    lifted_listen,
    lifted_connect,
    lifted_disconnect,
    lifted_send,
    lifted_poll,
    lifted_release,
    lifted_interrupt,
    nullptr,
    nullptr};  // an ABI 1 van keeps what it receives (no lend)

}  // namespace

caravan_status open_lifted_van_v1(const caravan_van_ops_v1* ops, const caravan_host_v1* host,
                                  void** out_ctx) {
  if (!ops || !out_ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  auto* l = new Lift;
  l->ops = ops;
  l->host = host;
  if (ops->struct_size >= offsetof(caravan_van_ops_v1, send_slot) + sizeof ops->send_slot)
    l->send_slot = ops->send_slot;
  caravan_status s = ops->init(host, &l->van);
  if (s != CARAVAN_STATUS_OK) {
    delete l;
    return s;
  }
  *out_ctx = l;
  return CARAVAN_STATUS_OK;
}

const caravan_van_ops_v2* van_v1_lifted_ops() { return &kLiftedOps; }

}  // namespace caravan
