// CARAVAN_JOB_TOKEN on the control channel: a mutual challenge-response
// that must complete before any other message of a connection counts.
//
//   node -> scheduler   AUTH_HELLO      Nn             32 random bytes
//   scheduler -> node   AUTH_CHALLENGE  Ns             32 random bytes, new per connection
//   node -> scheduler   AUTH_PROOF      HMAC(token, node label | Nn | Ns)
//   scheduler -> node   AUTH_PROOF      HMAC(token, scheduler label | Nn | Ns | J), J
//
// then REGISTER and the rest as without a token. J, the job nonce, is drawn
// once per scheduler run; the data plane's keys come from it (see
// engine/kv/message_seal.h).
//
// Why this shape: Ns is fresh for every connection, so a proof recorded
// from an earlier connection proves nothing on a new one (no replay); the
// two proofs carry different labels, so the scheduler's proof can never be
// passed off as a node's (no reflection), and the scheduler sends its proof
// only after checking the node's, so a stranger gets no MAC from it at all.
// Nn makes the scheduler's proof fresh for the node, which learns that it
// reached the job's scheduler and that J is the job's.
//
// Pure: no sockets, so tests drive both ends directly.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/base/job_token.h"
#include "engine/control/control_message.h"

namespace caravan {

// The scheduler's end, for all of its connections.
class AuthResponder {
 public:
  struct Step {
    enum Outcome { kWait, kAdmit, kRefuse } outcome = kWait;
    std::optional<ControlMessage> reply;  // sent before anything else happens
    bool deliver = false;                 // kAdmit: the message itself is to be handled as usual
    std::string why;   // kRefuse: for the scheduler's log (the caller names the peer)
    std::string tell;  // kRefuse: for the refused node
  };

  // Without a token (null) a connection is admitted at its first message,
  // unless that message shows the peer has a token.
  explicit AuthResponder(std::shared_ptr<const auth::JobToken> token);

  bool admitted(int conn) const;
  // A message from a connection that is not admitted yet.
  Step on_message(int conn, const ControlMessage& msg);
  void forget(int conn);
  // J above; zero without a token.
  const auth::Nonce& job_nonce() const { return job_; }
  // A new J, for the generation after a suspend: node ids and sequence
  // numbers start again then, so with the old J a message sealed before
  // the suspend would pass after it. Connections admitted from here on
  // get the new one.
  void renew_job_nonce() {
    if (token_) job_ = auth::fresh_nonce();
  }
  // The J of a running job this scheduler takes over (its nodes' seals
  // use it), as a node reported it. Connections admitted from here on get
  // it.
  void adopt_job_nonce(const auth::Nonce& job) {
    if (token_) job_ = job;
  }

 private:
  struct Conn {
    bool admitted = false;
    bool challenged = false;
    auth::Nonce node{};
    auth::Nonce scheduler{};
  };
  std::shared_ptr<const auth::JobToken> token_;
  auth::Nonce job_{};
  std::map<int, Conn> conns_;
};

// A node's end of its one connection to the scheduler.
class AuthInitiator {
 public:
  struct Step {
    std::optional<ControlMessage> reply;
    bool done = false;  // the scheduler proved itself; job_nonce() is set
    std::string error;  // the scheduler failed its proof or broke the protocol
  };

  explicit AuthInitiator(std::shared_ptr<const auth::JobToken> token);

  // The first message on the connection.
  ControlMessage hello() const;
  // An AUTH_CHALLENGE or AUTH_PROOF from the scheduler.
  Step on_message(const ControlMessage& msg);
  const auth::Nonce& job_nonce() const { return job_; }

 private:
  std::shared_ptr<const auth::JobToken> token_;
  auth::Nonce node_;
  std::optional<auth::Nonce> scheduler_;
  bool done_ = false;
  auth::Nonce job_{};
};

}  // namespace caravan
