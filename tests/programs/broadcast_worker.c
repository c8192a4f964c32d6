/* A worker written against caravan.h alone, in C: broadcasts tensors of
 * every dtype and size from a root that changes every round, and checks
 * that every worker ends with the root's bytes exactly. The root's values
 * are arbitrary bit patterns (signalling NaNs with payloads, -0.0, the
 * integers' extremes): a broadcast made as a sum with zeros would turn
 * -0.0 into +0.0 and quiet the NaNs, so only a real relay passes.
 * Usage: broadcast_worker [rounds] [max_elements]
 *        broadcast_worker misuse   (the errors of caravan_broadcast)
 * Exit 0 when every value was right; 1 with a message naming the first
 * wrong byte otherwise. */
#include <caravan/caravan.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "values.h"

/* Element 0 of every float tensor is -0.0 and element 1 a signalling NaN
 * with a payload, where the tensor has room. */
static void plant_specials(uint8_t* p, size_t count, caravan_dtype t) {
  if (t == CARAVAN_FLOAT32 && count >= 2) {
    uint32_t v[2] = {0x80000000u, 0x7F800123u};
    memcpy(p, v, sizeof v);
  } else if (t == CARAVAN_FLOAT64 && count >= 2) {
    uint64_t v[2] = {0x8000000000000000ull, 0x7FF0000000000ABCull};
    memcpy(p, v, sizeof v);
  } else if ((t == CARAVAN_FLOAT16 || t == CARAVAN_BFLOAT16) && count >= 2) {
    uint16_t v[2] = {0x8000u, (uint16_t)(t == CARAVAN_FLOAT16 ? 0x7C05u : 0x7F85u)};
    memcpy(p, v, sizeof v);
  }
}

static void fill(uint8_t* p, size_t count, caravan_dtype t, int rank, int round, size_t tensor) {
  size_t bytes = count * caravan_dtype_size(t);
  for (size_t i = 0; i < bytes; ++i) p[i] = pattern_byte(rank, round, tensor, i);
  plant_specials(p, count, t);
}

