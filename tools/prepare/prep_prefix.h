/*
 * The shards already under the prepare command's prefix (PREFIX_train_NNNNNN.bin,
 * PREFIX_val_NNNNNN.bin): a prefix holds one tokenizer's shards.  Before any work, shards there that
 * another tokenizer wrote (or that record none: llm.c's, an earlier shardrun's) refuse the run -- a
 * re-run would leave them beside the new ones, and a `PREFIX_train_*.bin` glob would train on both.
 * After a complete run, this tokenizer's shards that the run did not write (left from an earlier run
 * that wrote more, or had a val split) are removed, so the prefix holds exactly the new set.
 *
 * Lifecycle: prep_prefix_check before the run -> the run (prep_shards) -> prep_prefix_clean after it.
 */
#ifndef PREP_PREFIX_H
#define PREP_PREFIX_H

#include <stddef.h>

#include "shardrun/data.h"

#include "prep_shards.h"

/* 0, or -1 with a message naming the shards of another tokenizer (up to three, and how many) and
   what to do. */
int prep_prefix_check(const char *prefix, const sr_shard_tokenizer *t, int token_bytes, char *err, size_t errlen);
/* Removes t's shards of the prefix that s did not write; *removed counts them and first (cap bytes)
   names the first one.  Files named like shards that are no valid shard are left; *invalid counts
   them and bad names the first.  0, or -1 with a message (a file that cannot be removed). */
int prep_prefix_clean(const prep_shards *s, const sr_shard_tokenizer *t, int *removed, char *first, int *invalid,
                      char *bad, size_t cap, char *err, size_t errlen);

#endif
