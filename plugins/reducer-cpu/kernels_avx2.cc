// The AVX2 + F16C family. Only these functions carry the target, so the rest
// of the plugin still runs on CPUs without AVX2 and init can refuse politely.
#include "kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "scalar.h"

#define CARAVAN_SIMD_TARGET __attribute__((target("avx2,f16c,fma")))

namespace caravan::reducer_cpu {
namespace avx2 {
namespace {

#define CARAVAN_MM(op) _mm256_##op
#define CARAVAN_MM_SI(op) _mm256_##op##_si256
#define CARAVAN_HALF_SI(op) _mm_##op##_si128
#include "simd_vectors.inc"

struct BF16V : F32V {
  using S = scalar::BF16;
  CARAVAN_SIMD_TARGET static Vec load(const Byte* p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  // Same rounding as caravan_f32_to_bf16: add 0x7fff plus the kept lsb, then shift;
  // NaNs skip the add (it could carry them into infinity) and are quieted.
  CARAVAN_SIMD_TARGET static void store(Byte* p, Vec v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i bias = _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
    // Every lane is below 0x10000, so the saturating pack only narrows.
    __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
  }
};

#include "kernels_simd.inc"

}  // namespace
}  // namespace avx2

const KernelSet* avx2_kernels() {
  static const KernelSet k = avx2::make_kernels("avx2");
  return &k;
}

}  // namespace caravan::reducer_cpu

#else

namespace caravan::reducer_cpu {
const KernelSet* avx2_kernels() { return nullptr; }
}  // namespace caravan::reducer_cpu

#endif
