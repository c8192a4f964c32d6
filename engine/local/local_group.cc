#include "engine/local/local_group.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "engine/base/log.h"

namespace caravan {

namespace {

constexpr uint64_t kControlMagic = 0x314c5254434e5643ull;  // "CVNCTRL1"
constexpr uint32_t kLayoutVersion = 2;                     // 2: machines
constexpr size_t kMessageBytes = 1024;

enum MemberState : uint32_t { kEmpty = 0, kClaimed, kPresent, kLeaving, kLeft };

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Segment names allow any byte but '/'; keeping to a plain alphabet keeps
// them readable in `ls /dev/shm` and safe in a shell.
std::string name_token(const std::string& s) {
  std::string out;
  for (char c : s)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_') ? c : '_';
  return out.substr(0, 64);
}

uint64_t fresh_nonce() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid());
}

}  // namespace

struct MemberSlot {
  std::atomic<uint32_t> state;  // MemberState
  uint32_t reserved;
  ProcessId process;  // written before state becomes kPresent
};

struct ControlBlock {
  uint64_t magic;
  uint32_t layout_version;
  uint32_t local_size;
  uint64_t nonce;
  ProcessId creator;
  std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> mapped;       // members that mapped it; the last removes its name
  std::atomic<int32_t> machine_rank;  // -1 until local rank 0 publishes it
  std::atomic<int32_t> machines;      // the job's, written before machine_rank
  std::atomic<uint32_t> abort_state;  // 0 running, 1 message being written, 2 aborted
  std::atomic<int32_t> abort_code;
  char abort_message[kMessageBytes];

  MemberSlot* members() { return reinterpret_cast<MemberSlot*>(this + 1); }
};

static_assert(sizeof(ControlBlock) % alignof(MemberSlot) == 0, "member slots must be aligned");

namespace {

size_t control_bytes(int size) {
  return sizeof(ControlBlock) + static_cast<size_t>(size) * sizeof(MemberSlot);
}

}  // namespace

LocalGroup::LocalGroup(const LocalGroupOptions& o)
    : rank_(o.local_rank),
      size_(o.local_size),
      machine_(o.machine),
      connect_timeout_s_(o.connect_timeout_s) {
  bool numeric =
      !o.machine.empty() && o.machine.find_first_not_of("0123456789") == std::string::npos;
  control_name_ = "caravan-" + name_token(o.job_key) + "-" +
                  (numeric ? "m" + o.machine : "h" + name_token(o.machine));
  auto deadline = SteadyClock::now() + std::chrono::seconds(connect_timeout_s_);
  open_or_create(deadline);
  ControlBlock* b = block();
  tensor_prefix_ = control_name_ + "-" + hex64(b->nonce) + "-";
  // From here on a failure is the whole machine's: the others hear why at
  // once instead of waiting for a member that will never arrive.
  try {
    if (static_cast<int>(b->local_size) != size_)
      throw config_error("BYTEPS_LOCAL_SIZE=" + std::to_string(size_) + " here, but the other " +
                         "processes of machine " + machine_ + " (" + segment_path(control_name_) +
                         ", made by pid " + std::to_string(b->creator.pid) +
                         ") run with BYTEPS_LOCAL_SIZE=" + std::to_string(b->local_size));
    claim_rank();
    watch_ = std::make_unique<PeerWatch>([this](int r) { on_member_exit(r); });
    await_members(deadline);
  } catch (const Error& e) {
    abort(e.code(), e.what());
    throw;
  }
}

LocalGroup::~LocalGroup() {
  if (segment_ && !left_) abandon();
  watch_.reset();  // its thread reads the segment: stop it before unmapping
  segment_.reset();
}

void LocalGroup::abandon(const std::string& after) {
  try {
    abort(CARAVAN_ERR_PEER_LOST, who(rank_) + " (pid " + std::to_string(getpid()) +
                                     ") stopped without caravan_shutdown()" +
                                     (after.empty() ? "" : " after: " + after));
  } catch (const std::exception& e) {
    CARAVAN_LOG(ERROR) << e.what();
  }
}

ControlBlock* LocalGroup::block() const {
  return reinterpret_cast<ControlBlock*>(segment_->data());
}

MemberSlot& LocalGroup::member(int r) const { return block()->members()[r]; }

std::string LocalGroup::who(int r) const {
  return "local rank " + std::to_string(r) + " of machine " + machine_;
}

std::string LocalGroup::who(const std::vector<int>& ranks) const {
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "local rank " : "local ranks ") + list + " of machine " + machine_;
}

uint64_t LocalGroup::nonce() const { return block()->nonce; }
const ProcessId& LocalGroup::owner() const { return block()->creator; }
Doorbell LocalGroup::doorbell() const { return Doorbell(&block()->doorbell); }

