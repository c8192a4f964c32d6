// The reducer conformance suite: every reducer plugin the build made, driven
// through its C table as the engine drives it, against the numerics of
// reducer_v1.h. One test per (plugin variant, dtype, operation); each covers
// every length, misalignment and aliasing of dst with an input.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memory.h"
#include "numerics.h"
#include "reducer_plugin.h"
#include "variants.h"

namespace caravan::conformance {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr size_t kLengths[] = {0, 1, 7, 4095, (size_t{1} << 20) + 3};
constexpr double kFactor = 0.7;  // exact in no type, so the factor's own rounding shows

// Offsets differ per array (k is the array's index) so that the arrays'
// misalignments differ from each other too.
enum class Layout { kAligned, kElementOffset, kByteOffset };
size_t offset_of(Layout l, const DType& t, size_t k) {
  switch (l) {
    case Layout::kAligned:
      return 0;
    case Layout::kElementOffset:
      return t.size * (k + 1);
    case Layout::kByteOffset:
      return 2 * k + 1;
  }
  return 0;
}
const char* layout_name(Layout l) {
  return l == Layout::kAligned         ? "aligned"
         : l == Layout::kElementOffset ? "element-offset"
                                       : "byte-offset";
}
std::vector<Layout> layouts_for(const DType& t) {
  if (t.size == 1) return {Layout::kAligned, Layout::kElementOffset};  // every offset is whole
  return {Layout::kAligned, Layout::kElementOffset, Layout::kByteOffset};
}

// Fixed-size copies, so that the compiler inlines them: the checks load
// millions of elements.
template <class U>
uint64_t load_as(const uint8_t* p) {
  U v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint64_t load(const uint8_t* p, size_t i, size_t size) {
  switch (size) {
    case 1:
      return p[i];
    case 2:
      return load_as<uint16_t>(p + 2 * i);
    case 4:
      return load_as<uint32_t>(p + 4 * i);
    default:
      return load_as<uint64_t>(p + 8 * i);
  }
}
void store(uint8_t* p, size_t i, size_t size, uint64_t v) { std::memcpy(p + i * size, &v, size); }

Bytes random_array(const DType& t, size_t n, uint64_t seed) {
  Rng rng{(seed * 0x9E3779B97F4A7C15ull) | 1};
  Bytes out(n * t.size);
  for (size_t i = 0; i < n; ++i) store(out.data(), i, t.size, random_element(t, rng));
  return out;
}

// Column-wise reference sum of `inputs`.
std::vector<uint64_t> reference_sum(const DType& t, const std::vector<Bytes>& inputs, size_t n) {
  std::vector<uint64_t> want(n), column(inputs.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < inputs.size(); ++k) column[k] = load(inputs[k].data(), i, t.size);
    want[i] = ref_sum(t, column.data(), column.size());
  }
  return want;
}

struct Param {
  Variant variant;
  caravan_dtype dtype;
};

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const Variant& v : all_variants())
    for (const DType& t : kDTypes) out.push_back({v, t.id});
  return out;
}

std::string param_name(const testing::TestParamInfo<Param>& i) {
  return i.param.variant.label + "_" + kDTypes[i.param.dtype].name;
}
std::string variant_name(const testing::TestParamInfo<Variant>& i) { return i.param.label; }

// gtest would otherwise print every parameter byte by byte.
void PrintTo(const Param& p, std::ostream* os) {
  *os << p.variant.label << "/" << kDTypes[p.dtype].name;
}

// ---- An instance and the memory its arrays live in -------------------------------

class ReducerFixture {
 protected:
  enum class Ready { kYes, kSkip, kFail };

