/*
 * shardrun data layer: the token data a model task trains on, shared by the transformer tasks and
 * open to a user's own task (link libshardrun, include this header).  docs/data.md describes the
 * formats, the [task] keys of the transformer tasks and every check.
 *
 * Token shards are llm.c's format (its dev/data/data_common.py writes them, llmc/dataloader.h reads
 * them): a header of 256 little-endian int32 -- [0] magic, [1] version, [2] the token count -- then
 * the tokens, little-endian uint16 (magic 20240520, version 1: GPT-2's vocabulary) or uint32 (magic
 * 20240801, version 7: larger vocabularies).  shardrun's writer may also record which tokenizer
 * wrote the tokens, in header words 3..23, which llm.c's writer leaves zero and its readers ignore
 * (sr_shard_tokenizer below); nothing else is in a shard.
 *
 * Lifecycles:
 *   reading one shard:  sr_shard_open (checks the header against the file's size; maps the file,
 *                       nothing is copied) -> sr_shard_read / sr_shard_check_vocab, any number, from
 *                       any thread -> sr_shard_close
 *   a set of shards:    sr_shard_set_open (whitespace-separated globs, matches sorted) -> the set is
 *                       one token stream, the shards' tokens in order: sr_shard_set_read,
 *                       sr_shard_set_check_vocab (or _range over a rank's sr_shard_set_share),
 *                       sr_shard_set_identity -> sr_shard_set_close
 *   writing a shard:    sr_shard_writer_open (a hidden temporary next to the path) ->
 *                       sr_shard_writer_append, any number -> sr_shard_writer_close (header, fsync,
 *                       rename: the path appears complete or not at all) or sr_shard_writer_abort;
 *                       sr_shard_write does all three for tokens already in memory
 *   JSON Lines:         sr_jsonl_each / sr_jsonl_file_each call back once per record with its
 *                       text field, in file order; the callback may stop the walk
 *   packing:            sr_packer_add per document (the end-of-text token goes between documents)
 *                       -> sr_packer_blocks full blocks of T tokens at ids -> sr_packer_free
 *
 * Errors: every function that can fail returns -1 (or NULL) with a message in err[errlen] that names
 * the file and the byte offset or line at fault and what to do; nothing here prints or exits.
 * Reads of a mapped shard never fault: a shard that shrank under a reader (another process
 * rewriting it) is an error of that read, not a SIGBUS.
 */
#ifndef SHARDRUN_DATA_H
#define SHARDRUN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SR_SHARD_HEADER_INTS 256
#define SR_SHARD_HEADER_BYTES (SR_SHARD_HEADER_INTS * 4)
#define SR_SHARD_MAGIC_U16 20240520
#define SR_SHARD_VERSION_U16 1
#define SR_SHARD_MAGIC_U32 20240801
#define SR_SHARD_VERSION_U32 7
/* header[2] is an int32: at most this many tokens per shard (llm.c asserts fewer than 2^31) */
#define SR_SHARD_MAX_TOKENS 2147483647LL

/* ---- which tokenizer wrote a shard ---------------------------------------------------------- */

/* The record in header words 3..23: [3] SR_SHARD_TOKENIZER_TAG, [4] SR_SHARD_TOKENIZER_VERSION, [5]
   and [6] the hash (low, high 32 bits), [7] the tokenizer's vocabulary, [8..23] its name (64 bytes,
   NUL-padded).  A header whose word 3 is 0 records no tokenizer (llm.c's writer, sr_shard_write). */
#define SR_SHARD_TOKENIZER_TAG 0x4b545253 /* "SRTK" */
#define SR_SHARD_TOKENIZER_VERSION 1
#define SR_SHARD_TOKENIZER_NAME 64

typedef struct sr_shard_tokenizer {
    uint64_t hash; /* XXH3 of the tokenizer's files (sr_shard_tokenizer_of_files); 0: not recorded */
    int64_t vocab; /* the ids the tokenizer gives */
    char name[SR_SHARD_TOKENIZER_NAME]; /* for people: "byte-level", "gpt2/vocab.json+merges.txt" */
} sr_shard_tokenizer;

