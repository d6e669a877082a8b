/*
 * The index of a SHARDED checkpoint, parsed once from shard 0's metadata: its units ("unit:U" =
 * "numel padded shard": unit U's flat buffer of numel elements, padded to padded = shard x files,
 * file f holding elements [f * shard, (f + 1) * shard) as tensors uU.param, uU.exp_avg and
 * uU.exp_avg_sq) and its parameters ("param:NAME" = "unit offset numel shape": elements [offset,
 * offset + numel) of that unit).  Verification, the plan of who hashes what, and the load all read
 * this structure.
 *
 * Lifecycle: sr__ckpt_index_parse (after the file's index_hash is verified), finds, free.  The
 * names and shapes point into the file's metadata: the file stays open while the index is used.
 */
#ifndef SR__FSDP_CKPT_INDEX_H
#define SR__FSDP_CKPT_INDEX_H

#include <stddef.h>

#include "io/safetensors.h"

typedef struct sr__ckpt_unit {
    size_t numel, padded, shard;
    int present; /* a "unit:U" entry exists */
} sr__ckpt_unit;

typedef struct sr__ckpt_param {
    const char *name, *shape; /* shape as written: "[768, 2304]" */
    int unit;
    size_t offset, numel;
} sr__ckpt_param;

typedef struct sr__ckpt_index {
    sr__ckpt_unit *units;
    int nunits; /* 1 + the largest U */
    sr__ckpt_param *params;
    size_t nparams; /* in the metadata's order */
} sr__ckpt_index;

/* Parses f's "unit:" and "param:" entries.  0, or -1 with why[] quoting the first entry that is not
   well-formed (or names a unit with no entry, or lies outside its unit).  Prints nothing. */
int sr__ckpt_index_parse(const sr__st_file *f, sr__ckpt_index *ix, char *why, size_t len);
/* The parameter called name, or NULL. */
const sr__ckpt_param *sr__ckpt_index_find(const sr__ckpt_index *ix, const char *name);
void sr__ckpt_index_free(sr__ckpt_index *ix);

#endif
