/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI failures as gmpi errors (the macros of mpi_check.h call this): MPI's own text and error
 * class; a truncated MPI receive is gmpi's GMPI_ERR_TRUNCATE. */
#include "mpi_check.h"

#include "../core/error.h"

gmpi_status_t gmpi_mpi_error(int rc, const char *call) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0, cls = MPI_ERR_OTHER;
  PMPI_Error_class(rc, &cls);
  PMPI_Error_string(rc, text, &len);
  gmpi_status_t st = cls == MPI_ERR_TRUNCATE ? GMPI_ERR_TRUNCATE : GMPI_ERR_MPI;
  return gmpi_error(st, "%s failed: %s (MPI error class %d)", call, text, cls);
}
