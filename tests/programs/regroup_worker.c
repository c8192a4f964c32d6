/* A training loop written against caravan.h alone, in C, that lives
 * through the loss of other nodes (C API 1.6, CARAVAN_ELASTIC=1): each
 * step push_pulls an int32 and a float32 tensor and checks every element
 * of both sums against the workers in the job at that moment. When an
 * operation fails with CARAVAN_ERR_REGROUPED it rejoins (caravan_rejoin)
 * and redoes the whole step, as a training script redoes the step in
 * flight. After joining, and after every rejoin, every worker takes rank
 * 0's step number (a broadcast): a worker started while the job runs
 * joins it at a regroup and starts at the others' step. With
 * REGROUP_UNTIL_SIZE=N the workers go on past STEPS until the job has N
 * workers (all decide alike: they share the step and the size). With
 * REGROUP_STOP_FILE=PATH they stop early once PATH exists: rank 0 looks
 * every 50 steps and tells the others with the step (scripts/
 * elastic-chaos.sh ends its runs so). With REGROUP_LEAVE=1 a worker whose
 * step is abandoned shuts down instead of rejoining, as a script that
 * ends on the error does.
 *
 * Usage: regroup_worker STEPS [KILLER STEP [PID]]
 *   The worker started with DMLC_WORKER_ID=KILLER kills process PID
 *   (default: itself) with SIGKILL at step STEP, between its two
 *   push_pulls: the others then wait for a second tensor when the
 *   scheduler regroups the job.
 * Prints "step S done as rank R of N at T ms" after each step (T:
 * CLOCK_MONOTONIC, comparable across the processes of one host), "rejoined
 * as rank R of N at T ms (regroup K)" after its K-th regroup, and at
 * the end "regroup_worker: S steps checked as rank R of N, regrouped K
 * time(s)". Exit 0 when every value was right; 1 naming the first wrong
 * one or the failed call. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "check_rc.h"

enum { kElements = 3000 };

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One step: 0, CARAVAN_ERR_REGROUPED, or 1 after saying what failed.
 * Kills *kill_pid (then zeroed) after the first push_pull when it is set:
 * a step abandoned before that point kills in the step done again. */
static int step(int s, pid_t* kill_pid) {
  static int32_t k[kElements];
  static float f[kElements];
  int rank = caravan_rank(), size = caravan_size();
  for (int i = 0; i < kElements; ++i) {
    k[i] = rank + 1 + s + i % 7;
    f[i] = (float)(rank + 1 + s + i % 7);
  }
  int rc = caravan_push_pull("regroup.i32", k, kElements, CARAVAN_INT32, 0);
  if (rc == 0 && *kill_pid > 0) {
    printf("killing pid %d at step %d at %lld ms\n", (int)*kill_pid, s, now_ms());
    fflush(stdout);
    kill(*kill_pid, SIGKILL);
    *kill_pid = 0;
  }
  if (rc == 0) rc = caravan_push_pull("regroup.f32", f, kElements, CARAVAN_FLOAT32, 0);
  if (rc == CARAVAN_ERR_REGROUPED) {
    printf("step %d abandoned at %lld ms: %s\n", s, now_ms(), caravan_strerror(rc));
    return rc;
  }
  if (rc != 0) {
    fprintf(stderr, "step %d: push_pull failed: %d: %s\n", s, rc, caravan_strerror(rc));
    return 1;
  }
  for (int i = 0; i < kElements; ++i) {
    long want = (long)size * (size + 1) / 2 + (long)size * (s + i % 7);
    if ((long)k[i] != want || (long)f[i] != want) {
      fprintf(stderr, "step %d rank %d of %d: element %d is %d / %g, expected %ld\n", s, rank, size,
              i, (int)k[i], (double)f[i], want);
      return 1;
    }
  }
  printf("step %d done as rank %d of %d at %lld ms\n", s, rank, size, now_ms());
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc == 3 || argc > 5) {
    fprintf(stderr, "usage: regroup_worker STEPS [KILLER STEP [PID]]\n");
    return 2;
  }
  int steps = atoi(argv[1]);
  int killer = argc > 3 ? atoi(argv[2]) : -1, kill_step = argc > 3 ? atoi(argv[3]) : -1;
  pid_t victim = argc > 4 ? (pid_t)atoi(argv[4]) : getpid();
  setvbuf(stdout, NULL, _IOLBF, 0); /* a log cut by SIGKILL keeps its lines */
  const char* id = getenv("DMLC_WORKER_ID");
  int me = id ? atoi(id) : -1;
  const char* until = getenv("REGROUP_UNTIL_SIZE");
  int until_size = until ? atoi(until) : 0;
  const char* stop_file = getenv("REGROUP_STOP_FILE");
  const char* leave_env = getenv("REGROUP_LEAVE");
  int leave = leave_env && atoi(leave_env) == 1;
  CHECK_RC(caravan_init());
  int regroups = 0, joined = 1;
  if (me != killer) victim = 0;
  for (int32_t s = 0;;) {
    int rc = 0;
    int32_t sync[2] = {s, 0}; /* rank 0's step, and whether to stop */
    if (joined || (stop_file && s % 50 == 0)) {
      sync[1] = stop_file && access(stop_file, F_OK) == 0;
      rc = caravan_broadcast("regroup.step", sync, 2, CARAVAN_INT32, 0, 0);
      if (rc == 0) s = sync[0];
      if (rc == 0 && joined)
        printf("at step %d as rank %d of %d\n", (int)s, caravan_rank(), caravan_size());
    }
    if (rc == 0) joined = 0;
    if (rc == 0 && ((s >= steps && caravan_size() >= until_size) || sync[1])) {
      steps = s;
      break;
    }
    pid_t none = 0;
    if (rc == 0) rc = step(s, s == kill_step ? &victim : &none);
    if (rc == 1) return 1;
    if (rc == CARAVAN_ERR_REGROUPED && leave) {
      CHECK_RC(caravan_shutdown());
      printf("regroup_worker: left after step %d was abandoned\n", (int)s);
      return 0;
    }
    if (rc == CARAVAN_ERR_REGROUPED) {
      ++regroups;
      CHECK_RC(caravan_rejoin());
      printf("rejoined as rank %d of %d at %lld ms (regroup %d)\n", caravan_rank(), caravan_size(),
             now_ms(), regroups);
      joined = 1; /* the step again, with the workers there now */
      continue;
    }
    if (rc != 0) {
      fprintf(stderr, "taking rank 0's step failed: %d: %s\n", rc, caravan_strerror(rc));
      return 1;
    }
    ++s;
  }
  int rank = caravan_rank(), size = caravan_size();
  CHECK_RC(caravan_shutdown());
  printf("regroup_worker: %d steps checked as rank %d of %d, regrouped %d time(s)\n", steps, rank,
         size, regroups);
  return 0;
}
