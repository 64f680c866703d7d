/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded waiting: every loop that waits for another rank checks a deadline built from
 * GMPI_TIMEOUT, and backs off so a waiting rank does not starve the others of a core. */
#ifndef GMPI_CORE_WAIT_H
#define GMPI_CORE_WAIT_H

typedef struct {
  double deadline; /* monotonic seconds; 0 = never; < 0: the clock not read yet (wait.c) */
  double timeout;  /* the configured timeout, for messages */
  unsigned spins;  /* polls so far, for back-off and cheap clock checks */
  unsigned tests;  /* gmpi_deadline_poll_passive's calls so far */
} gmpi_deadline_t;

double gmpi_now(void);
void gmpi_deadline_start(gmpi_deadline_t *d, double timeout_s);
/* 1 once the deadline has passed. Also drives every registered engine (core/progress.h) --
 * at the first poll and one in GMPI_DRIVE_OTHERS_EVERY after it while it spins hot, since the
 * caller's own test drives the engine it waits on -- and yields the core after many fruitless
 * polls. */
#define GMPI_DRIVE_OTHERS_EVERY 4u
int gmpi_deadline_poll(gmpi_deadline_t *d);
/* The same for a wait on work that completes without gmpi's progress (the device's): the
 * deadline is checked and the engines driven at one call in GMPI_PASSIVE_TESTS, so that the
 * work is tested often between progress passes. A pass can cost several tests (the envelope
 * engine asks MPI for envelopes), and a wait that tests only once per pass ends that much
 * later than the work. Once the wait yields the core (a long one), every call is a whole
 * gmpi_deadline_poll again. */
#define GMPI_PASSIVE_TESTS 8u
int gmpi_deadline_poll_passive(gmpi_deadline_t *d);

#endif
