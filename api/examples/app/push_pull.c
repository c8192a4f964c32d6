/* The smallest Caravan application: every worker push_pulls a tensor of
 * ones and checks that each element is the number of workers. */
#include <caravan/caravan.h>
#include <stdio.h>

int main(void) {
  float grad[1024];
  for (int i = 0; i < 1024; ++i) grad[i] = 1.0f;
  int rc = caravan_init();
  if (rc != 0) {
    fprintf(stderr, "caravan_init: %s\n", caravan_strerror(rc));
    return 1;
  }
  rc = caravan_push_pull("grad", grad, 1024, CARAVAN_FLOAT32, 0);
  if (rc != 0) {
    fprintf(stderr, "caravan_push_pull: %s\n", caravan_strerror(rc));
    return 1;
  }
  for (int i = 0; i < 1024; ++i)
    if (grad[i] != (float)caravan_size()) {
      fprintf(stderr, "grad[%d] = %g, expected %d\n", i, grad[i], caravan_size());
      return 1;
    }
  printf("worker %d of %d: the sum is right\n", caravan_rank(), caravan_size());
  return caravan_shutdown() == 0 ? 0 : 1;
}
