/* SPDX-License-Identifier: BSD-3-Clause */
/* Envelopes are data from another rank: core/envelope.c reads none that gmpi_env_wire_check
 * refuses. A malformed or hostile envelope -- a blob longer than the 128 bytes an envelope has
 * room for, a short header, an eager payload shorter than it claims, an impossible source -- is
 * an error naming the rank, never a copy past the end of a buffer. So is an answer to a send
 * that the send did not offer (gmpi_env_answer_check): the buffer never goes to the wrong
 * transport. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_util.h"

#include "../src/core/envelope_wire.h"
#include "../src/core/error.h"

/* The check's verdict on len bytes of w from src (of 4 ranks); *said gets gmpi_last_error(). */
static gmpi_status_t check(const void *w, size_t len, int src, const char **said) {
  gmpi_call_begin("unit_envelope", 0); /* each check is a call of its own: its error is kept */
  gmpi_status_t st = gmpi_env_wire_check(w, len, src, 4);
  *said = st == GMPI_SUCCESS ? "" : gmpi_last_error();
  return st;
}

/* The verdict on answer from rank 3 to send 41, offered as offered; *said as above. */
static gmpi_status_t answer(uint32_t answer, uint32_t offered, int we_lead, const char **said) {
  gmpi_call_begin("unit_envelope", 0);
  gmpi_status_t st = gmpi_env_answer_check(answer, offered, 1, we_lead, 3, 41);
  *said = st == GMPI_SUCCESS ? "" : gmpi_last_error();
  return st;
}

static int says(const char *said, const char *what) {
  if (strstr(said, what)) return 1;
  fprintf(stderr, "error '%s' does not say '%s'\n", said, what);
  return 0;
}

