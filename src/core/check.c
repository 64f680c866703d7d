/* SPDX-License-Identifier: BSD-3-Clause */
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "error.h"
#include "oob.h"
#include "ops.h"
#include "park.h"

gmpi_coll_sig_t gmpi_coll_sig(gmpi_coll_kind_t kind, uint64_t count, gmpi_dtype_t dtype,
                              gmpi_op_t op, int root) {
  /* The v-variants' counts differ between ranks by design: not compared here. */
  return (gmpi_coll_sig_t){.count = gmpi_coll_varies(kind) ? 0 : count,
                           .kind = (int32_t)kind,
                           .dtype = (int32_t)dtype,
                           .op = gmpi_coll_has_op(kind) ? (int32_t)op : -1,
                           .root = gmpi_coll_has_root(kind) ? root : -1};
}

void gmpi_coll_sig_describe(char *buf, size_t len, const gmpi_coll_sig_t *s) {
  char count[48];
  /* The v-variants carry a digest of the counts every rank must pass alike, or nothing. */
  if (gmpi_coll_varies((gmpi_coll_kind_t)s->kind))
    snprintf(count, sizeof(count), "recvcounts digest %016llx", (unsigned long long)s->count);
  else
    snprintf(count, sizeof(count), "count %llu", (unsigned long long)s->count);
  snprintf(buf, len, "%s %s dtype %s op %s root %d", gmpi_coll_name((gmpi_coll_kind_t)s->kind),
           count, gmpi_dtype_name((gmpi_dtype_t)s->dtype),
           s->op < 0 ? "-" : gmpi_op_name((gmpi_op_t)s->op), s->root);
}

void gmpi_coll_sig_diff(const gmpi_coll_sig_t *a, const gmpi_coll_sig_t *b, char *out, size_t len) {
  const struct {
    const char *name;
    int differs;
  } f[] = {{"operation", a->kind != b->kind},
           {"count", a->count != b->count},
           {"dtype", a->dtype != b->dtype},
           {"op", a->op != b->op},
           {"root", a->root != b->root}};
  for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
    if (f[i].differs)
      snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? ", " : "", f[i].name);
}

/* GMPI_CHECK's record: the signature, the comm's collective sequence number, and the engine's
 * memory: a collective runs on one engine, so ranks that pass host memory and ranks that pass
 * device memory to it would each wait for the others in their own engine. No padding. */
typedef struct {
  uint64_t seq;
  gmpi_coll_sig_t sig;
  int32_t device;  /* its buffers are device memory (the device engine runs it) */
  int32_t refused; /* the rank refused its call (its own arguments): it runs nothing */
} checked_call_t;
_Static_assert(sizeof(checked_call_t) == 8 + sizeof(gmpi_coll_sig_t) + 8,
               "GMPI_CHECK's record is compared as bytes: no padding");

static void describe_call(char *buf, size_t len, int rank, const checked_call_t *c) {
  char sig[128];
  gmpi_coll_sig_describe(sig, sizeof(sig), &c->sig);
  snprintf(buf, len, "rank %d: #%llu %s on %s memory", rank, (unsigned long long)c->seq, sig,
           c->device ? "device" : "host");
}

/* FNV-1a of an array every rank must pass alike (allgatherv's and reduce_scatterv's
 * recvcounts): carried in the signature's count, so a difference shows as "count". */
static uint64_t counts_hash(const size_t *counts, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; i++)
    h = (h ^ (uint64_t)counts[i]) * 1099511628211ull;
  return h;
}

/* The v-variants: what each rank sends to each other must be what that rank receives from it
 * (MPI's rule). Every rank's per-peer counts are gathered, so every rank reaches the same
 * verdict; O(ranks^2) memory, which GMPI_CHECK accepts as a debugging aid. */
static gmpi_status_t check_pairs(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  size_t n = (size_t)comm->size;
  uint64_t *mine = malloc(2 * n * sizeof(*mine)), *all = malloc(2 * n * n * sizeof(*all));
  gmpi_status_t st = GMPI_SUCCESS;
  if (!mine || !all) {
    st = gmpi_error(GMPI_ERR_NO_MEMORY, "GMPI_CHECK: no memory for %zu pair counts", 2 * n * n);
    goto free_counts;
  }
  for (size_t p = 0; p < n; p++) {
    gmpi_coll_pair_t q = gmpi_coll_pair(comm, a, (int)p);
    mine[2 * p] = q.send_count;
    mine[2 * p + 1] = q.recv_count;
  }
  st = comm->oob.ops->allgather(comm, mine, all, 2 * n * sizeof(*mine));
  for (size_t from = 0; st == GMPI_SUCCESS && from < n; from++)
    for (size_t to = 0; to < n; to++) {
      uint64_t sent = all[from * 2 * n + 2 * to], expected = all[to * 2 * n + 2 * from + 1];
      if (sent == expected || from == to) continue;
      st = gmpi_error(GMPI_ERR_MISMATCH,
                      "GMPI_CHECK: %s: rank %zu sends %llu elements to rank %zu, which expects "
                      "%llu from it (counts must match pairwise). Nothing was moved.",
                      gmpi_coll_name(a->kind), from, (unsigned long long)sent, to,
                      (unsigned long long)expected);
      break;
    }
free_counts:
  free(mine);
  free(all);
  return st;
}

