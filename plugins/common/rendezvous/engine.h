// The message protocol of RDMA-capable vans, written once for all of them.
//
// A message whose frame fits EAGER_BYTES goes in one eager frame. A larger
// one is announced by a request to send that carries its small segments
// inline and says where to read the others: either the caller's own memory,
// registered for this one transfer (zero copy: done runs once the receiver
// has read it), or a registered staging buffer the segments are copied into
// (done runs at once). The receiver reads them with remote reads into a
// pooled registered buffer and answers with a completion notice, after
// which the sender deregisters or reuses. Without remote reads the message
// goes as a run of chunk frames instead.
//
// Registration is bounded: pool buffers and callers' registrations count
// against MAX_REGISTERED_BYTES together, and a sender past it waits for
// transfers in flight to finish.
//
// After disconnect() the peer may still be reading a zero-copy transfer it
// was told about: its memory is withdrawn (deregistered, so reads fail) and
// its done run only after orphan_grace_ms, unless the notice comes first.
//
// The application may hold received messages as long as it likes (a server
// keeps a worker's push as its running sum until the other workers' pushes
// come). When those held messages fill the receive pool, a request to send
// is read through one bounce buffer into ordinary memory instead of waiting
// for a release that may depend on that very message.
//
// Remote-buffer cache: a message sent with a slot hint (the engine's key)
// that came by request to send leaves its receive buffer lent to the
// sender for that slot once the application releases it (a kGrant frame).
// The sender's next large message of that slot is written straight into
// that buffer and followed by a notice (kPut): no request to send, no read
// to wait for. A grant is used once and lent again after each release;
// lent buffers are bounded by cache_bytes, and a receiver only takes one
// back when the sender hands it back unused (too small) in a request to
// send, since the sender may be writing into it at any other time.
//
// Every stream (one per connected peer) numbers its messages; the receiver
// delivers each stream's messages in that order even when a small message
// overtakes a large one still being read.
//
// Threads: send/connect/disconnect/recv/release from any thread; complete()
// and pump() from the van's one progress thread, which alone posts to the
// transport, so posting needs no lock of the transport's own.
#ifndef CARAVAN_RENDEZVOUS_ENGINE_H
#define CARAVAN_RENDEZVOUS_ENGINE_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "caravan/plugin/van_v1.h"
#include "rendezvous/frame.h"
#include "rendezvous/pool.h"
#include "rendezvous/send_completions.h"

namespace caravan::rendezvous {

// What a van provides. Addresses are the transport's own peer handles.
class Transport {
 public:
  enum class Post { kPosted, kAgain, kFailed };
  virtual ~Transport() = default;
  // `ctx` is the operation's context: its first 64 bytes are the
  // transport's to use while the operation is in flight, and completions
  // name it back through Engine::complete().
  virtual Post post_send(uint64_t to, const void* buf, size_t len, void* desc, void* ctx,
                         std::string* err) = 0;
  virtual Post post_recv(void* buf, size_t len, void* desc, void* ctx, std::string* err) = 0;
  virtual Post post_read(uint64_t from, void* local, size_t len, void* desc, uint64_t raddr,
                         uint64_t key, void* ctx, std::string* err) = 0;
  // Its completion must mean the bytes are in the peer's memory, since the
  // notice that hands them to the peer's application goes after it.
  virtual Post post_write(uint64_t to, const void* local, size_t len, void* desc, uint64_t raddr,
                          uint64_t key, void* ctx, std::string* err) = 0;
  // A peer's endpoint name (from its hello) as an address; throws on failure.
  virtual uint64_t resolve(const std::string& name) = 0;
  // The text a peer is named by in messages and logs.
  virtual std::string describe(const std::string& name) = 0;
  virtual Registration register_memory(void* p, size_t len) = 0;
  virtual void deregister(const Registration& r) = 0;
  // Asks for a posted receive to be taken back; its completion (an error)
  // still comes through Engine::complete(). False when the transport
  // cannot cancel it.
  virtual bool cancel(void* ctx) {
    (void)ctx;
    return false;
  }
  // Makes the progress thread call pump() soon. Any thread; never blocks.
  virtual void wake() = 0;
};

struct Config {
  size_t eager_bytes = 64 * 1024;  // largest frame, header included
  size_t max_registered_bytes = size_t{512} << 20;
  size_t rx_depth = 64;            // receive buffers kept posted
  size_t read_chunk = size_t{8} << 20;  // largest single remote read
  bool rma = true;                 // false: large messages go as chunks
  bool zero_copy = false;          // true: register callers' memory instead of staging it
  int orphan_grace_ms = 1000;
  // Receive buffers lent to senders (the remote-buffer cache); 0: none,
  // every large message is read after a request to send. Needs rma.
  size_t cache_bytes = 0;
};

// How large messages went, over the engine's life.
struct Counts {
  size_t by_request = 0;  // requests to send (remote reads)
  size_t by_write = 0;    // written into a lent buffer
  size_t lent = 0;        // buffers this side lent to senders
  size_t lent_bytes = 0;  // their bytes, now
};

// The CACHE_BYTES plugin parameter checked: 0 to a quarter of the limit.
size_t cache_bytes_param(int64_t value, size_t max_registered_bytes);
// Counts as the finalize log line gives them.
std::string describe(const Counts& c);

using LogFn = std::function<void(caravan_log_level, const std::string&)>;

struct Op;
struct InMsg;
struct Source;
struct Stream;
struct Job;
struct Transfer;
struct Prepared;
struct Piece;
struct Put;

// The receiver's side of the remote-buffer cache: a receive buffer lent to
// one stream for one slot. Only the sender writes it until its notice
// comes; then the message holds it, and once released it is lent again.
struct Grant {
  Source* src = nullptr;
  uint64_t slot = 0;
  Buffer* buf = nullptr;
  bool busy = false;  // a message written into it is not yet released
};

class Engine {
 public:
  Engine(Transport& t, Config cfg, LogFn log, std::string self_name);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Any thread. Throw plugin::Error.
  void connect(uint64_t peer, uint64_t addr);
  void disconnect(uint64_t peer);
  // slot: nonzero for messages that recur (the engine's key); see above.
  void send(uint64_t peer, uint64_t slot, const caravan_segment_v1* segs, size_t n,
            caravan_send_done_fn done, void* cookie);
  caravan_status recv(int timeout_ms, caravan_van_message_v1* out);
  void release(caravan_van_message_v1* msg);