  // Creates the instance and picks its memory; *why says why not.
  Ready start(const Variant& v, std::string* why) {
    const LoadedPlugin& plugin = load_plugin(v.path);
    if (!plugin.error.empty()) {
      *why = v.path + ": " + plugin.error;
      return Ready::kFail;
    }
    inst_ = std::make_unique<Instance>(*plugin.ops, v.params);
    if (inst_->status == CARAVAN_STATUS_UNAVAILABLE) {
      *why = v.label + " is unavailable on this machine: " + inst_->host.error();
      return Ready::kSkip;
    }
    if (inst_->status != CARAVAN_STATUS_OK) {
      *why =
          v.label + ": init returned " + std::to_string(inst_->status) + ": " + inst_->host.error();
      return Ready::kFail;
    }
    props_.struct_size = sizeof props_;
    if (ops().properties(ctx(), &props_) != CARAVAN_STATUS_OK) {
      *why = v.label + ": properties failed: " + inst_->host.error();
      return Ready::kFail;
    }
    if (props_.caps & CARAVAN_REDUCER_CAP_DEVICE_MEMORY) {
      memory_ = device_memory(why);
      if (!memory_) {
        *why = v.label + " works on GPU memory, but " + *why;
        return Ready::kSkip;
      }
    } else if (props_.caps & CARAVAN_REDUCER_CAP_HOST_MEMORY) {
      memory_ = host_memory();
    } else {
      *why = v.label + ": properties report neither host nor device memory";
      return Ready::kFail;
    }
    return Ready::kYes;
  }

  const caravan_reducer_ops_v1& ops() const { return inst_->ops; }
  void* ctx() const { return inst_->ctx; }
  std::string error() const { return inst_->host.error(); }

  // Returns the reducer's status; OK only when its work also finished.
  caravan_status finish(caravan_status s) {
    if (s == CARAVAN_STATUS_OK) {
      std::string sync = memory_->synchronize();
      EXPECT_EQ(sync, "");
    }
    return s;
  }

  // Declared first so that it outlives the instance whose stream it holds.
  std::unique_ptr<Memory> memory_;
  std::unique_ptr<Instance> inst_;
  caravan_reducer_properties_v1 props_{};
};

// ---- Operations on every length, layout and aliasing -------------------------------

// Which array receives the result: a separate one, or input k.
constexpr int kSeparate = -1;

// The call under test, given the arrays' addresses (the inputs, then the
// separate destination if there is one) and the destination's.
using Call = std::function<caravan_status(const std::vector<void*>& arrays, void* dst, size_t n)>;

class Conformance : public testing::TestWithParam<Param>, protected ReducerFixture {
 protected:
  void SetUp() override {
    t_ = &kDTypes[GetParam().dtype];
    std::string why;
    Ready ready = start(GetParam().variant, &why);
    if (ready == Ready::kFail) FAIL() << why;
    if (ready == Ready::kSkip) GTEST_SKIP() << why;
    if (!(props_.dtypes & (1u << t_->id))) {
      Buffer one(*memory_, 8, 0);
      EXPECT_EQ(ops().sum(ctx(), one.ptr(), one.ptr(), 1, t_->id, memory_->stream()),
                CARAVAN_STATUS_UNSUPPORTED)
          << "properties leave " << t_->name << " out, but sum accepts it";
      GTEST_SKIP() << GetParam().variant.label << " does not offer " << t_->name
                   << " (properties().dtypes), and says UNSUPPORTED";
    }
  }
  void TearDown() override {
    if (!IsSkipped() && !HasFailure()) {
      EXPECT_GT(calls_checked_, 0u) << "the test checked nothing";
    }
  }

