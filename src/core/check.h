/* SPDX-License-Identifier: BSD-3-Clause */
/* GMPI_CHECK=1: ranks agree on each collective's signature before running it. */
#ifndef GMPI_CORE_CHECK_H
#define GMPI_CORE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "gmpi.h"

/* What every rank must agree on for one collective: checked before each call under
 * GMPI_CHECK (check.c) and for each recorded collective when a plan compiles (plan_check.c).
 * op and root are -1 where the collective has none. No padding: compared as records. */
typedef struct {
  uint64_t count;
  int32_t kind, dtype, op, root;
} gmpi_coll_sig_t;

gmpi_coll_sig_t gmpi_coll_sig(gmpi_coll_kind_t kind, uint64_t count, gmpi_dtype_t dtype,
                              gmpi_op_t op, int root);
/* "allreduce count 8 dtype float32 op sum root -1" into buf. */
void gmpi_coll_sig_describe(char *buf, size_t len, const gmpi_coll_sig_t *s);
/* The names of the fields in which b differs from a ("count, dtype"), appended to out. */
void gmpi_coll_sig_diff(const gmpi_coll_sig_t *a, const gmpi_coll_sig_t *b, char *out, size_t len);

/* GMPI_ERR_MISMATCH on every rank when any rank's (kind, count, dtype, op, root, sequence, or
 * memory: device when the device engine runs it) differs; nothing is moved, so the comm stays
 * usable. */
gmpi_status_t gmpi_check_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a, int device);
/* A rank that refused its own collective (its arguments) still takes part in that exchange,
 * blocking (it pairs with the others' nonblocking form too), so that the others get
 * GMPI_ERR_MISMATCH naming it, not a wait until GMPI_TIMEOUT; it returns its own error. 1 when
 * some other rank did not refuse it: that rank went ahead with the call. */
int gmpi_check_coll_refused(gmpi_comm_t comm, const gmpi_coll_args_t *a);

/* The same for a nonblocking collective, without waiting: the signature exchange runs beside
 * the data (waiting for every rank to start would deadlock legal programs). Test it until
 * *done: then *check is released and the result is GMPI_SUCCESS or GMPI_ERR_MISMATCH (data may
 * have moved by then). The v-variants' pairwise counts are not compared here. */
typedef struct gmpi_coll_check gmpi_coll_check_t;
gmpi_status_t gmpi_check_coll_start(gmpi_comm_t comm, const gmpi_coll_args_t *a, int device,
                                    gmpi_coll_check_t **check);
gmpi_status_t gmpi_check_coll_test(gmpi_comm_t comm, gmpi_coll_check_t **check, int *done);
void gmpi_check_coll_abandon(gmpi_coll_check_t *check);

#endif