static checked_call_t checked_call(gmpi_comm_t comm, const gmpi_coll_args_t *a, int device) {
  checked_call_t mine = {comm->coll_seq, gmpi_coll_sig(a->kind, a->count, a->dtype, a->op, a->root),
                         device, 0};
  /* (a refused call may lack its counts: a NULL array is what it was refused for) */
  if ((a->kind == GMPI_COLL_ALLGATHERV || a->kind == GMPI_COLL_REDUCE_SCATTERV) && a->recvcounts)
    mine.sig.count = counts_hash(a->recvcounts, comm->size);
  return mine;
}

static const char *started_note(int started) {
  return started ? "The nonblocking collective had started, so its buffers may have been "
                   "written; the communicator is now failed."
                 : "Nothing was moved.";
}

/* Every rank's call the same as rank 0's, or GMPI_ERR_MISMATCH describing the first that is
 * not. started: the collective is already moving data (a nonblocking one). */
static gmpi_status_t compare_calls(gmpi_comm_t comm, const checked_call_t *all, int started) {
  for (int r = 0; r < comm->size; r++) {
    if (!all[r].refused) continue;
    char call[200];
    describe_call(call, sizeof(call), r, &all[r]);
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "GMPI_CHECK: rank %d refused its call (%s): its own error says why. %s", r,
                      call, started_note(started));
  }
  for (int r = 1; r < comm->size; r++) {
    if (!memcmp(&all[0], &all[r], sizeof(all[0]))) continue;
    char first[200], other[200], fields[96] = "";
    describe_call(first, sizeof(first), 0, &all[0]);
    describe_call(other, sizeof(other), r, &all[r]);
    if (all[0].seq != all[r].seq) snprintf(fields, sizeof(fields), "sequence");
    gmpi_coll_sig_diff(&all[0].sig, &all[r].sig, fields, sizeof(fields));
    if (all[0].device != all[r].device)
      snprintf(fields + strlen(fields), sizeof(fields) - strlen(fields), "%smemory kind",
               fields[0] ? ", " : "");
    return gmpi_error(GMPI_ERR_MISMATCH,
                      "GMPI_CHECK: ranks 0 and %d called different collectives (%s differ): %s; "
                      "%s. %s",
                      r, fields, first, other, started_note(started));
  }
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_check_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a, int device) {
  checked_call_t mine = checked_call(comm, a, device);
  checked_call_t *all = calloc((size_t)comm->size, sizeof(*all));
  if (!all)
    return gmpi_error(GMPI_ERR_NO_MEMORY, "GMPI_CHECK: no memory for %d signatures", comm->size);
  gmpi_status_t st = comm->oob.ops->allgather(comm, &mine, all, sizeof(mine));
  if (st == GMPI_SUCCESS) st = compare_calls(comm, all, 0);
  free(all);
  int pairs = gmpi_coll_varies(a->kind) && a->kind != GMPI_COLL_REDUCE_SCATTERV;
  return st == GMPI_SUCCESS && pairs ? check_pairs(comm, a) : st;
}

int gmpi_check_coll_refused(gmpi_comm_t comm, const gmpi_coll_args_t *a) {
  checked_call_t mine = checked_call(comm, a, 0);
  mine.refused = 1;
  checked_call_t *all = calloc((size_t)comm->size, sizeof(*all));
  int went_ahead = 0;
  /* Its own error is what the rank returns; the first description of a call is the one kept,
   * so a failure of this exchange does not hide it. */
  if (all && comm->oob.ops->allgather(comm, &mine, all, sizeof(mine)) == GMPI_SUCCESS)
    for (int r = 0; r < comm->size; r++)
      went_ahead |= !all[r].refused;
  free(all);
  return went_ahead;
}

/* A nonblocking collective's check: its signature exchange, in flight beside the data. */
struct gmpi_coll_check {
  checked_call_t mine;
  checked_call_t *all;
  gmpi_oob_op_t *op;
  const gmpi_oob_ops_t *oob; /* the comm's, which started op */
};

gmpi_status_t gmpi_check_coll_start(gmpi_comm_t comm, const gmpi_coll_args_t *a, int device,
                                    gmpi_coll_check_t **out) {
  gmpi_coll_check_t *c = calloc(1, sizeof(*c));
  if (c) c->all = calloc((size_t)comm->size, sizeof(*c->all));
  if (!c || !c->all) {
    free(c);
    return gmpi_error(GMPI_ERR_NO_MEMORY, "GMPI_CHECK: no memory for %d signatures", comm->size);
  }
  c->mine = checked_call(comm, a, device);
  c->oob = comm->oob.ops;
  gmpi_status_t st = c->oob->iallgather(comm, &c->mine, c->all, sizeof(c->mine), &c->op);
  if (st != GMPI_SUCCESS) {
    free(c->all);
    free(c);
    return st;
  }
  *out = c;
  return GMPI_SUCCESS;
}

gmpi_status_t gmpi_check_coll_test(gmpi_comm_t comm, gmpi_coll_check_t **check, int *done) {
  gmpi_coll_check_t *c = *check;
  GMPI_CHECK(c->oob->test(&c->op, done));
  if (!*done) return GMPI_SUCCESS;
  gmpi_status_t st = compare_calls(comm, c->all, 1);
  free(c->all);
  free(c);
  *check = NULL;
  return st;
}

void gmpi_check_coll_abandon(gmpi_coll_check_t *check) {
  if (!check) return;
  check->oob->abandon(check->op); /* MPI may still write check->all and read check->mine */
  gmpi_park(check->all);
  gmpi_park(check);
}
