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

/* One copy of a packed run: packing copies in to packed + offset, unpacking packed + offset to
 * out; NULL in (or out): that direction copies nothing of this slice (a bcast's root unpacks
 * nothing, an allgather packs only its own row, a reduce_scatter unpacks only row 0). */
typedef struct {
  const void *in;
  void *out;
  size_t offset, bytes; /* offset: in the packed buffer, bytes */
} gmpi_plan_slice_t;

/* How many slices the run that starts at step first has (at most), and those slices as this
 * rank's, in step order; returns how many were written. */
size_t gmpi_plan_run_slice_count(const gmpi_plan_step_t *first, int nranks);
size_t gmpi_plan_run_slices(const gmpi_plan_step_t *steps, int n, int first, int rank, int nranks,
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
