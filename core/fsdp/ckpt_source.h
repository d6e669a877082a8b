/*
 * A checkpoint folder opened for loading: FULL_STATE_DICT's model.safetensors and
 * optimizer.safetensors, or SHARDED_STATE_DICT's shard-RRRRR-of-SSSSS.safetensors files (all of one
 * shard group), mapped; the shard index once it is verified (ckpt_verify.c); the plan of which rank
 * hashes which tensor (ckpt_check.c); the load's hashing times.
 *
 * Lifecycle: sr__ckpt_source_open, sr__ckpt_verify, the copies (ckpt_load.c), sr__ckpt_checks_finish,
 * sr__ckpt_source_close (also after any failure).
 */
#ifndef SR__FSDP_CKPT_SOURCE_H
#define SR__FSDP_CKPT_SOURCE_H

#include <stddef.h>

#include "fsdp/ckpt_file.h"
#include "fsdp/ckpt_index.h"
#include "io/safetensors.h"

struct sr__ckpt_check;

typedef struct sr__ckpt_source {
    const char *dir;
    int full;
    sr__st_file *model, *optim; /* FULL */
    sr__st_file **shards;       /* SHARDED */
    int nshards;
    sr__ckpt_index index;        /* SHARDED: shard 0's, parsed by sr__ckpt_verify */
    struct sr__ckpt_check **chk; /* per file, per tensor (ckpt_check.h); NULL until planned */
    sr__ckpt_times times;
} sr__ckpt_source;

/* Opens dir's files (which kind from what the folder holds).  0, or -1 after printing why. */
int sr__ckpt_source_open(sr__ckpt_source *s, const char *dir);
void sr__ckpt_source_close(sr__ckpt_source *s);
/* Files in a fixed order: FULL model, optimizer; SHARDED shard 0, 1, ... */
int sr__ckpt_source_nfiles(const sr__ckpt_source *s);
sr__st_file *sr__ckpt_source_file(const sr__ckpt_source *s, int i);
/* File i's name in the folder, for messages. */
void sr__ckpt_source_file_name(const sr__ckpt_source *s, int i, char *buf, size_t len);

#endif
