// The message protocol of RDMA-capable vans, written once for all of them.
//
// A message whose frame fits EAGER_BYTES goes in one eager frame. A larger
// one is copied into a registered staging buffer (so the caller's memory is
// free at once and the pool bounds registration), announced by a request to
// send; the receiver reads it with one or more remote reads into a pooled
// registered buffer and answers with a completion notice, after which the
// sender reuses the staging buffer. Without remote reads the message goes
// as a run of chunk frames instead.
//
// The application may hold received messages as long as it likes (a server
// keeps a worker's push as its running sum until the other workers' pushes
// come). When those held messages fill the receive pool, a request to send
// is read through one bounce buffer into ordinary memory instead of waiting
// for a release that may depend on that very message.
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
};

using LogFn = std::function<void(caravan_log_level, const std::string&)>;

struct Op;
struct InMsg;
struct Source;
struct Stream;
struct Job;

class Engine {
 public:
  Engine(Transport& t, Config cfg, LogFn log, std::string self_name);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Any thread. Throw plugin::Error.
  void connect(uint64_t peer, uint64_t addr);
  void disconnect(uint64_t peer);
  void send(uint64_t peer, const caravan_segment_v1* segs, size_t n, caravan_send_done_fn done,
            void* cookie);
  caravan_status recv(int timeout_ms, caravan_van_message_v1* out);
  void release(caravan_van_message_v1* msg);

  // Progress thread.
  void complete(void* ctx, bool ok, size_t len, const std::string& err);
  bool pump();     // posts what can be posted; true when it did something
  bool busy();     // operations of ours in flight: keep driving progress

  // Finalize: close() once the progress thread is gone (wakes recv callers,
  // runs pending done callbacks with CLOSED, posts nothing more); then
  // cancel_receives() and completions until posted() is 0; free() once the
  // transport can no longer touch our buffers.
  void close();
  void cancel_receives();
  size_t posted();
  std::string describe_posted();  // e.g. "2 sends, 1 read, 0 receives"
  void free();
  // Both pools together: staging and eager sends, receive ring and reads.
  PoolStats stats();
  const Config& config() const { return cfg_; }

 private:
  struct Done {
    caravan_send_done_fn fn;
    void* cookie;
    caravan_status status;
  };
  using Dones = std::vector<Done>;
  Op* frame_op(uint64_t to, Buffer* b, size_t len);
  void queue_hello(Stream& s);
  bool step_job(Job& job, Dones& dones);
  Buffer* stage(const Job& job);
  bool post(Op* op);
  void on_frame(const char* buf, size_t len);
  void on_read_done(InMsg* m, bool ok);
  void read_finished(Op* op, bool ok);
  void queue_read(InMsg* m, Buffer* into, size_t offset, size_t len);
  void start_reads();
  void deliver(Source& src);
  void drop(const std::string& peer, const std::string& why);
  void run_dones(Dones& dones);

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
  std::unordered_map<uint64_t, Buffer*> staged_;  // by transfer id, awaiting kFin
  std::deque<Op*> ctl_;        // receives, reads, notices: never wait on the pool
  std::deque<Job*> out_;       // stream traffic, in send order
  std::deque<InMsg*> rts_wait_;  // requests waiting for a receive buffer
  std::deque<InMsg*> ready_;
  std::unordered_set<InMsg*> held_;
  std::unordered_set<Op*> posted_;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_ENGINE_H