/* The identity of the tokenizer loaded from files[0 .. n) (n = 0: byte-level tokens, no file) with
   vocab ids: the hash is XXH3 over each file's size and bytes, in order (the same files give the same
   hash on every machine, wherever they are), and the name is the first file's folder and the files'
   names, "Llama-3.2-1B/tokenizer.json", "gpt2/vocab.json+merges.txt" (its last 63 bytes).  0, or -1
   with the file that cannot be read in err. */
SR_API int sr_shard_tokenizer_of_files(sr_shard_tokenizer *t, const char *const *files, int n, int64_t vocab, char *err,
                                       size_t errlen);
/* Whether a and b are the same tokenizer (both unrecorded counts as the same). */
SR_API int sr_shard_tokenizer_same(const sr_shard_tokenizer *a, const sr_shard_tokenizer *b);
/* For messages: "tokenizer NAME (xxh3 HASH, vocabulary V)", or "no tokenizer record (llm.c's
   writer ...)" */
SR_API void sr_shard_tokenizer_describe(const sr_shard_tokenizer *t, char *out, size_t len);

/* ---- one shard ------------------------------------------------------------------------------- */

typedef struct sr_shard {
    char *path;
    int token_bytes;              /* 2 (uint16) or 4 (uint32) */
    int64_t ntokens;              /* header[2]; the file is exactly SR_SHARD_HEADER_BYTES + ntokens * token_bytes */
    int64_t bytes;                /* the file's size at open */
    sr_shard_tokenizer tokenizer; /* header words 3..23: which tokenizer wrote it (hash 0: not recorded) */
    /* the reader's own */
    int fd;
    const unsigned char *map;
    size_t map_len;
} sr_shard;

/* Opens path: a regular file with a valid header (magic and version one of the two pairs above, a
   token count of at least 1) whose size is the header's plus its tokens'.  0, or -1 with the file,
   the offset and what is wrong in err (a directory or a device is refused by name). */
SR_API int sr_shard_open(sr_shard *s, const char *path, char *err, size_t errlen);
/* out[0 .. n) = tokens first .. first+n-1 as int32.  0, or -1 when the range is outside the shard or
   the file no longer holds it (shrunk while mapped: reported, never read past). */
SR_API int sr_shard_read(const sr_shard *s, int64_t first, int64_t n, int32_t *out, char *err, size_t errlen);
/* 0 when every token is below vocab; else -1 with the first one that is not (its index and byte
   offset in the file) in err.  Reads the whole shard, sequentially, leaving nothing mapped in. */
SR_API int sr_shard_check_vocab(const sr_shard *s, int64_t vocab, char *err, size_t errlen);
SR_API void sr_shard_close(sr_shard *s);

/* ---- a set of shards: one token stream ------------------------------------------------------- */

typedef struct sr_shard_set {
    int n;                        /* shards */
    sr_shard *shards;             /* in pattern order, each pattern's matches sorted */
    int64_t *first;               /* n + 1: shards[i] holds the stream's tokens first[i] .. first[i+1]-1 */
    int64_t ntokens;              /* = first[n] */
    int64_t bytes;                /* the files' sizes together */
    int token_bytes;              /* every shard's (a set of mixed widths is refused) */
    sr_shard_tokenizer tokenizer; /* every shard's (a set of mixed tokenizers is refused) */
} sr_shard_set;

/* patterns: whitespace-separated file names or glob(3) patterns (a backslash keeps a space: "my\
   file.bin"); relative ones are relative to base_dir (NULL: the current folder).  Every pattern
   must match; a file matched twice is taken once.  Every shard must hold tokens of the same width
   and record the same tokenizer (or all none): a set that mixes them is refused, naming two files
   that disagree.  0, or -1 with the pattern or file at fault. */
