/*
 * The tokenizer record of a shard's header (shardrun/data.h, sr_shard_tokenizer): written by the
 * shard writer, read by sr_shard_open.  Words 3..23 of the 256-word header, which llm.c's writer
 * leaves zero and its readers (llmc/dataloader.h, dev/data/data_common.py) never look at.
 */
#ifndef SR__DATA_SHARD_TOKENIZER_H
#define SR__DATA_SHARD_TOKENIZER_H

#include <stddef.h>

#include "shardrun/data.h"

/* The header's bytes 12 .. SR__SHARD_TOKENIZER_END hold the record */
#define SR__SHARD_TOKENIZER_END (24 * 4)

/* t into header[12 .. SR__SHARD_TOKENIZER_END) (zeros when t records nothing). */
void sr__shard_tokenizer_put(unsigned char *header, const sr_shard_tokenizer *t);
/* header[12 .. SR__SHARD_TOKENIZER_END) into *t: 0 (hash 0 when word 3 is 0: no record), or -1 with
   "<path>: offset N: ..." in err for a record this reader cannot read (another tag, version or an
   unterminated name: a damaged header). */
int sr__shard_tokenizer_get(const unsigned char *header, sr_shard_tokenizer *t, const char *path, char *err,
                            size_t errlen);

#endif
