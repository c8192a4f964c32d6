#include "harness.h"

#include <cstdio>
#include <cstring>

namespace caravan::van_check {

FakeHost::FakeHost(Params params) : params_(std::move(params)) {
  table_.struct_size = sizeof table_;
  table_.host_ctx = this;
  table_.log = [](void*, caravan_log_level level, const char* message) {
    if (level >= CARAVAN_LOG_WARNING)
      std::fprintf(stderr, "[%s %d] %s\n", van().descriptor->name, static_cast<int>(level),
                   message);
  };
  table_.get_param = [](void* ctx, const char* name) -> const char* {
    auto* self = static_cast<FakeHost*>(ctx);
    auto it = self->params_.find(name);
    return it == self->params_.end() ? nullptr : it->second.c_str();
  };
  // A van under test sees the real environment (FI_PROVIDER, DMLC_INTERFACE).
  table_.get_env = [](void*, const char* name) -> const char* { return std::getenv(name); };
  table_.set_error = [](void* ctx, const char* message) {
    auto* self = static_cast<FakeHost*>(ctx);
    std::lock_guard<std::mutex> lock(self->mu_);
    self->last_error_ = message ? message : "";
  };
}

std::string FakeHost::error() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

std::string unavailable_reason() {
  FakeHost host;
  void* ctx = nullptr;
  caravan_status s = ops().init(host.table(), &ctx);
  if (s == CARAVAN_STATUS_OK) ops().finalize(ctx);
  if (s != CARAVAN_STATUS_UNAVAILABLE) return "";
  std::string why = host.error();
  return why.empty() ? "init returned UNAVAILABLE" : why;
}

Instance::Instance(Params params) : host_(std::move(params)) {
  caravan_status s = ops().init(host_.table(), &ctx_);
  EXPECT_EQ(s, CARAVAN_STATUS_OK) << "init: " << status_name(s) << ": " << host_.error();
  if (s != CARAVAN_STATUS_OK) ctx_ = nullptr;
}

Instance::~Instance() {
  if (ctx_) finalize();
}

caravan_status Instance::finalize() {
  caravan_status s = ops().finalize(ctx_);
  EXPECT_EQ(s, CARAVAN_STATUS_OK) << "finalize: " << host_.error();
  ctx_ = nullptr;
  return s;
}

caravan_van_properties_v1 Instance::properties() {
  caravan_van_properties_v1 p{};
  p.struct_size = sizeof p;
  EXPECT_EQ(ops().properties(ctx_, &p), CARAVAN_STATUS_OK) << host_.error();
  return p;
}

caravan_status Instance::listen(const char* host, int port) {
  char buf[CARAVAN_VAN_MAX_ADDRESS_V1] = {0};
  caravan_status s = ops().listen(ctx_, host, port, buf, sizeof buf);
  if (s == CARAVAN_STATUS_OK) addr_ = buf;
  return s;
}

caravan_status Instance::connect(uint64_t peer, const std::string& address) {
  return ops().connect(ctx_, peer, address.c_str());
}

caravan_status Instance::send(uint64_t peer, const std::vector<caravan_segment_v1>& segs,
                              caravan_send_done_fn done, void* cookie) {
  return ops().send(ctx_, peer, segs.data(), segs.size(), done, cookie);
}

bool Instance::recv_one(const std::function<void(const caravan_van_message_v1&)>& check,
                        Clock::duration patience) {
  auto deadline = Clock::now() + patience;
  while (Clock::now() < deadline) {
    caravan_van_message_v1 msg{};
    msg.struct_size = sizeof msg;
    caravan_status s = ops().recv(ctx_, 200, &msg);
    if (s == CARAVAN_STATUS_TIMEOUT) continue;
    EXPECT_EQ(s, CARAVAN_STATUS_OK) << "recv: " << status_name(s) << ": " << host_.error();
    if (s != CARAVAN_STATUS_OK) return false;
    EXPECT_NE(msg.peer, nullptr) << "a message's peer is never NULL";
    check(msg);
    EXPECT_EQ(ops().release(ctx_, &msg), CARAVAN_STATUS_OK) << host_.error();
    return true;
  }
  ADD_FAILURE() << "no message within the deadline";
  return false;
}

DoneLog::DoneLog(size_t n) : slots_(n) {
  for (auto& slot : slots_) slot.log = this;
}

void DoneLog::done(void* cookie, caravan_status status) {
  auto* slot = static_cast<Slot*>(cookie);
  slot->status.store(status);
  slot->calls.fetch_add(1);
  std::lock_guard<std::mutex> lock(slot->log->mu_);
  ++slot->log->total_;
  slot->log->cv_.notify_all();
}

bool DoneLog::wait_for(size_t n, Clock::duration patience) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, patience, [&] { return total_ >= n; });
}

size_t DoneLog::total() {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131u + (i >> 9) + seed * 7u);
  return v;
}

uint64_t read_u64(const caravan_recv_segment_v1& s) {
  uint64_t v = 0;
  EXPECT_EQ(s.len, sizeof v);
  if (s.len == sizeof v) std::memcpy(&v, s.data, sizeof v);
  return v;
}

void expect_same(const caravan_recv_segment_v1& got, const std::vector<uint8_t>& want) {
  ASSERT_EQ(got.len, want.size());
  if (!want.empty()) {
    ASSERT_NE(got.data, nullptr);
    EXPECT_EQ(std::memcmp(got.data, want.data(), want.size()), 0) << "content differs";
  }
}

const char* status_name(caravan_status s) {
  switch (s) {
    case CARAVAN_STATUS_OK: return "OK";
    case CARAVAN_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case CARAVAN_STATUS_UNAVAILABLE: return "UNAVAILABLE";
    case CARAVAN_STATUS_NO_MEMORY: return "NO_MEMORY";
    case CARAVAN_STATUS_IO: return "IO";
    case CARAVAN_STATUS_TIMEOUT: return "TIMEOUT";
    case CARAVAN_STATUS_UNSUPPORTED: return "UNSUPPORTED";
    case CARAVAN_STATUS_CLOSED: return "CLOSED";
    case CARAVAN_STATUS_INTERNAL: return "INTERNAL";
  }
  return "unknown status";
}

void VanPair::SetUp() {
  ASSERT_TRUE(a_.ok() && b_.ok());
  props_ = a_.properties();
  ASSERT_EQ(a_.listen(), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_EQ(b_.listen(), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_EQ(a_.connect(kB, b_.addr()), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_EQ(b_.connect(kA, a_.addr()), CARAVAN_STATUS_OK) << b_.error();
}

}  // namespace caravan::van_check
