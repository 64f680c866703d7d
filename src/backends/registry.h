/* SPDX-License-Identifier: BSD-3-Clause */
/* The engines and backends built into this library, which gmpi_init wires into each comm:
 * only the layer that makes comms (src/api) names them; core is handed them (comm->host_engine,
 * comm->ops, core/select.h's choice among the backends). */
#ifndef GMPI_BACKENDS_REGISTRY_H
#define GMPI_BACKENDS_REGISTRY_H

#include "../core/backend.h"

/* Best first: GMPI_BACKEND=auto takes the first that probes usable. */
extern const gmpi_backend_list_t gmpi_backends_built;

/* The host engine every comm has: MPI (src/host/host_engine.c). */
extern const gmpi_engine_ops_t gmpi_engine_mpi;

#endif
