/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory that something outside gmpi may still write after gmpi gave up on an operation (MPI
 * cannot stop a started collective; a late rank may still arrive): parked here, reachable, until
 * the process exits -- neither freed under MPI nor leaked out of sight (leak checkers see it as
 * held). Only the failure paths park; a healthy run parks nothing. */
#ifndef GMPI_CORE_PARK_H
#define GMPI_CORE_PARK_H

void gmpi_park(void *ptr);

#endif
