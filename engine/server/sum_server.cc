#include "engine/server/sum_server.h"

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/control/node_info.h"

namespace caravan {

SumServer::SumServer(KVEndpoint& kv, Reducer& reducer, int num_workers)
    : kv_(kv), reducer_(reducer), num_workers_(num_workers) {}

void SumServer::clear() { keys_.clear(); }

void SumServer::refuse(const KVMessage& request, int code, const std::string& why) {
  CARAVAN_LOG(WARNING) << "refusing a request from node " << request.head.sender << " ("
                       << request.peer << "): " << why;
  answer_error(request.head, code, why);
}

void SumServer::answer_error(const wire::Header& request, int code, const std::string& why) {
  KVMessage r;
  r.head.status = code;
  auto text = std::make_shared<std::string>(why);
  r.vals = Blob{text->data(), text->size(), text};
  kv_.respond(request, std::move(r), nullptr);
}

void SumServer::handle(KVMessage&& req) {
  const wire::Header& h = req.head;
  int rank = (h.sender - 9) / 2;
  if (h.sender < 9 || h.sender % 2 == 0 || rank >= num_workers_)
    return refuse(req, CARAVAN_ERR_SERVER,
                  "node " + std::to_string(h.sender) + " is not a worker of this job");
  if ((h.flags & (wire::kPush | wire::kPull)) != (wire::kPush | wire::kPull))
    return refuse(req, CARAVAN_ERR_SERVER, "this server only answers push_pull requests");
  if (req.keys.len != sizeof(uint64_t))
    return refuse(req, CARAVAN_ERR_SERVER, "a push_pull request carries exactly one key");
  // dtype_size() is 0 for a number that is no caravan_dtype, so the cast
  // below only ever sees valid values.
  size_t esize = dtype_size(h.dtype);
  if (esize == 0 || req.vals.len % esize != 0)
    return refuse(req, CARAVAN_ERR_SERVER,
                  "dtype " + std::to_string(h.dtype) + " with " + std::to_string(req.vals.len) +
                      " value bytes is not a whole number of elements");
  uint64_t key = *req.keys.as<uint64_t>();
  KeyState& k = keys_[key];
  if (k.dtype < 0) {
    k.bytes = req.vals.len;
    k.dtype = h.dtype;
    k.round.pushed.assign(static_cast<size_t>(num_workers_), false);
  } else if (k.poisoned.empty() && (k.bytes != req.vals.len || k.dtype != h.dtype)) {
    k.poisoned = "key " + std::to_string(key) + " holds " +
                 std::to_string(k.bytes / dtype_size(k.dtype)) + " " + dtype_name(k.dtype) +
                 " elements, but worker " + std::to_string(rank) + " pushed " +
                 std::to_string(req.vals.len / esize) + " " + dtype_name(h.dtype) +
                 " (the same tensor name with different sizes or dtypes on two workers)";
    // The workers already waiting in this round get the error too, rather
    // than waiting for a sum that cannot be right.
    for (const wire::Header& w : k.round.waiting) answer_error(w, CARAVAN_ERR_MISMATCH, k.poisoned);
    k.round = Round{};
  }
  if (!k.poisoned.empty()) return refuse(req, CARAVAN_ERR_MISMATCH, k.poisoned);
  Round& r = k.round;
  if (r.pushed[static_cast<size_t>(rank)])
    return refuse(req, CARAVAN_ERR_SERVER,
                  "worker " + std::to_string(rank) + " pushed key " + std::to_string(key) +
                      " twice in one round");
  r.pushed[static_cast<size_t>(rank)] = true;
  if (r.waiting.empty()) {
    // The first push becomes the accumulator: no copy, and a fresh buffer
    // for every round.
    r.sum = req.vals;
  } else {
    reducer_.sum(r.sum.data, req.vals.data, req.vals.len / esize, static_cast<caravan_dtype>(h.dtype));
  }
  r.waiting.push_back(h);
  if (static_cast<int>(r.waiting.size()) < num_workers_) return;

  Round done = std::move(r);
  r = Round{};
  r.pushed.assign(static_cast<size_t>(num_workers_), false);
  for (const wire::Header& w : done.waiting) {
    KVMessage out;
    auto key_copy = std::make_shared<uint64_t>(key);
    out.keys = Blob{key_copy.get(), sizeof(uint64_t), key_copy};
    out.vals = done.sum;  // shares ownership: freed after the last send
    out.head.dtype = h.dtype;
    kv_.respond(w, std::move(out), nullptr);
  }
}

}  // namespace caravan