SR_API int sr_shard_set_open(sr_shard_set *set, const char *patterns, const char *base_dir, char *err, size_t errlen);
/* out[0 .. n) = the stream's tokens first .. first+n-1, across shard boundaries.  0 or -1. */
SR_API int sr_shard_set_read(const sr_shard_set *set, int64_t first, int64_t n, int32_t *out, char *err, size_t errlen);
/* sr_shard_check_vocab for every shard (the first failure names its file). */
SR_API int sr_shard_set_check_vocab(const sr_shard_set *set, int64_t vocab, char *err, size_t errlen);
/* The same check over the stream's tokens first .. first+n-1 only, across shard boundaries; a bad
   id's message is sr_shard_check_vocab's (the file, the byte offset, the token's index in its
   shard).  The ranks of a run share the check this way: each checks its sr_shard_set_share and they
   agree on the outcome (an all-reduce), so the set is read once in all, not once per rank.  0, or
   -1 (also for a range outside the stream). */
SR_API int sr_shard_set_check_vocab_range(const sr_shard_set *set, int64_t vocab, int64_t first, int64_t n, char *err,
                                          size_t errlen);
/* Rank's share of the stream among size ranks (0 <= rank < size): *first, *n tokens.  The shares
   are consecutive, cover every token once and differ by at most one token (a share may start or
   end inside a shard). */
SR_API void sr_shard_set_share(const sr_shard_set *set, int rank, int size, int64_t *first, int64_t *n);
/* A cheap identity of the set for checkpoints, written into out[len] (NUL-terminated, truncated
   when longer): "<N> shards, <bytes> bytes, xxh3 <16 hex>", the hash over each shard's base name,
   size, header and a few pages sampled from it (not every byte: a rewrite that keeps all of those
   goes unseen).  per_shard (optional, may be NULL) is called with each shard's base name, size
   and own hash. */
SR_API void sr_shard_set_identity(const sr_shard_set *set, char *out, size_t len,
                                  void (*per_shard)(void *user, const char *name, int64_t bytes, uint64_t hash),
                                  void *user);
SR_API void sr_shard_set_close(sr_shard_set *set);

/* ---- writing a shard ------------------------------------------------------------------------- */

typedef struct sr_shard_writer sr_shard_writer;

/* The token width a vocabulary of vocab ids needs: 2 (up to 65536) or 4. */
SR_API int sr_shard_token_bytes(int64_t vocab);
/* Starts path (token_bytes 2 or 4) through a hidden temporary in the same folder (".<name>.partial-
   <pid>"): nothing named path exists until sr_shard_writer_close.  NULL with the reason in err. */
SR_API sr_shard_writer *sr_shard_writer_open(const char *path, int token_bytes, char *err, size_t errlen);
/* Appends ids[0 .. n): each in [0, 2^16) or [0, 2^32) for the width, and at most
   SR_SHARD_MAX_TOKENS in all.  0, or -1 (the writer stays open: abort it). */
SR_API int sr_shard_writer_append(sr_shard_writer *w, const int32_t *ids, size_t n, char *err, size_t errlen);
/* Appends n tokens already in the shard's layout: n * token_bytes bytes, little-endian uint16 or
   uint32 (every value fits its width, so nothing is checked but the count).  For writers that pack
   ids in other threads (shardrun_prepare).  0, or -1 (the writer stays open: abort it). */
SR_API int sr_shard_writer_append_encoded(sr_shard_writer *w, const void *tokens, size_t n, char *err, size_t errlen);
/* Records t (sr_shard_tokenizer_of_files) in the header written at close; without it the header's
   words 3.. stay zero, as llm.c writes them. */
SR_API void sr_shard_writer_set_tokenizer(sr_shard_writer *w, const sr_shard_tokenizer *t);
/* Tokens appended so far. */
SR_API int64_t sr_shard_writer_tokens(const sr_shard_writer *w);
/* Writes the header, syncs and renames the temporary to path; frees w in any case.  A shard of no
   tokens is refused (readers refuse it too).  0, or -1 (the temporary is removed). */
