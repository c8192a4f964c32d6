// The AVX-512 family (F for the float, 32- and 64-bit work, BW for bytes).
// Memory-bound sums gain little over AVX2; it is here for the wider
// conversions of the 16-bit float types.
#include "kernels.h"

#if defined(__x86_64__) || defined(__i386__)

// GCC 12's AVX-512 intrinsics trip a false -Wmaybe-uninitialized on their
// own _mm512_undefined_* placeholders (GCC PR 105593); the pragma must come
// before the header because the warning points into it.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "scalar.h"

#define CARAVAN_SIMD_TARGET __attribute__((target("avx512f,avx512bw,avx2,f16c,fma")))

namespace caravan::reducer_cpu {
namespace avx512 {
namespace {

#define CARAVAN_MM(op) _mm512_##op
#define CARAVAN_MM_SI(op) _mm512_##op##_si512
#define CARAVAN_HALF_SI(op) _mm256_##op##_si256
#include "simd_vectors.inc"

struct BF16V : F32V {
  using S = scalar::BF16;
  CARAVAN_SIMD_TARGET static Vec load(const Byte* p) {
    __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  // The rounding of caravan_f32_to_bf16, lane-wise; see the AVX2 family.
  CARAVAN_SIMD_TARGET static void store(Byte* p, Vec v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i high = _mm512_srli_epi32(u, 16);
    __m512i bias =
        _mm512_add_epi32(_mm512_and_si512(high, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    __m512i quiet = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    __m512i r = _mm512_mask_blend_epi32(nan, rounded, quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
  }
};

#include "kernels_simd.inc"

}  // namespace
}  // namespace avx512

const KernelSet* avx512_kernels() {
  static const KernelSet k = avx512::make_kernels("avx512");
  return &k;
}

}  // namespace caravan::reducer_cpu

#else

namespace caravan::reducer_cpu {
const KernelSet* avx512_kernels() { return nullptr; }
}  // namespace caravan::reducer_cpu

#endif
