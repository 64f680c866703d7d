/* SPDX-License-Identifier: BSD-3-Clause */
/* comm_split into even and odd ranks, collectives and p2p on the halves, keys reorder ranks,
 * GMPI_UNDEFINED gives no comm; the parent keeps working. */
#include "test_util.h"

int main(int argc, char **argv) {
  gmpi_comm_t comm = t_init(&argc, &argv);
  int rank, size;
  T_OK(gmpi_comm_rank(comm, &rank));
  T_OK(gmpi_comm_size(comm, &size));

  gmpi_comm_t half = NULL;
  T_OK(gmpi_comm_split(comm, rank % 2, rank, &half));
  T_TRUE(half != NULL);
  int hrank = -1, hsize = -1;
  T_OK(gmpi_comm_rank(half, &hrank));
  T_OK(gmpi_comm_size(half, &hsize));
  T_EQ_INT(hrank, rank / 2);
  T_EQ_INT(hsize, rank % 2 == 0 ? (size + 1) / 2 : size / 2);

  /* Sum of parent ranks within each half. */
  long long mine = rank, got = -1, want = 0;
  for (int r = rank % 2; r < size; r += 2)
    want += r;
  long long *d = t_alloc(sizeof(long long));
  t_put(d, &mine, sizeof(mine));
  T_OK(gmpi_allreduce(d, d, 1, GMPI_INT64, GMPI_SUM, half));
  t_get(&got, d, sizeof(got));
  T_EQ_INT(got, want);

  /* Bcast from the half's last rank: its parent rank. */
  long long root_parent = rank % 2 + 2 * (hsize - 1);
  t_put(d, &mine, sizeof(mine));
  T_OK(gmpi_bcast(d, 1, GMPI_INT64, hsize - 1, half));
  t_get(&got, d, sizeof(got));
  T_EQ_INT(got, root_parent);

  /* Point to point inside the half, addressed by half ranks. */
  if (hsize > 1) {
    int next = (hrank + 1) % hsize, prev = (hrank + hsize - 1) % hsize;
    gmpi_msg_status_t st;
    long long *r = t_alloc(sizeof(long long));
    t_put(d, &mine, sizeof(mine));
    T_OK(gmpi_sendrecv(d, 1, GMPI_INT64, next, 1, r, 1, GMPI_INT64, prev, 1, half, &st));
    t_get(&got, r, sizeof(got));
    T_EQ_INT(st.source, prev);
    T_EQ_INT(got, rank % 2 + 2 * prev);
    t_free(r);
  }
  t_free(d);

  /* Reverse order by key; rank 0 stays out. */
  gmpi_comm_t rev = NULL;
  T_OK(gmpi_comm_split(comm, rank == 0 ? GMPI_UNDEFINED : 0, size - rank, &rev));
  if (rank == 0) {
    T_EQ_PTR(rev, NULL);
  } else {
    int rr = -1;
    T_OK(gmpi_comm_rank(rev, &rr));
    T_EQ_INT(rr, size - 1 - rank);
    T_OK(gmpi_barrier(rev));
  }
  T_OK(gmpi_finalize(&rev));
  T_OK(gmpi_finalize(&half));
  T_OK(gmpi_barrier(comm)); /* the parent still works */
  return t_finish("split");
}
