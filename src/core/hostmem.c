/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE /* pthread_getattr_np, sbrk */
#include "hostmem.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

_Thread_local gmpi_stack_span_t gmpi_stack_span;

void gmpi_stack_learn(gmpi_stack_span_t *s) {
  pthread_attr_t attr;
  void *addr = NULL;
  size_t size = 0;
  s->lo = s->hi = 0;
  s->learnt = 1;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr) {
    s->lo = (uintptr_t)addr;
    s->hi = s->lo + size;
  }
  pthread_attr_destroy(&attr);
}

static uintptr_t heap_lo; /* 0: not known */
static pthread_once_t heap_once = PTHREAD_ONCE_INIT;

/* Where the break's heap starts: the kernel's [heap] mapping. Before the heap has grown there
 * is no such line, and the heap will start at today's break. */
static void find_heap(void) {
  char line[512];
  unsigned long lo = 0;
  int found = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return; /* no map to read: the heap is never vouched for */
  while (!found && fgets(line, sizeof(line), f))
    found = strstr(line, "[heap]") && sscanf(line, "%lx-", &lo) == 1;
  fclose(f);
  heap_lo = found ? (uintptr_t)lo : (uintptr_t)sbrk(0);
}

/* The break is read on every question: a heap that shrank gave its top back, and the driver
 * may map there later. */
int gmpi_heap_holds(uintptr_t p) {
  pthread_once(&heap_once, find_heap);
  if (!heap_lo || p < heap_lo) return 0;
  void *brk = sbrk(0);
  return brk != (void *)-1 && p < (uintptr_t)brk;
}
