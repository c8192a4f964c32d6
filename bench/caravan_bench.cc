// caravan-bench: push_pull bandwidth and latency per tensor size, every
// result checked element by element, compared with Gloo's ring allreduce
// among the same workers and with raw TCP on this host, in the same run.
// Run it as every worker of a job: caravan-launch -- caravan-bench [options]
#include <caravan/caravan.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "gloo_baseline.h"
#include "plot.h"
#include "tcp_baseline.h"
#ifdef CARAVAN_BENCH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

const char kUsage[] =
    "usage: caravan-launch [...] -- caravan-bench [options]\n"
    "\n"
    "options:\n"
    "  --sizes LIST     tensor sizes in bytes, K/M/G suffixes (default 4K,64K,1M,4M,16M,64M)\n"
    "  --iters N        timed rounds per size, at most (default 50)\n"
    "  --warmup N       untimed rounds per size (default 5)\n"
    "  --dtype T        float32, float64, float16, bfloat16, int32, int64, int8, uint8\n"
    "  --inflight K     tensors of each size in flight at once (default 1)\n"
    "  --no-baseline    skip the baselines (Gloo's allreduce, raw TCP on loopback)\n"
    "  --device D       cpu (default), or cuda: each size from host memory, then the same\n"
    "                   from CUDA device memory (caravan_push_pull_device), with the ratio\n"
    "  --csv            also print the results as CSV\n"
    "  --plot FILE.png  also draw bandwidth against size, with the baselines (gnuplot)\n";

// Big sizes stop early so a run stays short; the budget is in bytes per
// round so all workers agree on it without talking.
constexpr double kByteBudget = 2.0 * (1u << 30);
constexpr int kMinRounds = 5;
constexpr double kTimeBudgetS = 3.0;

struct Options {
  std::vector<size_t> sizes = {4u << 10, 64u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
  long iters = 50, warmup = 5, inflight = 1;
  caravan_dtype dtype = CARAVAN_FLOAT32;
  bool baseline = true, csv = false;
  bool cuda = false;  // --device cuda
  std::string plot;   // --plot FILE.png
};

[[noreturn]] void BadOption(const std::string& opt, const std::string& value,
                            const std::string& why) {
  fprintf(stderr, "caravan-bench: invalid %s value '%s': %s\n", opt.c_str(), value.c_str(),
          why.c_str());
  exit(2);
}

long ParseLong(const std::string& opt, const std::string& v, long lo, long hi) {
  errno = 0;
  char* end = nullptr;
  long n = strtol(v.c_str(), &end, 10);
  if (v.empty() || !isdigit(static_cast<unsigned char>(v[0])) || errno || *end || n < lo || n > hi)
    BadOption(opt, v,
              "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return n;
}

size_t ParseSize(const std::string& list, const std::string& item, size_t elem) {
  errno = 0;
  char* end = nullptr;
  unsigned long long n = strtoull(item.c_str(), &end, 10);
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10, ++end;
  else if (*end == 'M' || *end == 'm')
    shift = 20, ++end;
  else if (*end == 'G' || *end == 'g')
    shift = 30, ++end;
  if (item.empty() || !isdigit(static_cast<unsigned char>(item[0])) || errno || *end || n == 0 ||
      n > (1ull << 34) >> shift)
    BadOption("--sizes", list, "'" + item + "' is not a size like 4K, 1M or 65536 (at most 16G)");
  size_t bytes = static_cast<size_t>(n << shift);
  if (bytes % elem != 0)
    BadOption("--sizes", list,
              "'" + item + "' is not a multiple of the dtype's " + std::to_string(elem) + " bytes");
  return bytes;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  std::string sizes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") fputs(kUsage, stdout), exit(0);
    if (arg == "--no-baseline") {
      o.baseline = false;
      continue;
    }
    if (arg == "--csv") {
      o.csv = true;
      continue;
    }
    std::string name = arg;
    bool inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos)
      name = arg.substr(0, eq), value = arg.substr(eq + 1), inline_value = true;
    if (name != "--sizes" && name != "--iters" && name != "--warmup" && name != "--dtype" &&
        name != "--inflight" && name != "--device" && name != "--plot") {
      fprintf(stderr, "caravan-bench: unknown option '%s'\n%s", arg.c_str(), kUsage);
      exit(2);
    }
    if (!inline_value) {
      if (i + 1 >= argc)
        fprintf(stderr, "caravan-bench: option %s needs a value\n", name.c_str()), exit(2);
      value = argv[++i];
    }
    if (name == "--sizes")
      sizes = value;
    else if (name == "--iters")
      o.iters = ParseLong(name, value, 1, 1000000);
    else if (name == "--warmup")
      o.warmup = ParseLong(name, value, 0, 1000000);
    else if (name == "--inflight")
      o.inflight = ParseLong(name, value, 1, 1024);
    else if (name == "--plot") {
      if (value.size() < 5 || value.compare(value.size() - 4, 4, ".png") != 0)
        BadOption(name, value, "expected a file name ending in .png");
      o.plot = value;
    } else if (name == "--device") {
      if (value != "cpu" && value != "cuda") BadOption(name, value, "expected cpu or cuda");
#ifndef CARAVAN_BENCH_CUDA
      if (value == "cuda")
        BadOption(name, value, "this caravan-bench was built without the CUDA toolkit");
#endif
      o.cuda = value == "cuda";
    } else {
      bool found = false;
      for (int d = 0; d < CARAVAN_DTYPE_COUNT; ++d)
        if (value == caravan_dtype_name(d)) o.dtype = static_cast<caravan_dtype>(d), found = true;
      if (!found)
        BadOption(name, value,
                  "expected float32, float64, float16, bfloat16, int32, "
                  "int64, int8 or uint8");
    }
  }
  // Parsed last: divisibility depends on --dtype, wherever it came.
  if (!sizes.empty()) {
    o.sizes.clear();
    size_t start = 0;
    while (start <= sizes.size()) {
      size_t end = std::min(sizes.find(',', start), sizes.size());
      o.sizes.push_back(
          ParseSize(sizes, sizes.substr(start, end - start), caravan_dtype_size(o.dtype)));
      start = end + 1;
    }
  } else {
    for (size_t s : o.sizes) ParseSize("", std::to_string(s), caravan_dtype_size(o.dtype));
  }
  return o;
}

