/* A sum that comes back after its caller gave up must not land in the
 * caller's tensor, which is the caller's own again once push_pull returned
 * (over a van that receives into lent memory, van ABI 2.1, the tensor is
 * where the answer would be written). Two workers, one server,
 * CARAVAN_OP_TIMEOUT short:
 *   worker 0 push_pulls a 1 MiB tensor, which times out because worker 1
 *   holds back; it then fills the tensor with a sentinel and creates FLAG;
 *   worker 1 waits for FLAG and push_pulls, so the round completes and the
 *   server answers both (worker 1's sum must be right);
 *   both then push_pull a second tensor: its answer follows the late one on
 *   worker 0's connection from the server, so once it is back the late
 *   answer has been received, and worker 0's tensor must still hold only
 *   the sentinel;
 *   the late answer ended worker 0's timed-out operation, so both leave the
 *   job cleanly.
 * Usage: late_answer_worker FLAG. Exit 0 on success, 1 naming what failed. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <caravan/caravan.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define COUNT (1 << 18) /* floats: 1 MiB, one partition, lent */
#define SENTINEL 12345.0f

static float x[COUNT];

static int fail(int rank, const char* what) {
  printf("FAIL worker %d: %s\n", rank, what);
  return 1;
}

/* Waits (up to 60 s) for `path` to exist. */
static int wait_for(const char* path) {
  struct timespec tick = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 6000; ++i) {
    FILE* f = fopen(path, "r");
    if (f) {
      fclose(f);
      return 1;
    }
    nanosleep(&tick, NULL);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return fail(-1, "usage: late_answer_worker FLAG");
  if (caravan_init() != 0) return fail(-1, "caravan_init failed");
  int rank = caravan_rank(), size = caravan_size();
  if (size != 2) return fail(rank, "needs exactly 2 workers");
  float b[1] = {1.0f};
  for (int i = 0; i < COUNT; ++i) x[i] = (float)(rank + 1);
  if (rank == 0) {
    int rc = caravan_push_pull("late.t", x, COUNT, CARAVAN_FLOAT32, 0);
    if (rc != CARAVAN_ERR_TIMEOUT) return fail(rank, "the first push_pull did not time out");
    for (int i = 0; i < COUNT; ++i) x[i] = SENTINEL;
    FILE* f = fopen(argv[1], "w");
    if (!f) return fail(rank, "cannot create the flag file");
    fclose(f);
  } else {
    if (!wait_for(argv[1])) return fail(rank, "worker 0 never timed out");
    if (caravan_push_pull("late.t", x, COUNT, CARAVAN_FLOAT32, 0) != 0)
      return fail(rank, "the late push_pull failed");
    for (int i = 0; i < COUNT; ++i)
      if (x[i] != 3.0f) return fail(rank, "the late sum is wrong");
  }
  if (caravan_push_pull("late.after", b, 1, CARAVAN_FLOAT32, 0) != 0)
    return fail(rank, "the push_pull after the late one failed");
  if (rank == 0) {
    for (int i = 0; i < COUNT; ++i)
      if (x[i] != SENTINEL) {
        printf(
            "FAIL worker 0: element %d is %g after the operation had timed out: the late "
            "answer was written into the tensor\n",
            i, x[i]);
        return 1;
      }
  }
  printf("worker %d: %s\n", rank,
         rank == 0 ? "the late answer left the timed-out tensor alone" : "late sum right");
  /* The late answer also ended worker 0's abandoned operation, so nothing
   * is left in flight and both leave the job cleanly. */
  if (caravan_shutdown() != 0) return fail(rank, "caravan_shutdown failed");
  return 0;
}
