/* Plans: operations recorded once, compiled collectively, replayed. See plan.c. */
#ifndef GMPI_CORE_PLAN_H
#define GMPI_CORE_PLAN_H

#include "backend.h"
#include "gmpi.h"

/* Called by the operation paths while comm->rec is set: record instead of running. */
gmpi_status_t gmpi_plan_record_coll(gmpi_comm_t comm, const gmpi_coll_args_t *a);
gmpi_status_t gmpi_plan_record_p2p(gmpi_comm_t comm, gmpi_request_t req);
/* A recorded request is waited inside the plan; returns 1 when req belongs to a recording. */
int gmpi_plan_request_is_recorded(gmpi_request_t req);
gmpi_status_t gmpi_plan_record_wait(gmpi_request_t req);
/* Forget a recorded request that an error left behind (it will be neither posted nor waited). */
void gmpi_plan_drop_request(gmpi_request_t req);
/* Finalize of comm: its plans lose their backend parts and are orphaned. */
void gmpi_plan_orphan_all(gmpi_comm_t comm);
/* Finalize during a recording: drop it. */
void gmpi_plan_abort_recording(gmpi_comm_t comm);

#endif
