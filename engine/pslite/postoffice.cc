// ps::Postoffice (one per node of this process), the ps-lite entry points
// of bytedance/ps-lite, and the ps-lite logging sink.
#include "ps/internal/postoffice.h"

#include <cstring>
#include <string>
#include <thread>

#include "engine/base/log.h"
#include "engine/pslite/ps_runtime.h"
#include "ps/ps.h"

namespace ps {

using caravan::Role;
using caravan::psl::Member;
using caravan::psl::Runtime;

namespace internal {
void WriteLogLine(const char* level, const char* file, int line, const std::string& message) {
  caravan_log_level l = CARAVAN_LOG_INFO;
  if (std::strcmp(level, "WARNING") == 0) l = CARAVAN_LOG_WARNING;
  if (std::strcmp(level, "ERROR") == 0 || std::strcmp(level, "FATAL") == 0) l = CARAVAN_LOG_ERROR;
  // ps-lite programs expect LOG(INFO) to be seen; BYTEPS_LOG_LEVEL still
  // filters it out when set above info.
  if (l == CARAVAN_LOG_INFO && caravan::Log::enabled(CARAVAN_LOG_WARNING) &&
      !caravan::Log::enabled(CARAVAN_LOG_INFO)) {
    if (std::getenv("BYTEPS_LOG_LEVEL")) return;
    l = CARAVAN_LOG_WARNING;
  }
  const char* base = std::strrchr(file, '/');
  caravan::Log::write(
      l, std::string(base ? base + 1 : file) + ":" + std::to_string(line) + "] " + message);
}
}  // namespace internal

namespace {

Error no_node(const char* role, int index) {
  std::string what = std::string("ps: this process has no ") + role + " node " +
                     std::to_string(index) +
                     " (DMLC_GROUP_SIZE=" + std::to_string(Runtime::group_size_from_env()) +
                     "; call ps::StartPS with this role first)";
  caravan::Log::write(CARAVAN_LOG_ERROR, what);
  return Error(what);
}

// Runs `fn` for each node, each on a thread of its own: nodes of one
// process start, meet in barriers and leave the job together, each
// waiting on the others. The first error is rethrown.
template <typename Fn>
void OnEach(const std::vector<Member*>& nodes, Fn fn) {
  if (nodes.size() == 1) return fn(*nodes[0]);
  std::vector<std::string> errors(nodes.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < nodes.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        fn(*nodes[i]);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (!e.empty()) throw Error(e);
}

// This process's nodes of the roles in `group` (kServerGroup, kWorkerGroup).
std::vector<Member*> NodesIn(int group) {
  std::vector<Member*> nodes;
  Runtime& rt = Runtime::get();
  if (group & kServerGroup)
    for (Member* m : rt.members_of(Role::kServer)) nodes.push_back(m);
  if (group & kWorkerGroup)
    for (Member* m : rt.members_of(Role::kWorker)) nodes.push_back(m);
  return nodes;
}

// The nodes StartPS makes for `role`.
std::vector<Member*> NodesOf(Node::Role role) {
  if (role == Node::SCHEDULER) return {Runtime::get().find(Role::kScheduler, 0)};
  return NodesIn((role == Node::SERVER || role == Node::JOINT ? kServerGroup : 0) |
                 (role == Node::WORKER || role == Node::JOINT ? kWorkerGroup : 0));
}

// dmlc/ps-lite: a customer other than 0 of a worker process's first node
// has a node of its own (once its Start made it).
bool OwnNodeCustomer(Member& first, int customer_id) {
  return customer_id != 0 && first.index() == 0 && first.role() == Role::kWorker;
}

}  // namespace

Postoffice* Postoffice::Get() { return Runtime::get().first().postoffice(); }

Postoffice* Postoffice::GetWorker(int index) {
  if (Member* m = Runtime::get().find(Role::kWorker, index)) return m->postoffice();
  throw no_node("worker", index);
}

Postoffice* Postoffice::GetServer(int index) {
  Runtime& rt = Runtime::get();
  // As bytedance/ps-lite: in the scheduler's process, the scheduler.
  if (Member* s = rt.find(Role::kScheduler, 0)) return s->postoffice();
  if (Member* m = rt.find(Role::kServer, index)) return m->postoffice();
  // dmlc/ps-lite lets any process hold a KVServer on its one node.
  if (index == 0) return Get();
  throw no_node("server", index);
}

Postoffice* Postoffice::GetScheduler() {
  Member* s = Runtime::get().find(Role::kScheduler, 0);
  return s ? s->postoffice() : nullptr;
}

void Postoffice::Init(Node::Role role) { Runtime::get().init(role); }

Van* Postoffice::van() { return member_; }

void Postoffice::Start(int customer_id, const char* argv0, bool do_barrier) {
  (void)argv0;
  // dmlc/ps-lite counts each Start(customer_id) of a worker process as a
  // worker of the job.
  Member* m = member_;
  if (OwnNodeCustomer(*m, customer_id)) m = &Runtime::get().worker_for_customer(customer_id);
  m->start(-1, do_barrier);
}

void Postoffice::Start(int customer_id, Node::Role role, int rank, bool do_barrier,
                       const char* argv0) {
  (void)customer_id;
  (void)argv0;
  Role want = role == Node::SCHEDULER ? Role::kScheduler
              : role == Node::SERVER  ? Role::kServer
                                      : Role::kWorker;
  if (role == Node::JOINT || member_->role() != want)
    throw no_node(role == Node::JOINT ? "single joint" : caravan::role_name(want), 0);
  member_->start(rank, do_barrier);
}

void Postoffice::Finalize(int customer_id, bool do_barrier) {
  Member* m = member_;
  if (OwnNodeCustomer(*m, customer_id)) m = Runtime::get().find(Role::kWorker, customer_id);
  // Any other customer shares its node: its Finalize leaves that to
  // customer 0's.
  if (!m || (customer_id != 0 && m == member_)) return;
  m->finalize(do_barrier, true);
}

void Postoffice::AddCustomer(Customer* customer) { member_->add_customer(customer); }
void Postoffice::RemoveCustomer(Customer* customer) { member_->remove_customer(customer); }
Customer* Postoffice::GetCustomer(int app_id, int customer_id, int) const {
  return member_->customer(app_id, customer_id);
}

const std::vector<int>& Postoffice::GetNodeIDs(int node_id) const {
  return member_->node_ids(node_id);
}
const std::vector<Range>& Postoffice::GetServerKeyRanges() { return member_->key_ranges(); }

void Postoffice::RegisterExitCallback(const std::function<void()>& cb) {
  member_->set_exit_callback(cb);
}

int Postoffice::num_workers() const { return member_->num_workers(); }
int Postoffice::num_servers() const { return member_->num_servers(); }
int Postoffice::group_size() const { return member_->group_size(); }
int Postoffice::my_rank() const { return member_->my_rank(); }
int Postoffice::preferred_rank() const { return member_->preferred_rank(); }
int Postoffice::instance_idx() const { return member_->instance(); }
bool Postoffice::is_worker() const { return member_->role() == Role::kWorker; }
bool Postoffice::is_server() const { return member_->role() == Role::kServer; }
bool Postoffice::is_scheduler() const { return member_->role() == Role::kScheduler; }
std::string Postoffice::role_str() const { return caravan::role_name(member_->role()); }
int Postoffice::verbose() const { return caravan::Log::verbose(); }

void Postoffice::Barrier(int customer_id, int node_group) {
  (void)customer_id;
  Runtime& rt = Runtime::get();
  bool joint = !rt.members_of(Role::kServer).empty() && !rt.members_of(Role::kWorker).empty();
  if (member_->group_size() == 1 && !joint) return member_->barrier(node_group);
  // bytedance/ps-lite: with DMLC_GROUP_SIZE, or in a JOINT process, a
  // program's barrier is one per process, whichever of its nodes it calls:
  // every node of this process in `node_group` enters it together.
  std::vector<Member*> nodes = NodesIn(node_group);
  if (nodes.empty()) nodes.push_back(member_);
  OnEach(nodes, [&](Member& m) { m.barrier(node_group); });
}

Node::Role GetRole(const std::string& role_str) {
  if (role_str == "worker") return Node::WORKER;
  if (role_str == "server") return Node::SERVER;
  if (role_str == "scheduler") return Node::SCHEDULER;
  if (role_str == "joint") return Node::JOINT;
  std::string what = "ps::GetRole: unknown role '" + role_str +
                     "' (DMLC_ROLE takes worker, server, scheduler or joint)";
  caravan::Log::write(CARAVAN_LOG_ERROR, what);
  throw Error(what);
}

void StartPS(int customer_id, Node::Role role, int rank, bool do_barrier, const char* argv0) {
  (void)customer_id;
  (void)argv0;
  int g = Runtime::group_size_from_env();
  if (g > 1 && role != Node::SCHEDULER && rank < 0) {
    std::string what = "ps::StartPS: DMLC_GROUP_SIZE=" + std::to_string(g) +
                       " needs this process's rank (DMLC_RANK), so that its " + std::to_string(g) +
                       " nodes take ranks rank*" + std::to_string(g) + "..rank*" +
                       std::to_string(g) + "+" + std::to_string(g - 1);
    caravan::Log::write(CARAVAN_LOG_ERROR, what);
    throw Error(what);
  }
  Postoffice::Init(role);
  OnEach(NodesOf(role), [&](Member& m) {
    m.start(rank < 0 ? -1 : rank * m.group_size() + m.instance(), do_barrier);
  });
}

void Finalize(int customer_id, Node::Role role, bool do_barrier) {
  if (customer_id != 0) return;
  OnEach(NodesOf(role), [&](Member& m) { m.finalize(do_barrier, false); });
}

}  // namespace ps
