// The job token (CARAVAN_JOB_TOKEN): the secret every process of a job
// shares, and the one thing that shows a process belongs to the job. It is
// only ever used as an HMAC-SHA256 key (OpenSSL's libcrypto); every proof
// and key made from it is derived in job_token.cc, each under a label of
// its own, so a value computed for one purpose is worthless for another.
// The secret never leaves this class and is never logged.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>

struct evp_mac_ctx_st;

namespace caravan::auth {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

struct Bytes {
  const void* data;
  size_t len;
};

// 32 bytes from libcrypto's RAND_bytes; throws caravan::Error when the
// generator fails (a nonce that might repeat is worse than no job).
Nonce fresh_nonce();

// Constant time (CRYPTO_memcmp), so a forger learns nothing from timing.
bool same_mac(const uint8_t* a, const uint8_t* b);

// HMAC-SHA256 under one key, set up once. mac() may be called from several
// threads at once (they take turns).
class HmacSha256 {
 public:
  HmacSha256(const void* key, size_t len);
  ~HmacSha256();
  HmacSha256(const HmacSha256&) = delete;
  HmacSha256& operator=(const HmacSha256&) = delete;

  // The MAC of the concatenation of `parts`.
  Mac mac(std::initializer_list<Bytes> parts) const;

 private:
  mutable std::mutex mu_;
  evp_mac_ctx_st* ctx_ = nullptr;  // keyed; guarded by mu_
};

class JobToken {
 public:
  // nullptr when CARAVAN_JOB_TOKEN is unset; a CARAVAN_ERR_CONFIG error
  // when it is set but empty.
  static std::shared_ptr<const JobToken> from_env();
  JobToken(const void* secret, size_t len);
  explicit JobToken(const std::string& secret) : JobToken(secret.data(), secret.size()) {}

  // The control channel's challenge-response (see control_auth.h): what a
  // node sends to prove it knows the token, and what the scheduler sends
  // back (which also vouches for the job nonce).
  Mac node_proof(const Nonce& node, const Nonce& scheduler) const;
  Mac scheduler_proof(const Nonce& node, const Nonce& scheduler, const Nonce& job) const;
  // The key of data messages from node `from` to node `to` in the job run
  // that the scheduler named with `job` (see message_seal.h).
  Mac data_key(const Nonce& job, int32_t from, int32_t to) const;

 private:
  HmacSha256 key_;
};

}  // namespace caravan::auth
