/*
 * shardrun element types: what a buffer of a process-group operation (shardrun/pg.h) and the
 * parameters and gradients a model task's callbacks receive (shardrun/model.h) hold.
 *
 * Lifecycle: none; plain values.  SR_FLOAT16 and SR_BFLOAT16 are IEEE half and bfloat16 stored
 * as uint16_t (conversions in shardrun/half.h).
 */
#ifndef SHARDRUN_DTYPE_H
#define SHARDRUN_DTYPE_H

#include <stddef.h>

#include "shardrun/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sr_dtype { SR_FLOAT32 = 0, SR_FLOAT16, SR_BFLOAT16, SR_INT32, SR_INT64 } sr_dtype;

/* Bytes per element; 0 for a value that is no sr_dtype */
SR_API size_t sr_dtype_size(sr_dtype dtype);
/* "fp32", "fp16", "bf16", "int32", "int64"; "?" for any other value */
SR_API const char *sr_dtype_name(sr_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
