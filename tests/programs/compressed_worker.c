/* A worker of a job with compressed tensors (caravan_declare_tensor, C API
 * 1.3), written against caravan.h alone. Every worker knows every
 * worker's inputs (a function of rank, element and step), so it computes
 * the job's expected result with its own reference model of the
 * compressor and the server, and compares:
 *   onebit    sign(sum of signs), and with scaling the pull's scale;
 *   topk      each worker's top k with error feedback, the server's top k
 *             of their sum with its own error feedback, over 3 steps;
 *   randomk   at most k elements set, each n/k times the exact sum;
 *   small     a tensor under BYTEPS_MIN_COMPRESS_BYTES: the exact sum;
 *   errors    the refusals, each naming what is wrong;
 *   disagree  worker 1 declares another k: both get MISMATCH naming both;
 *   async     (with BYTEPS_ENABLE_ASYNC=1) declaring compression is refused;
 *   plugin NAME  a compressor that keeps about 8 significant bits (the SDK's
 *             example, bf16): every result within 2^-7 of the sum's
 *             magnitudes, and not every one exact (it did compress).
 * The test runs one server and tensors of one partition, so the model
 * needs no partition plan. Inputs are multiples of 1/64 small enough that
 * every sum is exact in float32 whatever the order of additions.
 * Exit 0 and "compressed results as modelled" when every element matched. */
#include <caravan/caravan.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_rc.h"

#define N 100000 /* 400 KB of float32: one partition on one host */

static float input(int rank, size_t i, int step) {
  long v = (long)((i * 7919u + (size_t)rank * 104729u + (size_t)step * 31u) % 20011u) - 10005;
  return (float)v / 64.0f;
}

static int declare(const char* name, const char* const* kv, size_t pairs) {
  const char* keys[16];
  const char* vals[16];
  for (size_t i = 0; i < pairs; ++i) {
    keys[i] = kv[2 * i];
    vals[i] = kv[2 * i + 1];
  }
  return caravan_declare_tensor(name, keys, vals, pairs);
}

/* ---- onebit ---------------------------------------------------------- */
static int run_onebit(int rank, int size) {
  static const char* kv[] = {"byteps_compressor_type", "onebit", "byteps_compressor_onebit_scaling",
                             "true"};
  CHECK_RC(declare("onebit", kv, 2));
  float* x = malloc(N * sizeof(float));
  double* sum = malloc(N * sizeof(double));
  for (int step = 0; step < 2; ++step) {
    for (size_t i = 0; i < N; ++i) x[i] = input(rank, i, step);
    CHECK_RC(caravan_push_pull("onebit", x, N, CARAVAN_FLOAT32, 0));
    /* Model: each worker sends sign * mean|x|; the server sums the
     * decoded pushes and sends sign(sum) * mean|sum|. */
    double pull_l1 = 0;
    for (size_t i = 0; i < N; ++i) sum[i] = 0;
    for (int r = 0; r < size; ++r) {
      double l1 = 0;
      for (size_t i = 0; i < N; ++i) l1 += fabs(input(r, i, step));
      float scale = (float)(l1 / N);
      for (size_t i = 0; i < N; ++i) sum[i] += signbit(input(r, i, step)) ? -scale : scale;
    }
    for (size_t i = 0; i < N; ++i) pull_l1 += fabs(sum[i]);
    double scale = pull_l1 / N;
    for (size_t i = 0; i < N; ++i) {
      double want = signbit((float)sum[i]) ? -scale : scale;
      if (fabs(x[i] - want) > 1e-5 * scale) {
        fprintf(stderr, "onebit step %d element %zu: got %.9g, model %.9g\n", step, i, x[i], want);
        return 1;
      }
    }
  }
  free(x);
  free(sum);
  return 0;
}

/* ---- topk with error feedback ---------------------------------------- */
static size_t K;

