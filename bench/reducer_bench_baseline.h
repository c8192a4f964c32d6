// What a reducer's sum is measured against: the loop a compiler makes of
// a[i] += b[i], and memcpy. Kept in their own translation unit (built with
// -O3) so that the benchmark's knowledge of n and the data cannot leak in.
#ifndef CARAVAN_BENCH_REDUCER_BENCH_BASELINE_H
#define CARAVAN_BENCH_REDUCER_BENCH_BASELINE_H

#include <cstddef>

namespace caravan::bench {

// Built for the build's target (x86-64: SSE2) only.
void add_f32_default(float* a, const float* b, size_t n);
// The same loop as GCC target_clones for AVX-512F, AVX2 and the default,
// picked at load time for the running CPU.
void add_f32_clones(float* a, const float* b, size_t n);
// Which clone add_f32_clones runs on this CPU.
const char* add_f32_clones_target();

}  // namespace caravan::bench

#endif  // CARAVAN_BENCH_REDUCER_BENCH_BASELINE_H
