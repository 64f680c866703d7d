/* SPDX-License-Identifier: BSD-3-Clause */
/* libgmpi reads its hot thread-locals initial-exec (src/core/tls.h), so its whole TLS block
 * must fit in the static TLS that glibc keeps spare for libraries loaded later: Python (ctypes)
 * and JAX dlopen libgmpi. This test loads the built library the same way, checks its block
 * against a budget well under glibc's default spare (rtld.optional_static_tls, 512 bytes), and
 * checks that each thread keeps its own last error text (a heap block per thread, freed when
 * the thread exits: the sanitizer runs see a leak). */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "unit_util.h"

#define TLS_BUDGET 256 /* bytes */

typedef int (*rank_fn)(void *comm, int *rank);
typedef const char *(*last_error_fn)(void);

static rank_fn comm_rank;
static last_error_fn last_error;

typedef struct {
  const void *inside; /* an address in the library */
  size_t tls_bytes;
  int found;
} tls_query_t;

static int find_tls(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  tls_query_t *q = arg;
  int holds = 0;
  size_t tls = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (uintptr_t)q->inside >= lo &&
        (uintptr_t)q->inside < lo + ph->p_memsz)
      holds = 1;
    if (ph->p_type == PT_TLS) tls = ph->p_memsz;
  }
  if (!holds) return 0;
  q->found = 1;
  q->tls_bytes = tls;
  return 1;
}

/* A failing call on this thread, then its text: the thread's own. */
static void *fail_and_read(void *out) {
  int rank = 0;
  CHECK_EQ(strcmp(last_error(), ""), 0); /* nothing failed on this thread yet */
  CHECK_EQ(comm_rank(NULL, &rank) != 0, 1);
  const char *text = last_error();
  CHECK_EQ(strstr(text, "gmpi_comm_rank") != NULL, 1);
  if (!strstr(text, "gmpi_comm_rank")) fprintf(stderr, "last error: '%s'\n", text);
  *(int *)out = 1;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: unit_tls path/to/libgmpi.so\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "FAIL dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  comm_rank = (rank_fn)dlsym(lib, "gmpi_comm_rank");
  last_error = (last_error_fn)dlsym(lib, "gmpi_last_error");
  CHECK_EQ(comm_rank != NULL, 1);
  CHECK_EQ(last_error != NULL, 1);
  if (!comm_rank || !last_error) return 1;

  tls_query_t q = {.inside = (const void *)last_error};
  dl_iterate_phdr(find_tls, &q);
  CHECK_EQ(q.found, 1);
  CHECK_EQ(q.tls_bytes <= TLS_BUDGET, 1);
  printf("libgmpi's TLS block: %zu bytes (budget %d)\n", q.tls_bytes, TLS_BUDGET);

  /* Each thread its own text: a second thread starts with none, while this one keeps its own. */
  int ran = 0, rank = 0;
  CHECK_EQ(comm_rank(NULL, &rank) != 0, 1);
  const char *mine = last_error();
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, fail_and_read, &ran), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(ran, 1);
  CHECK_EQ(last_error() == mine, 1);
  CHECK_EQ(strstr(mine, "gmpi_comm_rank") != NULL, 1);
  return failures ? 1 : 0;
}
