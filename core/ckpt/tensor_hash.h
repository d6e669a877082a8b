/*
 * The check of a checkpoint tensor's data against its hash: a shardrun checkpoint file's metadata
 * has "hash:NAME" = XXH3-64 (seed 0) of tensor NAME's bytes, 16 hex digits
 * (docs/checkpoint-format.md).  The one check for every reader: the engine's load (which hashes
 * each tensor in the copy itself, fsdp/ckpt_check.c) and shardrun_generate (gen_file.c).
 */
#ifndef SR__CKPT_TENSOR_HASH_H
#define SR__CKPT_TENSOR_HASH_H

#include <stdint.h>

#include "io/safetensors.h"

/* The "hash:NAME" entry file f records for tensor `name`, or NULL when it has none. */
const char *sr__ckpt_tensor_hash(const sr__st_file *f, const char *name);
/* Whether got, the XXH3-64 of a tensor's bytes, is the recorded `want` (NULL: none recorded).  0 when
   it is; -1 when not.  hex receives got's 16 digits, for the message. */
int sr__ckpt_hash_check(const char *want, uint64_t got, char hex[17]);

#endif
