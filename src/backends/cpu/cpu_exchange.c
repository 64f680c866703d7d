/* gmpi_sendrecv in native mode between this rank and two others (core/p2p.c
 * gmpi_p2p_exchange): the receive and the send go straight to MPI and are tested together
 * until both end or GMPI_TIMEOUT passes -- no gmpi request, no engine state, no eager copy.
 * The send half completes with its transfer, as MPI_Sendrecv's does: gmpi's 16 KiB eager
 * promise is for gmpi_send and gmpi_isend (README; copying it cost 1.2-1.6x MPI_Sendrecv from
 * 512 B to 16 KiB, docs/performance.md). Message order is MPI's, as for every native send (one
 * communicator, post order). */
#include "../../core/comm.h"
#include "../../core/dtype.h"
#include "../../core/error.h"
#include "../../core/wait.h"
#include "../../mpi/mpi_check.h"
#include "../../mpi/types.h"
#include "cpu.h"
#include "cpu_native.h"

enum { RECV = 0, SEND = 1 };

typedef struct {
  MPI_Request mpi[2];   /* MPI_REQUEST_NULL once ended (or never posted) */
  MPI_Datatype type[2]; /* released at the end of the call: MPI keeps them alive as needed */
  int ended[2];
  cpu_recv_end_t end; /* how the receive ended */
} exchange_t;

int gmpi_cpu_p2p_can_exchange(const gmpi_cpu_t *cpu) { return cpu->env == NULL; }

static gmpi_status_t post_pair(gmpi_cpu_t *cpu, gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                               const gmpi_p2p_args_t *recv, exchange_t *x) {
  size_t limit = comm->cfg.max_chunk;
  int n[2];
  GMPI_CHECK(gmpi_mpi_bytes_type(recv->count * gmpi_dtype_size(recv->dtype), limit, &x->type[RECV],
                                 &n[RECV]));
  GMPI_CHECK(gmpi_mpi_bytes_type(send->count * gmpi_dtype_size(send->dtype), limit, &x->type[SEND],
                                 &n[SEND]));
  GMPI_MPI_CHECK(MPI_Irecv(recv->buf, n[RECV], x->type[RECV], recv->peer,
                           gmpi_cpu_mpi_tag(recv->tag, recv->dtype), cpu->data, &x->mpi[RECV]));
  GMPI_MPI_CHECK(MPI_Isend(send->buf, n[SEND], x->type[SEND], send->peer,
                           gmpi_cpu_mpi_tag(send->tag, send->dtype), cpu->data, &x->mpi[SEND]));
  return GMPI_SUCCESS;
}

/* Both ended: GMPI_SUCCESS; the deadline passed: GMPI_ERR_TIMEOUT (no message: the caller,
 * which knows the call, writes it). */
static gmpi_status_t wait_pair(gmpi_comm_t comm, exchange_t *x) {
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  for (;;) {
    if (!x->ended[RECV]) GMPI_CHECK(gmpi_cpu_test_one(&x->mpi[RECV], &x->ended[RECV], &x->end));
    if (!x->ended[SEND]) GMPI_CHECK(gmpi_cpu_test_one(&x->mpi[SEND], &x->ended[SEND], NULL));
    if (x->ended[RECV] && x->ended[SEND]) return GMPI_SUCCESS;
    if (gmpi_deadline_poll(&d)) return GMPI_ERR_TIMEOUT;
  }
}

/* What did not end is let go, as an abandoned request is: the receive cancelled, the send left
 * to MPI (docs/reliability.md: the caller's buffers stay in use after a timeout). */
static void let_go(exchange_t *x) {
  if (x->mpi[RECV] != MPI_REQUEST_NULL) MPI_Cancel(&x->mpi[RECV]);
  for (int i = 0; i < 2; i++) {
    if (x->mpi[i] != MPI_REQUEST_NULL) MPI_Request_free(&x->mpi[i]);
    gmpi_mpi_type_release(&x->type[i]);
  }
}

gmpi_status_t gmpi_cpu_p2p_exchange(gmpi_cpu_t *cpu, gmpi_comm_t comm, const gmpi_p2p_args_t *send,
                                    const gmpi_p2p_args_t *recv, gmpi_msg_status_t *status) {
  gmpi_cpu_detached_reap(cpu->native); /* as every native post does: the list stays short */
  exchange_t x = {.mpi = {MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                  .type = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL}};
  gmpi_status_t st = post_pair(cpu, comm, send, recv, &x);
  if (st == GMPI_SUCCESS) st = wait_pair(comm, &x);
  let_go(&x);
  if (st != GMPI_SUCCESS) return st;
  gmpi_msg_status_t got;
  st = gmpi_cpu_recv_result(recv, &x.end, &got);
  if (st == GMPI_SUCCESS && status) *status = got;
  return st;
}