  // Runs `call` once per layout over fresh copies of `inputs`, then checks
  // the destination against `want` and every other input for changes.
  // A NaN expectation accepts any quiet NaN (any NaN at all when
  // `quiet_nan` is false: a plain copy keeps signalling NaNs).
  void check(const std::string& what, const std::vector<Bytes>& inputs, size_t n, int dst_is,
             const std::vector<uint64_t>& want, const Call& call, bool quiet_nan = true) {
    const DType& t = *t_;
    const size_t bytes = n * t.size;
    for (Layout layout : layouts_for(t)) {
      std::string where =
          what + ", " + std::to_string(n) + " elements, " + layout_name(layout) +
          (dst_is == kSeparate ? ", separate dst" : ", dst is input " + std::to_string(dst_is));
      std::vector<std::unique_ptr<Buffer>> arrays;
      for (size_t k = 0; k < inputs.size(); ++k) {
        arrays.push_back(std::make_unique<Buffer>(*memory_, bytes, offset_of(layout, t, k)));
        arrays[k]->upload(inputs[k].data());
      }
      if (dst_is == kSeparate) {
        arrays.push_back(
            std::make_unique<Buffer>(*memory_, bytes, offset_of(layout, t, inputs.size())));
        arrays.back()->upload(Bytes(bytes, 0xEE).data());  // the old contents must not matter
      }

      std::vector<void*> ptrs;
      for (auto& a : arrays) ptrs.push_back(a->ptr());
      Buffer& dst = dst_is == kSeparate ? *arrays.back() : *arrays[dst_is];
      inst_->host.clear_error();
      ASSERT_EQ(finish(call(ptrs, dst.ptr(), n)), CARAVAN_STATUS_OK) << where << ": " << error();
      for (auto& a : arrays) a->download();

      size_t bad = 0;
      for (size_t i = 0; i < n && bad < 5; ++i) {
        uint64_t got = load(dst.data(), i, t.size);
        if (got == want[i]) continue;
        bool nan_wanted = t.is_float && want[i] == kAnyNaN;
        if (nan_wanted && (quiet_nan ? is_quiet_nan(t, got) : is_nan(t, got))) continue;
        ++bad;
        ADD_FAILURE() << where << ": element " << i << " is " << hex(got) << ", want "
                      << (nan_wanted && quiet_nan ? "a quiet NaN" : hex(want[i]));
      }
      if (bad) return;
      for (size_t k = 0; k < inputs.size(); ++k)
        if (arrays[k].get() != &dst && bytes &&
            std::memcmp(arrays[k]->data(), inputs[k].data(), bytes))
          ADD_FAILURE() << where << ": input " << k << " changed";
      for (size_t k = 0; k < arrays.size(); ++k) {
        EXPECT_TRUE(arrays[k]->guards_intact()) << where << ": wrote outside array " << k;
      }
      ++calls_checked_;
    }
  }

  // Every bit pattern plus -0 (which must give the pattern back, NaNs
  // quietened), then against random partners: the whole widening and
  // rounding logic of a 16-bit type, subnormals and NaN payloads included.
  void check_every_half_pattern() {
    const DType& t = *t_;
    const size_t n = 65536 * 6;
    Rng rng{t.id + 99u};
    std::vector<Bytes> in(2, Bytes(n * 2));
    for (size_t i = 0; i < n; ++i) {
      store(in[0].data(), i, 2, i & 0xffff);
      store(in[1].data(), i, 2, i < 65536 ? sign_bit(t) : random_element(t, rng));
    }
    check("sum of every pattern", in, n, 0, reference_sum(t, in, n),
          [&](const std::vector<void*>& a, void* dst, size_t len) {
            return ops().sum(ctx(), dst, a[1], len, t.id, memory_->stream());
          });
  }

  const DType* t_ = nullptr;
  size_t calls_checked_ = 0;
};

TEST_P(Conformance, Sum) {
  for (size_t n : kLengths) {
    std::vector<Bytes> in = {random_array(*t_, n, n + 1), random_array(*t_, n, n + 2)};
    check("sum", in, n, 0, reference_sum(*t_, in, n),
          [&](const std::vector<void*>& a, void* dst, size_t len) {
            return ops().sum(ctx(), dst, a[1], len, t_->id, memory_->stream());
          });
  }
}

TEST_P(Conformance, Sum2) {
  for (size_t n : kLengths) {
    std::vector<Bytes> in = {random_array(*t_, n, n + 3), random_array(*t_, n, n + 4)};
    std::vector<uint64_t> want = reference_sum(*t_, in, n);
    for (int dst_is : {kSeparate, 0, 1})
      check("sum2", in, n, dst_is, want, [&](const std::vector<void*>& a, void* dst, size_t len) {
        return ops().sum2(ctx(), dst, a[0], a[1], len, t_->id, memory_->stream());
      });
  }
}