/* The k largest magnitudes of v, ties to the lower index; writes mask. */
static void topk_mask(const float* v, size_t n, size_t k, char* mask) {
  /* Threshold by selection on a copy of magnitudes, then ties by index. */
  float* mag = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) mag[i] = fabsf(v[i]);
  /* Simple: count how many exceed each candidate via sorting a copy. */
  float* sorted = malloc(n * sizeof(float));
  memcpy(sorted, mag, n * sizeof(float));
  /* Partial selection: sort descending (n is small enough for qsort). */
  int cmp(const void* a, const void* b);
  qsort(sorted, n, sizeof(float), cmp);
  float threshold = sorted[k - 1];
  size_t above = 0;
  for (size_t i = 0; i < n; ++i) above += mag[i] > threshold;
  size_t ties_left = k - above;
  for (size_t i = 0; i < n; ++i) {
    mask[i] = mag[i] > threshold || (mag[i] == threshold && ties_left > 0);
    if (mag[i] == threshold && ties_left > 0 && !(mag[i] > threshold)) --ties_left;
  }
  free(mag);
  free(sorted);
}
int cmp(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

static int run_topk(int rank, int size) {
  static const char* kv[] = {"byteps_compressor_type",     "topk",   "byteps_compressor_k", "0.01",
                             "byteps_error_feedback_type", "vanilla"};
  CHECK_RC(declare("topk", kv, 3));
  K = N / 100;
  float* x = malloc(N * sizeof(float));
  float* err = calloc((size_t)size * N, sizeof(float)); /* every worker's error */
  float* server_err = calloc(N, sizeof(float));
  float* work = malloc(N * sizeof(float));
  float* sum = malloc(N * sizeof(float));
  char* mask = malloc(N);
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < N; ++i) x[i] = input(rank, i, step);
    CHECK_RC(caravan_push_pull("topk", x, N, CARAVAN_FLOAT32, 0));
    for (size_t i = 0; i < N; ++i) sum[i] = 0;
    for (int r = 0; r < size; ++r) {
      float* e = err + (size_t)r * N;
      for (size_t i = 0; i < N; ++i) work[i] = input(r, i, step) + e[i];
      topk_mask(work, N, K, mask);
      for (size_t i = 0; i < N; ++i) {
        float sent = mask[i] ? work[i] : 0.0f;
        sum[i] += sent;
        e[i] = work[i] - sent;
      }
    }
    for (size_t i = 0; i < N; ++i) work[i] = sum[i] + server_err[i];
    topk_mask(work, N, K, mask);
    for (size_t i = 0; i < N; ++i) {
      float want = mask[i] ? work[i] : 0.0f;
      server_err[i] = work[i] - want;
      if (x[i] != want) {
        fprintf(stderr, "topk step %d element %zu: got %.9g, model %.9g\n", step, i, x[i], want);
        return 1;
      }
    }
  }
  free(x), free(err), free(server_err), free(work), free(sum), free(mask);
  return 0;
}

/* ---- randomk --------------------------------------------------------- */
static int run_randomk(int rank, int size) {
  static const char* kv[] = {
      "byteps_compressor_type", "randomk", "byteps_compressor_k", "500", "byteps_seed", "7"};
  CHECK_RC(declare("randomk", kv, 3));
  float* x = malloc(N * sizeof(float));
  for (int step = 0; step < 2; ++step) {
    for (size_t i = 0; i < N; ++i) x[i] = input(rank, i, step);
    CHECK_RC(caravan_push_pull("randomk", x, N, CARAVAN_FLOAT32, 0));
    size_t set = 0;
    float scale = (float)((double)N / 500.0);
    for (size_t i = 0; i < N; ++i) {
      if (x[i] == 0.0f) continue;
      ++set;
      float s = 0;
      for (int r = 0; r < size; ++r) s += input(r, i, step);
      if (x[i] != 0.0f + scale * s) {
        fprintf(stderr, "randomk step %d element %zu: got %.9g, want n/k * sum = %.9g\n", step, i,
                x[i], scale * s);
        return 1;
      }
    }
    if (set > 500 || set < 450) {
      fprintf(stderr,
              "randomk step %d: %zu elements set, want at most k = 500 (and most of them)\n", step,
              set);
      return 1;
    }
  }
  free(x);
  return 0;
}

/* ---- under BYTEPS_MIN_COMPRESS_BYTES --------------------------------- */
static int run_small(int rank, int size) {
  static const char* kv[] = {"byteps_compressor_type", "onebit"};
  CHECK_RC(declare("small", kv, 1));
  float x[1000];
  for (size_t i = 0; i < 1000; ++i) x[i] = input(rank, i, 0);
  CHECK_RC(caravan_push_pull("small", x, 1000, CARAVAN_FLOAT32, 0));
  for (size_t i = 0; i < 1000; ++i) {
    float s = 0;
    for (int r = 0; r < size; ++r) s += input(r, i, 0);
    if (x[i] != s) {
      fprintf(stderr, "small element %zu: got %.9g, want the exact sum %.9g\n", i, x[i], s);
      return 1;
    }
  }
  return 0;
}

/* ---- refusals -------------------------------------------------------- */
static int expect(int rc, int want, const char* needle, const char* what) {
  const char* msg = caravan_strerror(rc);
  if (rc != want || !strstr(msg, needle)) {
    fprintf(stderr, "%s: got %d (%s), want %d with '%s'\n", what, rc, msg, want, needle);
    return 1;
  }
  printf("refused as expected: %s: %s\n", what, msg);
  return 0;
}

