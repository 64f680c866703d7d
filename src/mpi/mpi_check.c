/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI failures as gmpi errors (the macros of mpi_check.h call this): MPI's own text and error
 * class; a truncated MPI receive is gmpi's GMPI_ERR_TRUNCATE. */
#include "mpi_check.h"

#include <ctype.h>
#include <string.h>

#include "../core/error.h"

/* The MPI function a failed call's source text names, e.g. "MPI_Allreduce" for
 * "MPI_COLL(c, MPI_Allreduce, MPI_Iallreduce, s, d, ...)": the user's message names MPI's
 * function, never gmpi's internal macros or arguments. The text itself when none is found. */
static const char *mpi_function_name(const char *call, char *name, size_t len) {
  for (const char *p = strstr(call, "MPI_"); p; p = strstr(p + 4, "MPI_")) {
    if (!isupper((unsigned char)p[4]) || !islower((unsigned char)p[5])) continue; /* MPI_COLL */
    size_t n = 0;
    while (n + 1 < len && (isalnum((unsigned char)p[n]) || p[n] == '_')) {
      name[n] = p[n];
      n++;
    }
    name[n] = '\0';
    return name;
  }
  return call;
}

gmpi_status_t gmpi_mpi_error(int rc, const char *call) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0, cls = MPI_ERR_OTHER;
  PMPI_Error_class(rc, &cls);
  PMPI_Error_string(rc, text, &len);
  gmpi_status_t st = cls == MPI_ERR_TRUNCATE ? GMPI_ERR_TRUNCATE : GMPI_ERR_MPI;
  char name[64];
  return gmpi_error(st, "%s failed: %s (MPI error class %d)",
                    mpi_function_name(call, name, sizeof(name)), text, cls);
}
