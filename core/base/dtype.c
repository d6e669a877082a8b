/* shardrun/dtype.h: element types, used by every layer (devices, safetensors, process groups). */
#include "shardrun/dtype.h"

size_t sr_dtype_size(sr_dtype d) {
    static const size_t sizes[] = {4, 2, 2, 4, 8};
    return (unsigned)d < 5 ? sizes[d] : 0;
}

const char *sr_dtype_name(sr_dtype d) {
    static const char *const names[] = {"fp32", "fp16", "bf16", "int32", "int64"};
    return (unsigned)d < 5 ? names[d] : "?";
}
