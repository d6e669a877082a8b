/*
 * transformer dump: writes a few named tensors to a safetensors file (the `dump` [task] key: rank 0's
 * first micro-batch -- input ids, labels, logits, loss -- so tests can compare the task with a
 * PyTorch reference of the model: tests/gpt2, tests/bloom).  Written as core's base/out_file.h
 * writes (linked from shardrun_common): a file through a temporary and a rename, a reader never sees half a file;
 * a FIFO or /dev/stdout in place.
 */
#ifndef TF_DUMP_H
#define TF_DUMP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tf_dump_tensor {
    const char *name;
    const char *dtype; /* "F32" or "I32" */
    int ndim;
    int64_t shape[4];
    const void *data; /* host memory, 4-byte elements */
} tf_dump_tensor;

/* 0, or -1 after printing why to stderr */
int tf_dump_write(const char *path, const tf_dump_tensor *t, int n);

#endif
