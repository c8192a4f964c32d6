#include "engine/base/metrics.h"

#include <sstream>

namespace caravan::metrics {

void Histogram::observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  buckets[i].fetch_add(1, std::memory_order_relaxed);
  count.fetch_add(1, std::memory_order_relaxed);
  sum_ns.fetch_add(seconds > 0 ? static_cast<uint64_t>(seconds * 1e9) : 0,
                   std::memory_order_relaxed);
}

Registry& registry() {
  static Registry r;
  return r;
}

namespace {

uint64_t read(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

void counter(std::ostringstream& out, const std::string& labels, const char* name, const char* help,
             const Counter& c) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n"
      << name << "{" << labels << "} " << read(c.value) << "\n";
}

}  // namespace

std::string render(const std::string& node_label) {
  std::string escaped;
  for (char c : node_label) {
    if (c == '\\' || c == '"') escaped += '\\';
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped += c;
  }
  const std::string labels = "node=\"" + escaped + "\"";
  const Registry& r = registry();
  std::ostringstream out;
  counter(out, labels, "caravan_pushpull_operations_total",
          "push_pulls and broadcasts this worker finished", r.operations);
  counter(out, labels, "caravan_pushpull_bytes_total",
          "bytes of the tensors of the push_pulls this worker finished", r.operation_bytes);
  const Histogram& h = r.operation_seconds;
  const char* hn = "caravan_pushpull_duration_seconds";
  out << "# HELP " << hn << " time from a push_pull's submission to its completion\n# TYPE " << hn
      << " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= Histogram::kBounds.size(); ++i) {
    cumulative += read(h.buckets[i]);
    out << hn << "_bucket{" << labels << ",le=\"";
    if (i < Histogram::kBounds.size())
      out << Histogram::kBounds[i];
    else
      out << "+Inf";
    out << "\"} " << cumulative << "\n";
  }
  out << hn << "_sum{" << labels << "} " << static_cast<double>(read(h.sum_ns)) / 1e9 << "\n"
      << hn << "_count{" << labels << "} " << read(h.count) << "\n";
  struct Named {
    const char* name;
    const char* help;
    Counter Registry::*counter;
  };
  static const Named kCounters[] = {
      {"caravan_pushpull_in_place_bytes_total",
       "bytes of sums the van wrote straight into the tensor (no copy)", &Registry::in_place_bytes},
      {"caravan_server_pushes_total", "pushes this server received", &Registry::server_pushes},
      {"caravan_server_push_bytes_total", "bytes of the pushes this server received",
       &Registry::server_push_bytes},
      {"caravan_server_rounds_total", "rounds this server summed (sync mode)",
       &Registry::server_rounds},
      {"caravan_server_answer_bytes_total", "bytes of the sums this server sent",
       &Registry::server_answer_bytes},
      {"caravan_messages_sent_total", "data messages handed to the van", &Registry::messages_sent},
      {"caravan_bytes_sent_total", "bytes of the data messages handed to the van",
       &Registry::bytes_sent},
      {"caravan_messages_received_total", "data messages received from the van",
       &Registry::messages_received},
      {"caravan_bytes_received_total", "bytes of the data messages received",
       &Registry::bytes_received},
      {"caravan_resends_total", "messages sent again for want of an acknowledgement (PS_RESEND)",
       &Registry::resends},
      {"caravan_peers_lost_total", "times this node found a peer or the scheduler lost",
       &Registry::peers_lost},
  };
  for (const Named& c : kCounters) counter(out, labels, c.name, c.help, r.*c.counter);
  return out.str();
}

}  // namespace caravan::metrics