TEST_P(Conformance, SumMany) {
  for (size_t n : kLengths) {
    std::vector<Bytes> all;
    for (size_t k = 0; k < 5; ++k) all.push_back(random_array(*t_, n, 10 * n + k + 5));
    for (size_t num : {1, 2, 3, 5}) {
      std::vector<Bytes> in(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(num));
      std::vector<uint64_t> want = reference_sum(*t_, in, n);
      if (num == 1)  // a copy, NaN payloads included
        for (size_t i = 0; i < n; ++i)
          want[i] = is_nan(*t_, load(in[0].data(), i, t_->size)) ? kAnyNaN
                                                                 : load(in[0].data(), i, t_->size);
      for (int dst_is : {kSeparate, 0})
        check(
            "sum_many of " + std::to_string(num), in, n, dst_is, want,
            [&](const std::vector<void*>& a, void* dst, size_t len) {
              std::vector<const void*> srcs(a.begin(),
                                            a.begin() + static_cast<std::ptrdiff_t>(num));
              return ops().sum_many(ctx(), dst, srcs.data(), num, len, t_->id, memory_->stream());
            },
            num > 1);
    }
  }
}

TEST_P(Conformance, Scale) {
  if (!t_->is_float) {
    Bytes before = random_array(*t_, 7, 9);
    Buffer data(*memory_, before.size(), 0);
    data.upload(before.data());
    inst_->host.clear_error();
    EXPECT_EQ(ops().scale(ctx(), data.ptr(), 7, t_->id, 2.0, memory_->stream()),
              CARAVAN_STATUS_UNSUPPORTED);
    EXPECT_NE(error(), "") << "UNSUPPORTED without a reason";
    EXPECT_EQ(memory_->synchronize(), "");
    data.download();
    EXPECT_EQ(std::memcmp(data.data(), before.data(), before.size()), 0)
        << "a refused scale wrote its data";
    ++calls_checked_;
    return;
  }
  for (size_t n : kLengths) {
    std::vector<Bytes> in = {random_array(*t_, n, n + 6)};
    std::vector<uint64_t> want(n);
    for (size_t i = 0; i < n; ++i)
      want[i] = ref_scale(*t_, load(in[0].data(), i, t_->size), kFactor);
    check("scale", in, n, 0, want, [&](const std::vector<void*>&, void* dst, size_t len) {
      return ops().scale(ctx(), dst, len, t_->id, kFactor, memory_->stream());
    });
  }
}

// Every pair (and for sum_many every triple) of notable values, spread so
// that each lands in vector bodies and scalar tails alike, checked against
// the reference and, for floats, against IEEE 754 stated directly; for the
// 16-bit float types also every bit pattern.
TEST_P(Conformance, SpecialValues) {
  const DType& t = *t_;
  const std::vector<uint64_t> sv = special_values(t);
  const size_t s = sv.size(), pairs = s * s, n = pairs * 4 + 3;
  std::vector<Bytes> in(3, Bytes(n * t.size));
  for (size_t i = 0; i < n; ++i) {
    size_t j = (i + i / pairs) % pairs;
    store(in[0].data(), i, t.size, sv[j / s]);
    store(in[1].data(), i, t.size, sv[j % s]);
    store(in[2].data(), i, t.size, sv[(i * 7) % s]);
  }
  std::vector<Bytes> two(in.begin(), in.begin() + 2);
  std::vector<uint64_t> want = reference_sum(t, two, n);
  // The rules the reducer is then held to through the reference.
  for (size_t i = 0; i < n && t.is_float; ++i) {
    uint64_t a = load(in[0].data(), i, t.size), b = load(in[1].data(), i, t.size);
    bool opposite_infs = is_inf(t, a) && is_inf(t, b) && a != b;
    uint64_t ieee = is_nan(t, a) || is_nan(t, b) || opposite_infs ? kAnyNaN
                    : is_inf(t, a)                                ? a
                    : is_inf(t, b)                                ? b
                                                                  : want[i];
    ASSERT_EQ(want[i], ieee) << "the reference breaks IEEE 754 for " << hex(a) << " + " << hex(b);
  }
  check("sum2 of special values", two, n, kSeparate, want,
        [&](const std::vector<void*>& a, void* dst, size_t len) {
          return ops().sum2(ctx(), dst, a[0], a[1], len, t.id, memory_->stream());
        });
  check("sum_many of special values", in, n, kSeparate, reference_sum(t, in, n),
        [&](const std::vector<void*>& a, void* dst, size_t len) {
          const void* srcs[] = {a[0], a[1], a[2]};
          return ops().sum_many(ctx(), dst, srcs, 3, len, t.id, memory_->stream());
        });
  if (!t.is_float) return;
  if (t.size == 2) check_every_half_pattern();
  for (double factor : {-2.5, 0.0, double(INFINITY), double(NAN), 1e-30}) {
    std::vector<uint64_t> scaled(n);
    for (size_t i = 0; i < n; ++i) scaled[i] = ref_scale(t, load(in[0].data(), i, t.size), factor);
    check("scale of special values by " + std::to_string(factor), {in[0]}, n, 0, scaled,
          [&](const std::vector<void*>&, void* dst, size_t len) {
            return ops().scale(ctx(), dst, len, t.id, factor, memory_->stream());
          });
  }
}

