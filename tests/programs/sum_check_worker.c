/* A worker written against caravan.h alone, in C: push_pulls tensors of
 * every dtype and size and checks every element of every sum exactly.
 * Usage: sum_check_worker [rounds] [max_elements]
 * CARAVAN_TEST_MAX_TENSOR_BYTES, when set, caps every tensor's bytes: the
 * ThreadSanitizer build sets it, as its shadow memory and speed make the
 * 64 MiB tensors of four workers more than its test time and memory hold.
 * SUM_CHECK_ROUNDS, when set, overrides [rounds]: a job's tests give one
 * worker fewer rounds than the others.
 * Exit 0 when every sum was right; 1 with a message naming the first
 * wrong element otherwise. */
#include <caravan/caravan.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_rc.h"
#include "values.h"

/* Small integers, exactly representable in every dtype (float16 holds
 * integers up to 2048 exactly, bfloat16 up to 256), so every sum must
 * match exactly. */
static int value(int rank, size_t i, int round, caravan_dtype t) {
  int range = (t == CARAVAN_BFLOAT16 || t == CARAVAN_INT8 || t == CARAVAN_UINT8) ? 7 : 50;
  return (int)((i * 7u + (size_t)rank * 13u + (size_t)round * 3u) % (size_t)range);
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2;
  if (getenv("SUM_CHECK_ROUNDS")) rounds = atoi(getenv("SUM_CHECK_ROUNDS"));
  size_t max_elems = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : (64u << 20);
  CHECK_RC(caravan_init());
  int rank = caravan_rank(), size = caravan_size();
  const caravan_dtype types[] = {CARAVAN_FLOAT32, CARAVAN_FLOAT64, CARAVAN_FLOAT16,
                                 CARAVAN_UINT8,   CARAVAN_INT32,   CARAVAN_INT8,
                                 CARAVAN_INT64,   CARAVAN_BFLOAT16};
  const size_t byte_sizes[] = {1, 4096, (4u << 20) + 3, 64u << 20};
  const char* cap_env = getenv("CARAVAN_TEST_MAX_TENSOR_BYTES");
  size_t max_bytes = cap_env ? (size_t)strtoull(cap_env, NULL, 10) : SIZE_MAX;
  enum { NT = 8, NS = 4 };
  /* Static: on the error paths (return 1 in CHECK_RC) buffers and handles
   * stay reachable, so LeakSanitizer reports only the library's leaks. */
  static void* bufs[NT * NS];
  size_t counts[NT * NS];
  static caravan_handle handles[NT * NS];
  char names[NT * NS][64];
  for (int round = 0; round < rounds; ++round) {
    /* Every tensor of the round in flight at once through the async API. */
    for (int t = 0; t < NT; ++t) {
      for (int s = 0; s < NS; ++s) {
        int k = t * NS + s;
        size_t bytes = byte_sizes[s] < max_bytes ? byte_sizes[s] : max_bytes;
        size_t n = bytes / caravan_dtype_size(types[t]);
        if (n == 0) n = 1;
        if (n > max_elems) n = max_elems;
        counts[k] = n;
        if (round == 0) bufs[k] = malloc(n * caravan_dtype_size(types[t]));
        for (size_t i = 0; i < n; ++i)
          store_value(bufs[k], i, types[t], value(rank, i, round, types[t]));
        snprintf(names[k], sizeof names[k], "t%d_s%d", t, s);
        CHECK_RC(caravan_push_pull_async(names[k], bufs[k], n, types[t], t, &handles[k]));
      }
    }
    for (int k = 0; k < NT * NS; ++k) CHECK_RC(caravan_wait(handles[k]));
    for (int t = 0; t < NT; ++t) {
      for (int s = 0; s < NS; ++s) {
        int k = t * NS + s;
        for (size_t i = 0; i < counts[k]; ++i) {
          double want = 0;
          for (int r = 0; r < size; ++r) want += value(r, i, round, types[t]);
          if (types[t] == CARAVAN_INT8) want = (double)(int8_t)(int)want;
          if (types[t] == CARAVAN_UINT8) want = (double)(uint8_t)(int)want;
          double got = load_value(bufs[k], i, types[t]);
          if (got != want) {
            fprintf(stderr, "worker %d round %d tensor %s: element %zu is %g, expected %g\n", rank,
                    round, names[k], i, got, want);
            return 1;
          }
        }
      }
    }
  }
  for (int k = 0; k < NT * NS; ++k) free(bufs[k]);
  CHECK_RC(caravan_shutdown());
  printf("worker %d of %d: %d rounds of %d tensors, all sums exact\n", rank, size, rounds, NT * NS);
  return 0;
}
