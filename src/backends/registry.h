/* SPDX-License-Identifier: BSD-3-Clause */
/* The backends built into this library, which gmpi_init chooses among for each comm: only the
 * layer that makes comms (src/api) names them; core is handed them (comm->ops, core/select.h's
 * choice among the backends). The host engine every comm has is src/host's
 * (host/host_engine.h). */
#ifndef GMPI_BACKENDS_REGISTRY_H
#define GMPI_BACKENDS_REGISTRY_H

#include "../core/backend.h"

/* Best first: GMPI_BACKEND=auto takes the first that probes usable. */
extern const gmpi_backend_list_t gmpi_backends_built;

#endif
