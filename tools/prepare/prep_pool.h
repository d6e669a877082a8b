/*
 * The prepare command's pool: N threads turn jobs -- a piece of a text file, or whole lines of a
 * JSON Lines file -- into shard bytes: they parse the JSON (the text field, unescaped), tokenize,
 * put the end-of-text token before each document and pack the ids into the shard's layout
 * (little-endian uint16 or uint32).  The main thread only hands out jobs in input order (pointers
 * into the input, nothing copied) and takes the finished bytes back in the same order; the ring of
 * 4 x N jobs bounds what is in flight.
 *
 * Tokenizers: the first is loaded (and the files checked) before any thread starts; the others are
 * clones of it (tf_tokenizer_clone: the same tables, read by every thread, and one cache of encoded
 * pieces that all threads fill and read), so a thread starts in microseconds, not after a load.
 *
 * Lifecycle: prep_pool_start -> loop:
 * prep_pool_free_slot, set its input fields, prep_pool_submit; prep_pool_next_done, use its bytes,
 * prep_pool_release -> prep_pool_stop.  Only the main thread calls these.
 */
#ifndef PREP_POOL_H
#define PREP_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

typedef enum {
    PREP_JOB_TEXT, /* in[0 .. in_len): a piece of one document; eot_first: the document starts here */
    PREP_JOB_JSONL /* in[0 .. in_len): whole lines of JSON Lines, each record's text field a document */
} prep_job_kind;

typedef enum {
    PREP_OK,
    PREP_FAIL_MEMORY, /* out of memory while encoding */
    PREP_FAIL_INPUT,  /* a JSON Lines line that is no object or lacks the field (err: its line within the job) */
    PREP_FAIL_TOKEN,  /* an id the shard's width cannot hold (err says which) */
    PREP_FAIL_PATTERN /* a Split pattern of the tokenizer.json past PCRE2's match limit (err: which; exit 2) */
} prep_job_status;

typedef struct {
    /* the input, set by the main thread */
    prep_job_kind kind;
    const char *in; /* points into the input (the mapped JSON Lines file, the text file read) */
    size_t in_len;
    int eot_first;
    const char *name; /* the input's name, for messages */
    uint64_t in_end;  /* input bytes read up to the end of this job (progress) */
    uint64_t in_off;  /* where `in` starts in its file */
    void *source;     /* the main thread's own: what `in` points into */
    /* the result, written by a worker */
    int32_t *ids; /* the worker's buffer; out points into it */
    size_t ids_cap;
    const unsigned char *out; /* ntokens tokens in the shard's layout */
    size_t ntokens;
    uint64_t docs, text_bytes; /* documents begun here; their text (JSON Lines: decoded) */
    prep_job_status status;
    char err[1024];
} prep_job;

/* What the threads load their tokenizer from: tokenizer_json, or vocab_json + merges_txt, or none
   of them (byte-level). */
typedef struct {
    const char *tokenizer_json, *vocab_json, *merges_txt;
} prep_tokenizer_files;

tf_tokenizer *prep_tokenizer_load(const prep_tokenizer_files *f, char *err, size_t errlen);

typedef struct prep_pool prep_pool;

/* nthreads threads and 4 x nthreads jobs in flight; text_field: the JSON Lines field (the string
   must outlive the pool).  NULL with a message in err (a tokenizer that does not load, out of
   memory, no thread). */
prep_pool *prep_pool_start(const prep_tokenizer_files *f, int nthreads, const char *text_field, char *err,
                           size_t errlen);
/* The tokenizer's vocabulary size; the bytes a token takes in the shards (2 or 4). */
int prep_pool_vocab_size(const prep_pool *p);
/* The end-of-text id written before each document, and where it came from (tf_tokenizer_eos_from). */
int prep_pool_eos(const prep_pool *p, const char **from);
int prep_pool_token_bytes(const prep_pool *p);
/* The next job to fill (its result fields cleared), or NULL when all are in flight (take one back
   first). */
prep_job *prep_pool_free_slot(prep_pool *p);
void prep_pool_submit(prep_pool *p);
/* The oldest submitted job once it is done (waits for it), or NULL when none is in flight. */
prep_job *prep_pool_next_done(prep_pool *p);
void prep_pool_release(prep_pool *p);
/* Joins the threads (jobs still in flight are finished first) and frees everything; *worker_cpu_s
   (may be NULL): the CPU seconds the threads used together. */
void prep_pool_stop(prep_pool *p, double *worker_cpu_s);

#endif