int main(void) {
  const char *said = NULL;
  /* An eager envelope with its 16 bytes of data behind it, as a sender writes one. */
  unsigned char *buf = calloc(1, sizeof(wire_t) + 16);
  wire_t w = {.kind = W_EAGER, .tag = 7, .bytes = 16};
  memcpy(buf, &w, sizeof(w));
  CHECK_EQ(check(buf, sizeof(wire_t) + 16, 1, &said), GMPI_SUCCESS);
  /* Its payload cut short: one byte missing. */
  CHECK_EQ(check(buf, sizeof(wire_t) + 15, 1, &said), GMPI_ERR_INTERNAL);
  CHECK_EQ(says(said, "malformed envelope of"), 1);
  /* A header cut short. */
  CHECK_EQ(check(buf, sizeof(wire_t) - 1, 1, &said), GMPI_ERR_INTERNAL);
  /* From a rank the comm does not have. */
  CHECK_EQ(check(buf, sizeof(wire_t) + 16, 4, &said), GMPI_ERR_INTERNAL);
  CHECK_EQ(says(said, "rank 4"), 1);
  CHECK_EQ(check(buf, sizeof(wire_t) + 16, -1, &said), GMPI_ERR_INTERNAL);

  /* Rendezvous and link envelopes carry a blob of at most GMPI_MOVER_BLOB_BYTES. */
  wire_t rts = {.kind = W_RTS_PULL, .bytes = 1 << 20, .blob_len = GMPI_MOVER_BLOB_BYTES};
  CHECK_EQ(check(&rts, sizeof(rts), 2, &said), GMPI_SUCCESS);
  rts.blob_len = GMPI_MOVER_BLOB_BYTES + 1; /* one byte past the receiver's 128-byte copy */
  CHECK_EQ(check(&rts, sizeof(rts), 2, &said), GMPI_ERR_INTERNAL);
  CHECK_EQ(says(said, "blob_len 129"), 1);
  CHECK_EQ(says(said, "rank 2"), 1);
  rts.blob_len = 0xffffffffu; /* hostile */
  CHECK_EQ(check(&rts, sizeof(rts), 2, &said), GMPI_ERR_INTERNAL);
  wire_t go = {.kind = W_GO, .k = 3, .blob_len = 4096}; /* a link introduction, too long */
  CHECK_EQ(check(&go, sizeof(go), 0, &said), GMPI_ERR_INTERNAL);
  CHECK_EQ(says(said, "blob_len 4096"), 1);
  go.blob_len = 16;
  CHECK_EQ(check(&go, sizeof(go), 0, &said), GMPI_SUCCESS);

  /* A message's dtype out of range: probe would divide its bytes by an element size of 0. */
  rts.blob_len = 0;
  rts.dtype = 1000;
  CHECK_EQ(check(&rts, sizeof(rts), 2, &said), GMPI_ERR_INTERNAL);
  CHECK_EQ(says(said, "dtype 1000"), 1);
  rts.dtype = -1;
  CHECK_EQ(check(&rts, sizeof(rts), 2, &said), GMPI_ERR_INTERNAL);
  w.dtype = GMPI_DTYPE_COUNT;
  memcpy(buf, &w, sizeof(w));
  CHECK_EQ(check(buf, sizeof(wire_t) + 16, 1, &said), GMPI_ERR_INTERNAL);

  /* A rendezvous send's answers (send_answered): each is data from the receiver too. */
  static const uint32_t offers[] = {W_RTS_PULL, W_RTS_LINK, W_RTS_HOST, W_EAGER_SYNC};
  for (size_t i = 0; i < sizeof offers / sizeof offers[0]; i++) {
    uint32_t o = offers[i];
    for (int lead = 0; lead <= 1; lead++) {
      int link = o == W_RTS_LINK || o == W_RTS_HOST;
      CHECK_EQ(answer(W_FIN, o, lead, &said), GMPI_SUCCESS); /* every send takes FIN */
      CHECK_EQ(answer(W_RTR, o, lead, &said), link && lead ? GMPI_SUCCESS : GMPI_ERR_INTERNAL);
      CHECK_EQ(answer(W_CTS, o, lead, &said), link && !lead ? GMPI_SUCCESS : GMPI_ERR_INTERNAL);
      CHECK_EQ(answer(W_CTS_CHAN, o, lead, &said),
               o == W_RTS_HOST ? GMPI_SUCCESS : GMPI_ERR_INTERNAL);
      CHECK_EQ(answer(W_GO, o, lead, &said), GMPI_ERR_INTERNAL); /* not an answer to a send */
      CHECK_EQ(answer(W_EAGER, o, lead, &said), GMPI_ERR_INTERNAL);
    }
  }
  /* A device buffer's send asked over the channel: MPI would read device memory. */
  CHECK_EQ(answer(W_CTS_CHAN, W_RTS_LINK, 0, &said), GMPI_ERR_INTERNAL);
  CHECK_EQ(says(said, "rank 3 answered send 41, sent as RTS_LINK, with CTS_CHAN"), 1);
  CHECK_EQ(answer(W_CTS, W_RTS_HOST, 1, &said), GMPI_ERR_INTERNAL);
  CHECK_EQ(says(said, "this rank assigns"), 1);
  CHECK_EQ(answer(77, W_RTS_HOST, 1, &said), GMPI_ERR_INTERNAL);
  CHECK_EQ(says(said, "with ?"), 1);
  /* An answer to a send whose envelope still waits to go out (its copy or mark runs): a forged
   * FIN would finish it, and the flush would then write into a send given back. */
  for (size_t i = 0; i < sizeof offers / sizeof offers[0]; i++) {
    gmpi_call_begin("unit_envelope", 0);
    CHECK_EQ(gmpi_env_answer_check(W_FIN, offers[i], 0, 1, 3, 41), GMPI_ERR_INTERNAL);
  }
  CHECK_EQ(says(gmpi_last_error(), "rank 3 answered send 41 with FIN before its envelope"), 1);

  free(buf);
  printf("unit_envelope: %s (%d failed checks)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
