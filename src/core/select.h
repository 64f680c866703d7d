/* SPDX-License-Identifier: BSD-3-Clause */
/* Choosing the backend from GMPI_BACKEND and what this process can use. Local: gmpi_init
 * then makes all ranks agree. */
#ifndef GMPI_CORE_SELECT_H
#define GMPI_CORE_SELECT_H

#include "backend.h"
#include "config.h"

/* Local choice among built for this rank of comm (its cfg, host and local rank are set). */
gmpi_status_t gmpi_backend_select(gmpi_comm_t comm, const gmpi_backend_list_t *built,
                                  const gmpi_backend_ops_t **ops);
/* The backend of that kind in built, or NULL. */
const gmpi_backend_ops_t *gmpi_backend_by_kind(const gmpi_backend_list_t *built,
                                               gmpi_backend_t kind);

#endif