  // Progress thread.
  void complete(void* ctx, bool ok, size_t len, const std::string& err);
  bool pump();     // posts what can be posted; true when it did something
  bool busy();     // operations of ours in flight: keep driving progress

  // Finalize: close() once the progress thread is gone (wakes recv callers,
  // runs pending done callbacks with CLOSED, posts nothing more); then
  // cancel_receives() and completions until posted() is 0; free() once the
  // transport can no longer touch our buffers (it settles the transfers
  // still waiting for their notice, with CLOSED).
  void close();
  void cancel_receives();
  size_t posted();
  std::string describe_posted();  // e.g. "2 sends, 1 read, 0 receives"
  void free();
  // Settles every transfer: its caller's memory is deregistered and its
  // done runs with `status`. Only once no peer can read it any more.
  void settle_transfers(caravan_status status);
  // All pools together: staging and eager sends with callers' registrations,
  // receive ring and reads, the bounce buffer.
  PoolStats stats();
  Counts counts();
  const Config& config() const { return cfg_; }

 private:
  Op* frame_op(uint64_t to, Buffer* b, size_t len);
  void queue_hello(Stream& s);
  void complete_locked(Op* op, bool ok, size_t len, const std::string& err);
  bool step_job(Job& job);
  enum class Registered { kDone, kNoRoom, kFailed };
  bool prepare(const Job& job, bool may_wait, Prepared* p);  // false: no room yet
  Registered register_segments(const Job& job, bool may_wait, Prepared* p);
  void unprepare(Prepared& p);
  void announce(Job& job, Prepared& p);
  void take_grant(Stream& s, Job& job);
  void start_put(Job& job, Prepared& p);
  void write_finished(Op* op, bool ok);
  void finish_put(Put* put);
  void release_prepared(Prepared& p, caravan_send_done_fn done, void* cookie, caravan_status status);
  bool lend(InMsg* m);
  void on_grant(const Frame& f);
  void take_back(const Frame& f);
  Stream* stream_by_id(uint64_t id);
  void settle(uint64_t xfer, caravan_status status);
  void withdraw_orphans();
  bool post(Op* op);
  void on_frame(const char* buf, size_t len);
  void on_read_done(InMsg* m, bool ok);
  void read_finished(Op* op, bool ok);
  void queue_read(InMsg* m, Buffer* into, const Piece& piece);
  void start_reads();
  void deliver(Source& src);
  void drop(const std::string& peer, const std::string& why);

  Transport& t_;
  Config cfg_;
  LogFn log_;
  std::string self_name_;
  size_t bounce_bytes_;
  BufferPool tx_pool_;
  BufferPool rx_pool_;
  BufferPool bounce_pool_;  // holds one buffer at most: bounce_
  uint64_t nonce_;

  std::mutex mu_;
  std::condition_variable ready_cv_;
  bool closing_ = false;
  int in_recv_ = 0;
  bool rx_posted_ = false;
  bool posted_any_ = false;
  size_t pooled_msgs_ = 0;  // received messages holding an rx_pool_ buffer
  Buffer* bounce_ = nullptr;   // registered at its first use, kept until free()
  InMsg* bouncing_ = nullptr;  // the one message being read through bounce_
  size_t in_flight_ = 0;  // posted sends and reads
  uint64_t next_stream_ = 1;
  uint64_t next_xfer_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Stream>> streams_;  // by peer id
  std::unordered_map<uint64_t, std::unique_ptr<Source>> sources_;  // by stream id
  std::unordered_map<uint64_t, std::vector<std::string>> early_;  // frames before hello
  static constexpr size_t kMaxEarlyFrames = 4096;
  std::unordered_map<uint64_t, std::unique_ptr<Transfer>> transfers_;  // by id, awaiting kFin
  std::vector<uint64_t> orphans_;   // transfers of disconnected streams
  std::unordered_set<uint64_t> withdrawn_;  // their notices may still come
  SendCompletions done_;       // sends finished under mu_, reported once it is released
  std::atomic<bool> warned_register_{false};
  std::deque<Op*> ctl_;        // receives, reads, notices: never wait on the pool
  std::deque<Job*> out_;       // stream traffic, in send order
  std::deque<InMsg*> rts_wait_;  // requests waiting for a receive buffer
  std::deque<InMsg*> ready_;
  std::unordered_set<InMsg*> held_;
  std::unordered_set<Op*> posted_;
  std::unordered_set<Put*> puts_;  // writes in flight
  std::unordered_map<uint64_t, Grant> grants_;  // buffers lent, by grant id
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> grant_of_;  // (stream, slot) -> grant id
  uint64_t next_grant_ = 1;
  Counts counts_;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_ENGINE_H
