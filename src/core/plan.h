/* SPDX-License-Identifier: BSD-3-Clause */
/* Plans: operations recorded once on a comm, compiled collectively (checked across ranks,
 * point-to-point matched, scheduled), lowered by the backend and replayed.
 *
 * Execution model of a plan (the same on every backend): collectives run in recorded order;
 * the point-to-point operations a rank records between two boundaries (a wait, or a
 * collective) form one group and run concurrently, as one NCCL group does. A plan whose
 * groups cannot all complete under that rule is refused at compile time. */
#ifndef GMPI_CORE_PLAN_H
#define GMPI_CORE_PLAN_H

#include <stdio.h>

#include "backend.h"
#include "engine.h"
#include "gmpi.h"

typedef enum { PLAN_COLL = 0, PLAN_SEND, PLAN_RECV, PLAN_WAIT } gmpi_plan_step_kind_t;

typedef struct {
  gmpi_plan_step_kind_t kind;
  gmpi_coll_args_t coll; /* PLAN_COLL */
  gmpi_p2p_args_t p2p;   /* PLAN_SEND / PLAN_RECV; a receive's peer and tag as recorded */
  int request;           /* SEND/RECV: its request number; WAIT: the request it waits */
  int peer, tag;         /* resolved by matching (a receive's actual source and tag) */
  size_t bytes;          /* bytes that move (a receive: the matched message's) */
  int group;             /* lowering: steps with one group number run together */
  int fuse_next;         /* COLL: on every rank the next collective follows with no p2p between */
  /* COLL, fusion (core/plan_fuse.h): a run of collectives replayed as one over a packed
   * buffer. run_len: on the run's first step, how many collectives it holds (1: not fused);
   * run_first: the first step of the run this one belongs to (its own index when first);
   * run_offset: where its elements start in the packed buffer; run_count: the first step's
   * total elements. fuse_why: why this collective starts a run rather than joining the one
   * before (gmpi_plan_dump), NULL when it joined. */
  int run_len, run_first;
  size_t run_offset, run_count;
  const char *fuse_why;
  char lowered[64]; /* backend call this step became, for gmpi_plan_dump */
  size_t *owned;    /* COLL: the step's copy of a v-variant's arrays (coll points here) */
} gmpi_plan_step_t;

struct gmpi_plan {
  gmpi_comm_t comm;        /* NULL once the comm was finalized (orphaned plan) */
  const char *backend;     /* name of the backend that lowered it */
  gmpi_plan_step_t *steps; /* the recorded steps, matched and grouped */
  int n_steps, n_groups;
  const gmpi_engine_t *engine; /* the engine its buffers routed it to (src/core/route.c) */
  void *lowered;               /* that engine's lowering */
  struct gmpi_plan *next;      /* the comm's live plans */
};

/* Called by the operation paths while comm->rec is set: record instead of running. */
gmpi_status_t gmpi_plan_record_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a);
gmpi_status_t gmpi_plan_record_p2p(gmpi_comm_t comm, gmpi_request_t req);
/* A nonblocking collective while recording: recorded as the blocking one; *req waits nothing. */
gmpi_status_t gmpi_plan_record_coll_request(gmpi_comm_t comm, const gmpi_coll_args_t *a,
                                            gmpi_request_t *req);
/* Free recorded steps and what they own. */
void gmpi_plan_steps_free(gmpi_plan_step_t *steps, int n);
/* A recorded request is waited inside the plan; returns 1 when req belongs to a recording. */
int gmpi_plan_request_is_recorded(gmpi_request_t req);
/* Record a wait of req (freed). A request of a recording that has ended is released with
 * GMPI_ERR_STATE. */
gmpi_status_t gmpi_plan_record_wait(gmpi_request_t req);
/* The live plans (handed out by gmpi_plan_end, not yet freed), by address: a stale handle is
 * refused without being read. */
gmpi_status_t gmpi_plan_register(struct gmpi_plan *plan);
void gmpi_plan_unregister(struct gmpi_plan *plan);
int gmpi_plan_is_live(const struct gmpi_plan *plan);
/* The generation of the recording in progress (what a recorded request keeps). */
struct gmpi_plan_rec;
unsigned long gmpi_plan_rec_gen(const struct gmpi_plan_rec *rec);
/* Route a compiled plan to its engine and lower it there; replay it; free the lowering. */
gmpi_status_t gmpi_plan_lower(struct gmpi_plan *plan);
gmpi_status_t gmpi_plan_replay(struct gmpi_plan *plan);
void gmpi_plan_release(struct gmpi_plan *plan);
/* Finalize of comm: its plans lose their backend parts and are orphaned. */
void gmpi_plan_orphan_all(gmpi_comm_t comm);
/* Finalize during a recording: drop it. */
void gmpi_plan_abort_recording(gmpi_comm_t comm);

#endif
