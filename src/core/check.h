/* GMPI_CHECK=1: ranks agree on each collective's signature before running it. */
#ifndef GMPI_CORE_CHECK_H
#define GMPI_CORE_CHECK_H

#include "backend.h"
#include "gmpi.h"

/* GMPI_ERR_MISMATCH on every rank when any rank's (kind, count, dtype, op, root, sequence)
 * differs; nothing is moved, so the comm stays usable. */
gmpi_status_t gmpi_check_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a);

#endif
