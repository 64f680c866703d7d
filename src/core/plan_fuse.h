/* SPDX-License-Identifier: BSD-3-Clause */
/* Plan fusion: runs of small collectives a plan records back to back become one collective
 * over a packed buffer at replay (see plan_fuse.c). */
#ifndef GMPI_CORE_PLAN_FUSE_H
#define GMPI_CORE_PLAN_FUSE_H

#include <stdint.h>

#include "plan.h"

/* The most collectives in one run, a collective's largest size to be fused (an allgather's
 * input, a reduce_scatter's output), a run's largest packed size. */
#define GMPI_FUSE_MAX_STEPS  255
#define GMPI_FUSE_STEP_BYTES ((size_t)256 << 10)
#define GMPI_FUSE_RUN_BYTES  ((size_t)8 << 20)

/* This rank's part, before the plan's steps are gathered: reach[i] for each collective step i
 * is how many collectives right before it may share a run with it here (their buffers and
 * its own are independent, their kinds fusable alike); 0 for other steps, or when fusing is
 * off (enabled 0). Linear in n (at most GMPI_FUSE_MAX_STEPS looks a step). */
void gmpi_plan_fuse_reach(const gmpi_plan_step_t *steps, int n, int nranks, int enabled,
                          uint8_t *reach);

/* Every rank, the same: with reach folded over the ranks (the least, per step) and fuse_next
 * set, form the runs and fill the steps' run fields and fuse_why. Every collective gets them,
 * also with reach NULL (no memory to fold it): then none fuses. */
void gmpi_plan_fuse_runs(gmpi_plan_step_t *steps, int n, int nranks, const uint8_t *reach);

/* For a run's first step: the collective that replays the whole run on a packed buffer of
 * run_count elements (allgather, reduce_scatter: a row of run_count per rank), in place:
 * sendbuf == recvbuf == packed (allgather: this rank's row holds its input; reduce_scatter:
 * the result lands in row 0, MPI's in-place form). */
gmpi_coll_args_t gmpi_plan_fused_args(const gmpi_plan_step_t *first, void *packed);

/* Bytes of the packed buffer of the run that starts at step first, at nranks ranks. */
size_t gmpi_plan_run_bytes(const gmpi_plan_step_t *first, int nranks);

/* One collective of a packed run: packing copies in to the packed buffer at offset (in each
 * row it fills, below), unpacking from there to out; NULL in (or out): that direction copies
 * nothing of it (a bcast's root unpacks nothing, the others pack nothing). */
typedef struct {
  const void *in;
  void *out;
  size_t offset, bytes; /* offset: in a row of the packed buffer, bytes */
} gmpi_plan_slice_t;

/* The rows of a run's packed buffer (row_bytes each: the run's elements) each direction copies:
 * rows from row. Where rows > 1 a collective's row r is at in + r x bytes (or out + r x bytes).
 * allreduce, bcast: one row each way; allgather: packs into this rank's row, unpacks every row;
 * reduce_scatter: packs every row, unpacks row 0. */
typedef struct {
  size_t row_bytes;
  int pack_rows, pack_row;
  int unpack_rows, unpack_row;
} gmpi_plan_rows_t;

gmpi_plan_rows_t gmpi_plan_run_rows(const gmpi_plan_step_t *first, int rank, int nranks);

/* The slices of the run that starts at step first, as this rank's, in step order (run_len of
 * them, written to out); returns how many. */
int gmpi_plan_run_slices(const gmpi_plan_step_t *steps, int n, int first, int rank,
                         gmpi_plan_slice_t *out);

/* A backend that will not pack the run starting at step first: its collectives become runs of
 * one again, each giving why (static text) in fuse_why, for gmpi_plan_dump. */
void gmpi_plan_unfuse_run(gmpi_plan_step_t *steps, int n, int first, const char *why);

/* Unfuse every run of more than limit bytes: GMPI_PLAN_PACK_BYTES when set, else the backend's
 * own limit (backend_limit). Above it a backend runs the collectives one by one (cuda: in one
 * NCCL group), with no copies. */
void gmpi_plan_pack_limit(gmpi_plan_step_t *steps, int n, int nranks, size_t configured,
                          size_t backend_limit);

#endif
