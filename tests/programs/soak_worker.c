/* Continuous push_pull for a soak run, checking every element of every sum
 * in every round.
 * Usage: soak_worker SECONDS [SEED] [TENSORS] [MAX_BYTES]
 *
 * A pool of TENSORS tensors (default 24), float32 and int32, of sizes drawn
 * log-uniformly from 4 bytes to MAX_BYTES (default 8 MiB, so the largest
 * are cut into several partitions). Round 0 push_pulls all of them at once;
 * each later round a random subset, all in flight together. The pool is
 * fixed because a tensor's name is bound to its size, and a real job
 * declares a bounded set of tensors: memory that still grows once every
 * tensor has been seen is a leak, not a new tensor.
 *
 * Every worker must be given the same SEED: sizes and subsets come from it
 * alone, so all workers push the same tensors in the same rounds.
 *
 * Workers stop together: each round also push_pulls a one-element flag,
 * 1 from a worker whose own SECONDS have passed; once the sum is non-zero,
 * every worker has seen the same sum and leaves after the same round.
 *
 * Exit 0 when every sum was exact; 1 naming the round, tensor and element
 * of the first wrong one, or the failing call. */
/* clock_gettime and CLOCK_MONOTONIC under -std=c99. */
#define _POSIX_C_SOURCE 200809L

#include <caravan/caravan.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t next_random(uint64_t* state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Small integers: every sum is exact in float32. */
static int value(int rank, size_t i, long round) {
  return (int)((i * 7u + (size_t)rank * 13u + (size_t)round * 3u) % 50u);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define CHECK_RC(call, round)                                                          \
  do {                                                                                 \
    int rc_ = (call);                                                                  \
    if (rc_ != 0) {                                                                    \
      fprintf(stderr, "soak-worker: round %ld: %s failed: %s\n", (long)(round), #call, \
              caravan_strerror(rc_));                                                  \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

typedef struct {
  char name[32];
  caravan_dtype dtype;
  size_t count;
  void* data;
  caravan_handle handle;
  int in_round;
} Tensor;

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: soak_worker SECONDS [SEED] [TENSORS] [MAX_BYTES]\n");
    return 2;
  }
  double seconds = atof(argv[1]);
  uint64_t rng = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  int ntensors = argc > 3 ? atoi(argv[3]) : 24;
  double max_bytes = argc > 4 ? atof(argv[4]) : (double)(8u << 20);
  if (ntensors < 1 || max_bytes < 4) {
    fprintf(stderr, "soak_worker: TENSORS must be >= 1 and MAX_BYTES >= 4\n");
    return 2;
  }

  Tensor* pool = calloc((size_t)ntensors, sizeof *pool);
  size_t pool_bytes = 0;
  for (int t = 0; t < ntensors; ++t) {
    double u = (double)(next_random(&rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    size_t bytes = (size_t)(4.0 * pow(max_bytes / 4.0, u));
    pool[t].count = bytes / 4 ? bytes / 4 : 1;
    pool[t].dtype = t % 2 ? CARAVAN_INT32 : CARAVAN_FLOAT32;
    pool[t].data = malloc(pool[t].count * 4);
    if (!pool[t].data) {
      fprintf(stderr, "soak_worker: out of memory\n");
      return 1;
    }
    snprintf(pool[t].name, sizeof pool[t].name, "soak.t%d", t);
    pool_bytes += pool[t].count * 4;
  }

  CHECK_RC(caravan_init(), -1);
  int rank = caravan_rank(), size = caravan_size();
  printf("soak-worker %d: joined; %d tensors of %zu bytes in all; running for %g s\n", rank,
         ntensors, pool_bytes, seconds);
  fflush(stdout);

  double start = now_s();
  long round = 0, push_pulls = 0;
  double bytes_summed = 0;
  for (;;) {
    int32_t stop = now_s() - start >= seconds;
    caravan_handle stop_handle;
    CHECK_RC(caravan_push_pull_async("soak.stop", &stop, 1, CARAVAN_INT32, 0, &stop_handle), round);
    for (int t = 0; t < ntensors; ++t) {
      Tensor* x = &pool[t];
      x->in_round = round == 0 || (next_random(&rng) & 1);
      if (!x->in_round) continue;
      for (size_t i = 0; i < x->count; ++i) {
        int v = value(rank, i, round);
        if (x->dtype == CARAVAN_INT32)
          ((int32_t*)x->data)[i] = v;
        else
          ((float*)x->data)[i] = (float)v;
      }
      CHECK_RC(caravan_push_pull_async(x->name, x->data, x->count, x->dtype, 0, &x->handle), round);
    }
    CHECK_RC(caravan_wait(stop_handle), round);
    for (int t = 0; t < ntensors; ++t) {
      Tensor* x = &pool[t];
      if (!x->in_round) continue;
      CHECK_RC(caravan_wait(x->handle), round);
      for (size_t i = 0; i < x->count; ++i) {
        long want = 0;
        for (int r = 0; r < size; ++r) want += value(r, i, round);
        long got =
            x->dtype == CARAVAN_INT32 ? (long)((int32_t*)x->data)[i] : (long)((float*)x->data)[i];
        if (got != want) {
          fprintf(stderr,
                  "soak-worker %d: round %ld tensor %s (%zu elements): element %zu is %ld, "
                  "expected %ld\n",
                  rank, round, x->name, x->count, i, got, want);
          return 1;
        }
      }
      ++push_pulls;
      bytes_summed += (double)x->count * 4;
    }
    ++round;
    if (stop) break;
  }
  CHECK_RC(caravan_shutdown(), round);
  printf("soak-worker %d: %ld rounds, %ld push_pulls, %.2f GB summed in %.0f s, all sums exact\n",
         rank, round, push_pulls, bytes_summed / 1e9, now_s() - start);
  for (int t = 0; t < ntensors; ++t) free(pool[t].data);
  free(pool);
  return 0;
}
