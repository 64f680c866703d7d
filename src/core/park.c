/* SPDX-License-Identifier: BSD-3-Clause */
#include "park.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void **parked;
static size_t n_parked, cap_parked;

void gmpi_park(void *ptr) {
  if (!ptr) return;
  pthread_mutex_lock(&lock);
  if (n_parked == cap_parked) {
    size_t cap = cap_parked ? 2 * cap_parked : 16;
    void **grown = realloc(parked, cap * sizeof(*grown));
    if (grown) {
      parked = grown;
      cap_parked = cap;
    }
  }
  if (n_parked < cap_parked) parked[n_parked++] = ptr; /* else: held only by MPI, as before */
  pthread_mutex_unlock(&lock);
}
