/* SPDX-License-Identifier: BSD-3-Clause */
/* Persistent requests (MPI_Send_init, MPI_Recv_init, MPI_Start) on comms with a twin. The
 * program holds a real, inactive MPI persistent request that does nothing (a receive from
 * MPI_PROC_NULL on MPI_COMM_SELF) as its handle; MPI_Start posts the operation through gmpi
 * like MPI_Isend/MPI_Irecv and remembers the request it made; the wait and test calls see that
 * request in the handle's place (dropin_persist_swap) and put the handle back after, active or
 * not. A handle that reaches MPI anyway behaves as an inactive persistent request. */
#include <stdlib.h>

#include "dropin.h"

typedef struct persist {
  MPI_Request handle; /* what the program holds */
  MPI_Request active; /* the started operation's request, or MPI_REQUEST_NULL */
  int is_send, kind;  /* kind: dropin_send_kind_t for sends */
  const void *buf;
  int count;
  MPI_Datatype type;
  int peer, tag;
  MPI_Comm comm;
  struct persist *next;
} persist_t;

static persist_t *all;
int dropin_persist_live;

static persist_t *find(MPI_Request h) {
  if (h == MPI_REQUEST_NULL) return NULL;
  for (persist_t *p = all; p; p = p->next)
    if (p->handle == h) return p;
  return NULL;
}

static int make(int is_send, int kind, const void *buf, int count, MPI_Datatype type, int peer,
                int tag, MPI_Comm comm, MPI_Request *request) {
  persist_t *p = calloc(1, sizeof(*p));
  if (!p) return MPI_ERR_NO_MEM;
  int rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &p->handle);
  if (rc != MPI_SUCCESS) {
    free(p);
    return rc;
  }
  *p = (persist_t){.handle = p->handle,
                   .active = MPI_REQUEST_NULL,
                   .is_send = is_send,
                   .kind = kind,
                   .buf = buf,
                   .count = count,
                   .type = type,
                   .peer = peer,
                   .tag = tag,
                   .comm = comm,
                   .next = all};
  all = p;
  dropin_persist_live++;
  *request = p->handle;
  return MPI_SUCCESS;
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  MPI_Request *request) {
  if (!dropin_take_p2p(comm, buf))
    return PMPI_Send_init(buf, count, type, dest, tag, comm, request);
  return make(1, DROPIN_SEND_STANDARD, buf, count, type, dest, tag, comm, request);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request) {
  if (!dropin_take_p2p(comm, buf))
    return PMPI_Ssend_init(buf, count, type, dest, tag, comm, request);
  return make(1, DROPIN_SEND_SYNC, buf, count, type, dest, tag, comm, request);
}

int MPI_Rsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request) {
  if (!dropin_take_p2p(comm, buf))
    return PMPI_Rsend_init(buf, count, type, dest, tag, comm, request);
  return make(1, DROPIN_SEND_STANDARD, buf, count, type, dest, tag, comm, request);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request) {
  if (!dropin_take_p2p(comm, buf))
    return PMPI_Bsend_init(buf, count, type, dest, tag, comm, request);
  return make(1, DROPIN_SEND_BUFFERED, buf, count, type, dest, tag, comm, request);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Request *request) {
  if (!dropin_take_p2p(comm, buf))
    return PMPI_Recv_init(buf, count, type, source, tag, comm, request);
  return make(0, 0, buf, count, type, source, tag, comm, request);
}

static int start_one(MPI_Request *request) {
  persist_t *p = request && dropin_persist_live ? find(*request) : NULL;
  if (!p) return PMPI_Start(request);
  if (p->active != MPI_REQUEST_NULL) return MPI_ERR_REQUEST; /* started twice */
  return p->is_send ? dropin_isend(p->buf, p->count, p->type, p->peer, p->tag, p->comm, p->kind,
                                   &p->active)
                    : dropin_irecv((void *)p->buf, p->count, p->type, p->peer, p->tag, p->comm,
                                   &p->active, "MPI_Start (a persistent receive)");
}

int MPI_Start(MPI_Request *request) { return start_one(request); }

int MPI_Startall(int count, MPI_Request requests[]) {
  for (int i = 0; i < count; i++) {
    int rc = start_one(&requests[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

MPI_Request *dropin_persist_swap(int n, MPI_Request reqs[]) {
  if (!dropin_persist_live || !reqs || n <= 0) return reqs;
  int any = 0;
  for (int i = 0; i < n && !any; i++)
    any = find(reqs[i]) != NULL;
  MPI_Request *tmp = any ? malloc((size_t)n * sizeof(*tmp)) : NULL;
  if (!tmp) return reqs; /* the handles then reach MPI as inactive requests */
  for (int i = 0; i < n; i++) {
    persist_t *p = find(reqs[i]);
    tmp[i] = p ? p->active : reqs[i];
  }
  return tmp;
}

void dropin_persist_unswap(int n, MPI_Request reqs[], MPI_Request *tmp) {
  if (tmp == reqs) return;
  for (int i = 0; i < n; i++) {
    persist_t *p = find(reqs[i]);
    if (p)
      p->active = tmp[i]; /* MPI_REQUEST_NULL once complete: inactive again */
    else
      reqs[i] = tmp[i];
  }
  free(tmp);
}

int dropin_persist_free(MPI_Request *request) {
  persist_t *p = dropin_persist_live ? find(*request) : NULL;
  if (!p) return 0;
  if (p->active != MPI_REQUEST_NULL) dropin_request_free(&p->active); /* finishes on its own */
  for (persist_t **l = &all; *l; l = &(*l)->next) {
    if (*l == p) {
      *l = p->next;
      break;
    }
  }
  PMPI_Request_free(&p->handle);
  free(p);
  dropin_persist_live--;
  *request = MPI_REQUEST_NULL;
  return 1;
}
