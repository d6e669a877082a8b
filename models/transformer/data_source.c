/* The data sources of data_source.h: text and JSON Lines files (dataset.c), token shards. */
#include "data_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void text_describe(const tf_dataset *d, char *out, size_t len) {
    snprintf(out, len, "from %lld texts of %lld files (%lld shorter texts dropped", d->texts_read - d->texts_dropped,
             d->files, d->texts_dropped);
    size_t k = strlen(out);
    if (d->tokens_left && k < len)
        snprintf(out + k, len - k, "; packed, the last %lld tokens fill no block", d->tokens_left);
    k = strlen(out);
    if (k < len) snprintf(out + k, len - k, ")");
}

const tf_data_source tf_data_source_text = {"text files", tf_dataset_load, text_describe};

static int shards_load(tf_dataset *d, const tf_data_opts *o, tf_tokenizer *tok, char *err, size_t errlen) {
    (void)tok;
    memset(d, 0, sizeof *d);
    if (!o->packing) {
        snprintf(err, errlen,
                 "packing = false needs texts, and token shards hold one stream of tokens; leave "
                 "packing out (token shards are packed) or give text or JSON Lines files");
        return -1;
    }
    if (!(d->shards = calloc(1, sizeof *d->shards))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->owns_shards = 1;
    if (sr_shard_set_open(d->shards, o->patterns, o->base_dir, err, errlen) != 0) {
        free(d->shards);
        d->shards = NULL;
        return -1;
    }
    d->T = o->max_length;
    d->n = d->shards->ntokens / d->T;
    if (o->max_samples && d->n > o->max_samples) d->n = o->max_samples;
    d->tokens = d->n * d->T;
    d->tokens_left = d->shards->ntokens - d->n * d->T;
    d->files = d->shards->n;
    if (!d->n) {
        snprintf(err, errlen,
                 "the %d token shards (\"%s\") hold %lld tokens, fewer than one block of max_length = %d; "
                 "add shards or lower max_length",
                 d->shards->n, o->patterns, (long long)d->shards->ntokens, d->T);
        tf_dataset_free(d);
        return -1;
    }
    return 0;
}

static void shards_describe(const tf_dataset *d, char *out, size_t len) {
    /* which tokenizer wrote them: the one a job that names no tokenizer learns it from */
    const sr_shard_tokenizer *t = d->shards ? &d->shards->tokenizer : NULL;
    snprintf(
        out, len, "packed from %lld tokens of %lld token shards %s%s, %.1f MB mapped (the last %lld tokens unused)",
        d->shards ? (long long)d->shards->ntokens : 0, d->files, t && t->hash ? "of tokenizer " : "",
        t && t->hash ? t->name : "that record no tokenizer", d->shards ? d->shards->bytes / 1e6 : 0.0, d->tokens_left);
}

const tf_data_source tf_data_source_shards = {"token shards", shards_load, shards_describe};
