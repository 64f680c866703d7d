/* SPDX-License-Identifier: BSD-3-Clause */
/* The watchdog's rule for uninterruptible calls (core/watchdog.h: blocking NCCL calls). A comm
 * whose backend has a device engine is watched under GMPI_TIMEOUT_ACTION=status too; there an
 * ordinary watched call is left alone (status mode polls host collectives), while an
 * uninterruptible call stuck past GMPI_TIMEOUT ends the process (exit 70) naming the call.
 * Registered to run under tests/expect_failure.sh, which wants the exit and the call's name:
 * exit 0 here means the stuck call was never ended; exit 1, the ordinary call was. No MPI. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <time.h>

#include "../src/core/comm.h"
#include "../src/core/watchdog.h"

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&t, &t) != 0)
    ;
}

int main(void) {
  static const gmpi_engine_ops_t device = {.name = "a device engine"};
  static struct gmpi_comm comm;
  comm.size = 1;
  comm.cfg.timeout_s = 0.2;
  comm.cfg.timeout_action = GMPI_TIMEOUT_STATUS;
  comm.device_engine.ops = &device;
  gmpi_watchdog_add(&comm);

  gmpi_watch_enter(&comm, "an ordinary watched call", 1);
  sleep_s(1.0); /* five timeouts: under status mode this must not end the process */
  gmpi_watch_exit(&comm);
  fprintf(stderr, "unit_watchdog: an ordinary call under status mode was left alone\n");

  gmpi_watch_enter_uninterruptible(&comm, "ncclAllReduce(stuck)", 8);
  sleep_s(5.0);
  fprintf(stderr, "unit_watchdog: FAIL: an uninterruptible call stuck for 5 s was not ended\n");
  return 0;
}
