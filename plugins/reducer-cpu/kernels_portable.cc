// The portable family: plain loops, correct on any CPU the plugin builds for.
#include "kernels.h"
#include "scalar.h"

namespace caravan::reducer_cpu {

namespace {

template <class S>
void fill_common(KernelSet& k, caravan_dtype dt) {
  k.add2[dt] = scalar::add2<S>;
}

template <class S>
void fill_float(KernelSet& k, caravan_dtype dt) {
  fill_common<S>(k, dt);
  k.scale[dt] = scalar::scale<S>;
}

template <class S>
void fill_half(KernelSet& k, caravan_dtype dt) {
  fill_float<S>(k, dt);
  k.acc_init[dt] = scalar::acc_init<S>;
  k.acc_add[dt] = scalar::acc_add<S>;
  k.acc_store[dt] = scalar::acc_store<S>;
}

KernelSet make() {
  KernelSet k{};
  k.name = "portable";
  fill_float<scalar::F32>(k, CARAVAN_FLOAT32);
  fill_float<scalar::F64>(k, CARAVAN_FLOAT64);
  fill_half<scalar::F16>(k, CARAVAN_FLOAT16);
  fill_half<scalar::BF16>(k, CARAVAN_BFLOAT16);
  fill_common<scalar::U8>(k, CARAVAN_UINT8);
  fill_common<scalar::U8>(k, CARAVAN_INT8);
  fill_common<scalar::U32>(k, CARAVAN_INT32);
  fill_common<scalar::U64>(k, CARAVAN_INT64);
  return k;
}

}  // namespace

const KernelSet* portable_kernels() {
  static const KernelSet k = make();
  return &k;
}

}  // namespace caravan::reducer_cpu
