#include "comm.h"
#include "dtype.h"
#include "error.h"
#include "ops.h"
#include "progress.h"
#include "wait.h"

static gmpi_status_t check_peer(gmpi_comm_t comm, const gmpi_p2p_args_t *a) {
  int is_recv = a->dir == GMPI_P2P_RECV;
  const char *name = is_recv ? "source" : "dest";
  if ((is_recv && a->peer == GMPI_ANY_SOURCE) || a->peer == GMPI_PROC_NULL) return GMPI_SUCCESS;
  if (a->peer < 0 || a->peer >= comm->size)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument '%s' = %d is out of range [0, %d)%s", name,
                      a->peer, comm->size,
                      is_recv ? ", not GMPI_ANY_SOURCE and not GMPI_PROC_NULL"
                              : " and not GMPI_PROC_NULL");
  return GMPI_SUCCESS;
}

static gmpi_status_t check_tag(gmpi_comm_t comm, const gmpi_p2p_args_t *a) {
  int is_recv = a->dir == GMPI_P2P_RECV;
  if (is_recv && a->tag == GMPI_ANY_TAG) return GMPI_SUCCESS;
  if (a->tag < 0 || a->tag > comm->tag_ub)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'tag' = %d is out of range [0, %d]%s", a->tag,
                      comm->tag_ub, is_recv ? " and not GMPI_ANY_TAG" : "");
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_p2p_validate(gmpi_comm_t comm, const gmpi_p2p_args_t *a) {
  if (!gmpi_dtype_in_range(a->dtype))
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'dtype' = %d is not a gmpi_dtype_t",
                      (int)a->dtype);
  size_t bytes;
  GMPI_CHECK(gmpi_count_bytes(a->count, a->dtype, 1, "count", &bytes));
  if (bytes && !a->buf)
    return gmpi_error(GMPI_ERR_INVALID_ARG, "argument 'buf' is NULL with count %zu > 0", a->count);
  GMPI_CHECK(check_peer(comm, a));
  return check_tag(comm, a);
}

/* One look on each engine of the comm: host messages, then device ones. */
static gmpi_status_t probe_engines(gmpi_comm_t comm, int source, int tag, int *flag,
                                   gmpi_msg_status_t *status) {
  const gmpi_engine_t *engines[2] = {&comm->host_engine, &comm->device_engine};
  *flag = 0;
  for (int i = 0; i < 2 && !*flag; i++)
    if (engines[i]->ops && engines[i]->ops->p2p_probe)
      GMPI_CHECK(engines[i]->ops->p2p_probe(engines[i]->state, comm, source, tag, flag, status));
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_p2p_probe(gmpi_comm_t comm, int source, int tag, int wait, int *flag,
                             gmpi_msg_status_t *status) {
  gmpi_p2p_args_t a = {.dir = GMPI_P2P_RECV, .dtype = GMPI_BYTE, .peer = source, .tag = tag};
  GMPI_CHECK(check_peer(comm, &a));
  GMPI_CHECK(check_tag(comm, &a));
  if (comm->rec)
    return gmpi_error(GMPI_ERR_STATE, "cannot probe while the communicator records a plan");
  gmpi_msg_status_t found = {GMPI_PROC_NULL, GMPI_ANY_TAG, 0};
  int got = source == GMPI_PROC_NULL; /* MPI: a probe of PROC_NULL finds an empty message */
  gmpi_deadline_t d;
  gmpi_deadline_start(&d, comm->cfg.timeout_s);
  while (!got) {
    GMPI_CHECK(probe_engines(comm, source, tag, &got, &found));
    if (got) break;
    if (!wait) {
      gmpi_progress_all(); /* an iprobe loop is the caller's wait */
      break;
    }
    if (gmpi_deadline_poll(&d))
      return gmpi_error(GMPI_ERR_TIMEOUT,
                        "no message from %s%d with tag %d arrived within GMPI_TIMEOUT = %g s "
                        "(nothing was received; the communicator stays usable)",
                        source == GMPI_ANY_SOURCE ? "any source " : "rank ", source, tag,
                        comm->cfg.timeout_s);
  }
  if (flag) *flag = got;
  if (got && status) *status = found;
  return GMPI_SUCCESS;
}