static int misuse(int rank, int size) {
  int failures = 0;
  float v[8] = {0};
  int rc = caravan_broadcast("bad.root", v, 8, CARAVAN_FLOAT32, size, 0);
  if (rc != CARAVAN_ERR_INVALID_ARGUMENT) {
    printf("FAIL root %d: rc %d\n", size, rc);
    ++failures;
  } else {
    printf("ok root out of range: %s\n", caravan_strerror(rc));
  }
  rc = caravan_broadcast("bad.root", v, 8, CARAVAN_FLOAT32, -1, 0);
  if (rc != CARAVAN_ERR_INVALID_ARGUMENT) {
    printf("FAIL root -1: rc %d\n", rc);
    ++failures;
  } else {
    printf("ok negative root: %s\n", caravan_strerror(rc));
  }
  rc = caravan_push_pull("summed.then.broadcast", v, 8, CARAVAN_FLOAT32, 0);
  if (rc != 0) {
    printf("FAIL push_pull: %s\n", caravan_strerror(rc));
    ++failures;
  }
  rc = caravan_broadcast("summed.then.broadcast", v, 8, CARAVAN_FLOAT32, 0, 0);
  if (rc != CARAVAN_ERR_MISMATCH) {
    printf("FAIL broadcast of a push_pull tensor: rc %d\n", rc);
    ++failures;
  } else {
    printf("ok kind mismatch: %s\n", caravan_strerror(rc));
  }
  /* The job carries on: a good broadcast after the errors. */
  for (int i = 0; i < 8; ++i) v[i] = rank == 0 ? (float)(i + 100) : -1.0f;
  rc = caravan_broadcast("good.after.errors", v, 8, CARAVAN_FLOAT32, 0, 0);
  if (rc != 0 || v[7] != 107.0f) {
    printf("FAIL broadcast after errors: rc %d (%s), v[7] %g\n", rc, caravan_strerror(rc), v[7]);
    ++failures;
  }
  printf("worker %d of %d: %d failures\n", rank, size, failures);
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  int rc = caravan_init();
  if (rc != 0) {
    fprintf(stderr, "caravan_init: %s\n", caravan_strerror(rc));
    return 1;
  }
  int rank = caravan_rank(), size = caravan_size();
  if (argc > 1 && strcmp(argv[1], "misuse") == 0) {
    int status = misuse(rank, size);
    rc = caravan_shutdown();
    if (rc != 0) fprintf(stderr, "caravan_shutdown: %s\n", caravan_strerror(rc));
    return status != 0 || rc != 0;
  }
  int rounds = argc > 1 ? atoi(argv[1]) : 2;
  size_t max_elements = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 1000000;
  const size_t sizes[] = {1, 3, 1000, 100003, 1000000};
  enum { kSizes = sizeof sizes / sizeof sizes[0], kTensors = kSizes * CARAVAN_DTYPE_COUNT };
  uint8_t* data[kTensors];
  uint8_t* expected = NULL;
  size_t largest = 0;
  for (size_t j = 0; j < kTensors; ++j) {
    size_t count = sizes[j % kSizes] < max_elements ? sizes[j % kSizes] : max_elements;
    size_t bytes = count * caravan_dtype_size((caravan_dtype)(j / kSizes));
    data[j] = malloc(bytes);
    if (bytes > largest) largest = bytes;
  }
  expected = malloc(largest);
  int failures = 0;
  for (int round = 0; round < rounds && failures == 0; ++round) {
    caravan_handle handles[kTensors];
    for (size_t j = 0; j < kTensors; ++j) {
      caravan_dtype t = (caravan_dtype)(j / kSizes);
      size_t count = sizes[j % kSizes] < max_elements ? sizes[j % kSizes] : max_elements;
      int root = (int)((size_t)round + j) % size;
      fill(data[j], count, t, rank, round, j);
      char name[64];
      snprintf(name, sizeof name, "bcast.%s.%zu.%zu", caravan_dtype_name(t), j % kSizes, count);
      rc = caravan_broadcast_async(name, data[j], count, t, root, (int)j, &handles[j]);
      if (rc != 0) {
        fprintf(stderr, "worker %d: broadcast of %s: %s\n", rank, name, caravan_strerror(rc));
        return 1;
      }
    }
    for (size_t j = 0; j < kTensors; ++j) {
      caravan_dtype t = (caravan_dtype)(j / kSizes);
      size_t count = sizes[j % kSizes] < max_elements ? sizes[j % kSizes] : max_elements;
      int root = (int)((size_t)round + j) % size;
      rc = caravan_wait(handles[j]);
      if (rc != 0) {
        fprintf(stderr, "worker %d: broadcast of tensor %zu: %s\n", rank, j, caravan_strerror(rc));
        return 1;
      }
      fill(expected, count, t, root, round, j);
      size_t bytes = count * caravan_dtype_size(t);
      for (size_t i = 0; i < bytes; ++i) {
        if (data[j][i] != expected[i]) {
          fprintf(stderr,
                  "worker %d round %d: %s tensor of %zu elements from root %d: byte %zu is 0x%02x, "
                  "the root's is 0x%02x\n",
                  rank, round, caravan_dtype_name(t), count, root, i, data[j][i], expected[i]);
          ++failures;
          break;
        }
      }
    }
  }
  for (size_t j = 0; j < kTensors; ++j) free(data[j]);
  free(expected);
  rc = caravan_shutdown();
  if (rc != 0) {
    fprintf(stderr, "caravan_shutdown: %s\n", caravan_strerror(rc));
    return 1;
  }
  if (failures) return 1;
  printf("worker %d of %d: %d rounds of %d broadcasts, every byte the root's\n", rank, size, rounds,
         (int)kTensors);
  return 0;
}
