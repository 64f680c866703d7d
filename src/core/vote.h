/* SPDX-License-Identifier: BSD-3-Clause */
/* Votes: every rank of a comm says how one step of a collective call went, so that all ranks
 * return together -- all succeed, or all fail naming a rank that could not. */
#ifndef GMPI_CORE_VOTE_H
#define GMPI_CORE_VOTE_H

#include "gmpi.h"

/* Collective over comm. GMPI_SUCCESS when every rank's mine was; otherwise this rank's own
 * failure, or on ranks that succeeded the first failed rank's status with the error
 * "rank R <failed>; its log says why". flag_anywhere (may be NULL) is set to 1 when any rank
 * passed a non-zero flag. */
gmpi_status_t gmpi_vote(gmpi_comm_t comm, gmpi_status_t mine, int flag, int *flag_anywhere,
                        const char *failed);

#endif
