/* Reductions of process-group buffers on the CPU (the gloo backend's ring steps, the shm backend's folds). */
#ifndef SR__CORE_REDUCE_H
#define SR__CORE_REDUCE_H

#include <stddef.h>

#include "shardrun/pg.h"

/* dst[i] = op(dst[i], src[i]) for n elements; SR_AVG adds (the caller divides at the end). */
void sr__reduce(void *dst, const void *src, size_t n, sr_dtype dtype, sr_redop op);
/* dst[i] = op(a[i], b[i]) for n elements in one pass (dst may be a or b; otherwise no overlap);
   the same bits as copying a to dst, then sr__reduce(dst, b). */
void sr__reduce_into(void *dst, const void *a, const void *b, size_t n, sr_dtype dtype, sr_redop op);
/* dst[i] /= divisor (floating-point dtypes). */
void sr__divide(void *buf, size_t n, sr_dtype dtype, int divisor);

#endif
