#include "engine/control/control_auth.h"

#include <algorithm>

namespace caravan {
namespace {

ControlMessage auth_message(wire::Type type, std::initializer_list<auth::Bytes> parts) {
  ControlMessage m;
  m.head.type = type;
  for (const auth::Bytes& p : parts) {
    auto* b = static_cast<const uint8_t*>(p.data);
    m.auth.insert(m.auth.end(), b, b + p.len);
  }
  return m;
}

template <size_t N>
std::array<uint8_t, N> take(const std::vector<uint8_t>& bytes, size_t offset) {
  std::array<uint8_t, N> out;
  std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(offset), N, out.begin());
  return out;
}

bool is_auth(wire::Type t) {
  return t == wire::Type::kAuthHello || t == wire::Type::kAuthChallenge ||
         t == wire::Type::kAuthProof;
}

}  // namespace

AuthResponder::AuthResponder(std::shared_ptr<const auth::JobToken> token)
    : token_(std::move(token)) {
  if (token_) job_ = auth::fresh_nonce();
}

bool AuthResponder::admitted(int conn) const {
  auto it = conns_.find(conn);
  return it != conns_.end() && it->second.admitted;
}

void AuthResponder::forget(int conn) { conns_.erase(conn); }

AuthResponder::Step AuthResponder::on_message(int conn, const ControlMessage& msg) {
  Step s;
  Conn& c = conns_[conn];
  const char* type = control_type_name(msg.head.type);
  auto refuse = [&](std::string why, std::string tell) {
    conns_.erase(conn);
    s.outcome = Step::kRefuse;
    s.why = std::move(why);
    s.tell = std::move(tell);
    return s;
  };
  if (!token_) {
    if (is_auth(msg.head.type))
      return refuse("it has a CARAVAN_JOB_TOKEN (its first message is " + std::string(type) +
                        ") and this scheduler has none",
                    "the scheduler has no CARAVAN_JOB_TOKEN and this node has one: set the same "
                    "CARAVAN_JOB_TOKEN on every node of the job, or unset it on every node");
    c.admitted = true;
    s.outcome = Step::kAdmit;
    s.deliver = true;
    return s;
  }
  if (!c.challenged) {
    if (msg.head.type != wire::Type::kAuthHello)
      return refuse("missing CARAVAN_JOB_TOKEN (its first message is " + std::string(type) +
                        ", not AUTH_HELLO)",
                    "this job requires CARAVAN_JOB_TOKEN and this node has none: set the job's "
                    "CARAVAN_JOB_TOKEN on every node");
    c.node = take<auth::kNonceBytes>(msg.auth, 0);
    c.scheduler = auth::fresh_nonce();
    c.challenged = true;
    s.reply = auth_message(wire::Type::kAuthChallenge, {{c.scheduler.data(), c.scheduler.size()}});
    return s;
  }
  if (msg.head.type != wire::Type::kAuthProof)
    return refuse("broke the CARAVAN_JOB_TOKEN challenge: it sent " + std::string(type) +
                      " where AUTH_PROOF belongs",
                  "the CARAVAN_JOB_TOKEN challenge was broken: " + std::string(type) +
                      " where AUTH_PROOF belongs");
  auth::Mac expected = token_->node_proof(c.node, c.scheduler);
  if (!auth::same_mac(expected.data(), msg.auth.data()))
    return refuse("wrong CARAVAN_JOB_TOKEN (its proof does not match this scheduler's token)",
                  "wrong CARAVAN_JOB_TOKEN: this node's token is not the scheduler's");
  auth::Mac proof = token_->scheduler_proof(c.node, c.scheduler, job_);
  s.reply = auth_message(wire::Type::kAuthProof,
                         {{proof.data(), proof.size()}, {job_.data(), job_.size()}});
  c.admitted = true;
  s.outcome = Step::kAdmit;
  return s;
}

AuthInitiator::AuthInitiator(std::shared_ptr<const auth::JobToken> token)
    : token_(std::move(token)), node_(auth::fresh_nonce()) {}

ControlMessage AuthInitiator::hello() const {
  return auth_message(wire::Type::kAuthHello, {{node_.data(), node_.size()}});
}

AuthInitiator::Step AuthInitiator::on_message(const ControlMessage& msg) {
  Step s;
  if (done_) {
    s.error = std::string("it sent ") + control_type_name(msg.head.type) +
              " after the CARAVAN_JOB_TOKEN challenge was complete";
    return s;
  }
  if (msg.head.type == wire::Type::kAuthChallenge && !scheduler_) {
    scheduler_ = take<auth::kNonceBytes>(msg.auth, 0);
    auth::Mac proof = token_->node_proof(node_, *scheduler_);
    s.reply = auth_message(wire::Type::kAuthProof, {{proof.data(), proof.size()}});
    return s;
  }
  if (msg.head.type != wire::Type::kAuthProof || !scheduler_) {
    s.error = std::string("it sent ") + control_type_name(msg.head.type) +
              " out of turn in the CARAVAN_JOB_TOKEN challenge";
    return s;
  }
  auto job = take<auth::kNonceBytes>(msg.auth, auth::kMacBytes);
  auth::Mac expected = token_->scheduler_proof(node_, *scheduler_, job);
  if (!auth::same_mac(expected.data(), msg.auth.data())) {
    s.error =
        "its proof does not match this node's CARAVAN_JOB_TOKEN (not the job's scheduler, or "
        "its token differs)";
    return s;
  }
  job_ = job;
  done_ = true;
  s.done = true;
  return s;
}

}  // namespace caravan
