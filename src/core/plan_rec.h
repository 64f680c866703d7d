/* SPDX-License-Identifier: BSD-3-Clause */
/* The recording in progress on a comm (private to the plan code). */
#ifndef GMPI_CORE_PLAN_REC_H
#define GMPI_CORE_PLAN_REC_H

#include "plan.h"

struct gmpi_plan_rec {
  gmpi_plan_step_t *steps;
  int n, cap;
  gmpi_request_t *reqs; /* recorded requests by number; NULL once waited in the plan */
  int n_reqs, cap_reqs;
  unsigned long gen; /* unique in the process: recorded requests name their recording by it */
};

/* A new, empty recording with its own generation; NULL without memory. */
struct gmpi_plan_rec *gmpi_plan_rec_new(void);

void gmpi_plan_rec_free(struct gmpi_plan_rec *rec);
/* Remove a plan from its comm's list of live plans. */
void gmpi_plan_unlink(struct gmpi_plan *plan);

#endif
