/* SPDX-License-Identifier: BSD-3-Clause */
/* The registry behind core/progress.h. Engines change only when comms are made or freed, so a
 * slot array under a mutex holds them. Which ones have work is a bit map beside it, written by
 * the engines without the mutex: a wait loads a word per 64 engines, not a flag per engine (a
 * cache miss each once a program's comms outgrow the cache). The hot path -- a wait when
 * nothing is registered, i.e. every wait of the default cpu backend -- is one atomic load. */
#include "progress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "error.h"
#include "log.h"

typedef struct {
  gmpi_progress_fn fn; /* NULL: a free slot */
  void *ctx;
  gmpi_progress_flag_t *flag; /* NULL: always driven (its bit stays set) */
  int failed;                 /* its progress failed once: logged then, quiet since */
} engine_t;

/* The map's words come in chunks that never move while an engine may write them (the engines
 * hold pointers to their words); all are freed with the last engine. */
#define MAP_WORDS_PER_CHUNK 64  /* 4,096 engines a chunk */
#define MAP_CHUNKS          256 /* 1,048,576 engines */
#define MAP_SLOTS           (MAP_CHUNKS * MAP_WORDS_PER_CHUNK * 64)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static engine_t *engines; /* by slot, under lock, like n_slots, n_engines and cap */
static int n_slots;       /* slots in use or free below the highest one in use */
static int n_engines, cap;
static _Atomic uint64_t *map[MAP_CHUNKS]; /* chunks allocated under lock */
atomic_int gmpi_progress_registered;      /* n_engines, readable without the lock */
/* This thread is inside gmpi_progress_all: an engine whose progress reaches a wait of its own
 * (which polls us again) must not be re-entered, nor may it wait for the lock it holds. */
static _Thread_local int inside GMPI_TLS_HOT;

static _Atomic uint64_t *map_word(int slot) {
  return &map[slot / (64 * MAP_WORDS_PER_CHUNK)][(slot / 64) % MAP_WORDS_PER_CHUNK];
}

/* A free slot (its map word allocated), under lock; -1 when there is no memory. */
static int take_slot(void) {
  for (int i = 0; i < n_slots; i++)
    if (!engines[i].fn) return i;
  if (n_slots == MAP_SLOTS) return -1;
  if (n_slots == cap) {
    int grown_cap = cap ? 2 * cap : 8;
    engine_t *grown = realloc(engines, (size_t)grown_cap * sizeof(*grown));
    if (!grown) return -1;
    engines = grown;
    cap = grown_cap;
  }
  int chunk = n_slots / (64 * MAP_WORDS_PER_CHUNK);
  if (!map[chunk] && !(map[chunk] = calloc(MAP_WORDS_PER_CHUNK, sizeof(**map)))) return -1;
  engines[n_slots] = (engine_t){0};
  return n_slots++;
}

gmpi_status_t gmpi_progress_add(gmpi_progress_fn fn, void *ctx, gmpi_progress_flag_t *flag) {
  pthread_mutex_lock(&lock);
  int slot = take_slot();
  if (slot < 0) {
    pthread_mutex_unlock(&lock);
    return gmpi_error(GMPI_ERR_NO_MEMORY, "no memory to register %d progress engines",
                      n_engines + 1);
  }
  engines[slot] = (engine_t){fn, ctx, flag, 0};
  uint64_t bit = (uint64_t)1 << (slot % 64);
  if (flag) {
    flag->bit = bit;
    flag->word = map_word(slot);
  }
  if (!flag || flag->on) atomic_fetch_or_explicit(map_word(slot), bit, memory_order_relaxed);
  n_engines++;
  atomic_store(&gmpi_progress_registered, n_engines);
  pthread_mutex_unlock(&lock);
  return GMPI_SUCCESS;
}

void gmpi_progress_remove(gmpi_progress_fn fn, void *ctx) {
  /* Waits for a progress pass on another thread to end: after this, fn(ctx) is never called
   * again, so its engine may be freed. */
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n_slots; i++) {
    engine_t *e = &engines[i];
    if (e->fn != fn || e->ctx != ctx) continue;
    atomic_fetch_and_explicit(map_word(i), ~((uint64_t)1 << (i % 64)), memory_order_relaxed);
    if (e->flag) e->flag->word = NULL;
    *e = (engine_t){0};
    n_engines--;
    break;
  }
  while (n_slots > 0 && !engines[n_slots - 1].fn)
    n_slots--;
  atomic_store(&gmpi_progress_registered, n_engines);
  if (n_engines == 0) { /* the last comm is gone: leave nothing for leak checkers */
    free(engines);
    engines = NULL;
    cap = 0;
    for (int c = 0; c < MAP_CHUNKS && map[c]; c++) {
      free((void *)map[c]);
      map[c] = NULL;
    }
  }
  pthread_mutex_unlock(&lock);
}

/* One engine, once. Its failure belongs to its own comm, not to the call that is waiting here:
 * that call's error context is restored afterwards, so its own first failure is still the one
 * described. */
static void drive(engine_t *e) {
  /* the thread-local found once: every wait's spin drives, and each look-up of it out of line
   * was a call and a TLS descriptor's */
  gmpi_call_ctx_t *ctx = &gmpi_thread.call;
  gmpi_call_ctx_t saved = *ctx;
  gmpi_call_begin("gmpi progress", -1);
  ctx->described = e->failed; /* described (and logged) only the first time */
  gmpi_status_t st = e->fn(e->ctx);
  *ctx = saved;
  if (st == GMPI_SUCCESS || e->failed) return;
  e->failed = 1;
  gmpi_log(GMPI_LOG_WARN,
           "an engine's progress failed (%s) while %s waited for something else; its own "
           "requests report it",
           gmpi_strerror(st), saved.func);
}

_Thread_local unsigned long gmpi_polls GMPI_TLS_HOT;

static void drive_all(void) {
  if (!atomic_load_explicit(&gmpi_progress_registered, memory_order_acquire) || inside) return;
  /* Another thread driving the engines already gives the progress; queueing behind it would
   * only slow this wait. */
  if (pthread_mutex_trylock(&lock) != 0) return;
  inside = 1;
  for (int w = 0; w < (n_slots + 63) / 64; w++) {
    uint64_t bits = atomic_load_explicit(map_word(w * 64), memory_order_relaxed);
    for (; bits; bits &= bits - 1) {
      engine_t *e = &engines[w * 64 + __builtin_ctzll(bits)];
      if (e->fn) drive(e); /* a slot freed since is skipped */
    }
  }
  inside = 0;
  pthread_mutex_unlock(&lock);
}

void gmpi_progress_all(void) {
  drive_all();
  gmpi_polls++; /* whatever drove or not: the next drive is another round */
}