uint16_t ToHalf(int v) {  // exact for integers up to 2048
  if (v == 0) return 0;
  float f = static_cast<float>(v);
  uint32_t b;
  memcpy(&b, &f, 4);
  return static_cast<uint16_t>(((((b >> 23) & 0xff) - 127 + 15) << 10) | ((b >> 13) & 0x3ff));
}
double FromHalf(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(m | 0x400, e - 25);
  return (h & 0x8000) ? -v : v;
}
uint16_t ToBf16(int v) {  // exact for integers up to 256
  float f = static_cast<float>(v);
  uint32_t b;
  memcpy(&b, &f, 4);
  return static_cast<uint16_t>(b >> 16);
}
double FromBf16(uint16_t h) {
  uint32_t b = static_cast<uint32_t>(h) << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

// Element i of worker `rank` in round `round` is rank+1 + (i+round)%7: the
// sum is known to every worker, and a stale result of the previous round
// cannot pass.
template <typename T, typename Enc>
void FillAs(void* p, size_t n, int rank, long round, Enc enc) {
  T* d = static_cast<T*>(p);
  int k = static_cast<int>(round % 7);
  for (size_t i = 0; i < n; ++i) {
    d[i] = enc(rank + 1 + k);
    if (++k == 7) k = 0;
  }
}

// Returns the index of the first wrong element, or n.
template <typename T, typename Dec>
size_t CheckAs(const void* p, size_t n, int workers, long round, double* got, double* want,
               Dec dec) {
  const T* d = static_cast<const T*>(p);
  long base = static_cast<long>(workers) * (workers + 1) / 2;
  int k = static_cast<int>(round % 7);
  for (size_t i = 0; i < n; ++i) {
    double w = dec(base + static_cast<long>(workers) * k), g = dec(d[i]);
    if (g != w) return *got = g, *want = w, i;
    if (++k == 7) k = 0;
  }
  return n;
}

#define CARAVAN_BENCH_DISPATCH(t, FN, ...)                                        \
  switch (t) {                                                                    \
    case CARAVAN_FLOAT32:                                                         \
      return FN<float>(__VA_ARGS__, [](auto v) { return (float)v; });             \
    case CARAVAN_FLOAT64:                                                         \
      return FN<double>(__VA_ARGS__, [](auto v) { return (double)v; });           \
    case CARAVAN_INT32:                                                           \
      return FN<int32_t>(__VA_ARGS__, [](auto v) { return (int32_t)v; });         \
    case CARAVAN_INT64:                                                           \
      return FN<int64_t>(__VA_ARGS__, [](auto v) { return (int64_t)v; });         \
    case CARAVAN_INT8:                                                            \
      return FN<int8_t>(__VA_ARGS__, [](auto v) { return (double)(int8_t)v; });   \
    case CARAVAN_UINT8:                                                           \
      return FN<uint8_t>(__VA_ARGS__, [](auto v) { return (double)(uint8_t)v; }); \
    default:                                                                      \
      break;                                                                      \
  }

void Fill(caravan_dtype t, void* p, size_t n, int rank, long round) {
  if (t == CARAVAN_FLOAT16) return FillAs<uint16_t>(p, n, rank, round, ToHalf);
  if (t == CARAVAN_BFLOAT16) return FillAs<uint16_t>(p, n, rank, round, ToBf16);
  CARAVAN_BENCH_DISPATCH(t, FillAs, p, n, rank, round)
}

size_t Check(caravan_dtype t, const void* p, size_t n, int workers, long round, double* got,
             double* want) {
  // The expected sum goes through the same decoder as the result, so 16-bit
  // floats compare encoded-decoded values and int8 sums wrap like the data.
  if (t == CARAVAN_FLOAT16)
    return CheckAs<uint16_t>(p, n, workers, round, got, want, [](auto v) {
      if constexpr (std::is_same_v<decltype(v), uint16_t>)
        return FromHalf(v);
      else
        return FromHalf(ToHalf(static_cast<int>(v)));
    });
  if (t == CARAVAN_BFLOAT16)
    return CheckAs<uint16_t>(p, n, workers, round, got, want, [](auto v) {
      if constexpr (std::is_same_v<decltype(v), uint16_t>)
        return FromBf16(v);
      else
        return FromBf16(ToBf16(static_cast<int>(v)));
    });
  CARAVAN_BENCH_DISPATCH(t, CheckAs, p, n, workers, round, got, want)
  return n;
}

void Must(int rc, const char* call, const std::string& tensor) {
  if (rc >= 0) return;
  // The message first: caravan_rank() sets the last error again when it fails.
  std::string why = caravan_strerror(rc);
  int rank = caravan_rank();  // negative before the worker joined
  std::string who = rank >= 0 ? "worker " + std::to_string(rank) : "worker";
  fprintf(stderr, "caravan-bench: %s: %s(%s) failed: %s\n", who.c_str(), call, tensor.c_str(),
          why.c_str());
  exit(1);
}

std::string SizeLabel(size_t b) {
  const char* unit[] = {"B", "KB", "MB", "GB"};
  int u = 0;
  while (u < 3 && b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + " " + unit[u];
}

double Percentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  return sorted[std::max<size_t>(rank, 1) - 1];
}

struct Row {
  size_t bytes;
  long rounds;
  double algbw, p50, p90, p99;
  double tcp = -1;           // the raw TCP stream, measured after this size, GB/s
  double pingpong = -1;      // raw TCP round trips of the same size, GB/s
  double pingpong_p50 = -1;  // their median, us
  double echo = -1;          // the same, pipelined in kEchoPiece pieces, GB/s
  double cuda = -1;          // --device cuda: algbw of the same from device memory, GB/s
  double gloo = -1;          // Gloo's ring allreduce of the same bytes among the workers, GB/s
  double gloo_p50 = -1;      // its median round, us
};

// The pipelined echo's piece: the partition size at which raw sockets
// overlapped push and pull best on the development machine (512 KiB to
// 4 MiB were tried).
constexpr size_t kEchoPiece = 1u << 20;

using Clock = std::chrono::steady_clock;
using Buffer = std::unique_ptr<void, decltype(&free)>;

// One size: warmup, then timed rounds until the count or the time budget
// runs out. Rank 0 alone watches the clock and tells the others through a
// one-element push_pull outside the timed part, so every worker stops after
// the same round.
Row RunSize(const Options& o, size_t bytes, int rank, int workers, bool on_device = false) {
  size_t n = bytes / caravan_dtype_size(o.dtype);
  double round_bytes = static_cast<double>(bytes) * o.inflight;
  long rounds =
      std::min<long>(o.iters, std::max<long>(kMinRounds, std::ceil(kByteBudget / round_bytes)));
  std::vector<Buffer> bufs;
  std::vector<std::string> names;
  for (long k = 0; k < o.inflight; ++k) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, bytes) != 0) {
      fprintf(stderr, "caravan-bench: worker %d: cannot allocate %zu bytes\n", rank, bytes);
      exit(1);
    }
    bufs.emplace_back(p, &free);
    names.push_back(std::string(on_device ? "bench-cuda/" : "bench/") + std::to_string(bytes) +
                    "/" + std::to_string(k));
  }
