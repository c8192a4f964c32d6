// ps::Postoffice and the ps-lite logging sink, forwarding to the runtime.
#include "ps/internal/postoffice.h"

#include <cstring>

#include "engine/base/log.h"
#include "engine/pslite/ps_runtime.h"

namespace ps {

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
  caravan::Log::write(l, std::string(base ? base + 1 : file) + ":" + std::to_string(line) + "] " +
                             message);
}
}  // namespace internal

Postoffice::Postoffice() {}

Postoffice* Postoffice::Get() {
  static Postoffice* p = new Postoffice();
  return p;
}

Van* Postoffice::van() { return &Runtime::get(); }

void Postoffice::Start(int customer_id, const char* argv0, bool do_barrier) {
  Runtime::get().start(customer_id, do_barrier);
}

void Postoffice::Finalize(int customer_id, bool do_barrier) {
  Runtime::get().finalize(customer_id, do_barrier);
}

void Postoffice::AddCustomer(Customer* customer) { Runtime::get().add_customer(customer); }
void Postoffice::RemoveCustomer(Customer* customer) { Runtime::get().remove_customer(customer); }
Customer* Postoffice::GetCustomer(int app_id, int customer_id, int) const {
  return Runtime::get().customer(app_id, customer_id);
}

const std::vector<int>& Postoffice::GetNodeIDs(int node_id) const {
  return Runtime::get().node_ids(node_id);
}
const std::vector<Range>& Postoffice::GetServerKeyRanges() { return Runtime::get().key_ranges(); }

void Postoffice::RegisterExitCallback(const std::function<void()>& cb) {
  Runtime::get().set_exit_callback(cb);
}

int Postoffice::num_workers() const { return Runtime::get().num_workers(); }
int Postoffice::num_servers() const { return Runtime::get().num_servers(); }
int Postoffice::my_rank() const { return Runtime::get().my_rank(); }
bool Postoffice::is_worker() const { return Runtime::get().role() == caravan::Role::kWorker; }
bool Postoffice::is_server() const { return Runtime::get().role() == caravan::Role::kServer; }
bool Postoffice::is_scheduler() const { return Runtime::get().role() == caravan::Role::kScheduler; }
int Postoffice::verbose() const { return caravan::Log::verbose(); }

void Postoffice::Barrier(int customer_id, int node_group) { Runtime::get().barrier(node_group); }

}  // namespace ps