static int run_errors(void) {
  static float x[N];
  int bad = 0;
  static const char* nosuch[] = {"byteps_compressor_type", "nosuch"};
  bad |= expect(declare("e1", nosuch, 1), CARAVAN_ERR_PLUGIN, "libcaravan-compressor-nosuch.so",
                "a compressor no plugin provides");
  static const char* typo[] = {"byteps_compressor_type", "topk", "byteps_compresor_k", "3"};
  bad |= expect(declare("e2", typo, 2), CARAVAN_ERR_INVALID_ARGUMENT, "byteps_compresor_k='3'",
                "a misspelt key");
  static const char* nok[] = {"byteps_compressor_type", "topk"};
  if (declare("e3", nok, 1) != 0) return 1;
  bad |= expect(caravan_push_pull("e3", x, N, CARAVAN_FLOAT32, 0), CARAVAN_ERR_INVALID_ARGUMENT,
                "byteps_compressor_k is missing", "top-k without k");
  static const char* ef_alone[] = {"byteps_error_feedback_type", "vanilla"};
  bad |= expect(declare("e4", ef_alone, 1), CARAVAN_ERR_INVALID_ARGUMENT, "without a compressor",
                "error feedback without a compressor");
  static const char* ints[] = {"byteps_compressor_type", "onebit"};
  if (declare("e5", ints, 1) != 0) return 1;
  static int32_t y[N];
  bad |= expect(caravan_push_pull("e5", y, N, CARAVAN_INT32, 0), CARAVAN_ERR_INVALID_ARGUMENT,
                "not int32", "an int32 tensor for onebit");
  CHECK_RC(caravan_push_pull("e6", x, N, CARAVAN_FLOAT32, 0));
  bad |= expect(declare("e6", ints, 1), CARAVAN_ERR_MISMATCH, "before its first push_pull",
                "declaring after the first push_pull");
  return bad;
}

static int run_plugin(const char* type, int size) {
  const char* kv[] = {"byteps_compressor_type", type};
  CHECK_RC(declare("plugin", kv, 1));
  float* x = malloc(N * sizeof(float));
  size_t inexact = 0;
  for (int step = 0; step < 2; ++step) {
    for (size_t i = 0; i < N; ++i) x[i] = input(caravan_rank(), i, step);
    CHECK_RC(caravan_push_pull("plugin", x, N, CARAVAN_FLOAT32, 0));
    for (size_t i = 0; i < N; ++i) {
      float sum = 0, magnitude = 0;
      for (int r = 0; r < size; ++r) {
        sum += input(r, i, step);
        magnitude += fabsf(input(r, i, step));
      }
      if (fabsf(x[i] - sum) > magnitude / 128) {
        fprintf(stderr, "%s step %d element %zu: got %.9g, the sum is %.9g\n", type, step, i, x[i],
                sum);
        return 1;
      }
      inexact += x[i] != sum;
    }
  }
  free(x);
  if (inexact == 0) {
    fprintf(stderr, "%s: every result is the exact sum: was the tensor compressed?\n", type);
    return 1;
  }
  printf("%s: %zu of %d results rounded, all within 2^-7\n", type, inexact, 2 * N);
  return 0;
}

static int run_disagree(int rank) {
  const char* kv[] = {"byteps_compressor_type", "topk", "byteps_compressor_k",
                      rank == 1 ? "0.02" : "0.01"};
  static float x[N];
  CHECK_RC(declare("disagree", kv, 2));
  int rc = caravan_push_pull("disagree", x, N, CARAVAN_FLOAT32, 0);
  return expect(rc, CARAVAN_ERR_MISMATCH, "declare the tensor with the same parameters",
                "workers declaring different parameters");
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  CHECK_RC(caravan_init());
  int rank = caravan_rank(), size = caravan_size();
  int bad = 0;
  if (!strcmp(mode, "async")) {
    static const char* kv[] = {"byteps_compressor_type", "onebit"};
    bad = expect(declare("a", kv, 1), CARAVAN_ERR_CONFIG, "BYTEPS_ENABLE_ASYNC=1",
                 "compression in asynchronous mode");
  } else if (!strcmp(mode, "plugin") && argc > 2) {
    bad = run_plugin(argv[2], size);
  } else if (!strcmp(mode, "disagree")) {
    bad = run_disagree(rank);
  } else {
    bad = run_onebit(rank, size) || run_topk(rank, size) || run_randomk(rank, size) ||
          run_small(rank, size) || run_errors();
  }
  int rc = caravan_shutdown();
  if (bad || rc != 0) return 1;
  printf("worker %d: compressed results as modelled\n", rank);
  return 0;
}