#ifdef CARAVAN_BENCH_CUDA
  // Device copies of the buffers: filled and read back outside the timed part.
  std::vector<void*> dev(on_device ? o.inflight : 0, nullptr);
  cudaStream_t stream = nullptr;
  auto cuda_must = [&](cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "caravan-bench: worker %d: %s: %s\n", rank, what, cudaGetErrorString(e));
    exit(1);
  };
  if (on_device) {
    cuda_must(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (void*& d : dev) cuda_must(cudaMalloc(&d, bytes), "cudaMalloc");
  }
#endif
  std::vector<caravan_handle> handles(o.inflight);
  std::vector<double> lat;
  double timed = 0;
  const std::string ctl_name = "bench/ctl/" + std::to_string(bytes);
  for (long r = 0; r < o.warmup + rounds; ++r) {
    for (long k = 0; k < o.inflight; ++k) Fill(o.dtype, bufs[k].get(), n, rank, r);
#ifdef CARAVAN_BENCH_CUDA
    if (on_device) {
      for (long k = 0; k < o.inflight; ++k)
        cuda_must(cudaMemcpy(dev[k], bufs[k].get(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
#endif
    auto t0 = Clock::now();
    for (long k = 0; k < o.inflight; ++k) {
#ifdef CARAVAN_BENCH_CUDA
      if (on_device) {
        Must(caravan_push_pull_device_async(names[k].c_str(), dev[k], n, o.dtype, 0, stream,
                                            &handles[k]),
             "caravan_push_pull_device_async", names[k]);
        continue;
      }
#endif
      Must(caravan_push_pull_async(names[k].c_str(), bufs[k].get(), n, o.dtype, 0, &handles[k]),
           "caravan_push_pull_async", names[k]);
    }
    for (long k = 0; k < o.inflight; ++k) Must(caravan_wait(handles[k]), "caravan_wait", names[k]);
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
#ifdef CARAVAN_BENCH_CUDA
    if (on_device)
      for (long k = 0; k < o.inflight; ++k)
        cuda_must(cudaMemcpy(bufs[k].get(), dev[k], bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
#endif
    for (long k = 0; k < o.inflight; ++k) {
      double got = 0, want = 0;
      size_t bad = Check(o.dtype, bufs[k].get(), n, workers, r, &got, &want);
      if (bad != n) {
        fprintf(stderr,
                "caravan-bench: worker %d: wrong sum in tensor %s round %ld element %zu: got %g, "
                "expected %g\n",
                rank, names[k].c_str(), r, bad, got, want);
        exit(1);
      }
    }
    if (r < o.warmup) continue;
    lat.push_back(dt);
    timed += dt;
    long done = r - o.warmup + 1;
    if (done >= rounds) break;
    int32_t stop = rank == 0 && done >= kMinRounds && timed >= kTimeBudgetS;
    Must(caravan_push_pull(ctl_name.c_str(), &stop, 1, CARAVAN_INT32, 1), "caravan_push_pull",
         ctl_name);
    if (stop) break;
  }
#ifdef CARAVAN_BENCH_CUDA
  for (void* d : dev) cudaFree(d);
  if (stream) cudaStreamDestroy(stream);
#endif
  std::sort(lat.begin(), lat.end());
  Row row{bytes, static_cast<long>(lat.size()), 0, 0, 0, 0};
  row.algbw = round_bytes * lat.size() / timed / 1e9;
  row.p50 = Percentile(lat, 50) * 1e6;
  row.p90 = Percentile(lat, 90) * 1e6;
  row.p99 = Percentile(lat, 99) * 1e6;
  return row;
}

// Gloo's ring among the job's workers (--no-baseline: none). They meet
// through files in a directory rank 0 makes and names to the others by a
// broadcast, so every worker must see it: on one host they do; where one
// does not (workers on several hosts), every worker hears so and goes on
// without the baseline. *store_dir is the directory, for rank 0 to remove.
std::unique_ptr<caravan_bench::GlooRing> ConnectGloo(int rank, int workers, const std::string& host,
                                                     std::string* store_dir) {
  char dir[256] = {};
  if (rank == 0) {
    snprintf(dir, sizeof dir, "/tmp/caravan-bench-gloo.XXXXXX");
    if (!mkdtemp(dir)) {
      fprintf(stderr, "caravan-bench: Gloo baseline: mkdtemp(%s): %s\n", dir, strerror(errno));
      dir[0] = 0;
    }
  }
  Must(caravan_broadcast("bench/gloo/store", dir, sizeof dir, CARAVAN_UINT8, 0, 0),
       "caravan_broadcast", "bench/gloo/store");
  *store_dir = dir;
  int32_t missing = dir[0] == 0 || access(dir, R_OK | W_OK | X_OK) != 0;
  Must(caravan_push_pull("bench/gloo/reachable", &missing, 1, CARAVAN_INT32, 0),
       "caravan_push_pull", "bench/gloo/reachable");
  if (missing) {
    if (rank == 0)
      printf("no Gloo baseline: %d worker(s) cannot use %s (workers on several hosts?)\n", missing,
             dir);
    return nullptr;
  }
  std::string error;
  auto ring = caravan_bench::GlooRing::connect(rank, workers, host, dir, 60, &error);
  int32_t failed = ring == nullptr;
  Must(caravan_push_pull("bench/gloo/connected", &failed, 1, CARAVAN_INT32, 0), "caravan_push_pull",
       "bench/gloo/connected");
  if (failed) {
    if (!ring)
      fprintf(stderr, "caravan-bench: worker %d: no Gloo baseline: %s\n", rank, error.c_str());
    return nullptr;
  }
  return ring;
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = getenv(name);
  return v && *v ? v : fallback;
}

std::string VanName() {
  // Values bypass the van for servers on this host that map the worker's memory.
  std::string ipc =
      EnvOr("BYTEPS_ENABLE_IPC", "0") == "1" ? " + shared memory (BYTEPS_ENABLE_IPC=1)" : "";
  if (const char* v = getenv("CARAVAN_VAN"); v && *v) return v + ipc;
  std::string rdma = EnvOr("DMLC_ENABLE_RDMA", "0");
  return (rdma == "0" || rdma == "zmq" ? "zmq" : "DMLC_ENABLE_RDMA=" + rdma) + ipc;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseArgs(argc, argv);
  Must(caravan_init(), "caravan_init", "");
  int rank = caravan_rank(), workers = caravan_size();
  Must(rank, "caravan_rank", "");
  Must(workers, "caravan_size", "");
  long max_sum = static_cast<long>(workers) * (workers + 1) / 2 + 6L * workers;
  long exact = o.dtype == CARAVAN_FLOAT16 ? 2048 : o.dtype == CARAVAN_BFLOAT16 ? 256 : 1L << 24;
  if (max_sum > exact) {
    fprintf(stderr, "caravan-bench: --dtype %s cannot hold the sums of %d workers exactly\n",
            caravan_dtype_name(o.dtype), workers);
    return 2;
  }
  std::string host = EnvOr("DMLC_NODE_HOST", "127.0.0.1");
  if (rank == 0) {
    printf("caravan-bench: %d workers, %s servers, van %s, dtype %s, inflight %ld\n", workers,
           EnvOr("DMLC_NUM_SERVER", "?").c_str(), VanName().c_str(), caravan_dtype_name(o.dtype),
           o.inflight);
    if (o.cuda)
      printf(
          "--device cuda: each size from host memory (algbw), then from CUDA device memory "
          "(cuda GB/s), results checked on both\n");
    // Each row's baselines are measured right after its rounds, so that a
    // host whose speed drifts during the run still gives ratios of
    // neighbouring measurements. "echo/TCP" is raw sockets' own ratio, no
    // Caravan in it: a pipelined echo of the size against the stream, what
    // push_pull at best reaches. "p50/TCP rt" is push_pull's median round
    // against the median raw round trip of the same bytes.
    if (o.baseline)
      printf(
          "baselines measured after each size: Gloo's ring allreduce of the same bytes among the "
          "same %d workers (what torch.distributed's gloo backend runs), and raw TCP over %s\n",
          workers, host.c_str());
    fflush(stdout);
  }
  // Every worker takes part in Gloo's allreduce: connected before any size.
  std::string gloo_dir;
  std::unique_ptr<caravan_bench::GlooRing> gloo;
  if (o.baseline && workers > 1) gloo = ConnectGloo(rank, workers, host, &gloo_dir);
  if (rank == 0) {
    printf("%8s %7s %11s %10s %10s %10s %9s %8s %9s %8s %7s %12s %9s %11s", "size", "rounds",
           "algbw GB/s", "p50 us", "p90 us", "p99 us", "gloo GB/s", "vs gloo", "gloo p50",
           "TCP GB/s", "vs TCP", "vs pingpong", "echo/TCP", "p50/TCP rt");
    printf(o.cuda ? " %9s %9s\n" : "\n", "cuda GB/s", "cuda/host");
    fflush(stdout);
  }
  std::vector<Row> rows;
  for (size_t bytes : o.sizes) {
    Row r = RunSize(o, bytes, rank, workers);
    if (o.cuda) r.cuda = RunSize(o, bytes, rank, workers, true).algbw;
    // Gloo: a round's bytes as push_pull's, as many rounds (every worker has the same r.rounds).
    if (gloo) {
      std::string err;
      r.gloo = gloo->measure(bytes * o.inflight, r.rounds, 10, &r.gloo_p50, &err);
      if (r.gloo < 0) {
        fprintf(stderr, "caravan-bench: worker %d: Gloo's allreduce of %s failed: %s\n", rank,
                SizeLabel(bytes).c_str(), err.c_str());
        exit(1);
      }
    }
    if (rank != 0) continue;
    char gloo_bw[32] = "-", gloo_ratio[32] = "-", gloo_p50[32] = "-";
    if (r.gloo > 0) {
      snprintf(gloo_bw, sizeof gloo_bw, "%.3f", r.gloo);
      snprintf(gloo_ratio, sizeof gloo_ratio, "%.2f", r.algbw / r.gloo);
      snprintf(gloo_p50, sizeof gloo_p50, "%.1f", r.gloo_p50);
    }
    char stream[32] = "-", ratio[32] = "-", pp_ratio[32] = "-", echo_ratio[32] = "-",
         rt_ratio[32] = "-";
    if (o.baseline) {
      // Measured after the push_pull rounds of this size, so the other
      // workers wait in caravan's next push_pull rather than compete.
      auto measured = [&](const char* what, double gbps, const std::string& err) {
        if (gbps <= 0)
          fprintf(stderr, "caravan-bench: raw TCP %s on %s failed: %s\n", what, host.c_str(),
                  err.c_str());
        return gbps;
      };
      std::string err;
      r.tcp = measured("stream", caravan_bench::MeasureTcpStream(host, 1.0, &err), err);
      r.pingpong = measured(
          "ping-pong", caravan_bench::MeasureTcpPingPong(host, r.bytes, 0.5, &err, &r.pingpong_p50),
          err);
      r.echo = measured(
          "pipelined echo",
          caravan_bench::MeasureTcpPipelinedEcho(host, r.bytes, kEchoPiece, 0.5, &err), err);
      if (r.tcp > 0) snprintf(stream, sizeof stream, "%.2f", r.tcp);
      if (r.tcp > 0) snprintf(ratio, sizeof ratio, "%.2f", r.algbw / r.tcp);
      if (r.pingpong > 0) snprintf(pp_ratio, sizeof pp_ratio, "%.2f", r.algbw / r.pingpong);
      if (r.echo > 0 && r.tcp > 0) snprintf(echo_ratio, sizeof echo_ratio, "%.2f", r.echo / r.tcp);
      if (r.pingpong_p50 > 0) snprintf(rt_ratio, sizeof rt_ratio, "%.2f", r.p50 / r.pingpong_p50);
    }
    printf("%8s %7ld %11.3f %10.1f %10.1f %10.1f %9s %8s %9s %8s %7s %12s %9s %11s",
           SizeLabel(r.bytes).c_str(), r.rounds, r.algbw, r.p50, r.p90, r.p99, gloo_bw, gloo_ratio,
           gloo_p50, stream, ratio, pp_ratio, echo_ratio, rt_ratio);
    if (o.cuda)
      printf(" %9.3f %9.2f\n", r.cuda, r.cuda / r.algbw);
    else
      printf("\n");
    rows.push_back(r);
    fflush(stdout);
  }
  if (rank == 0 && o.csv) {
    printf(
        "csv:size_bytes,rounds,inflight,dtype,algbw_gbps,p50_us,p90_us,p99_us,tcp_gbps,ratio,"
        "pingpong_gbps,echo_gbps,gloo_gbps,gloo_p50_us\n");
    for (const Row& r : rows)
      printf("csv:%zu,%ld,%ld,%s,%.6f,%.1f,%.1f,%.1f,%.6f,%.6f,%.6f,%.6f,%.6f,%.1f\n", r.bytes,
             r.rounds, o.inflight, caravan_dtype_name(o.dtype), r.algbw, r.p50, r.p90, r.p99,
             r.tcp > 0 ? r.tcp : 0, r.tcp > 0 ? r.algbw / r.tcp : 0,
             r.pingpong > 0 ? r.pingpong : 0, r.echo > 0 ? r.echo : 0, r.gloo > 0 ? r.gloo : 0,
             r.gloo_p50 > 0 ? r.gloo_p50 : 0);
    fflush(stdout);
  }
  int status = 0;
  if (rank == 0 && !o.plot.empty()) {
    std::vector<caravan_bench::Series> series(1);
    series[0].title = "caravan push_pull (algbw)";
    caravan_bench::Series cuda{"caravan push_pull from CUDA memory", {}}, tcp{"raw TCP stream", {}},
        pingpong{"raw TCP ping-pong", {}}, echo{"raw TCP pipelined echo", {}},
        gloo_series{"Gloo ring allreduce (algbw)", {}};
    for (const Row& r : rows) {
      double x = static_cast<double>(r.bytes);
      series[0].points.emplace_back(x, r.algbw);
      if (r.cuda > 0) cuda.points.emplace_back(x, r.cuda);
      if (r.tcp > 0) tcp.points.emplace_back(x, r.tcp);
      if (r.pingpong > 0) pingpong.points.emplace_back(x, r.pingpong);
      if (r.echo > 0) echo.points.emplace_back(x, r.echo);
      if (r.gloo > 0) gloo_series.points.emplace_back(x, r.gloo);
    }
    for (auto* extra : {&gloo_series, &cuda, &tcp, &pingpong, &echo})
      if (!extra->points.empty()) series.push_back(*extra);
    std::string title = "caravan-bench: " + std::to_string(workers) + " workers, " +
                        EnvOr("DMLC_NUM_SERVER", "?") + " servers, " + VanName() + ", " +
                        caravan_dtype_name(o.dtype);
    std::string why = caravan_bench::plot_lines(o.plot, title, "GB/s", series);
    if (why.empty()) {
      printf("chart: %s\n", o.plot.c_str());
    } else {
      fprintf(stderr, "caravan-bench: --plot %s: %s\n", o.plot.c_str(), why.c_str());
      status = 1;
    }
  }
  if (!gloo_dir.empty()) {  // every worker is done with Gloo's files once this returns
    int32_t done = 1;
    Must(caravan_push_pull("bench/gloo/done", &done, 1, CARAVAN_INT32, 0), "caravan_push_pull",
         "bench/gloo/done");
    std::error_code ignored;
    if (rank == 0) std::filesystem::remove_all(gloo_dir, ignored);
  }
  Must(caravan_shutdown(), "caravan_shutdown", "");
  return status;
}
