/* Reductions of process-group buffers on the CPU (the gloo backend's ring steps). */
#ifndef SR_CORE_REDUCE_H
#define SR_CORE_REDUCE_H

#include <stddef.h>

#include "shardrun/pg.h"

/* dst[i] = op(dst[i], src[i]) for n elements; SR_AVG adds (the caller divides at the end). */
void sr__reduce(void *dst, const void *src, size_t n, sr_dtype dtype, sr_redop op);
/* dst[i] /= divisor (floating-point dtypes). */
void sr__divide(void *buf, size_t n, sr_dtype dtype, int divisor);

#endif
