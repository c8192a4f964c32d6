#include "gloo_baseline.h"

#ifdef CARAVAN_BENCH_GLOO
#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#endif

#include <algorithm>
#include <chrono>
#include <exception>
#include <vector>

namespace caravan_bench {

#ifdef CARAVAN_BENCH_GLOO
namespace {

void sum_floats(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<float*>(c);
  auto* x = static_cast<const float*>(a);
  auto* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

class Ring final : public GlooRing {
 public:
  Ring(int rank, int size, std::shared_ptr<gloo::rendezvous::Context> context)
      : rank_(rank), size_(size), context_(std::move(context)) {}

  double measure(size_t bytes, long rounds, long warmup, double* p50_us,
                 std::string* error) override {
    try {
      std::vector<float> buf(std::max<size_t>(1, bytes / sizeof(float)));
      std::vector<double> lat;
      for (long r = 0; r < warmup + rounds; ++r) {
        // Worker w's elements are w + 1 + r % 7: small integers, exact sums.
        float mine = static_cast<float>(rank_ + 1 + r % 7);
        std::fill(buf.begin(), buf.end(), mine);
        auto t0 = std::chrono::steady_clock::now();
        gloo::AllreduceOptions opts(context_);
        opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        opts.setOutput(buf.data(), buf.size());
        opts.setReduceFunction(&sum_floats);
        opts.setTag(static_cast<uint32_t>(tag_++));
        gloo::allreduce(opts);
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        float want = static_cast<float>(size_ * (size_ + 1) / 2 + size_ * (r % 7));
        if (buf.front() != want || buf.back() != want) {
          *error = "gloo's allreduce summed to " + std::to_string(buf.front()) + ", expected " +
                   std::to_string(want);
          return -1;
        }
        if (r >= warmup) lat.push_back(dt);
      }
      double total = 0;
      for (double d : lat) total += d;
      std::sort(lat.begin(), lat.end());
      if (p50_us) *p50_us = lat[lat.size() / 2] * 1e6;
      return static_cast<double>(bytes) * static_cast<double>(lat.size()) / total / 1e9;
    } catch (const std::exception& e) {
      *error = e.what();
      return -1;
    }
  }

 private:
  int rank_, size_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  long tag_ = 0;
};

}  // namespace

std::unique_ptr<GlooRing> GlooRing::connect(int rank, int size, const std::string& host,
                                            const std::string& store_dir, int timeout_s,
                                            std::string* error) {
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(store_dir);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::seconds(timeout_s));
    context->connectFullMesh(store, device);
    return std::make_unique<Ring>(rank, size, std::move(context));
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}

#else

std::unique_ptr<GlooRing> GlooRing::connect(int, int, const std::string&, const std::string&, int,
                                            std::string* error) {
  *error = "caravan-bench was built without Gloo (install libgloo-dev and configure again)";
  return nullptr;
}

#endif

}  // namespace caravan_bench
