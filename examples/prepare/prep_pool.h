/*
 * The prepare command's tokenizing pool: N threads, each with its own tokenizer (tf_tokenizer fills
 * caches while it encodes, so one is never shared), turn chunks of text into token ids; the main
 * thread fills chunks in input order and takes the results back in the same order.
 *
 * Lifecycle: prep_pool_start (loads the first tokenizer, which checks the files, before any text is
 * read; each other thread loads its own as it starts) -> loop:
 * prep_pool_free_slot, fill it (prep_chunk_add), prep_pool_submit; prep_pool_next_done, use its ids,
 * prep_pool_release -> prep_pool_stop.  Only the main thread calls these.
 */
#ifndef PREP_POOL_H
#define PREP_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* One piece of one document: text[off, off + len) of the chunk; eot_first: the document starts
   here, so its ids begin with the end-of-text token (llm.c's shards: <|endoftext|> before each
   document). */
typedef struct {
    size_t off, len;
    int eot_first;
} prep_seg;

typedef struct {
    char *text; /* the chunk's segments, back to back */
    size_t len, cap;
    prep_seg *seg;
    size_t nseg, seg_cap;
    int32_t *ids; /* the result: every segment's ids in order */
    size_t nids, ids_cap;
    int failed;        /* out of memory while encoding */
    uint64_t in_bytes; /* input bytes read up to the end of this chunk (progress) */
} prep_chunk;

/* Appends a segment (copied): 0, or -1 when out of memory. */
int prep_chunk_add(prep_chunk *c, const char *text, size_t len, int eot_first);

/* What each thread loads its tokenizer from: tokenizer_json, or vocab_json + merges_txt, or none
   of them (byte-level). */
typedef struct {
    const char *tokenizer_json, *vocab_json, *merges_txt;
} prep_tokenizer_files;

tf_tokenizer *prep_tokenizer_load(const prep_tokenizer_files *f, char *err, size_t errlen);

typedef struct prep_pool prep_pool;

/* nthreads threads and 4 x nthreads chunks in flight.  NULL with a message in err (a tokenizer that
   does not load, out of memory, no thread). */
prep_pool *prep_pool_start(const prep_tokenizer_files *f, int nthreads, char *err, size_t errlen);
/* The threads' tokenizer's vocabulary size. */
int prep_pool_vocab_size(const prep_pool *p);
/* The next chunk to fill (emptied), or NULL when all chunks are in flight (take one back first). */
prep_chunk *prep_pool_free_slot(prep_pool *p);
void prep_pool_submit(prep_pool *p);
/* The oldest submitted chunk once it is encoded (waits for it), or NULL when none is in flight. */
prep_chunk *prep_pool_next_done(prep_pool *p);
void prep_pool_release(prep_pool *p);
/* Joins the threads (chunks still in flight are finished first) and frees everything. */
void prep_pool_stop(prep_pool *p);

#endif
