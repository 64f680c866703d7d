/* SPDX-License-Identifier: BSD-3-Clause */
#include "bootstrap.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/log.h"
#include "mpi_check.h"
#include "oob.h"

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int started_mpi; /* gmpi called MPI_Init_thread */
static int live_comms;  /* gmpi comms alive in this process */
static int had_failure; /* a comm failed: MPI_Finalize might never return */

static int thread_level = MPI_THREAD_SINGLE; /* what MPI granted, known at gmpi's first start */

void gmpi_mpi_end_job(int code) {
  fflush(stderr);
  if (thread_level == MPI_THREAD_MULTIPLE) PMPI_Abort(MPI_COMM_WORLD, code);
  _exit(code); /* mpiexec sees a rank end without MPI_Finalize and ends the others */
}

int gmpi_mpi_concurrent_threads(void) {
  pthread_mutex_lock(&mpi_lock);
  int multiple = thread_level == MPI_THREAD_MULTIPLE;
  pthread_mutex_unlock(&mpi_lock);
  return multiple;
}

gmpi_status_t gmpi_mpi_start(void) {
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&mpi_lock);
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (finalized) {
    st = gmpi_error(GMPI_ERR_STATE, "MPI is already finalized; gmpi cannot start it again");
    goto unlock;
  }
  if (!initialized) {
    int provided = 0;
    GMPI_MPI_CHECK_GOTO(PMPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided), st, unlock);
    started_mpi = 1;
  }
  PMPI_Query_thread(&thread_level);
  live_comms++;
unlock:
  pthread_mutex_unlock(&mpi_lock);
  return st;
}

/* MPI_Finalize waits for every process of the job, without bound. A polled barrier over
 * MPI_COMM_WORLD first (every process that gmpi started MPI in finalizes through here):
 * when it completes every process is inside this finalize, so MPI_Finalize returns promptly;
 * when a rank does not arrive within the timeout, MPI_Finalize is skipped as after a failure. */
static gmpi_status_t finalize_mpi(double timeout_s) {
  gmpi_status_t st = gmpi_mpi_arrive(MPI_COMM_WORLD, timeout_s,
                                     "the arrival of every process before MPI_Finalize");
  if (st != GMPI_SUCCESS) {
    gmpi_log(GMPI_LOG_WARN, "MPI_Finalize skipped: a process did not arrive; exit with a "
                            "non-zero status (or call MPI_Abort)");
    return st;
  }
  PMPI_Finalize();
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_mpi_stop(int after_failure, double timeout_s) {
  gmpi_status_t st = GMPI_SUCCESS;
  pthread_mutex_lock(&mpi_lock);
  had_failure |= after_failure;
  if (--live_comms == 0 && started_mpi) {
    if (had_failure)
      gmpi_log(GMPI_LOG_WARN, "MPI_Finalize skipped: a communicator failed and its peers may be "
                              "gone; exit with a non-zero status (or call MPI_Abort)");
    else
      st = finalize_mpi(timeout_s);
    started_mpi = 0;
  }
  pthread_mutex_unlock(&mpi_lock);
  return st;
}

void gmpi_mpi_host_name(char *host, size_t host_len) {
  if (gethostname(host, host_len) != 0) snprintf(host, host_len, "unknown-host");
  host[host_len - 1] = '\0';
}

int gmpi_mpi_tag_ub_full(void) {
  int *ub = NULL, flag = 0;
  PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  return flag && ub ? *ub : 32767;
}

/* Native messages keep 3 bits of the MPI tag for the element size (src/host/host_native.h). */
int gmpi_mpi_tag_ub(void) { return gmpi_mpi_tag_ub_full() >> 3; }

const char *gmpi_mpi_version(void) {
  static char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  PMPI_Get_library_version(version, &len);
  version[strcspn(version, ",\n")] = '\0';
  return version;
}
