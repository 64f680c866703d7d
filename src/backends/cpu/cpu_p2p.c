/* Point to point on host buffers. Natively MPI matches (source, tag, order) itself; messages
 * travel as bytes so one message may exceed INT_MAX elements. With GMPI_P2P=envelope or
 * GMPI_CHECK=1 the envelope engine matches instead (src/p2p), as it does on cuda. */
#include <stdlib.h>

#include "../../core/comm.h"
#include "../../core/dtype.h"
#include "../../core/error.h"
#include "../../core/request.h"
#include "../../mpi/mpi_check.h"
#include "../../mpi/types.h"
#include "../../p2p/envelope.h"
#include "cpu.h"

typedef struct {
  MPI_Request mpi;
  MPI_Datatype type; /* released when the request ends */
} cpu_req_t;

gmpi_status_t gmpi_cpu_p2p_post(gmpi_cpu_t *cpu, gmpi_request_t req) {
  if (cpu->env) return gmpi_env_post(cpu->env, req);
  const gmpi_p2p_args_t *a = &req->args;
  cpu_req_t *cr = calloc(1, sizeof(*cr));
  if (!cr) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for a request");
  int n;
  gmpi_status_t st = GMPI_SUCCESS;
  size_t bytes = a->count * gmpi_dtype_size(a->dtype);
  GMPI_CHECK_GOTO(gmpi_mpi_bytes_type(bytes, req->comm->cfg.max_chunk, &cr->type, &n), st,
                  free_req);
  if (a->dir == GMPI_P2P_SEND) {
    GMPI_MPI_CHECK_GOTO(MPI_Isend(a->buf, n, cr->type, a->peer, a->tag, cpu->data, &cr->mpi), st,
                        release_type);
  } else {
    int src = a->peer == GMPI_ANY_SOURCE ? MPI_ANY_SOURCE : a->peer;
    int tag = a->tag == GMPI_ANY_TAG ? MPI_ANY_TAG : a->tag;
    GMPI_MPI_CHECK_GOTO(MPI_Irecv(a->buf, n, cr->type, src, tag, cpu->data, &cr->mpi), st,
                        release_type);
  }
  req->be = cr;
  return GMPI_SUCCESS;
release_type:
  gmpi_mpi_type_release(&cr->type);
free_req:
  free(cr);
  return st;
}

static void release(gmpi_request_t req) {
  cpu_req_t *cr = req->be;
  gmpi_mpi_type_release(&cr->type);
  free(cr);
  req->be = NULL;
}

/* Fill the request's final status from MPI's. */
static void finish_recv(gmpi_request_t req, const MPI_Status *s, int rc) {
  size_t es = gmpi_dtype_size(req->args.dtype);
  req->status.source = s->MPI_SOURCE;
  req->status.tag = s->MPI_TAG;
  if (rc != MPI_SUCCESS) {
    req->result =
        gmpi_error(GMPI_ERR_TRUNCATE,
                   "irecv from rank %d tag %d: the message is longer than the receive "
                   "buffer of %zu %s elements",
                   s->MPI_SOURCE, s->MPI_TAG, req->args.count, gmpi_dtype_name(req->args.dtype));
    return;
  }
  MPI_Count bytes = 0;
  MPI_Get_elements_x(s, MPI_BYTE, &bytes);
  req->status.count = (size_t)bytes / es;
  if ((size_t)bytes % es)
    req->result =
        gmpi_error(GMPI_ERR_MISMATCH,
                   "irecv from rank %d tag %d: %lld bytes arrived, not a whole number of "
                   "%s elements (the sender used another dtype)",
                   s->MPI_SOURCE, s->MPI_TAG, (long long)bytes, gmpi_dtype_name(req->args.dtype));
}

gmpi_status_t gmpi_cpu_p2p_test(gmpi_cpu_t *cpu, gmpi_request_t req, int *done) {
  if (cpu->env) return gmpi_env_test(cpu->env, req, done);
  cpu_req_t *cr = req->be;
  MPI_Status s;
  int flag = 0;
  int rc = MPI_Test(&cr->mpi, &flag, &s);
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  if (rc != MPI_SUCCESS && cls != MPI_ERR_TRUNCATE) return gmpi_mpi_error(rc, "MPI_Test");
  if (!flag && rc == MPI_SUCCESS) {
    *done = 0;
    return GMPI_SUCCESS;
  }
  req->result = GMPI_SUCCESS;
  if (req->args.dir == GMPI_P2P_RECV) {
    finish_recv(req, &s, rc);
  } else {
    req->status = (gmpi_msg_status_t){req->args.peer, req->args.tag, req->args.count};
  }
  release(req);
  *done = 1;
  return GMPI_SUCCESS;
}

void gmpi_cpu_p2p_abandon(gmpi_cpu_t *cpu, gmpi_request_t req) {
  if (cpu->env) {
    gmpi_env_abandon(cpu->env, req);
    return;
  }
  cpu_req_t *cr = req->be;
  if (!cr) return;
  if (req->args.dir == GMPI_P2P_RECV) MPI_Cancel(&cr->mpi);
  MPI_Request_free(&cr->mpi);
  release(req);
}
