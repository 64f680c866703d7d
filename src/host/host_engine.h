/* SPDX-License-Identifier: BSD-3-Clause */
/* The host engine, for the layer that makes comms (src/api): MPI moves host memory on every
 * comm, whatever its backend. No MPI type shows here. */
#ifndef GMPI_HOST_ENGINE_H
#define GMPI_HOST_ENGINE_H

#include "../core/engine.h"

/* Collective over comm (its oob and core fields set): fill both halves of *engine (its state
 * is the engine's own). On failure *engine is empty. */
gmpi_status_t gmpi_host_engine_open(gmpi_comm_t comm, gmpi_engine_t *engine);
/* Release it; collective when the comm is healthy, local after a failure. Empty after. */
void gmpi_host_engine_close(gmpi_comm_t comm, gmpi_engine_t *engine);

#endif
