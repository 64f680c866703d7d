/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded waiting: every loop that waits for another rank checks a deadline built from
 * GMPI_TIMEOUT, and backs off so a waiting rank does not starve the others of a core. */
#ifndef GMPI_CORE_WAIT_H
#define GMPI_CORE_WAIT_H

typedef struct {
  double deadline; /* monotonic seconds; 0 = never; < 0: the clock not read yet (wait.c) */
  double timeout;  /* the configured timeout, for messages */
  unsigned spins;  /* polls so far, for back-off and cheap clock checks */
} gmpi_deadline_t;

double gmpi_now(void);
void gmpi_deadline_start(gmpi_deadline_t *d, double timeout_s);
/* 1 once the deadline has passed. Also drives every registered engine (core/progress.h) and
 * yields the core after many fruitless polls. */
int gmpi_deadline_poll(gmpi_deadline_t *d);

#endif
