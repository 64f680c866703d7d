/* SPDX-License-Identifier: BSD-3-Clause */
/* Whether a hot path may keep freed objects for reuse (the envelope engine's spares, the MPI
 * channel's handles): not under AddressSanitizer, which must see every use after free. */
#ifndef GMPI_CORE_REUSE_H
#define GMPI_CORE_REUSE_H

#if defined(__SANITIZE_ADDRESS__)
#define GMPI_KEEP_SPARES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GMPI_KEEP_SPARES 0
#endif
#endif
#ifndef GMPI_KEEP_SPARES
#define GMPI_KEEP_SPARES 1
#endif

#endif