std::string LocalGroup::staleness(ControlBlock& b) const {
  if (b.abort_state.load(std::memory_order_acquire) == 2)
    return "its run failed: " + std::string(b.abort_message);
  if (!b.creator.alive())
    return "the process that made it, pid " + std::to_string(b.creator.pid) + ", is gone";
  for (uint32_t r = 0; r < b.local_size; ++r) {
    MemberSlot& m = b.members()[r];
    uint32_t s = m.state.load(std::memory_order_acquire);
    if (s >= kPresent && s != kLeft && !m.process.alive())
      return "its local rank " + std::to_string(r) + ", pid " + std::to_string(m.process.pid) +
             ", is gone";
  }
  return "";
}

// Any member may make the control segment: whoever starts first. Only
// local rank 0 removes one left by an earlier run, so that two processes
// never both remove a name and one of them removes the other's new one.
void LocalGroup::open_or_create(SteadyClock::time_point deadline) {
  const std::string& name = control_name_;
  SegmentDirectoryWatch dir;  // before the first look, so no change is missed
  for (;;) {
    if (auto seg = SharedSegment::open(name)) {
      auto* b = reinterpret_cast<ControlBlock*>(seg->data());
      if (seg->size() < sizeof(ControlBlock) || b->magic != kControlMagic ||
          b->layout_version != kLayoutVersion)
        throw Error(CARAVAN_ERR_STATE, segment_path(name) +
                                           " is not a control segment of this Caravan version; "
                                           "remove it if no job of it is running");
      std::string stale = staleness(*b);
      if (stale.empty()) {
        segment_ = std::make_unique<SharedSegment>(std::move(*seg));
        return;
      }
      if (rank_ == 0) {
        CARAVAN_LOG(WARNING) << "removing " << segment_path(name) << ", left by an earlier run ("
                             << stale << ")";
        seg->unlink_if_mine(name);
        continue;
      }
      if (SteadyClock::now() >= deadline)
        throw Error(CARAVAN_ERR_TIMEOUT,
                    segment_path(name) + " is left by an earlier run (" + stale + ") and " +
                        who(0) + ", which replaces it, did not start within " +
                        std::to_string(connect_timeout_s_) + " s (CARAVAN_CONNECT_TIMEOUT)");
      dir.wait_until(deadline);
      continue;
    }
    SharedSegment fresh =
        SharedSegment::create(control_bytes(size_), "the local group of machine " + machine_);
    auto* b = new (fresh.data()) ControlBlock();
    b->magic = kControlMagic;
    b->layout_version = kLayoutVersion;
    b->local_size = static_cast<uint32_t>(size_);
    b->nonce = fresh_nonce();
    b->creator = ProcessId::self();
    b->machine_rank.store(-1);
    b->machines.store(0);
    for (int r = 0; r < size_; ++r) new (&b->members()[r]) MemberSlot();
    if (fresh.publish(name)) {
      segment_ = std::make_unique<SharedSegment>(std::move(fresh));
      return;
    }
    // Another member published first: open theirs on the next pass.
  }
}

void LocalGroup::claim_rank() {
  MemberSlot& m = member(rank_);
  uint32_t expected = kEmpty;
  if (!m.state.compare_exchange_strong(expected, kClaimed)) {
    throw config_error("BYTEPS_LOCAL_RANK=" + std::to_string(rank_) +
                       " is already taken on machine " + machine_ + " by pid " +
                       std::to_string(m.process.pid) +
                       ": every process of a machine needs its own BYTEPS_LOCAL_RANK (0.." +
                       std::to_string(size_ - 1) +
                       "), and two jobs on one machine need different DMLC_PS_ROOT_URI or "
                       "DMLC_PS_ROOT_PORT");
  }
  m.process = ProcessId::self();
  m.state.store(kPresent, std::memory_order_release);
  // Once every member has it mapped nobody needs the name any more; without
  // it a crash can leave nothing behind.
  if (block()->mapped.fetch_add(1) + 1 == static_cast<uint32_t>(size_))
    segment_->unlink_if_mine(control_name_);
  doorbell().ring();
}

void LocalGroup::await_members(SteadyClock::time_point deadline) {
  std::vector<bool> watched(static_cast<size_t>(size_), false);
  watched[static_cast<size_t>(rank_)] = true;
  bool warned = false;
  std::vector<int> missing;
  bool all_here = wait_until(
      [&] {
        missing.clear();
        for (int r = 0; r < size_; ++r) {
          MemberSlot& m = member(r);
          if (m.state.load(std::memory_order_acquire) < kPresent) {
            missing.push_back(r);
            continue;
          }
          if (watched[static_cast<size_t>(r)]) continue;
          watched[static_cast<size_t>(r)] = true;
          if (!watch_->watch(r, m.process) && !warned) {
            warned = true;
            CARAVAN_LOG(WARNING) << "cannot watch the process of " << who(r)
                                 << (m.process.visible() ? " (no pidfd_open on this kernel)"
                                                         : " (it runs in another PID namespace)")
                                 << ": a local rank that dies is noticed only at the deadline";
          }
        }
        return missing.empty();
      },
      deadline);
  if (!all_here)
    throw Error(CARAVAN_ERR_TIMEOUT,
                who(missing) + " did not arrive within " + std::to_string(connect_timeout_s_) +
                    " s (CARAVAN_CONNECT_TIMEOUT); every process of the machine needs "
                    "BYTEPS_LOCAL_SIZE=" +
                    std::to_string(size_) +
                    ", its own BYTEPS_LOCAL_RANK and the same DMLC_PS_ROOT_URI, "
                    "DMLC_PS_ROOT_PORT and DMLC_WORKER_ID");
}

