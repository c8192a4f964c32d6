// caravan-gloo-ring: the baseline of the emulated-cluster benchmark
// (bench/cluster/run.sh): Gloo's ring allreduce (the algorithm PyTorch's
// Gloo backend runs on CPU tensors) over its TCP transport, one rank per
// host. A model's gradients go as one fused buffer, the most favourable
// case for a ring. Workloads rsNM and agNM run Gloo's reduce-scatter and
// allgather instead. Every element of every result is checked; rank 0 prints
// the median time in the same form as caravan-cluster-worker.
//   caravan-gloo-ring --rank R --size N --store DIR --iface IF --workload W
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "workload.h"

namespace {

const char kProg[] = "caravan-gloo-ring";

void sum_floats(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<float*>(out);
  auto* x = static_cast<const float*>(a);
  auto* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cluster_bench;
  int rank = -1, size = 0, timeout_s = 600;
  std::string store_dir, iface;
  Options o = parse(kProg, argc, argv, [&](const std::string& a, const char* v) {
    if (a == "--rank")
      rank = count_arg(kProg, a, v);
    else if (a == "--size")
      size = count_arg(kProg, a, v);
    else if (a == "--timeout")
      timeout_s = count_arg(kProg, a, v);
    else if (a == "--store")
      store_dir = v;
    else if (a == "--iface")
      iface = v;
    else
      return false;
    return true;
  });
  if (size < 1 || rank < 0 || rank >= size)
    usage_error(kProg, "--rank R --size N with 0 <= R < N are required");
  if (store_dir.empty())
    usage_error(kProg, "--store DIR (a directory every rank sees) is required");
  try {
    gloo::transport::tcp::attr attr;
    if (!iface.empty()) attr.iface = iface;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore file_store(store_dir);
    gloo::rendezvous::PrefixStore store(o.workload, file_store);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(std::chrono::seconds(timeout_s));
    context->connectFullMesh(store, device);

    size_t elements = 0;
    for (auto& l : o.layers) elements += l.elements;
    std::vector<float> buf(elements);
    // An all-to-all's results; the others work in place.
    std::vector<float> out(o.collective == Collective::kAlltoall ? elements : 0);
    std::vector<double> seconds;
    using Clock = std::chrono::steady_clock;
    Window window;
    for (int it = 0; it < o.warmup + o.iters; ++it) {
      if (it == o.warmup) window.start = Window::wall();
      double prep0 = Window::thread_cpu();
      fill_for(o.collective, buf.data(), buf.size(), rank, size, it);
      if (it >= o.warmup) window.prep_cpu_s += Window::thread_cpu() - prep0;
      if (o.aligned) {
        gloo::BarrierOptions barrier(context);
        barrier.setTag(static_cast<uint32_t>(1000000 + it));
        gloo::barrier(barrier);
      }
      auto t0 = Clock::now();
      if (o.collective == Collective::kAlltoall) {
        gloo::AlltoallOptions opts(context);
        opts.setInput(buf.data(), buf.size());
        opts.setOutput(out.data(), out.size());
        opts.setTag(static_cast<uint32_t>(it));
        gloo::alltoall(opts);
      } else if (o.collective == Collective::kAllgather) {
        Shard mine = shard_of(buf.size(), rank, size);
        gloo::AllgatherOptions opts(context);
        opts.setInput(buf.data() + mine.begin, mine.end - mine.begin);
        opts.setOutput(buf.data(), buf.size());
        opts.setTag(static_cast<uint32_t>(it));
        gloo::allgather(opts);
      } else if (o.collective == Collective::kReduceScatter) {
        // Gloo's reduce-scatter is halving-doubling, which sends and
        // receives (N-1)/N of the tensor per rank as a ring would.
        std::vector<int> shards(static_cast<size_t>(size),
                                static_cast<int>(buf.size() / static_cast<size_t>(size)));
        gloo::ReduceScatterHalvingDoubling<float> rs(context, {buf.data()},
                                                     static_cast<int>(buf.size()), shards);
        rs.run();
      } else {
        gloo::AllreduceOptions opts(context);
        opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        opts.setOutput(buf.data(), buf.size());
        opts.setReduceFunction(&sum_floats);
        opts.setTag(static_cast<uint32_t>(it));
        gloo::allreduce(opts);
      }
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      prep0 = Window::thread_cpu();
      if (o.collective == Collective::kReduceScatter) {
        // Gloo leaves this rank's part of the sum at the buffer's start.
        Shard mine = shard_of(buf.size(), rank, size);
        std::memmove(buf.data() + mine.begin, buf.data(), (mine.end - mine.begin) * sizeof(float));
      }
      check_for(o.collective, kProg, (out.empty() ? buf : out).data(), buf.size(), o.workload, rank,
                size, it);
      if (it >= o.warmup) {
        window.prep_cpu_s += Window::thread_cpu() - prep0;
        seconds.push_back(s);
      }
    }
    window.end = Window::wall();
    {
      // No rank leaves while another still waits for its last messages
      // (the reduce-scatter's closing notifications).
      gloo::BarrierOptions done(context);
      done.setTag(2000000);
      gloo::barrier(done);
    }
    if (rank == 0)
      print_result("gloo-ring", o, size, static_cast<double>(elements) * sizeof(float), seconds,
                   window);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d of %d: %s\n", kProg, rank, size, e.what());
    return 1;
  }
  return 0;
}
