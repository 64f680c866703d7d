/* SPDX-License-Identifier: BSD-3-Clause */
/* The watchdog under GMPI_TIMEOUT_ACTION=status (core/watchdog.h): there only calls nothing
 * can interrupt are marked (a blocking NCCL call, MPI_Comm_split), so calls that leave within
 * GMPI_TIMEOUT are left alone and one stuck past it ends the job (code 70) naming it, through
 * the end_job of the comm's out-of-band channel (core/oob.h; here one that says the code).
 * Registered to run under tests/expect_failure.sh, which wants the exit, the call's name and
 * the code: exit 0 here means the stuck call was never ended. No MPI. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "../src/core/comm.h"
#include "../src/core/watchdog.h"

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&t, &t) != 0)
    ;
}

/* The comm's out-of-band end_job: what the launcher would be told, then this process ends. */
static void end_job(int code) __attribute__((noreturn));
static void end_job(int code) {
  fprintf(stderr, "unit_watchdog: the job ended with code %d\n", code);
  _exit(code);
}

int main(void) {
  static const gmpi_oob_ops_t oob = {.end_job = end_job};
  static struct gmpi_comm comm;
  comm.oob.ops = &oob;
  comm.size = 1;
  comm.cfg.timeout_s = 0.2;
  comm.cfg.timeout_action = GMPI_TIMEOUT_STATUS;
  gmpi_watchdog_add(&comm);

  for (int i = 0; i < 20; i++) { /* 20 calls of 50 ms: each leaves within the timeout */
    gmpi_watch_enter(&comm.watch, "a call that leaves in time", 1);
    sleep_s(0.05);
    gmpi_watch_exit(&comm.watch);
  }
  fprintf(stderr, "unit_watchdog: calls that left in time were left alone\n");

  gmpi_watch_enter(&comm.watch, "ncclAllReduce(stuck)", 8);
  sleep_s(5.0);
  fprintf(stderr, "unit_watchdog: FAIL: a call stuck for 5 s was not ended\n");
  return 0;
}
