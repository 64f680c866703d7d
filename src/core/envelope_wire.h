/* SPDX-License-Identifier: BSD-3-Clause */
/* What travels on the envelope engine's control channel (core/envelope.c): one header per
 * envelope, an eager message's data right after it. Data from another rank: every field is
 * checked by gmpi_env_wire_check before it is used. Private to the engine and its unit test. */
#ifndef GMPI_CORE_ENVELOPE_WIRE_H
#define GMPI_CORE_ENVELOPE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "envelope.h"

/* What travels on the envelope channel; an eager message's data follows the header. */
typedef enum {
  W_EAGER = 1, /* sender -> receiver: a message with its data */
  W_RTS_PULL,  /* sender -> receiver: a rendezvous message the receiver may pull (blob) */
  W_RTS_LINK,  /* sender -> receiver: a rendezvous message that will move on the link */
  W_FIN,       /* receiver -> sender: your send is complete (pulled, or refused by its receive) */
  W_RTR,       /* follower receiver -> leader sender: matched, give it a link position */
  W_CTS,       /* leader receiver -> follower sender: send it at link position k */
  W_GO,        /* leader sender -> follower receiver: receive it at link position k */
  W_RTS_HOST,  /* sender -> receiver: a rendezvous message in host memory (mover's host_mem): the
                * receiver takes it over the channel when its buffer is host memory too, else
                * as W_RTS_LINK */
  W_CTS_CHAN,  /* receiver -> sender: send it over the channel now (its data tag: seq's) */
  W_EAGER_SYNC /* sender -> receiver: a synchronous send's message with its data: answer FIN
                * once a receive has taken it */
} wire_kind_t;

typedef struct {
  uint32_t kind;
  int32_t tag;
  int32_t dtype;
  uint32_t blob_len; /* RTS_PULL: the buffer's description; CTS/GO: the link's introduction */
  uint64_t bytes;
  uint64_t seq; /* the message's number on (sender -> receiver), from 0 */
  uint64_t k;   /* CTS, GO: position on the link */
  uint8_t blob[GMPI_MOVER_BLOB_BYTES];
} wire_t;

/* GMPI_SUCCESS when the len bytes at buf, received from rank src of nranks, are an envelope the
 * engine may read: a whole header, an eager payload as long as it says, a blob that fits.
 * Otherwise GMPI_ERR_INTERNAL, described (a malformed or hostile envelope). */
gmpi_status_t gmpi_env_wire_check(const void *buf, size_t len, int src, int nranks);

/* GMPI_SUCCESS when answer (W_FIN, W_RTR, W_CTS, W_CTS_CHAN) from rank src is one its send seq
 * can take: offered is the send's envelope (W_RTS_PULL, W_RTS_LINK, W_RTS_HOST, W_EAGER_SYNC),
 * sent whether that envelope has gone out (nothing answers one that has not), and we_lead
 * whether this rank assigns the pair's link positions. A pulled send and a synchronous eager
 * one take only FIN; only a send offered as host memory goes over the channel; RTR comes to the
 * leader, CTS to the follower. Otherwise GMPI_ERR_INTERNAL, described: the sender would hand
 * the wrong transport its buffer (MPI reading device memory, a link position out of turn), or
 * finish a send whose envelope still waits to go out. */
gmpi_status_t gmpi_env_answer_check(uint32_t answer, uint32_t offered, int sent, int we_lead,
                                    int src, uint64_t seq);

#endif
