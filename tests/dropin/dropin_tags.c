/* SPDX-License-Identifier: BSD-3-Clause */
/* The whole tag range MPI_TAG_UB promises, through the layer (issue 30: MPICH's large_tag; gmpi
 * used to keep three bits of every MPI tag and refuse tags above MPI_TAG_UB / 8). Blocking and
 * nonblocking messages, sendrecv, probe and ANY_TAG statuses with tags up to MPI_TAG_UB, on
 * MPI_COMM_WORLD, on a duplicate and on MPI_COMM_SELF. */
#include <stdio.h>
#include <stdlib.h>

#include "dropin_util.h"

static int tag_ub(void) {
  int *ub = NULL, flag = 0;
  D_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
  D_TRUE(flag);
  return flag && ub ? *ub : 32767;
}

/* Each tag in turn: a ring of Isend/Recv, a probe that reports it, an ANY_TAG receive whose
 * status names it, and a sendrecv. */
static void ring_with_tags(MPI_Comm comm, const char *name) {
  int ub = tag_ub(), rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int tags[] = {0, ub / 8, ub / 8 + 1, ub / 2, ub - 1, ub};
  for (size_t k = 0; k < sizeof(tags) / sizeof(tags[0]); k++) {
    int tag = tags[k], out = 1000 * rank + (int)k, in = -1;
    MPI_Request q;
    MPI_Status st;
    D_MPI(MPI_Isend(&out, 1, MPI_INT, next, tag, comm, &q));
    D_MPI(MPI_Probe(prev, tag, comm, &st));
    D_STATUS(&st, MPI_INT, prev, tag, 1);
    D_MPI(MPI_Recv(&in, 1, MPI_INT, prev, MPI_ANY_TAG, comm, &st));
    D_STATUS(&st, MPI_INT, prev, tag, 1);
    D_EQ_INT(in, 1000 * prev + (int)k);
    D_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
    in = -1;
    D_MPI(MPI_Sendrecv(&out, 1, MPI_INT, next, tag, &in, 1, MPI_INT, prev, tag, comm, &st));
    D_STATUS(&st, MPI_INT, prev, tag, 1);
    D_EQ_INT(in, 1000 * prev + (int)k);
  }
  /* two tags at the top of the range, received in the other order */
  int a = 1, b = 2, ga = 0, gb = 0;
  MPI_Request q[2];
  D_MPI(MPI_Isend(&a, 1, MPI_INT, next, ub, comm, &q[0]));
  D_MPI(MPI_Isend(&b, 1, MPI_INT, next, ub - 1, comm, &q[1]));
  D_MPI(MPI_Recv(&gb, 1, MPI_INT, prev, ub - 1, comm, MPI_STATUS_IGNORE));
  D_MPI(MPI_Recv(&ga, 1, MPI_INT, prev, ub, comm, MPI_STATUS_IGNORE));
  D_MPI(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
  if (ga != 1 || gb != 2) D_FAIL("%s: top tags crossed: got %d and %d", name, ga, gb);
}

int main(int argc, char **argv) {
  d_init(&argc, &argv, "dropin_tags", D_SCOPE_P2P);
  D_TRUE(tag_ub() >= 32767); /* MPI's minimum */
  ring_with_tags(MPI_COMM_WORLD, "world");
  MPI_Comm dup;
  D_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  ring_with_tags(dup, "dup");
  D_MPI(MPI_Comm_free(&dup));
  ring_with_tags(MPI_COMM_SELF, "self");
  return d_finish();
}
