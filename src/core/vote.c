/* SPDX-License-Identifier: BSD-3-Clause */
#include "vote.h"

#include <stdint.h>
#include <stdlib.h>

#include "comm.h"
#include "error.h"
#include "oob.h"

typedef struct {
  int32_t status;
  int32_t flag;
} vote_t;

gmpi_status_t gmpi_vote(gmpi_comm_t comm, gmpi_status_t mine, int flag, int *flag_anywhere,
                        const char *failed) {
  vote_t vote = {mine, flag != 0}, *votes = calloc((size_t)comm->size, sizeof(*votes));
  if (!votes) return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory for %d votes", comm->size);
  gmpi_status_t st = comm->oob.ops->allgather(comm, &vote, votes, sizeof(vote));
  int anywhere = 0;
  for (int r = 0; r < comm->size && st == GMPI_SUCCESS; r++) {
    if (votes[r].status != GMPI_SUCCESS)
      st = mine != GMPI_SUCCESS ? mine
                                : gmpi_error((gmpi_status_t)votes[r].status,
                                             "rank %d %s; its log says why", r, failed);
    anywhere |= votes[r].flag;
  }
  free(votes);
  if (flag_anywhere) *flag_anywhere = anywhere;
  return st;
}