INSTANTIATE_TEST_SUITE_P(Reducers, Conformance, testing::ValuesIn(all_params()), param_name);

// ---- The ABI contract around the arithmetic -----------------------------------------

class Abi : public testing::TestWithParam<Variant>, protected ReducerFixture {};

TEST_P(Abi, Descriptor) {
  const LoadedPlugin& p = load_plugin(GetParam().path);
  ASSERT_EQ(p.error, "") << p.path;
  const caravan_plugin_descriptor* d = p.descriptor;
  auto entry =
      reinterpret_cast<caravan_plugin_entry_fn>(dlsym(p.handle, CARAVAN_PLUGIN_ENTRY_SYMBOL));
  EXPECT_EQ(entry(), d) << "the entry must return the same descriptor every time";
  EXPECT_EQ(d->struct_size, sizeof(caravan_plugin_descriptor));
  ASSERT_NE(d->name, nullptr);
  EXPECT_EQ(std::string(d->name), GetParam().plugin) << "the name must match the file name";
  EXPECT_NE(d->version, nullptr);
  EXPECT_NE(d->description, nullptr);
  if (d->num_params) {
    ASSERT_NE(d->params, nullptr);
  }
  for (size_t i = 0; i < d->num_params; ++i) {
    ASSERT_NE(d->params[i].name, nullptr);
    for (const char* c = d->params[i].name; *c; ++c)
      EXPECT_TRUE((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')
          << d->params[i].name;
    EXPECT_NE(d->params[i].description, nullptr) << d->params[i].name;
  }
  const caravan_reducer_ops_v1& o = *p.ops;
  ASSERT_GE(o.struct_size, offsetof(caravan_reducer_ops_v1, local_id))
      << "the table misses required entries";
  EXPECT_TRUE(o.init && o.finalize && o.properties && o.sum && o.sum2 && o.sum_many && o.scale);
}

TEST_P(Abi, PropertiesAndErrors) {
  std::string why;
  Ready ready = start(GetParam(), &why);
  if (ready == Ready::kFail) FAIL() << why;
  if (ready == Ready::kSkip) GTEST_SKIP() << why;
  EXPECT_NE(props_.dtypes, 0u);
  EXPECT_EQ(props_.dtypes >> CARAVAN_DTYPE_COUNT, 0u) << "dtype bits past the last dtype";
  EXPECT_NE(props_.kernel, nullptr);
  const caravan_reducer_ops_v1& o = ops();
  bool has_local =
      o.struct_size >= offsetof(caravan_reducer_ops_v1, local_broadcast) + sizeof(void*) &&
      o.local_id && o.local_join && o.local_leave && o.local_reduce && o.local_broadcast;
  EXPECT_EQ(has_local, (props_.caps & CARAVAN_REDUCER_CAP_LOCAL_GROUP) != 0)
      << "CAP_LOCAL_GROUP and the local_* entries must come together";

  // An older caller's smaller struct is filled only as far as it reaches.
  caravan_reducer_properties_v1 small{};
  small.struct_size = offsetof(caravan_reducer_properties_v1, dtypes);
  small.dtypes = 123;
  ASSERT_EQ(o.properties(ctx(), &small), CARAVAN_STATUS_OK);
  EXPECT_EQ(small.caps, props_.caps);
  EXPECT_EQ(small.dtypes, 123u);
  EXPECT_EQ(small.kernel, nullptr);

  void* st = memory_->stream();
  Buffer buf(*memory_, 64, 0);
  buf.upload(Bytes(64, 0).data());
  void* x = buf.ptr();
  const void* srcs[] = {x, x};
  const void* holey[] = {x, nullptr};
  const caravan_dtype f32 = CARAVAN_FLOAT32;
  auto expect = [&](caravan_status want, caravan_status got, const char* what) {
    EXPECT_EQ(finish(got), want) << what;
    if (want != CARAVAN_STATUS_OK) {
      EXPECT_NE(error(), "") << what << ": failed without a reason";
    }
    inst_->host.clear_error();
  };
  expect(CARAVAN_STATUS_INVALID_ARGUMENT, o.sum(ctx(), nullptr, x, 4, f32, st), "sum, NULL dst");
  expect(CARAVAN_STATUS_INVALID_ARGUMENT, o.sum(ctx(), x, nullptr, 4, f32, st), "sum, NULL src");
  expect(CARAVAN_STATUS_OK, o.sum(ctx(), nullptr, nullptr, 0, f32, st),
         "sum, NULL and no elements");
  expect(CARAVAN_STATUS_INVALID_ARGUMENT, o.sum2(ctx(), x, nullptr, x, 4, f32, st), "sum2, NULL a");
  expect(CARAVAN_STATUS_INVALID_ARGUMENT, o.sum2(ctx(), x, x, nullptr, 4, f32, st), "sum2, NULL b");
  expect(CARAVAN_STATUS_OK, o.sum2(ctx(), nullptr, nullptr, nullptr, 0, f32, st),
         "sum2, no elements");
  expect(CARAVAN_STATUS_INVALID_ARGUMENT, o.sum_many(ctx(), x, nullptr, 2, 4, f32, st),
         "sum_many, NULL srcs");
  expect(CARAVAN_STATUS_INVALID_ARGUMENT, o.sum_many(ctx(), x, holey, 2, 4, f32, st),
         "sum_many, NULL srcs[1]");
  expect(CARAVAN_STATUS_INVALID_ARGUMENT, o.sum_many(ctx(), x, srcs, 0, 4, f32, st),
         "sum_many, no sources");
  expect(CARAVAN_STATUS_INVALID_ARGUMENT, o.scale(ctx(), nullptr, 4, f32, 2.0, st),
         "scale, NULL data");
  for (int bad : {CARAVAN_DTYPE_COUNT, 42, -1}) {
    auto dt = static_cast<caravan_dtype>(bad);  // in range: the enum spans every int32
    std::string what = "dtype " + std::to_string(bad);
    expect(CARAVAN_STATUS_UNSUPPORTED, o.sum(ctx(), x, x, 1, dt, st), ("sum, " + what).c_str());
    expect(CARAVAN_STATUS_UNSUPPORTED, o.sum2(ctx(), x, x, x, 1, dt, st),
           ("sum2, " + what).c_str());
    expect(CARAVAN_STATUS_UNSUPPORTED, o.sum_many(ctx(), x, srcs, 2, 1, dt, st),
           ("sum_many, " + what).c_str());
    expect(CARAVAN_STATUS_UNSUPPORTED, o.scale(ctx(), x, 1, dt, 2.0, st),
           ("scale, " + what).c_str());
  }
  buf.download();
  EXPECT_EQ(load(buf.data(), 0, 8), 0u) << "a failed call wrote its destination";
  EXPECT_EQ(o.sum(nullptr, x, x, 1, f32, st), CARAVAN_STATUS_INVALID_ARGUMENT) << "NULL instance";
  EXPECT_EQ(o.properties(ctx(), nullptr), CARAVAN_STATUS_INVALID_ARGUMENT) << "NULL properties";
  EXPECT_EQ(o.finalize(nullptr), CARAVAN_STATUS_INVALID_ARGUMENT) << "NULL instance";
  void* out = nullptr;
  EXPECT_EQ(o.init(nullptr, &out), CARAVAN_STATUS_INVALID_ARGUMENT) << "NULL host";
}

INSTANTIATE_TEST_SUITE_P(Reducers, Abi, testing::ValuesIn(all_variants()), variant_name);

}  // namespace
}  // namespace caravan::conformance
