/* SPDX-License-Identifier: BSD-3-Clause */
/* The flight record (core/flight.h): a ring of the last operations of a comm, each started and
 * ended. With room for 3 (a ring of 4 slots), 10 operations leave the last ones, their states
 * and statuses, and an end of an operation already overwritten changes nothing. A record that
 * keeps nothing (GMPI_FLIGHT_RECORDS=0, or freed) still numbers operations and takes their
 * starts and ends without a ring of its own: recording tests nothing on a call's path. */
#include <string.h>

#include "../src/core/flight.h"
#include "unit_util.h"

static const gmpi_flight_entry_t *slot(const gmpi_flight_t *f, uint64_t seq) {
  return &f->ring[seq & f->mask];
}

int main(void) {
  gmpi_flight_t f;
  CHECK_EQ(gmpi_flight_init(&f, 3), GMPI_SUCCESS);
  CHECK_EQ(f.cap, 3);
  CHECK_EQ(f.mask, 3);
  uint64_t first = 0, last = 0;
  for (int i = 0; i < 10; i++) {
    uint64_t seq = gmpi_flight_start(&f, "op", (size_t)i, i, -1);
    if (i == 0) first = seq;
    last = seq;
    if (i < 9) gmpi_flight_end(&f, seq, i == 8 ? GMPI_ERR_TIMEOUT : GMPI_SUCCESS);
  }
  CHECK_EQ(first, 1);
  CHECK_EQ(last, 10);
  CHECK_EQ(slot(&f, 10)->seq, 10); /* started, not ended */
  CHECK_EQ(slot(&f, 10)->state, GMPI_FLIGHT_STARTED);
  CHECK_EQ(slot(&f, 10)->count, 9);
  CHECK_EQ(slot(&f, 9)->state, GMPI_FLIGHT_FAILED);
  CHECK_EQ(slot(&f, 9)->status, GMPI_ERR_TIMEOUT);
  CHECK_EQ(slot(&f, 8)->state, GMPI_FLIGHT_DONE);
  CHECK_EQ(strcmp(slot(&f, 8)->what, "op"), 0);
  gmpi_flight_end(&f, first, GMPI_ERR_MISMATCH); /* overwritten long ago: ignored */
  CHECK_EQ(slot(&f, first)->seq, 9);
  CHECK_EQ(slot(&f, first)->status, GMPI_ERR_TIMEOUT);
  gmpi_flight_dump(&f, "unit test"); /* prints at info level only: here nothing */
  gmpi_flight_free(&f);

  /* Freed: operations still take their numbers and land in the one slot kept for nothing. */
  CHECK_EQ(f.cap, 0);
  uint64_t seq = gmpi_flight_start(&f, "after free", 1, 0, 0);
  CHECK_EQ(seq, 11);
  gmpi_flight_end(&f, seq, GMPI_SUCCESS);
  CHECK_EQ(f.ring == &f.none, 1);
  gmpi_flight_dump(&f, "unit test");

  /* Keeping nothing from the start: no ring allocated. */
  gmpi_flight_t none;
  CHECK_EQ(gmpi_flight_init(&none, 0), GMPI_SUCCESS);
  CHECK_EQ(none.cap, 0);
  CHECK_EQ(none.ring == &none.none, 1);
  for (int i = 0; i < 5; i++)
    gmpi_flight_end(&none, gmpi_flight_start(&none, "op", 0, -1, -1), GMPI_SUCCESS);
  CHECK_EQ(none.next_seq, 6);
  gmpi_flight_free(&none);

  printf("unit_flight: %d failures\n", failures);
  return failures ? 1 : 0;
}
