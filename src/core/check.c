#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "error.h"
#include "oob.h"
#include "ops.h"

typedef struct {
  uint64_t seq;
  uint64_t count;
  int32_t kind, dtype, op, root;
} coll_sig_t;

static coll_sig_t make_sig(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  coll_sig_t s;
  memset(&s, 0, sizeof(s)); /* padding too: signatures are compared as records */
  s.seq = comm->coll_seq;
  s.count = a->count;
  s.kind = (int32_t)a->kind;
  s.dtype = (int32_t)a->dtype;
  s.op = gmpi_coll_has_op(a->kind) ? (int32_t)a->op : -1;
  s.root = gmpi_coll_has_root(a->kind) ? a->root : -1;
  return s;
}

static int describe_sig(char *buf, size_t len, int rank, const coll_sig_t *s) {
  return snprintf(buf, len, "rank %d: #%llu %s count %llu dtype %s op %s root %d", rank,
                  (unsigned long long)s->seq, gmpi_coll_name((gmpi_coll_kind_t)s->kind),
                  (unsigned long long)s->count, gmpi_dtype_name((gmpi_dtype_t)s->dtype),
                  s->op < 0 ? "-" : gmpi_op_name((gmpi_op_t)s->op), s->root);
}

/* Names of the fields in which b differs from a, comma separated. */
static void differing_fields(const coll_sig_t *a, const coll_sig_t *b, char *out, size_t len) {
  out[0] = '\0';
  const struct {
    const char *name;
    int differs;
  } f[] = {{"sequence", a->seq != b->seq},  {"operation", a->kind != b->kind},
           {"count", a->count != b->count}, {"dtype", a->dtype != b->dtype},
           {"op", a->op != b->op},          {"root", a->root != b->root}};
  for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
    if (f[i].differs)
      snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? ", " : "", f[i].name);
}

gmpi_status_t gmpi_check_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  coll_sig_t mine = make_sig(comm, a);
  coll_sig_t *all = calloc((size_t)comm->size, sizeof(*all));
  if (!all)
    return gmpi_error(GMPI_ERR_NO_MEMORY, "GMPI_CHECK: no memory for %d signatures", comm->size);
  gmpi_status_t st = gmpi_oob_allgather(comm, &mine, all, sizeof(mine));
  if (st != GMPI_SUCCESS) goto free_all;
  for (int r = 1; r < comm->size; r++) {
    if (!memcmp(&all[0], &all[r], sizeof(mine))) continue;
    char first[160], other[160], fields[96];
    describe_sig(first, sizeof(first), 0, &all[0]);
    describe_sig(other, sizeof(other), r, &all[r]);
    differing_fields(&all[0], &all[r], fields, sizeof(fields));
    st = gmpi_error(GMPI_ERR_MISMATCH,
                    "GMPI_CHECK: ranks 0 and %d called different collectives (%s differ): %s; "
                    "%s. Nothing was moved.",
                    r, fields, first, other);
    break;
  }
free_all:
  free(all);
  return st;
}
