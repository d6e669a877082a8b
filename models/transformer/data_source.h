/*
 * transformer data source: where a decoder task's samples come from.  lm_data.c reads every sample
 * through this table, so a new kind of data (JSON Lines, pre-tokenized shards, packed samples) is a
 * new tf_data_source beside tf_data_source_text, not a change to the task's callbacks.
 *
 * A source fills a tf_dataset (dataset.h): n samples of T token ids each (padded with eos) and each
 * sample's real length; the trainer's sampler picks sample indices, and lm_task.c copies those
 * samples into the micro-batch.  The held-out split (validation_split_percentage) then works on any
 * source: tf_dataset_split_tail.
 *
 * Lifecycle: load() once at create(), on every rank alike (the same settings must give the same
 * samples in the same order) -> describe() for the start-up log line -> tf_dataset_free().
 */
#ifndef TF_DATA_SOURCE_H
#define TF_DATA_SOURCE_H

#include <stddef.h>

#include "dataset.h"
#include "tokenizer.h"

typedef struct tf_data_source {
    const char *name; /* what the source reads, for messages ("text files") */
    /* The samples o describes, tokenized with tok: 0, or -1 with a message in err naming the file
       or setting at fault and what to do; *d is then empty. */
    int (*load)(tf_dataset *d, const tf_data_opts *o, tf_tokenizer *tok, char *err, size_t errlen);
    /* Where d's samples came from, for the log line after "N samples of T tokens (...) ", e.g.
       "from 12 texts of 3 files (1 shorter texts dropped)". */
    void (*describe)(const tf_dataset *d, char *out, size_t len);
} tf_data_source;

/* Text files split into paragraphs, lines or whole files, or JSON Lines records (dataset.h); packed
   into full blocks or one padded sample per text */
extern const tf_data_source tf_data_source_text;
/* llm.c token shards (shardrun/data.h), mapped: the stream of their tokens cut into blocks of T
   (always packed; nothing is tokenized, so tok may be NULL) */
extern const tf_data_source tf_data_source_shards;

#endif
