/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded waiting (core/wait.h) without MPI: a wait drives every registered engine at its
 * first poll and one in GMPI_DRIVE_OTHERS_EVERY after (its own test drives the engine it waits
 * on); a passive wait (work that completes alone, the device's) at one call in
 * GMPI_PASSIVE_TESTS, so it tests its work that often between progress passes -- and its
 * deadline still ends it. An engine that says it is idle (core/progress.h) is skipped. */
#include <stdint.h>
#include <string.h>

#include "unit_util.h"

#include "../src/core/progress.h"
#include "../src/core/wait.h"

static int passes, idle_passes;

static gmpi_status_t count_pass(void *ctx) {
  (void)ctx;
  passes++;
  return GMPI_SUCCESS;
}

static gmpi_status_t count_idle_pass(void *ctx) {
  (void)ctx;
  idle_passes++;
  return GMPI_SUCCESS;
}

/* Many engines (a program's comms): only those whose flag is on are driven, across the map's
 * words; a freed slot is reused, and a flag set before registration counts. */
enum { MANY = 300 };
static int driven[MANY + 1];
static gmpi_progress_flag_t flags[MANY + 1];

static gmpi_status_t count_driven(void *ctx) {
  driven[(int)(intptr_t)ctx]++;
  return GMPI_SUCCESS;
}

static void expect_driven(const int *which, int n) {
  memset(driven, 0, sizeof driven);
  gmpi_progress_all();
  int want[MANY + 1] = {0};
  for (int i = 0; i < n; i++)
    want[which[i]] = 1;
  for (int i = 0; i <= MANY; i++)
    CHECK_EQ(driven[i], want[i]);
}

static void many_engines(void) {
  for (int i = 0; i < MANY; i++)
    CHECK_EQ(gmpi_progress_add(count_driven, (void *)(intptr_t)i, &flags[i]), GMPI_SUCCESS);
  expect_driven(NULL, 0); /* all idle */
  gmpi_progress_want(&flags[0], 1);
  gmpi_progress_want(&flags[70], 1);
  gmpi_progress_want(&flags[MANY - 1], 1);
  expect_driven((int[]){0, 70, MANY - 1}, 3);
  gmpi_progress_want(&flags[70], 0);
  gmpi_progress_want(&flags[MANY - 1], 1); /* said twice: still once */
  expect_driven((int[]){0, MANY - 1}, 2);
  gmpi_progress_remove(count_driven, (void *)(intptr_t)0); /* wanted when removed */
  expect_driven((int[]){MANY - 1}, 1);
  gmpi_progress_want(&flags[0], 0);    /* after removal: remembered only */
  gmpi_progress_want(&flags[MANY], 1); /* before registration */
  CHECK_EQ(gmpi_progress_add(count_driven, (void *)(intptr_t)MANY, &flags[MANY]), GMPI_SUCCESS);
  expect_driven((int[]){MANY - 1, MANY}, 2);
  for (int i = 1; i <= MANY; i++)
    gmpi_progress_remove(count_driven, (void *)(intptr_t)i);
  CHECK_EQ(gmpi_progress_needed(), 0);
}

int main(void) {
  gmpi_progress_flag_t wanted = {0};
  CHECK_EQ(gmpi_progress_add(count_pass, NULL, NULL), GMPI_SUCCESS);
  CHECK_EQ(gmpi_progress_add(count_idle_pass, NULL, &wanted), GMPI_SUCCESS);
  gmpi_deadline_t d;

  gmpi_deadline_start(&d, 0); /* no deadline: only the progress counted */
  CHECK_EQ(gmpi_deadline_poll(&d), 0);
  CHECK_EQ(passes, 1); /* the first poll drives the engines */
  for (unsigned i = 1; i < 16 * GMPI_DRIVE_OTHERS_EVERY; i++)
    CHECK_EQ(gmpi_deadline_poll(&d), 0);
  CHECK_EQ(passes, 16);     /* then one poll in GMPI_DRIVE_OTHERS_EVERY */
  CHECK_EQ(idle_passes, 0); /* never the idle one */

  gmpi_progress_want(&wanted, 1); /* busy: driven with the others */
  passes = 0;
  gmpi_deadline_start(&d, 0);
  for (unsigned i = 0; i < 4 * GMPI_DRIVE_OTHERS_EVERY; i++)
    CHECK_EQ(gmpi_deadline_poll(&d), 0);
  CHECK_EQ(passes, 4);
  CHECK_EQ(idle_passes, 4);
  gmpi_progress_remove(count_idle_pass, NULL);

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
  many_engines();
  if (failures) return 1;
  printf("unit_wait: PASS\n");
  return 0;
}
