#include "engine/base/job_token.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>

#include "engine/base/error.h"

namespace caravan::auth {
namespace {

// Every derivation has its own label, and every field after it has a fixed
// length, so no input of one derivation is also an input of another: a
// node's proof cannot be reflected as the scheduler's, nor a proof serve as
// a data key.
constexpr char kNodeProofLabel[] = "caravan job token 1: control proof, node to scheduler";
constexpr char kSchedulerProofLabel[] = "caravan job token 1: control proof, scheduler to node";
constexpr char kDataKeyLabel[] = "caravan job token 1: data key";

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "no detail from libcrypto";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

[[noreturn]] void crypto_failure(const char* what) {
  throw Error(CARAVAN_ERR_INTERNAL,
              std::string("libcrypto: ") + what + " failed: " + openssl_error());
}

Bytes label(const char* text) { return {text, std::strlen(text)}; }

std::array<uint8_t, 4> be32(int32_t v) {
  auto u = static_cast<uint32_t>(v);
  return {static_cast<uint8_t>(u >> 24), static_cast<uint8_t>(u >> 16),
          static_cast<uint8_t>(u >> 8), static_cast<uint8_t>(u)};
}

}  // namespace

Nonce fresh_nonce() {
  Nonce n;
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) crypto_failure("RAND_bytes");
  return n;
}

bool same_mac(const uint8_t* a, const uint8_t* b) { return CRYPTO_memcmp(a, b, kMacBytes) == 0; }

HmacSha256::HmacSha256(const void* key, size_t len) {
  EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (!hmac) crypto_failure("fetching HMAC");
  ctx_ = EVP_MAC_CTX_new(hmac);
  EVP_MAC_free(hmac);  // the context holds its own reference
  if (!ctx_) crypto_failure("EVP_MAC_CTX_new");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  if (EVP_MAC_init(ctx_, static_cast<const unsigned char*>(key), len, params) != 1) {
    EVP_MAC_CTX_free(ctx_);
    crypto_failure("HMAC-SHA256 key set-up");
  }
}

HmacSha256::~HmacSha256() { EVP_MAC_CTX_free(ctx_); }

Mac HmacSha256::mac(std::initializer_list<Bytes> parts) const {
  Mac out;
  size_t len = 0;
  std::lock_guard<std::mutex> lock(mu_);
  // Without a key, EVP_MAC_init starts over under the key already set: no
  // key schedule and no allocation, half the cost of copying a keyed
  // context per message (measured: 0.8 against 1.6 us for a seal).
  bool ok = EVP_MAC_init(ctx_, nullptr, 0, nullptr) == 1;
  for (const Bytes& p : parts)
    ok = ok && (p.len == 0 ||
                EVP_MAC_update(ctx_, static_cast<const unsigned char*>(p.data), p.len) == 1);
  ok = ok && EVP_MAC_final(ctx_, out.data(), &len, out.size()) == 1 && len == out.size();
  if (!ok) crypto_failure("HMAC-SHA256");
  return out;
}

std::shared_ptr<const JobToken> JobToken::from_env() {
  // Read directly: env::get counts an empty value as unset, and an empty
  // token must not quietly turn authentication off.
  const char* value = std::getenv("CARAVAN_JOB_TOKEN");
  if (!value) return nullptr;
  if (!*value)
    throw config_error(
        "CARAVAN_JOB_TOKEN is set but empty: set it to the job's secret (the same value on every "
        "node, e.g. from `openssl rand -hex 32`), or unset it on every node");
  return std::make_shared<const JobToken>(value, std::strlen(value));
}

JobToken::JobToken(const void* secret, size_t len) : key_(secret, len) {}

Mac JobToken::node_proof(const Nonce& node, const Nonce& scheduler) const {
  return key_.mac(
      {label(kNodeProofLabel), {node.data(), node.size()}, {scheduler.data(), scheduler.size()}});
}

Mac JobToken::scheduler_proof(const Nonce& node, const Nonce& scheduler, const Nonce& job) const {
  return key_.mac({label(kSchedulerProofLabel),
                   {node.data(), node.size()},
                   {scheduler.data(), scheduler.size()},
                   {job.data(), job.size()}});
}

Mac JobToken::data_key(const Nonce& job, int32_t from, int32_t to) const {
  auto f = be32(from), t = be32(to);
  return key_.mac(
      {label(kDataKeyLabel), {job.data(), job.size()}, {f.data(), f.size()}, {t.data(), t.size()}});
}

}  // namespace caravan::auth
