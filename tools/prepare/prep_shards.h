/*
 * The prepare command's output: the token stream cut into llm.c shards, the first val_tokens
 * tokens into PREFIX_val_000000.bin, the rest into PREFIX_train_000001.bin, ... of shard_tokens
 * each (llm.c's layout; without a val split the train shards start at 000000).  The val split's
 * size is a count, or (PREP_VAL_AUTO) a share of the tokens, decided once their number is known:
 * the tokens are held in memory until the end of the input or until there are enough that the
 * share reaches its bound (20 M tokens: 40 or 80 MB); or (PREP_VAL_ALL) every token is val, in
 * PREFIX_val_000000.bin, PREFIX_val_000001.bin, ... of shard_tokens each (eval-only data).
 *
 * Each shard is written to a hidden temporary name in the same folder (".NAME.tmp.PID") and renamed
 * when complete, so an interrupted run leaves no file that looks like a shard (prep_shards_abort
 * removes the temporary, from a signal handler too).  A shard whose file already holds exactly the
 * same tokens is left alone (a re-run rewrites nothing it need not).
 *
 * Lifecycle: prep_shards_init -> prep_shards_push any number of times -> prep_shards_finish.
 */
#ifndef PREP_SHARDS_H
#define PREP_SHARDS_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/data.h"

/* The default val split: 5% of the tokens (HF run_clm's validation_split_percentage), at most
   1,000,000 (the old fixed default: a large corpus's val split stays what it was). */
#define PREP_VAL_AUTO_PERCENT 5
#define PREP_VAL_AUTO_MAX 1000000

typedef enum {
    PREP_VAL_TOKENS, /* val_tokens tokens (0: no val split) */
    PREP_VAL_AUTO,   /* PREP_VAL_AUTO_PERCENT % of the tokens, at most PREP_VAL_AUTO_MAX */
    PREP_VAL_ALL     /* every token */
} prep_val_mode;

typedef struct {
    const char *prefix;
    uint64_t shard_tokens, val_tokens; /* val_tokens: the split's size once decided (PREP_VAL_AUTO) */
    prep_val_mode val_mode;            /* PREP_VAL_AUTO becomes PREP_VAL_TOKENS once decided */
    int val_auto;                      /* the size was PREP_VAL_AUTO's */
    unsigned char *held;               /* PREP_VAL_AUTO, undecided: the tokens so far */
    uint64_t held_n, held_cap;
    int vocab_size, token_bytes;
    sr_shard_tokenizer tokenizer; /* recorded in every shard's header */
    /* the state */
    int index; /* the shard being filled */
    int in_val;
    uint64_t n;
    /* what happened */
    int written, kept;
    int val_done;   /* a val shard is complete */
    int val_last;   /* the last val shard completed */
    int train_last; /* the last train shard completed, -1: none */
    uint64_t tokens;
} prep_shards;

/* t: the tokenizer, recorded in each shard's header; val_tokens: PREP_VAL_TOKENS's count.  0, or -1
   with a message (out of memory). */
int prep_shards_init(prep_shards *s, const char *prefix, uint64_t shard_tokens, prep_val_mode val_mode,
                     uint64_t val_tokens, int vocab_size, const sr_shard_tokenizer *t, char *err, size_t errlen);
/* n tokens already in the shards' layout (token_bytes each, little-endian: prep_pool's workers pack
   them): 0, or -1 with a message (a shard that cannot be written: the file and why). */
int prep_shards_push(prep_shards *s, const unsigned char *tokens, size_t n, char *err, size_t errlen);
/* Decides PREP_VAL_AUTO's size if still open, writes the last, partial shard; frees. 0 or -1 as
   above. */
int prep_shards_finish(prep_shards *s, char *err, size_t errlen);
/* Async-signal-safe: removes the temporary being written, if any. */
void prep_shards_abort(void);
/* Whether this run completed (wrote or kept) shard index of the split. */
int prep_shards_wrote(const prep_shards *s, int val, long index);
/* The shard name of split/index (for messages and the tests). */
void prep_shards_name(const prep_shards *s, int val, int index, char *out, size_t cap);

#endif
