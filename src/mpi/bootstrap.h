/* SPDX-License-Identifier: BSD-3-Clause */
/* Bringing MPI up and down for gmpi_init/gmpi_finalize, and where this rank runs. */
#ifndef GMPI_MPI_BOOTSTRAP_H
#define GMPI_MPI_BOOTSTRAP_H

#include <mpi.h>

#include "gmpi.h"

/* Initialise MPI when nobody has (counted: MPI is finalized with the last gmpi comm). */
gmpi_status_t gmpi_mpi_start(void);
/* One gmpi comm is gone; finalize MPI if gmpi started it and this was the last comm. After a
 * failure (a rank may be lost) MPI_Finalize could wait forever, so it is skipped for good and
 * the process should exit non-zero. Before MPI_Finalize every process arrives (polled, within
 * timeout_s): GMPI_ERR_TIMEOUT, and MPI_Finalize skipped, when one does not. */
gmpi_status_t gmpi_mpi_stop(int after_failure, double timeout_s);
/* End the whole job now, with exit code code (the out-of-band end_job, core/oob.h): MPI_Abort
 * when MPI allows this thread to call it (MPI_THREAD_MULTIPLE), else the process exits and the
 * launcher ends the job. Never returns. */
void gmpi_mpi_end_job(int code) __attribute__((noreturn));
/* Whether MPI granted MPI_THREAD_MULTIPLE (the out-of-band concurrent_threads, core/oob.h). */
int gmpi_mpi_concurrent_threads(void);
/* This host's name (for locality and messages), always terminated. */
void gmpi_mpi_host_name(char *host, size_t host_len);
/* MPI_TAG_UB of this MPI library. */
int gmpi_mpi_tag_ub(void);
/* MPI_TAG_UB itself (GMPI_TAGS_FULL comms use every tag). */
int gmpi_mpi_tag_ub_full(void);
/* "Open MPI v4.1.4, ..." first line of MPI_Get_library_version. */
const char *gmpi_mpi_version(void);

#endif