void LocalGroup::on_member_exit(int r) {
  MemberSlot& m = member(r);
  if (m.state.load(std::memory_order_acquire) == kLeft) return;
  std::string why = who(r) + " (pid " + std::to_string(m.process.pid) +
                    ") ended without caravan_shutdown(): it crashed or was killed";
  abort(CARAVAN_ERR_PEER_LOST, why);
  std::lock_guard<std::mutex> lock(lost_mu_);
  if (on_member_lost_) on_member_lost_(why);
}

void LocalGroup::set_member_lost_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard<std::mutex> lock(lost_mu_);
  on_member_lost_ = std::move(handler);
}

void LocalGroup::abort(int code, const std::string& message) {
  ControlBlock* b = block();
  uint32_t expected = 0;
  if (b->abort_state.compare_exchange_strong(expected, 1)) {
    b->abort_code.store(code);
    size_t n = std::min(message.size(), kMessageBytes - 1);
    std::memcpy(b->abort_message, message.data(), n);
    b->abort_message[n] = '\0';
    b->abort_state.store(2, std::memory_order_release);
    CARAVAN_LOG(ERROR) << "the local group of machine " << machine_ << " ends: " << message;
  }
  doorbell().ring();
  remove_names();
}

void LocalGroup::check() const {
  ControlBlock* b = block();
  if (b->abort_state.load(std::memory_order_acquire) != 2) return;
  remove_names();
  throw Error(b->abort_code.load(), b->abort_message);
}

std::string LocalGroup::failure() const {
  ControlBlock* b = block();
  if (b->abort_state.load(std::memory_order_acquire) != 2) return "";
  return b->abort_message;
}

void LocalGroup::remove_names() const {
  if (names_removed_.exchange(true)) return;
  segment_->unlink_if_mine(control_name_);
  for (const std::string& name : segments_named(tensor_prefix_)) {
    try {
      unlink_segment(name);
    } catch (const Error& e) {
      CARAVAN_LOG(WARNING) << e.what();
    }
  }
}

bool LocalGroup::is_leaving(int r) const {
  return member(r).state.load(std::memory_order_acquire) >= kLeaving;
}

void LocalGroup::publish_machine_rank(int rank, int machines) {
  block()->machines.store(machines, std::memory_order_relaxed);
  block()->machine_rank.store(rank, std::memory_order_release);
  doorbell().ring();
}

int LocalGroup::wait_machine_rank(SteadyClock::time_point deadline,
                                  const std::string& waiting_for) {
  ControlBlock* b = block();
  if (!wait_until([&] { return b->machine_rank.load(std::memory_order_acquire) >= 0; }, deadline)) {
    std::string msg = who(0) + " did not " + waiting_for;
    abort(CARAVAN_ERR_TIMEOUT, msg);
    throw Error(CARAVAN_ERR_TIMEOUT, msg);
  }
  return b->machine_rank.load(std::memory_order_acquire);
}

int LocalGroup::machines() const { return block()->machines.load(std::memory_order_relaxed); }

void LocalGroup::leave_barrier(int timeout_s) {
  member(rank_).state.store(kLeaving, std::memory_order_release);
  doorbell().ring();
  std::vector<int> missing;
  bool all = wait_until(
      [&] {
        missing.clear();
        for (int r = 0; r < size_; ++r)
          if (!is_leaving(r)) missing.push_back(r);
        return missing.empty();
      },
      SteadyClock::now() + std::chrono::seconds(timeout_s));
  if (!all) {
    std::string msg = who(missing) + " did not reach caravan_shutdown() within " +
                      std::to_string(timeout_s) + " s (CARAVAN_OP_TIMEOUT)";
    abort(CARAVAN_ERR_TIMEOUT, msg);
    throw Error(CARAVAN_ERR_TIMEOUT, msg);
  }
}

void LocalGroup::mark_left() {
  // Everyone is past the barrier: no member maps a segment from now on, so
  // every name of this run can go.
  remove_names();
  member(rank_).state.store(kLeft, std::memory_order_release);
  doorbell().ring();
  left_ = true;
}

}  // namespace caravan
