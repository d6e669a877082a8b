/*
 * transformer dataset: a decoder task's training samples -- text files split into texts, filtered,
 * tokenized, and cut or padded to a fixed number of tokens.
 *
 * Lifecycle: tf_dataset_load() once at start-up, on every rank alike (the same files give the same
 * samples in the same order; the trainer's sampler gives each data-parallel rank its own sample
 * indices, so nothing is sharded here) -> the trainer reads ids/lengths -> tf_dataset_free().
 */
#ifndef TF_DATASET_H
#define TF_DATASET_H

#include <stdint.h>

#include "shardrun/data.h"
#include "tokenizer.h"

/* The most text and JSON Lines files may hold together: 4 GiB, read into each rank's memory (about a
   billion GPT-2 tokens, 4 GiB of ids per rank when packed).  Token shards are mapped, not read:
   this bound is not theirs. */
#define TF_DATA_MAX ((unsigned long long)4 << 30)

typedef enum { TF_SPLIT_PARAGRAPH, TF_SPLIT_LINE, TF_SPLIT_FILE } tf_split;
/* What the data files are: text (split into texts by tf_split), JSON Lines (one text per record, its
   text_field), or llm.c token shards (data_source.h's tf_data_source_shards) */
typedef enum { TF_FORMAT_TEXT, TF_FORMAT_JSONL, TF_FORMAT_SHARDS } tf_format;

typedef struct tf_data_opts {
    /* whitespace-separated files or glob(3) patterns, e.g. "/usr/share/common-licenses/[A-Z]*"; a
       backslash keeps a space in a name ("my\ file.txt") */
    const char *patterns;
    const char *base_dir; /* relative patterns are relative to this folder (the job file's); NULL: the current one */
    tf_split split; /* how files become texts: paragraphs (separated by blank lines; the default), lines, whole files */
    int min_chars;  /* texts with fewer non-whitespace characters (UTF-8 code points) are dropped */
    int max_length; /* tokens per sample: truncated to it, padded with eos */
    long long max_samples;  /* 0 = all; else keep the first max_samples texts (after filtering, in file order) */
    tf_format format;       /* text or JSON Lines here; shards: tf_data_source_shards */
    const char *text_field; /* JSON Lines: the member holding the text ("text") */
    int packing;            /* 1: texts joined by eos and cut into full blocks of max_length (group_texts),
                               no padding; 0: one sample per text, truncated and padded */
} tf_data_opts;

typedef struct tf_dataset {
    long long n;                                /* samples */
    int T;                                      /* = max_length */
    int32_t *ids;                               /* n*T input ids (padding = eos) */
    int32_t *lengths;                           /* n: real tokens in each sample (the rest is padding) */
    long long files, texts_read, texts_dropped; /* for a log line: files read, non-empty texts seen, dropped */
    long long tokens;                           /* sum of lengths */
    long long tokens_left;                      /* packed: the stream's last tokens that fill no block (dropped) */
    /* token shards (tf_data_source_shards): ids and lengths are NULL, and sample i is the stream's
       tokens (block0 + i) * T .. + T of shards, all real */
    sr_shard_set *shards;
    int owns_shards; /* this dataset closes them (a held-out tail shares its parent's) */
    long long block0;
} tf_dataset;

/* Sample i of d (i in [0, d->n)) into out[T]: 0, or -1 with err (a shard that changed under the run). */
int tf_dataset_sample(const tf_dataset *d, long long i, int32_t *out, int *len, char *err, size_t errlen);

/* 0, or -1 with a message in err (naming the pattern that matched no file, the file that cannot be
   read, etc., and what to do); *d is then empty.  Files of all patterns are taken in pattern order,
   each pattern's matches sorted (glob's order); a file reached twice (the same path, or a link to a
   file already taken) is read once; directories are skipped.  Texts are trimmed of leading and
   trailing whitespace, and empty ones are not texts at all; paragraph texts keep their inner
   newlines.  A file that is not valid UTF-8 is still read (bytes are bytes).  Zero samples after
   filtering is an error saying so.  Reading stops once max_samples texts are kept.  Only regular
   files are read: a match that is a device (/dev/zero), a pipe or a socket is refused, before any
   reading, naming it; and all files together may hold at most TF_DATA_MAX bytes (refused before
   reading too, from their sizes). */
int tf_dataset_load(tf_dataset *d, const tf_data_opts *o, tf_tokenizer *tok, char *err, size_t errlen);
void tf_dataset_free(tf_dataset *d);
/* Moves the last n samples of d into *tail (a held-out split: run_clm's validation_split_percentage);
   d keeps the others.  0, or -1 with a message in err (n out of 1..d->n-1, out of memory); d is then
   unchanged and *tail empty. */
int tf_dataset_split_tail(tf_dataset *d, long long n, tf_dataset *tail, char *err, size_t errlen);
/* "paragraph" | "line" | "file" -> *out: 0, or -1 if unknown */
int tf_split_parse(const char *s, tf_split *out);

#endif
