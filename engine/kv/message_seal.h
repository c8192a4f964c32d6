// CARAVAN_JOB_TOKEN on the data plane: every message a node sends to a van
// peer carries a seal, a fifth segment that only a node of this job run can
// make, and a receiver drops (and logs, with the van's address of the
// sender) every message whose seal is missing or wrong, before anything
// else looks at it. It lives above the van ABI, so every van gets it and
// none links libcrypto.
//
// Why per message: a van hands the engine a message with a `peer` text and
// nothing that names the connection it came on (the ZeroMQ van's is
// "tcp://<ip>", shared by every process of a host), so a handshake per
// connection could not be tied to the messages that follow it.
//
// The seal of a message from node f to node t is
//   seq (8 bytes, big-endian) | HMAC-SHA256(K(f,t), seq | header | keys | lens [| vals])
// where K(f,t) = HMAC(token, data label | J | f | t), J the job nonce the
// scheduler drew for this run (control_auth.h) and seq counts f's messages
// to t from 1. The header holds the sender, recipient, type, flags,
// timestamp and every segment's length, so none of them can be changed or
// forged. Values are not hashed (4 MB per message would cost more than the
// transport; docs/job-token.md says what that leaves open), but a vals
// segment that holds no values (kShm: a descriptor of shared memory, or a
// request to map some) is. K differs per direction and per run, and t
// accepts each seq from f once, in increasing order (vans deliver in order
// per peer), so no message can be replayed, reflected or carried over from
// another run.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "caravan/plugin/van_v2.h"
#include "engine/base/job_token.h"

namespace caravan {

class MessageSeal {
 public:
  static constexpr size_t kBytes = 8 + auth::kMacBytes;
  using Seal = std::array<uint8_t, kBytes>;

  // Keys for every pair (me, peer) of `peers`, the other nodes of the job.
  MessageSeal(const auth::JobToken& token, const auth::Nonce& job, int32_t me,
              const std::vector<int32_t>& peers);

  // Seals a message to `to` (segments: header, keys, vals, lens) into
  // *out. The seals to one peer must reach the van in the order they were
  // made: the returned lock keeps the next seal to `to` waiting until the
  // caller has handed this message to the van and let go of it. Throws
  // when `to` is no peer.
  [[nodiscard]] std::unique_lock<std::mutex> seal(int32_t to, const caravan_segment_v2* segments,
                                                  Seal* out);

  // Checks a received message of `num_segments` (the four above, then the
  // seal). False, with *why, when it must be dropped. Called from one
  // thread (the receiving one).
  bool open(const caravan_recv_segment_v2* segments, size_t num_segments, std::string* why);

 private:
  struct Peer {
    Peer(const auth::Mac& send, const auth::Mac& recv)
        : send_key(send.data(), send.size()), recv_key(recv.data(), recv.size()) {}
    auth::HmacSha256 send_key;
    auth::HmacSha256 recv_key;
    std::mutex send_mu;
    uint64_t sent = 0;      // seq of the last seal made; guarded by send_mu
    uint64_t received = 0;  // seq of the last message accepted; receiving thread only
  };
  std::unordered_map<int32_t, std::unique_ptr<Peer>> peers_;  // fixed after construction
};

}  // namespace caravan
