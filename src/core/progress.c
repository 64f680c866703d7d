/* SPDX-License-Identifier: BSD-3-Clause */
/* The registry behind core/progress.h. Engines are few (one or two per comm) and change only
 * when comms are made or freed, so a small array under a mutex is enough. The hot path -- a
 * wait when nothing is registered, i.e. every wait of the default cpu backend -- is one atomic
 * load. */
#include "progress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "error.h"
#include "log.h"

typedef struct {
  gmpi_progress_fn fn;
  void *ctx;
  const atomic_int *wanted; /* driven only while nonzero; NULL: always */
  int failed;               /* its progress failed once: logged then, quiet since */
} engine_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static engine_t *engines; /* under lock, like n_engines and cap */
static int n_engines, cap;
atomic_int gmpi_progress_registered; /* n_engines, readable without the lock */
/* This thread is inside gmpi_progress_all: an engine whose progress reaches a wait of its own
 * (which polls us again) must not be re-entered, nor may it wait for the lock it holds. */
static _Thread_local int inside;

gmpi_status_t gmpi_progress_add(gmpi_progress_fn fn, void *ctx, const atomic_int *wanted) {
  pthread_mutex_lock(&lock);
  if (n_engines == cap) {
    int grown_cap = cap ? 2 * cap : 8;
    engine_t *grown = realloc(engines, (size_t)grown_cap * sizeof(*grown));
    if (!grown) {
      pthread_mutex_unlock(&lock);
      return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to register %d progress engines", grown_cap);
    }
    engines = grown;
    cap = grown_cap;
  }
  engines[n_engines++] = (engine_t){fn, ctx, wanted, 0};
  atomic_store(&gmpi_progress_registered, n_engines);
  pthread_mutex_unlock(&lock);
  return GMPI_SUCCESS;
}

void gmpi_progress_remove(gmpi_progress_fn fn, void *ctx) {
  /* Waits for a progress pass on another thread to end: after this, fn(ctx) is never called
   * again, so its engine may be freed. */
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n_engines; i++) {
    if (engines[i].fn != fn || engines[i].ctx != ctx) continue;
    engines[i] = engines[--n_engines];
    break;
  }
  atomic_store(&gmpi_progress_registered, n_engines);
  if (n_engines == 0) { /* the last comm is gone: leave nothing for leak checkers */
    free(engines);
    engines = NULL;
    cap = 0;
  }
  pthread_mutex_unlock(&lock);
}

/* One engine, once. Its failure belongs to its own comm, not to the call that is waiting here:
 * that call's error context is restored afterwards, so its own first failure is still the one
 * described. */
static void drive(engine_t *e) {
  gmpi_call_ctx_t saved = *gmpi_call_ctx();
  gmpi_call_begin("gmpi progress", -1);
  gmpi_call_ctx()->described = e->failed; /* described (and logged) only the first time */
  gmpi_status_t st = e->fn(e->ctx);
  *gmpi_call_ctx() = saved;
  if (st == GMPI_SUCCESS || e->failed) return;
  e->failed = 1;
  gmpi_log(GMPI_LOG_WARN,
           "an engine's progress failed (%s) while %s waited for something else; its own "
           "requests report it",
           gmpi_strerror(st), saved.func);
}

_Thread_local unsigned long gmpi_polls;

static void drive_all(void) {
  if (!atomic_load_explicit(&gmpi_progress_registered, memory_order_acquire) || inside) return;
  /* Another thread driving the engines already gives the progress; queueing behind it would
   * only slow this wait. */
  if (pthread_mutex_trylock(&lock) != 0) return;
  inside = 1;
  for (int i = 0; i < n_engines; i++) {
    const atomic_int *wanted = engines[i].wanted;
    if (!wanted || atomic_load_explicit(wanted, memory_order_relaxed)) drive(&engines[i]);
  }
  inside = 0;
  pthread_mutex_unlock(&lock);
}

void gmpi_progress_all(void) {
  drive_all();
  gmpi_polls++; /* whatever drove or not: the next drive is another round */
}
