/* A worker written against caravan.h alone, in C: reduce-scatters and
 * allgathers (C API 1.4) and all-to-alls (1.7) of tensors of every dtype
 * and several sizes, every round, and checks each result exactly. A reduce-scatter must leave this
 * worker's shard summed and the rest as it was (or summed, as machines of
 * several worker processes do, caravan.h); an allgather must leave
 * every shard's bytes exactly as its worker gave them, arbitrary bit
 * patterns (-0.0, signalling NaNs with payloads) included, which a gather
 * made as a sum with zeros would change; so must an all-to-all leave every
 * block from its sender, and `send` as it was.
 * Usage: sharded_worker [rounds] [max_elements]
 *        sharded_worker misuse   (the errors of the three calls)
 * Exit 0 when every value was right; 1 with a message naming the first
 * wrong element or byte otherwise. */
#include <caravan/caravan.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "values.h"

static int small(int rank, int round, size_t i) {
  return (int)((size_t)rank + (size_t)round + i) % 3;
}

static int misuse(int rank, int size) {
  int failures = 0;
  float v[8] = {0}, g_spare[8];
  if (size > 1) {
    size_t odd = (size_t)size + 1;
    int rc = caravan_reduce_scatter("bad.count", v, odd, CARAVAN_FLOAT32, 0);
    if (rc != CARAVAN_ERR_INVALID_ARGUMENT) {
      printf("FAIL count %zu: rc %d\n", odd, rc);
      ++failures;
    } else {
      printf("ok count: %s\n", caravan_strerror(rc));
    }
  }
  int rc = caravan_push_pull("summed.then.gathered", v, 8, CARAVAN_FLOAT32, 0);
  if (rc != 0) {
    printf("FAIL push_pull: %s\n", caravan_strerror(rc));
    ++failures;
  }
  rc = caravan_allgather("summed.then.gathered", v, 8, CARAVAN_FLOAT32, 0);
  if (rc != CARAVAN_ERR_MISMATCH) {
    printf("FAIL allgather of a push_pull tensor: rc %d\n", rc);
    ++failures;
  } else {
    printf("ok kind mismatch: %s\n", caravan_strerror(rc));
  }
  rc = caravan_alltoall("a2a.overlap", v, v + 2, 4, CARAVAN_FLOAT32, 0);
  if (rc != CARAVAN_ERR_INVALID_ARGUMENT) {
    printf("FAIL alltoall of overlapping buffers: rc %d\n", rc);
    ++failures;
  } else {
    printf("ok overlap: %s\n", caravan_strerror(rc));
  }
  rc = caravan_alltoall("summed.then.gathered", v, g_spare, 8, CARAVAN_FLOAT32, 0);
  if (rc != CARAVAN_ERR_MISMATCH) {
    printf("FAIL alltoall of a push_pull tensor: rc %d\n", rc);
    ++failures;
  } else {
    printf("ok alltoall kind mismatch: %s\n", caravan_strerror(rc));
  }
  const char* which[] = {"send", "recv"};
  for (int k = 0; k < 2; ++k) {
    rc = caravan_alltoall("a2a.null", k == 0 ? NULL : v, k == 1 ? NULL : g_spare, 8,
                          CARAVAN_FLOAT32, 0);
    if (rc != CARAVAN_ERR_INVALID_ARGUMENT || !strstr(caravan_strerror(rc), which[k])) {
      printf("FAIL alltoall with a NULL %s: rc %d, %s\n", which[k], rc, caravan_strerror(rc));
      ++failures;
    } else {
      printf("ok NULL %s: %s\n", which[k], caravan_strerror(rc));
    }
  }
  /* The job carries on: a good allgather after the errors. */
  float g[64];
  size_t n = (size_t)size * 8;
  for (size_t i = 0; i < n; ++i) g[i] = i / 8 == (size_t)rank ? (float)i : -1.0f;
  rc = caravan_allgather("good.after.errors", g, n, CARAVAN_FLOAT32, 0);
  for (size_t i = 0; rc == 0 && i < n; ++i)
    if (g[i] != (float)i) {
      printf("FAIL allgather after errors: element %zu is %g\n", i, g[i]);
      ++failures;
      break;
    }
  if (rc != 0) {
    printf("FAIL allgather after errors: %s\n", caravan_strerror(rc));
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
    int status = size <= 8 ? misuse(rank, size) : 1;
    rc = caravan_shutdown();
    if (rc != 0) fprintf(stderr, "caravan_shutdown: %s\n", caravan_strerror(rc));
    return status != 0 || rc != 0;
  }
  int rounds = argc > 1 ? atoi(argv[1]) : 2;
  size_t max_elements = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 1000000;
  /* Elements per shard; the tensor holds one shard a worker. */
  const size_t shards[] = {1, 7, 33337, 250000};
  enum { kSizes = sizeof shards / sizeof shards[0], kTensors = kSizes * CARAVAN_DTYPE_COUNT };
  uint8_t* rs[kTensors];
  uint8_t* ag[kTensors];
  uint8_t* a2a_send[kTensors];
  uint8_t* a2a_recv[kTensors];
  size_t counts[kTensors];
  for (size_t j = 0; j < kTensors; ++j) {
    size_t shard = shards[j % kSizes];
    while (shard > 1 && shard * (size_t)size > max_elements) shard /= 2;
    counts[j] = shard * (size_t)size;
    size_t bytes = counts[j] * caravan_dtype_size((caravan_dtype)(j / kSizes));
    rs[j] = malloc(bytes);
    ag[j] = malloc(bytes);
    a2a_send[j] = malloc(bytes);
    a2a_recv[j] = malloc(bytes);
  }
  int failures = 0;
  for (int round = 0; round < rounds && failures == 0; ++round) {
    caravan_handle h_rs[kTensors], h_ag[kTensors], h_a2a[kTensors];
    for (size_t j = 0; j < kTensors; ++j) {
      caravan_dtype t = (caravan_dtype)(j / kSizes);
      size_t count = counts[j], shard = count / (size_t)size, es = caravan_dtype_size(t);
      for (size_t i = 0; i < count; ++i) store_value(rs[j], i, t, small(rank, round, i));
      memset(ag[j], 0xA5, count * es); /* not this worker's: overwritten */
      for (size_t i = 0; i < shard * es; ++i)
        ag[j][(size_t)rank * shard * es + i] = pattern_byte(rank, round, j, i);
      /* Block p of what this worker sends is for worker p. */
      for (size_t i = 0; i < count * es; ++i)
        a2a_send[j][i] =
            pattern_byte(rank, round, j + 1000 * (i / (shard * es) + 1), i % (shard * es));
      memset(a2a_recv[j], 0x5A, count * es);
      char name[64];
      snprintf(name, sizeof name, "rs.%s.%zu", caravan_dtype_name(t), count);
      rc = caravan_reduce_scatter_async(name, rs[j], count, t, (int)j, &h_rs[j]);
      if (rc == 0) {
        snprintf(name, sizeof name, "ag.%s.%zu", caravan_dtype_name(t), count);
        rc = caravan_allgather_async(name, ag[j], count, t, (int)j, &h_ag[j]);
      }
      if (rc == 0) {
        snprintf(name, sizeof name, "a2a.%s.%zu", caravan_dtype_name(t), count);
        rc = caravan_alltoall_async(name, a2a_send[j], a2a_recv[j], count, t, (int)j, &h_a2a[j]);
      }
      if (rc != 0) {
        fprintf(stderr, "worker %d: %s: %s\n", rank, name, caravan_strerror(rc));
        return 1;
      }
    }
    for (size_t j = 0; j < kTensors; ++j) {
      caravan_dtype t = (caravan_dtype)(j / kSizes);
      size_t count = counts[j], shard = count / (size_t)size, es = caravan_dtype_size(t);
      rc = caravan_wait(h_rs[j]);
      int rc2 = caravan_wait(h_ag[j]);
      int rc3 = caravan_wait(h_a2a[j]);
      if (rc != 0 || rc2 != 0 || rc3 != 0) {
        fprintf(stderr, "worker %d: tensor %zu: %s\n", rank, j,
                caravan_strerror(rc != 0    ? rc
                                 : rc2 != 0 ? rc2
                                            : rc3));
        return 1;
      }
      uint8_t want[8], sum[8];
      for (size_t i = 0; i < count && !failures; ++i) {
        int v = 0;
        for (int w = 0; w < size; ++w) v += small(w, round, i);
        store_value(sum, 0, t, v);
        /* Other shards: as given, or (machines of several processes) summed. */
        if (i / shard != (size_t)rank) {
          v = small(rank, round, i);
          if (memcmp(sum, rs[j] + i * es, es) == 0) continue;
        }
        store_value(want, 0, t, v);
        if (memcmp(want, rs[j] + i * es, es) != 0) {
          fprintf(
              stderr,
              "worker %d round %d: reduce_scatter of %s[%zu]: element %zu is wrong (want %d%s)\n",
              rank, round, caravan_dtype_name(t), count, i, v,
              i / shard == (size_t)rank ? ", the sum" : ", as it was or the sum");
          ++failures;
        }
      }
      for (size_t i = 0; i < count * es && !failures; ++i) {
        int owner = (int)(i / (shard * es));
        uint8_t b = pattern_byte(owner, round, j, i % (shard * es));
        if (ag[j][i] != b) {
          fprintf(stderr,
                  "worker %d round %d: allgather of %s[%zu]: byte %zu (worker %d's shard) is "
                  "0x%02x, not 0x%02x\n",
                  rank, round, caravan_dtype_name(t), count, i, owner, ag[j][i], b);
          ++failures;
        }
      }
      /* Block r of the result: worker r's block for this worker. */
      for (size_t i = 0; i < count * es && !failures; ++i) {
        int from = (int)(i / (shard * es));
        uint8_t b = pattern_byte(from, round, j + 1000 * ((size_t)rank + 1), i % (shard * es));
        uint8_t sent =
            pattern_byte(rank, round, j + 1000 * (i / (shard * es) + 1), i % (shard * es));
        if (a2a_recv[j][i] != b || a2a_send[j][i] != sent) {
          fprintf(stderr,
                  "worker %d round %d: alltoall of %s[%zu]: byte %zu (from worker %d) is 0x%02x, "
                  "not 0x%02x, or send's 0x%02x changed\n",
                  rank, round, caravan_dtype_name(t), count, i, from, a2a_recv[j][i], b,
                  a2a_send[j][i]);
          ++failures;
        }
      }
    }
  }
  for (size_t j = 0; j < kTensors; ++j) {
    free(rs[j]);
    free(ag[j]);
    free(a2a_send[j]);
    free(a2a_recv[j]);
  }
  rc = caravan_shutdown();
  if (rc != 0) {
    fprintf(stderr, "caravan_shutdown: %s\n", caravan_strerror(rc));
    return 1;
  }
  if (failures) return 1;
  printf(
      "worker %d of %d: %d rounds of %d reduce_scatters, allgathers and alltoalls, every value "
      "right\n",
      rank, size, rounds, (int)kTensors);
  return 0;
}
