// Drives libcaravan-reducer-gpu.so through its C table, as the engine would.
// Without a CUDA device it checks that init fails cleanly; with one, every op
// and dtype on device memory against the CPU reducer's arithmetic, and a
// one-rank NCCL local group.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/reducer_v1.h"
#include "conformance/reducer/reducer_plugin.h"
#include "scalar.h"  // the CPU reducer's arithmetic, as the reference
#include "test_data.h"

using namespace caravan::reducer_gpu::test;
namespace cpu = caravan::reducer_cpu::scalar;

namespace {

namespace conformance = caravan::conformance;
using conformance::Params;

constexpr char kPath[] = CARAVAN_REDUCER_GPU_PATH;
using ReducerGpu = conformance::ReducerPluginTest<kPath>;

// An instance of the GPU reducer; it sees only the environment `env`.
struct Instance : conformance::Instance {
  explicit Instance(Params params = {}, Params env = {})
      : conformance::Instance(ReducerGpu::ops(), std::move(params), std::move(env)) {}
};

std::string no_device_reason() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(err);
  return n == 0 ? "no CUDA device: 0 devices" : "";
}

#define SKIP_WITHOUT_DEVICE()                                           \
  do {                                                                  \
    std::string why = no_device_reason();                               \
    if (!why.empty()) GTEST_SKIP() << why << " (device tests skipped)"; \
  } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

TEST_F(ReducerGpu, Descriptor) {
  const caravan_plugin_descriptor* d = plugin().descriptor;
  ASSERT_NE(d, nullptr) << plugin().error;
  EXPECT_EQ(d->magic, CARAVAN_PLUGIN_MAGIC);
  EXPECT_EQ(d->abi_major, CARAVAN_REDUCER_ABI_MAJOR_V1);
  EXPECT_EQ(d->kind, static_cast<uint32_t>(CARAVAN_PLUGIN_KIND_REDUCER));
  EXPECT_EQ(d->struct_size, sizeof(caravan_plugin_descriptor));
  EXPECT_STREQ(d->name, "gpu");
  ASSERT_EQ(d->num_params, 3u);
  EXPECT_STREQ(d->params[0].name, "DEVICE");
  EXPECT_STREQ(d->params[1].name, "BLOCK_THREADS");
  const auto& o = ops();
  EXPECT_EQ(o.struct_size, sizeof(caravan_reducer_ops_v1));
  for (const void* f :
       {(const void*)o.init, (const void*)o.finalize, (const void*)o.properties, (const void*)o.sum,
        (const void*)o.sum2, (const void*)o.sum_many, (const void*)o.scale})
    EXPECT_NE(f, nullptr);
  // The device memory services (ABI 1.1), all of them.
  for (const void* f :
       {(const void*)o.memory_device, (const void*)o.host_alloc, (const void*)o.host_free,
        (const void*)o.stream_create, (const void*)o.stream_destroy, (const void*)o.copy,
        (const void*)o.event_create, (const void*)o.event_destroy, (const void*)o.event_record,
        (const void*)o.stream_wait, (const void*)o.event_done, (const void*)o.device_alloc,
        (const void*)o.device_free, (const void*)o.ipc_export, (const void*)o.ipc_open,
        (const void*)o.ipc_close, (const void*)o.ipc_event_create, (const void*)o.ipc_event_open})
    EXPECT_NE(f, nullptr);
  EXPECT_EQ(d->abi_minor, 1u);
  // The local group comes all together or not at all.
  bool any = o.local_id || o.local_join || o.local_leave || o.local_reduce || o.local_broadcast;
  bool all = o.local_id && o.local_join && o.local_leave && o.local_reduce && o.local_broadcast;
  EXPECT_EQ(any, all);
  EXPECT_EQ(plugin().descriptor, reinterpret_cast<caravan_plugin_entry_fn>(
                                     dlsym(dlopen(CARAVAN_REDUCER_GPU_PATH, RTLD_NOW | RTLD_NOLOAD),
                                           "caravan_plugin_entry"))());
}

