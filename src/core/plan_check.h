/* SPDX-License-Identifier: BSD-3-Clause */
/* Cross-rank compilation of a plan (see plan_check.c). */
#ifndef GMPI_CORE_PLAN_CHECK_H
#define GMPI_CORE_PLAN_CHECK_H

#include "plan.h"

/* Collective over comm. On success every step knows its partner (peer, tag, bytes) and group,
 * and *n_groups is this rank's group count. On failure every rank returns the same
 * GMPI_ERR_MISMATCH naming the first differing step, the ranks and the fields. unwaited is
 * the first step whose request this rank never waits, or -1. */
gmpi_status_t gmpi_plan_check(gmpi_comm_t comm, gmpi_plan_step_t *steps, int n, int unwaited,
                              int *n_groups);

#endif
