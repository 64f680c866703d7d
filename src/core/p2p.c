#include "comm.h"
#include "dtype.h"
#include "error.h"
#include "ops.h"

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