TEST_F(ReducerGpu, NullInstanceIsAnError) {
  EXPECT_EQ(ops().sum(nullptr, nullptr, nullptr, 0, CARAVAN_FLOAT32, nullptr),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().finalize(nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
}

TEST_F(ReducerGpu, InitWithoutDeviceIsUnavailable) {
  if (no_device_reason().empty()) GTEST_SKIP() << "a CUDA device is present";
  Instance r;
  EXPECT_EQ(r.status, CARAVAN_STATUS_UNAVAILABLE);
  EXPECT_EQ(r.ctx, nullptr);
  EXPECT_NE(r.host.error().find("no CUDA device"), std::string::npos) << r.host.error();
  // A second try answers the same, rather than finding a broken runtime.
  Instance again;
  EXPECT_EQ(again.status, CARAVAN_STATUS_UNAVAILABLE);
}

// ---- With a device ----------------------------------------------------------

TEST_F(ReducerGpu, PropertiesAndParams) {
  SKIP_WITHOUT_DEVICE();
  Instance r;
  ASSERT_EQ(r.status, CARAVAN_STATUS_OK) << r.host.error();
  caravan_reducer_properties_v1 p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(ops().properties(r.ctx, &p), CARAVAN_STATUS_OK);
  EXPECT_TRUE(p.caps & CARAVAN_REDUCER_CAP_DEVICE_MEMORY);
  EXPECT_TRUE(p.caps & CARAVAN_REDUCER_CAP_ASYNC_STREAM);
  EXPECT_TRUE(p.caps & CARAVAN_REDUCER_CAP_DEVICE_SERVICES);
  EXPECT_TRUE(p.caps & CARAVAN_REDUCER_CAP_DEVICE_IPC);
  EXPECT_FALSE(p.caps & CARAVAN_REDUCER_CAP_HOST_MEMORY);
  EXPECT_EQ(static_cast<bool>(p.caps & CARAVAN_REDUCER_CAP_LOCAL_GROUP),
            ops().local_join != nullptr);
  EXPECT_EQ(p.dtypes, 0xffu);
  EXPECT_EQ(std::string(p.kernel).rfind("cuda-sm90", 0), 0u) << p.kernel;

  EXPECT_EQ(Instance(Params{{"BLOCK_THREADS", "100"}}).status, CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Instance(Params{{"DEVICE", "9999"}}).status, CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Instance(Params{{"LOCAL_TIMEOUT_S", "0"}}).status, CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Instance(Params{{"BLOCK_THREADS", "1024"}}).status, CARAVAN_STATUS_OK);
  // Finalized, and checked, when it goes.
  Instance by_rank({}, Params{{"BYTEPS_LOCAL_RANK", "5"}});
  ASSERT_EQ(by_rank.status, CARAVAN_STATUS_OK) << by_rank.host.error();
}

TEST_F(ReducerGpu, ArgumentErrors) {
  SKIP_WITHOUT_DEVICE();
  Instance r;
  ASSERT_EQ(r.status, CARAVAN_STATUS_OK) << r.host.error();
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 64));
  const void* srcs[] = {d, nullptr};
  EXPECT_EQ(ops().sum(r.ctx, d, nullptr, 4, CARAVAN_FLOAT32, nullptr),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum2(r.ctx, nullptr, d, d, 4, CARAVAN_FLOAT32, nullptr),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum_many(r.ctx, d, srcs, 2, 4, CARAVAN_FLOAT32, nullptr),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum_many(r.ctx, d, srcs, 0, 4, CARAVAN_FLOAT32, nullptr),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum(r.ctx, nullptr, nullptr, 0, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_OK);
  EXPECT_EQ(ops().sum_many(r.ctx, nullptr, srcs + 1, 1, 0, CARAVAN_INT8, nullptr),
            CARAVAN_STATUS_OK);
  for (int32_t bad : {8, -1, 0x7fffffff}) {
    caravan_dtype dt;
    std::memcpy(&dt, &bad, sizeof dt);
    EXPECT_EQ(ops().sum(r.ctx, d, d, 4, dt, nullptr), CARAVAN_STATUS_UNSUPPORTED) << bad;
  }
  EXPECT_EQ(ops().scale(r.ctx, d, 4, CARAVAN_INT32, 2.0, nullptr), CARAVAN_STATUS_UNSUPPORTED);
  CUDA_OK(cudaFree(d));
}

// One device array at `offset` bytes from a 256-byte boundary, and its host copy.
struct DevBuf {
  std::vector<unsigned char> host;
  unsigned char* base = nullptr;
  size_t offset;
  DevBuf(size_t count, unsigned dt, size_t off, Rng& rng)
      : host(count * info(dt).size), offset(off) {
    fill(host.data(), count, dt, rng);
    EXPECT_EQ(cudaMalloc(&base, host.size() + 64), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr(), host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DevBuf() { cudaFree(base); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  unsigned char* ptr() { return base + offset; }
  std::vector<unsigned char> read() {
    std::vector<unsigned char> out(host.size());
    EXPECT_EQ(cudaMemcpy(out.data(), ptr(), out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

using Add2 = void (*)(void*, const void*, const void*, size_t);
using Scale = void (*)(void*, size_t, double);
using Acc = void (*)(float*, const void*, size_t);
struct Ref {
  Add2 add2;
  Scale scale;
};
const Ref kRef[8] = {{cpu::add2<cpu::F32>, cpu::scale<cpu::F32>},
                     {cpu::add2<cpu::F64>, cpu::scale<cpu::F64>},
                     {cpu::add2<cpu::F16>, cpu::scale<cpu::F16>},
                     {cpu::add2<cpu::U8>, nullptr},
                     {cpu::add2<cpu::U32>, nullptr},
                     {cpu::add2<cpu::U8>, nullptr},
                     {cpu::add2<cpu::U64>, nullptr},
                     {cpu::add2<cpu::BF16>, cpu::scale<cpu::BF16>}};

std::vector<unsigned char> ref_sum_many(unsigned dt,
                                        const std::vector<std::vector<unsigned char>>& in,
                                        size_t count) {
  std::vector<unsigned char> out = in[0];
  if (in.size() == 1) return out;
  if (dt == 2 || dt == 7) {  // one rounding at the end
    std::vector<float> acc(count);
    auto init = dt == 2 ? cpu::acc_init<cpu::F16> : cpu::acc_init<cpu::BF16>;
    Acc add = dt == 2 ? cpu::acc_add<cpu::F16> : cpu::acc_add<cpu::BF16>;
    init(acc.data(), in[0].data(), in[1].data(), count);
    for (size_t s = 2; s < in.size(); ++s) add(acc.data(), in[s].data(), count);
    (dt == 2 ? cpu::acc_store<cpu::F16> : cpu::acc_store<cpu::BF16>)(out.data(), acc.data(), count);
    return out;
  }
  for (size_t s = 1; s < in.size(); ++s) kRef[dt].add2(out.data(), out.data(), in[s].data(), count);
  return out;
}

void expect_same(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want,
                 unsigned dt, const std::string& what) {
  size_t z = info(dt).size;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() / z; ++i)
    ASSERT_TRUE(same(&got[i * z], &want[i * z], dt)) << what << " at element " << i;
}

TEST_F(ReducerGpu, EveryOpAndDtypeOnDevice) {
  SKIP_WITHOUT_DEVICE();
  Instance r;
  ASSERT_EQ(r.status, CARAVAN_STATUS_OK) << r.host.error();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  Rng rng;
  for (unsigned dt = 0; dt < 8; ++dt) {
    caravan_dtype type = static_cast<caravan_dtype>(dt);
    size_t z = info(dt).size;
    for (size_t count : {size_t{1}, size_t{37}, size_t{4099}, (size_t{1} << 20) + 5}) {
      for (size_t off : {size_t{0}, z, size_t{1}}) {
        for (void* s : {static_cast<void*>(nullptr), static_cast<void*>(stream)}) {
          std::string where = std::string(info(dt).name) + " count " + std::to_string(count) +
                              " offset " + std::to_string(off) +
                              (s ? " own stream" : " default stream");
          DevBuf a(count, dt, off, rng), b(count, dt, (off * 3) % 16, rng),
              dst(count, dt, off, rng);
          std::vector<unsigned char> want(a.host.size());

          kRef[dt].add2(want.data(), a.host.data(), b.host.data(), count);
          ASSERT_EQ(ops().sum2(r.ctx, dst.ptr(), a.ptr(), b.ptr(), count, type, s),
                    CARAVAN_STATUS_OK)
              << r.host.error();
          CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
          expect_same(dst.read(), want, dt, "sum2 " + where);

          kRef[dt].add2(want.data(), a.host.data(), b.host.data(), count);
          ASSERT_EQ(ops().sum(r.ctx, a.ptr(), b.ptr(), count, type, s), CARAVAN_STATUS_OK)
              << r.host.error();
          CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
          expect_same(a.read(), want, dt, "sum " + where);
          a.host = want;

          // 20 sources take the launch that carries up to 1024.
          for (size_t num : {1, 2, 3, 20}) {
            if (num == 20 && count > 4099) continue;  // keeps the host reference quick
            std::vector<std::unique_ptr<DevBuf>> extra;
            std::vector<std::vector<unsigned char>> in = {a.host};
            std::vector<const void*> srcs = {a.ptr()};
            for (size_t k = 1; k < num; ++k) {
              extra.push_back(
                  std::make_unique<DevBuf>(count, dt, k % 2 ? off : (off + z) % 16, rng));
              in.push_back(extra.back()->host);
              srcs.push_back(extra.back()->ptr());
            }
            want = ref_sum_many(dt, in, count);
            ASSERT_EQ(ops().sum_many(r.ctx, dst.ptr(), srcs.data(), num, count, type, s),
                      CARAVAN_STATUS_OK);
            CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
            expect_same(dst.read(), want, dt, "sum_many of " + std::to_string(num) + " " + where);
            // in place: dst is srcs[0]
            srcs[0] = dst.ptr();
            in[0] = dst.read();
            want = ref_sum_many(dt, in, count);
            ASSERT_EQ(ops().sum_many(r.ctx, dst.ptr(), srcs.data(), num, count, type, s),
                      CARAVAN_STATUS_OK);
            CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
            expect_same(dst.read(), want, dt,
                        "in-place sum_many of " + std::to_string(num) + " " + where);
          }

          if (!kRef[dt].scale) continue;
          for (double factor : {0.5, 1.0 / 3.0, -1e-3}) {
            want = b.host;
            kRef[dt].scale(want.data(), count, factor);
            ASSERT_EQ(ops().scale(r.ctx, b.ptr(), count, type, factor, s), CARAVAN_STATUS_OK)
                << r.host.error();
            CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
            expect_same(b.read(), want, dt, "scale " + where);
            b.host = b.read();
          }
        }
      }
    }
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

// More sources than one launch carries: the accumulator path.
TEST_F(ReducerGpu, SumManyOfManySources) {
  SKIP_WITHOUT_DEVICE();
  Instance r;
  ASSERT_EQ(r.status, CARAVAN_STATUS_OK) << r.host.error();
  Rng rng;
  for (unsigned dt : {0u, 2u, 4u, 7u}) {
    const size_t count = 301, num = 2100;
    DevBuf all(count * num, dt, 0, rng), dst(count, dt, 0, rng);
    size_t z = info(dt).size;
    std::vector<std::vector<unsigned char>> in;
    std::vector<const void*> srcs;
    for (size_t s = 0; s < num; ++s) {
      in.emplace_back(all.host.begin() + s * count * z, all.host.begin() + (s + 1) * count * z);
      srcs.push_back(all.ptr() + s * count * z);
    }
    ASSERT_EQ(ops().sum_many(r.ctx, dst.ptr(), srcs.data(), num, count,
                             static_cast<caravan_dtype>(dt), nullptr),
              CARAVAN_STATUS_OK)
        << r.host.error();
    CUDA_OK(cudaDeviceSynchronize());
    expect_same(dst.read(), ref_sum_many(dt, in, count), dt,
                std::string("sum_many of 2100 ") + info(dt).name);
  }
}

TEST_F(ReducerGpu, OneRankLocalGroup) {
  SKIP_WITHOUT_DEVICE();
  if (!ops().local_join) GTEST_SKIP() << "built without NCCL";
  Instance r;
  ASSERT_EQ(r.status, CARAVAN_STATUS_OK) << r.host.error();
  unsigned char id[CARAVAN_REDUCER_MAX_LOCAL_ID_V1];
  size_t len = sizeof id;
  ASSERT_EQ(ops().local_id(r.ctx, id, &len), CARAVAN_STATUS_OK) << r.host.error();
  EXPECT_GT(len, 0u);
  void* group = nullptr;
  ASSERT_EQ(ops().local_join(r.ctx, id, len, 0, 1, &group), CARAVAN_STATUS_OK) << r.host.error();
  Rng rng;
  for (unsigned dt = 0; dt < 8; ++dt) {
    const size_t count = 1000;
    DevBuf src(count, dt, 0, rng), dst(count, dt, 0, rng);
    auto type = static_cast<caravan_dtype>(dt);
    ASSERT_EQ(ops().local_reduce(r.ctx, group, dst.ptr(), src.ptr(), count, type, 0, nullptr),
              CARAVAN_STATUS_OK)
        << r.host.error();
    ASSERT_EQ(ops().local_broadcast(r.ctx, group, src.ptr(), count, type, 0, nullptr),
              CARAVAN_STATUS_OK)
        << r.host.error();
    CUDA_OK(cudaDeviceSynchronize());
    expect_same(dst.read(), src.host, dt, std::string("local_reduce ") + info(dt).name);
    expect_same(src.read(), src.host, dt, std::string("local_broadcast ") + info(dt).name);
  }
  EXPECT_EQ(ops().local_reduce(r.ctx, group, nullptr, nullptr, 4, CARAVAN_FLOAT32, 1, nullptr),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().local_leave(r.ctx, group), CARAVAN_STATUS_OK) << r.host.error();
}

}  // namespace

// The device memory services, as the engine's stager uses them: device
// pointers told from host ones, page-locked memory, copies in both
// directions ordered by events across two streams, and event_done that
// never blocks.
TEST_F(ReducerGpu, DeviceServicesStageATensor) {
  SKIP_WITHOUT_DEVICE();
  Instance r;
  ASSERT_EQ(r.status, CARAVAN_STATUS_OK) << r.host.error();
  const auto& o = ops();
  const size_t n = (size_t{9} << 20) + 7, bytes = n * sizeof(float);
  float* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, bytes));
  std::vector<float> pageable(16);
  int device = -2;
  ASSERT_EQ(o.memory_device(r.ctx, dev, &device), CARAVAN_STATUS_OK);
  int current = -1;
  CUDA_OK(cudaGetDevice(&current));
  EXPECT_EQ(device, current);
  ASSERT_EQ(o.memory_device(r.ctx, dev + 100, &device), CARAVAN_STATUS_OK);
  EXPECT_EQ(device, current) << "an interior pointer is device memory too";
  ASSERT_EQ(o.memory_device(r.ctx, pageable.data(), &device), CARAVAN_STATUS_OK);
  EXPECT_EQ(device, -1);
  void* pinned = nullptr;
  ASSERT_EQ(o.host_alloc(r.ctx, bytes, &pinned), CARAVAN_STATUS_OK) << r.host.error();
  ASSERT_EQ(o.memory_device(r.ctx, pinned, &device), CARAVAN_STATUS_OK);
  EXPECT_EQ(device, -1) << "page-locked host memory is host memory";
  EXPECT_EQ(o.host_alloc(r.ctx, 0, &pinned), CARAVAN_STATUS_INVALID_ARGUMENT);

  void *caller = nullptr, *d2h = nullptr, *h2d = nullptr, *ready = nullptr, *out = nullptr,
       *back = nullptr;
  ASSERT_EQ(o.stream_create(r.ctx, &caller), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.stream_create(r.ctx, &d2h), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.stream_create(r.ctx, &h2d), CARAVAN_STATUS_OK);
  for (void** e : {&ready, &out, &back}) ASSERT_EQ(o.event_create(r.ctx, e), CARAVAN_STATUS_OK);
  int done = -1;
  ASSERT_EQ(o.event_done(r.ctx, ready, &done), CARAVAN_STATUS_OK);
  EXPECT_EQ(done, 1) << "an event never recorded counts as passed";

  // The caller fills the tensor on its stream; the copy out must wait for it.
  std::vector<float> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = static_cast<float>(i % 1000) - 500.0f;
  std::vector<float> src = want;
  CUDA_OK(cudaMemsetAsync(dev, 0, bytes, static_cast<cudaStream_t>(caller)));
  ASSERT_EQ(o.copy(r.ctx, dev, src.data(), bytes, caller), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.event_record(r.ctx, ready, caller), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.stream_wait(r.ctx, d2h, ready), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.copy(r.ctx, pinned, dev, bytes, d2h), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.event_record(r.ctx, out, d2h), CARAVAN_STATUS_OK);
  while (done = -1, o.event_done(r.ctx, out, &done) == CARAVAN_STATUS_OK && done == 0) {
  }
  ASSERT_EQ(done, 1);
  EXPECT_EQ(std::memcmp(pinned, want.data(), bytes), 0) << "the copy out ran before the fill";

  // Back: double on the host, copy in, read.
  for (size_t i = 0; i < n; ++i) static_cast<float*>(pinned)[i] *= 2;
  ASSERT_EQ(o.copy(r.ctx, dev, pinned, bytes, h2d), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.event_record(r.ctx, back, h2d), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.stream_wait(r.ctx, caller, back), CARAVAN_STATUS_OK);
  std::vector<float> got(n);
  CUDA_OK(cudaMemcpyAsync(got.data(), dev, bytes, cudaMemcpyDeviceToHost,
                          static_cast<cudaStream_t>(caller)));
  CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(caller)));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2 * want[i]) << "element " << i;

  EXPECT_EQ(o.copy(r.ctx, nullptr, pinned, 4, h2d), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(o.event_done(r.ctx, nullptr, &done), CARAVAN_STATUS_INVALID_ARGUMENT);
  for (void* e : {ready, out, back}) EXPECT_EQ(o.event_destroy(r.ctx, e), CARAVAN_STATUS_OK);
  for (void* st : {caller, d2h, h2d}) EXPECT_EQ(o.stream_destroy(r.ctx, st), CARAVAN_STATUS_OK);
  EXPECT_EQ(o.host_free(r.ctx, pinned), CARAVAN_STATUS_OK);
  CUDA_OK(cudaFree(dev));
}

// The IPC entries in one process: handles of the CUDA sizes, an
// interprocess event that records and passes like any other, and memory
// that is freed. Opening them takes another process: DeviceTensors.*Local*
// and Python.*TwoLocalWorkers sum through them.
TEST_F(ReducerGpu, IpcHandlesInOneProcess) {
  SKIP_WITHOUT_DEVICE();
  Instance r;
  ASSERT_EQ(r.status, CARAVAN_STATUS_OK) << r.host.error();
  const auto& o = ops();
  void* mem = nullptr;
  ASSERT_EQ(o.device_alloc(r.ctx, 1 << 20, &mem), CARAVAN_STATUS_OK) << r.host.error();
  unsigned char handle[CARAVAN_REDUCER_MAX_IPC_HANDLE_V1];
  size_t len = sizeof handle;
  ASSERT_EQ(o.ipc_export(r.ctx, mem, handle, &len), CARAVAN_STATUS_OK) << r.host.error();
  EXPECT_EQ(len, sizeof(cudaIpcMemHandle_t));
  size_t small = 8;
  EXPECT_EQ(o.ipc_export(r.ctx, mem, handle, &small), CARAVAN_STATUS_INVALID_ARGUMENT);
  void* event = nullptr;
  len = sizeof handle;
  ASSERT_EQ(o.ipc_event_create(r.ctx, &event, handle, &len), CARAVAN_STATUS_OK) << r.host.error();
  EXPECT_EQ(len, sizeof(cudaIpcEventHandle_t));
  void* stream = nullptr;
  ASSERT_EQ(o.stream_create(r.ctx, &stream), CARAVAN_STATUS_OK);
  ASSERT_EQ(o.event_record(r.ctx, event, stream), CARAVAN_STATUS_OK);
  int done = 0;
  while (o.event_done(r.ctx, event, &done) == CARAVAN_STATUS_OK && !done) {
  }
  EXPECT_EQ(done, 1);
  EXPECT_EQ(o.ipc_open(r.ctx, handle, 3, &mem), CARAVAN_STATUS_INVALID_ARGUMENT)
      << "a handle of the wrong length is refused";
  EXPECT_EQ(o.event_destroy(r.ctx, event), CARAVAN_STATUS_OK);
  EXPECT_EQ(o.stream_destroy(r.ctx, stream), CARAVAN_STATUS_OK);
  EXPECT_EQ(o.device_free(r.ctx, mem), CARAVAN_STATUS_OK);
}