SR_API int sr_shard_writer_close(sr_shard_writer *w, char *err, size_t errlen);
/* Removes the temporary and frees w. */
SR_API void sr_shard_writer_abort(sr_shard_writer *w);
/* open + append + close */
SR_API int sr_shard_write(const char *path, int token_bytes, const int32_t *ids, size_t n, char *err, size_t errlen);

/* ---- JSON Lines ------------------------------------------------------------------------------ */

/* Called per record with its text field (UTF-8, len bytes, NUL-terminated; may hold \u0000 as a NUL
   byte) and the record's 1-based line number.  Return 0 to go on; anything else stops the walk and
   is returned (the callback writes its own message where it wants one). */
typedef int (*sr_jsonl_fn)(void *user, const char *text, size_t len, long long line);

/* Walks text[0 .. n): one JSON object per line, as datasets' Dataset.to_json writes them; blank
   lines are skipped.  name: the file's name for messages; first_line: the line number of text[0]
   (1 for a whole file or its first chunk: a UTF-8 byte order mark there is skipped; for a later
   chunk of a file, its first line's).  A line that is not a JSON object,
   or lacks field or holds something other than a string there, stops the walk with -1 and
   "<name>:<line>: ..." in err.  0 when every record was handed over. */
SR_API int sr_jsonl_each(const char *text, size_t n, const char *name, long long first_line, const char *field,
                         sr_jsonl_fn fn, void *user, char *err, size_t errlen);
/* Checks the start of a JSON Lines file, reading at most its first 1 MiB: after a byte order mark
   and blank lines, the first record must be a JSON object with field holding a string (checked in
   full when its line ends within that MiB, else its first byte must be "{").  For callers that would
   read a large file whole before sr_jsonl_each reaches its line 1.  0; 1 when the file holds no
   record (empty or only blank lines: "<path>: no text: ..." in err); -1 with "<path>:<line>: ..." in
   err. */
SR_API int sr_jsonl_check_start(const char *path, const char *field, char *err, size_t errlen);
/* sr_jsonl_each over a whole regular file, mapped (never copied). */
SR_API int sr_jsonl_file_each(const char *path, const char *field, sr_jsonl_fn fn, void *user, char *err,
                              size_t errlen);

/* ---- packing (run_clm's group_texts) --------------------------------------------------------- */

typedef struct sr_packer {
    int T;          /* tokens per block */
    int32_t eos;    /* the end-of-text token put between documents */
    int32_t *ids;   /* every token so far: documents joined by eos */
    int64_t n, cap; /* tokens held, allocated */
    int64_t docs;   /* documents added */
} sr_packer;

/* Starts an empty packer ({0} before; T >= 1). */
SR_API void sr_packer_init(sr_packer *p, int T, int32_t eos);
/* Appends a document (eos first unless it is the first).  0, or -1 when out of memory. */
SR_API int sr_packer_add(sr_packer *p, const int32_t *ids, size_t n);
/* Full blocks: block i is ids[i*T .. (i+1)*T); the last n % T tokens are dropped, as group_texts does. */
SR_API int64_t sr_packer_blocks(const sr_packer *p);
SR_API void sr_packer_free(sr_packer *p);

/* ---- what a run trains on, for its checkpoints ------------------------------------------------ */

typedef struct sr_ctx sr_ctx; /* shardrun/task.h */

/* A model task says, in create(), which data it trains on: identity, a short line that changes when
   the data does (sr_shard_set_identity's), and detail, what a person reads to tell which data it was
   (the shards' names, sizes and hashes); detail may be NULL.  Checkpoints record both
   (trainer_state.json, stateful_callbacks.shardrun.data_identity and data_files); a resume from a
   checkpoint whose identity differs is refused before step 0 unless [task] resume_allow_changes
   lists data.  0, or -1 when out of memory. */
SR_API int sr_data_identity(sr_ctx *ctx, const char *identity, const char *detail);

#ifdef __cplusplus
}
#endif

#endif
