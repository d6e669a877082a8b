/*
 * transformer tokenizer_saved: which tokenizer a model folder says trained the model -- a shardrun
 * FULL checkpoint (its config.json's "shardrun_tokenizer": "byte-level", "tokenizer.json" or
 * "vocab.json merges.txt", written by lm_files.c beside the files themselves) or an HF model folder
 * (its tokenizer.json, or vocab.json and merges.txt) -- and whether two tokenizer files are the same
 * bytes.  For generation's default tokenizer and a fine-tune's (init_weights), and for refusing a
 * job that names another one.  No state; nothing printed.
 */
#ifndef TF_TOKENIZER_SAVED_H
#define TF_TOKENIZER_SAVED_H

#include <stddef.h>

typedef enum tf_saved_kind {
    TF_SAVED_NONE = 0, /* the folder says nothing (no record, no tokenizer files) */
    TF_SAVED_BYTES,    /* a byte-level run: one token per byte, no files */
    TF_SAVED_JSON,     /* json: its tokenizer.json */
    TF_SAVED_GPT2      /* vocab, merges: its vocab.json and merges.txt */
} tf_saved_kind;

typedef struct tf_saved_tok {
    tf_saved_kind kind;
    int recorded; /* 1: config.json's shardrun_tokenizer said it (a shardrun checkpoint), 0: found by file name */
    char json[4200], vocab[4200], merges[4200];
} tf_saved_tok;

/* config.json's member naming the tokenizer, and its values */
#define TF_SAVED_KEY "shardrun_tokenizer"
#define TF_SAVED_BYTES_NAME "byte-level"
#define TF_SAVED_JSON_NAME "tokenizer.json"
#define TF_SAVED_GPT2_NAME "vocab.json merges.txt"

/* What folder dir records.  0; -1 with a message in err (config.json unreadable or not JSON, a
   shardrun_tokenizer value of none of those, or a recorded file missing). */
int tf_saved_tokenizer(const char *dir, tf_saved_tok *t, char *err, size_t errlen);
/* The folder of a model path: path itself when it is a folder, else the folder it is in. */
void tf_saved_dir(const char *path, char *dir, size_t len);
/* 1 when files a and b hold the same bytes, 0 when not (or one cannot be read) */
int tf_same_bytes(const char *a, const char *b);
/* "tokenizer.json /x/tokenizer.json", "vocab.json /x/v.json and merges.txt /x/m.txt", "byte-level
   tokens" into out, for messages */
void tf_saved_describe(const tf_saved_tok *t, char *out, size_t len);

#endif
