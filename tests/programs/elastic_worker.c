/* A worker written against caravan.h alone, in C, that lives through
 * suspends and resumes (C API 1.5): the job goes through phases of
 * different sizes, and in each this worker push_pulls a float32 and an
 * int32 tensor for some rounds, checking every element of every sum
 * against the workers that are in the job in that phase.
 *
 * Usage: elastic_worker PHASES [FIRST]
 *   PHASES: the job's shape in each phase, "WxS,WxS,...", e.g. "2x2,1x1,3x2"
 *           (W workers, S servers).
 *   FIRST:  the phase this process starts in (0 by default): a worker
 *           started later joins there, with DMLC_NUM_WORKER and
 *           DMLC_NUM_SERVER of that phase in its environment.
 * After each phase but the last every worker suspends and prints
 * "suspended after phase P as rank R"; one whose rank is beyond the next
 * phase's count then leaves (exit 0), the others resume with the next
 * phase's counts. After the last phase every worker shuts down.
 * Exit 0 when every value was right; 1 naming the first wrong one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_rc.h"

enum { kMaxPhases = 16, kRounds = 4, kElements = 3000 };

static int parse_phases(const char* text, int* workers, int* servers) {
  int n = 0;
  while (*text && n < kMaxPhases) {
    int used = 0;
    if (sscanf(text, "%dx%d%n", &workers[n], &servers[n], &used) != 2 || workers[n] < 1) return -1;
    ++n;
    text += used;
    if (*text == ',') ++text;
  }
  return *text ? -1 : n;
}

/* Every worker gives rank + 1 + round + i % 7 at element i: the sum over
 * `size` workers is exact in both dtypes. */
static int check_phase(int phase, int expected_size) {
  static float f[kElements];
  static int32_t k[kElements];
  int rank = caravan_rank(), size = caravan_size();
  if (size != expected_size || rank < 0 || rank >= size) {
    fprintf(stderr, "phase %d: rank %d of size %d, expected a size of %d\n", phase, rank, size,
            expected_size);
    return 1;
  }
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kElements; ++i) {
      f[i] = (float)(rank + 1 + round + i % 7);
      k[i] = rank + 1 + round + i % 7;
    }
    CHECK_RC(caravan_push_pull("elastic.f32", f, kElements, CARAVAN_FLOAT32, 0));
    CHECK_RC(caravan_push_pull("elastic.i32", k, kElements, CARAVAN_INT32, 0));
    for (int i = 0; i < kElements; ++i) {
      long want = (long)size * (size + 1) / 2 + (long)size * (round + i % 7);
      if ((long)f[i] != want || (long)k[i] != want) {
        fprintf(stderr, "phase %d round %d rank %d: element %d is %g / %d, expected %ld\n", phase,
                round, rank, i, (double)f[i], (int)k[i], want);
        return 1;
      }
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  int workers[kMaxPhases], servers[kMaxPhases];
  int phases = argc > 1 ? parse_phases(argv[1], workers, servers) : -1;
  int phase = argc > 2 ? atoi(argv[2]) : 0;
  if (phases < 1 || phase < 0 || phase >= phases) {
    fprintf(stderr, "usage: elastic_worker WxS[,WxS...] [first phase]\n");
    return 2;
  }
  CHECK_RC(caravan_init());
  for (;; ++phase) {
    /* W counts machines (DMLC_NUM_WORKER), each of caravan_local_size()
     * worker processes (BYTEPS_LOCAL_SIZE). */
    if (check_phase(phase, workers[phase] * caravan_local_size()) != 0) return 1;
    if (phase + 1 == phases) break;
    int rank = caravan_rank(), local_size = caravan_local_size();
    CHECK_RC(caravan_suspend());
    printf("suspended after phase %d as rank %d\n", phase, rank);
    fflush(stdout);
    if (rank >= workers[phase + 1] * local_size) {
      printf("leaving: phase %d has %d workers\n", phase + 1, workers[phase + 1]);
      return 0;
    }
    CHECK_RC(caravan_resume(workers[phase + 1], servers[phase + 1], -1));
  }
  int rank = caravan_rank();
  CHECK_RC(caravan_shutdown());
  printf("elastic_worker: %d phases checked as rank %d\n", phases, rank);
  return 0;
}
