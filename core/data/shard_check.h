/*
 * The vocabulary check of part of one shard, for sr_shard_set_check_vocab_range (shard_set.c): the
 * ranks of a run each check a share of a set's tokens, and a share may start or end inside a shard.
 */
#ifndef SR__DATA_SHARD_CHECK_H
#define SR__DATA_SHARD_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/data.h"

/* sr_shard_check_vocab over the shard's tokens first .. first+n-1 only (16 MiB at a time, each chunk
   dropped from this process after it is read).  The message of a bad id is sr_shard_check_vocab's:
   its byte offset in the file and its index in the shard.  0, or -1 (also for a range outside the
   shard). */
int sr__shard_check_vocab_range(const sr_shard *s, int64_t vocab, int64_t first, int64_t n, char *err, size_t errlen);

#endif
