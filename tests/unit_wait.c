/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded waiting (core/wait.h) without MPI: a wait drives every registered engine at each
 * poll; a passive wait (work that completes alone, the device's) at one call in
 * GMPI_PASSIVE_TESTS, so it tests its work that often between progress passes -- and its
 * deadline still ends it. */
#include "unit_util.h"

#include "../src/core/progress.h"
#include "../src/core/wait.h"

static int passes;

static gmpi_status_t count_pass(void *ctx) {
  (void)ctx;
  passes++;
  return GMPI_SUCCESS;
}

int main(void) {
  CHECK_EQ(gmpi_progress_add(count_pass, NULL), GMPI_SUCCESS);
  gmpi_deadline_t d;

  gmpi_deadline_start(&d, 0); /* no deadline: only the progress counted */
  for (int i = 0; i < 64; i++)
    CHECK_EQ(gmpi_deadline_poll(&d), 0);
  CHECK_EQ(passes, 64); /* every poll drives the engines */

  passes = 0;
  gmpi_deadline_start(&d, 0);
  for (unsigned i = 0; i < 8 * GMPI_PASSIVE_TESTS; i++)
    CHECK_EQ(gmpi_deadline_poll_passive(&d), 0);
  CHECK_EQ(passes, 8); /* one pass per GMPI_PASSIVE_TESTS tests, never none */

  /* A deadline of 10 ms ends a passive wait, soon after (the clock is read every 64th pass). */
  gmpi_deadline_start(&d, 0.01);
  double started = gmpi_now();
  int expired = 0;
  for (long i = 0; i < 100000000L && !expired; i++)
    expired = gmpi_deadline_poll_passive(&d);
  double took = gmpi_now() - started;
  CHECK_EQ(expired, 1);
  CHECK_EQ(took >= 0.01, 1);
  CHECK_EQ(took < 2.0, 1);
  if (took >= 2.0) fprintf(stderr, "unit_wait: the passive wait ended after %.3f s\n", took);

  gmpi_progress_remove(count_pass, NULL);
  if (failures) return 1;
  printf("unit_wait: PASS\n");
  return 0;
}
