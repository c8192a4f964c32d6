// The BYTEPS_LOCAL_SIZE worker processes of one machine, met through one
// control segment in /dev/shm: who has arrived, who is leaving, who died,
// and the one doorbell every change of shared state rings.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/ipc/shared_segment.h"
#include "engine/local/doorbell.h"
#include "engine/local/peer_watch.h"

namespace caravan {

struct ControlBlock;
struct MemberSlot;

struct LocalGroupOptions {
  int local_rank = 0;
  int local_size = 2;
  // Names the job in segment names: "<root uri>-<root port>", or a stand-in
  // when the job has no scheduler.
  std::string job_key;
  // Names this machine: DMLC_WORKER_ID, or the host name when unset.
  std::string machine;
  int connect_timeout_s = 60;  // CARAVAN_CONNECT_TIMEOUT: for every member to arrive
};

class LocalGroup {
 public:
  // Creates or joins the control segment and waits, up to the connect
  // timeout, for every local rank to arrive. Throws caravan::Error naming
  // the variable, the process or the missing local ranks.
  explicit LocalGroup(const LocalGroupOptions& options);
  // Without mark_left(), tells the others this member stopped.
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int local_rank() const { return rank_; }
  int local_size() const { return size_; }
  // "local rank 1 of machine 0": how messages name a member.
  std::string who(int local_rank) const;
  // "local ranks 1, 3 of machine 0" (or "local rank 1 ..." for one).
  std::string who(const std::vector<int>& local_ranks) const;
  const std::string& machine() const { return machine_; }
  // Every tensor segment of this group (and of no other run) starts so.
  const std::string& tensor_prefix() const { return tensor_prefix_; }
  uint64_t nonce() const;
  // The process that created the control segment: tensor segments record
  // it so that leftovers of a dead run can be told from a live one's.
  const ProcessId& owner() const;
  // The control segment's name; other names of this machine's runs extend it.
  const std::string& control_name() const { return control_name_; }

  Doorbell doorbell() const;

  // Ends the group for everyone: every wait in every member fails with
  // `code` and `message` (the first abort wins), and the group's names are
  // removed from /dev/shm.
  void abort(int code, const std::string& message);
  // Throws the group's failure if it aborted.
  void check() const;
  // The first abort's message; empty while the group has not aborted.
  std::string failure() const;

  // Sleeps until ready() holds (true) or `deadline` (false); throws as
  // check() as soon as the group aborts.
  template <class Ready>
  bool wait_until(Ready&& ready, SteadyClock::time_point deadline) const {
    Doorbell bell = doorbell();
    for (;;) {
      uint32_t ticket = bell.ticket();
      check();
      if (ready()) return true;
      if (SteadyClock::now() >= deadline) return false;
      bell.sleep_until(ticket, deadline);
    }
  }

  // Whether `local_rank` has begun caravan_shutdown() (or finished it).
  bool is_leaving(int local_rank) const;

  // Local rank 0 tells the others the machine's rank in the job (0 when
  // there is no job) and how many machines the job has (after a regroup,
  // CARAVAN_ELASTIC, no longer DMLC_NUM_WORKER); the others wait for it up
  // to `deadline`, then fail with "local rank 0 of machine M did not
  // <waiting_for>".
  void publish_machine_rank(int rank, int machines);
  int wait_machine_rank(SteadyClock::time_point deadline, const std::string& waiting_for);
  // What publish_machine_rank() said, once wait_machine_rank() returned.
  int machines() const;

  // The shutdown barrier of this machine: waits up to `timeout_s` for every
  // member to call it.
  void leave_barrier(int timeout_s);
  // After leave_barrier(): this member's end is clean; the watchers of the
  // others will not raise it.
  void mark_left();
  bool left() const { return left_; }
  // Ends the group because this member stops without leaving (its process
  // is ending, or caravan_init() failed after the group formed); `after`,
  // when given, is the failure that made it stop.
  void abandon(const std::string& after = {});
  // Called (on the watcher's thread) with the message when another member
  // ends without caravan_shutdown(); local rank 0 tells the job. Setting
  // nullptr waits until no call is under way.
  void set_member_lost_handler(std::function<void(const std::string&)> handler);

 private:
  ControlBlock* block() const;
  MemberSlot& member(int local_rank) const;
  void open_or_create(SteadyClock::time_point deadline);
  // Why an existing control segment belongs to a dead run; empty if it does not.
  std::string staleness(ControlBlock& b) const;
  void claim_rank();
  void await_members(SteadyClock::time_point deadline);
  void on_member_exit(int local_rank);
  void remove_names() const;

  int rank_;
  int size_;
  std::string machine_;
  std::string control_name_;
  std::string tensor_prefix_;
  int connect_timeout_s_;
  std::unique_ptr<SharedSegment> segment_;
  std::unique_ptr<PeerWatch> watch_;
  mutable std::atomic<bool> names_removed_{false};
  bool left_ = false;
  std::mutex lost_mu_;  // guards on_member_lost_ and its calls
  std::function<void(const std::string&)> on_member_lost_;
};

}  // namespace caravan
