/* SPDX-License-Identifier: BSD-3-Clause */
/* The out-of-band channel over MPI: fills in core's struct (core/oob.h) and installs it on each
 * comm. The layer that makes comms (src/api) creates and frees channels here, and the MPI
 * engine (src/host) reaches the MPI communicator and the polled waits; core calls only
 * through the struct and never includes this header. */
#ifndef GMPI_MPI_OOB_H
#define GMPI_MPI_OOB_H

#include <mpi.h>

#include "../core/oob.h"

struct gmpi_oob_state {
  MPI_Comm comm; /* gmpi's own duplicate: never mixed with the user's traffic */
};

/* Duplicate mpi_comm (collective) into a new channel, polled within timeout_s (0: no bound);
 * *out gets the MPI implementation and its state. */
gmpi_status_t gmpi_oob_create(MPI_Comm mpi_comm, double timeout_s, gmpi_oob_t *out);
/* Duplicate the channel of comm (collective, polled within its GMPI_TIMEOUT; a timeout fails
 * comm). */
gmpi_status_t gmpi_oob_dup(gmpi_comm_t comm, gmpi_oob_t *out);
/* Split the channel of comm (collective); *out = {0} (no ops) for color GMPI_UNDEFINED. */
gmpi_status_t gmpi_oob_split(gmpi_comm_t comm, int color, int key, gmpi_oob_t *out);
/* Free the channel (one with no state: nothing); local (no communication) when the comm has
 * failed. */
void gmpi_oob_destroy(gmpi_oob_t *oob, int failed);
MPI_Comm gmpi_oob_mpi_comm(gmpi_comm_t comm);

/* The control channels' half of the struct (channel.c), as core/oob.h describes each. */
gmpi_status_t gmpi_mpi_chan_open(gmpi_comm_t comm, gmpi_chan_t **out);
void gmpi_mpi_chan_close(gmpi_chan_t *chan, int failed);
gmpi_status_t gmpi_mpi_chan_send(gmpi_chan_t *chan, int dest, const void *buf, size_t bytes,
                                 gmpi_chan_op_t **op);
gmpi_status_t gmpi_mpi_chan_recv(gmpi_chan_t *chan, void *buf, size_t max_bytes,
                                 gmpi_chan_op_t **op);
gmpi_status_t gmpi_mpi_chan_send_data(gmpi_chan_t *chan, int dest, int tag, const void *buf,
                                      size_t bytes, gmpi_chan_op_t **op);
gmpi_status_t gmpi_mpi_chan_recv_data(gmpi_chan_t *chan, int src, int tag, void *buf, size_t bytes,
                                      gmpi_chan_op_t **op);
gmpi_status_t gmpi_mpi_chan_test(gmpi_chan_op_t **op, int *done, int *source, size_t *bytes);
int gmpi_mpi_chan_cancel(gmpi_chan_op_t *op);

/* Wait for MPI requests under comm's deadline, driving every registered engine meanwhile
 * (blocking in MPI_Waitall only when GMPI_TIMEOUT=0 and no engine is registered). On timeout:
 * GMPI_ERR_TIMEOUT naming what, and comm is marked failed. statuses may be
 * MPI_STATUSES_IGNORE. */
gmpi_status_t gmpi_mpi_wait(gmpi_comm_t comm, int n, MPI_Request *reqs, MPI_Status *statuses,
                            const char *what);
/* MPI_Comm_idup of parent, waited like gmpi_mpi_arrive (polled, driving every engine, within
 * timeout_s; 0: no bound). Every communicator gmpi makes by duplication comes from here, so
 * that no rank blocks inside MPI's constructor waiting for a rank that stopped. */
gmpi_status_t gmpi_mpi_dup(MPI_Comm parent, double timeout_s, const char *what, MPI_Comm *out);
/* n MPI requests waited the same way; GMPI_ERR_TIMEOUT naming what (no comm is failed). */
gmpi_status_t gmpi_mpi_wait_for(int n, MPI_Request *reqs, double timeout_s, const char *what);
/* A barrier on mc waited the same way (polled, driving every engine), for collectives that
 * have no gmpi comm yet (gmpi_init). GMPI_ERR_TIMEOUT after timeout_s (0: never). */
gmpi_status_t gmpi_mpi_arrive(MPI_Comm mc, double timeout_s, const char *what);

#endif
