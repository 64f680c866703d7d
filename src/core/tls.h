/* SPDX-License-Identifier: BSD-3-Clause */
/* Thread-locals on the hot path. In a shared library the default (general-dynamic) model finds
 * a thread-local through a call to its TLS descriptor, once per variable per function: eight
 * such calls in every spin of a wait on the envelope engine, where the descriptor's function
 * alone took 6% of the time (docs/performance.md, "A twelfth pass"). Initial-exec reads them at
 * a fixed offset from the thread pointer instead. The price: the library's whole TLS block
 * must then live in the static TLS area, which glibc sizes at start-up with a small surplus
 * for libraries loaded later (dlopen: Python and JAX load libgmpi so). So the block is kept
 * small -- nothing large is thread-local in libgmpi (the error text and the spare requests
 * are per-thread heap blocks) -- and unit_tls checks its size. */
#ifndef GMPI_CORE_TLS_H
#define GMPI_CORE_TLS_H

#define GMPI_TLS_HOT __attribute__((tls_model("initial-exec")))

#endif
