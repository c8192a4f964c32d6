#include "engine/server/answers.h"

#include "engine/base/log.h"
#include "engine/server/push_pull_request.h"

namespace caravan {

void Answers::values(const wire::Header& request, uint64_t key, const Blob& vals, Traced traced,
                     uint32_t flags) {
  KVMessage out;
  out.head.flags = flags;
  auto key_copy = std::make_shared<uint64_t>(key);
  out.keys = Blob{key_copy.get(), sizeof(uint64_t), key_copy};
  out.vals = vals;  // shares ownership: freed after the last send
  out.head.dtype = request.dtype;
  KVEndpoint::SentHandler on_sent;
  if (traced.round >= 0) {
    // The answer's time on the wire: from the round's sum to the van done.
    timeline_->begin(static_cast<int>(traced.round));
    on_sent = [timeline = timeline_, row = trace_row(key),
               args = trace_args(key, static_cast<uint64_t>(traced.round), request, vals.len),
               from = traced.complete_us](caravan_status) mutable {
      timeline->add("answer", row, from, Timeline::now_us(), std::move(args));
      timeline->end();
    };
  }
  kv_.respond(request, std::move(out), std::move(on_sent));
}

void Answers::in_place(const wire::Header& request, uint64_t key, const ipc::SlotDescriptor& at,
                       Traced traced) {
  auto where = std::make_shared<std::vector<uint8_t>>(ipc::encode_descriptor(at));
  values(request, key, Blob{where->data(), where->size(), where}, traced);
}

void Answers::error(const wire::Header& request, int code, const std::string& why) {
  KVMessage r;
  r.head.status = code;
  auto text = std::make_shared<std::string>(why);
  r.vals = Blob{text->data(), text->size(), text};
  kv_.respond(request, std::move(r), nullptr);
}

void Answers::refuse(const KVMessage& request, int code, const std::string& why) {
  CARAVAN_LOG(WARNING) << "refusing a request from node " << request.head.sender << " ("
                       << request.peer << "): " << why;
  error(request.head, code, why);
}

std::string Answers::trace_row(uint64_t key) { return "key " + std::to_string(key); }

std::string Answers::trace_args(uint64_t key, uint64_t round, const wire::Header& sender,
                                size_t bytes) const {
  int rank = -1;
  worker_rank_of(sender.sender, num_workers_, &rank);
  return "\"key\":\"" + std::to_string(key) + "\",\"bytes\":" + std::to_string(bytes) +
         ",\"priority\":" + std::to_string(sender.priority) + ",\"peer\":\"worker " +
         std::to_string(rank) + "\",\"step\":" + std::to_string(round);
}

void Answers::trace(const char* stage, uint64_t key, uint64_t round, const wire::Header& sender,
                    size_t bytes, int64_t from_us, int64_t to_us) {
  timeline_->add(stage, trace_row(key), from_us, to_us, trace_args(key, round, sender, bytes));
}

}  // namespace caravan
