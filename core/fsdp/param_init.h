/*
 * Seeded parameter initialisation that does not depend on sharding: element i of parameter
 * `name` gets the same value whichever rank computes it, so each rank can fill only its shard
 * and every world size starts from the same model (a counter-based generator, not a stream).
 */
#ifndef SR__FSDP_PARAM_INIT_H
#define SR__FSDP_PARAM_INIT_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/model.h"

/* dst[k] = value of element (first + k) of the parameter, for k < n */
void sr__init_fill(float *dst, uint64_t seed, const char *name, sr_init init, size_t first, size_t n);

#endif
