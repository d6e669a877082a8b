/*
 * gen model: one decoder checkpoint as the generator sees it, whatever its family -- the figures
 * the generator checks prompts against, and the family's forward with a key/value cache.
 *
 * Lifecycle: gen_model_load() opens the file (gen_file.h), tells the family from --family, else
 * from the tensors' names (transformer.wte: GPT-2; word_embeddings: BLOOM; model.embed_tokens: the
 * Llama family), else from config.json's model_type next to the model, and hands it to the family's
 * loader (gpt2_gen_load in models/gpt2, bloom_gen_load in models/bloom, llama_gen_load in
 * models/llama), which fills the figures and the ops -> start(positions) allocates the cache for
 * that many positions -> prompt() once -> next() per new token (or full() without the cache) ->
 * free().  The ops run fp32 on the CPU kernel table.
 */
#ifndef GEN_MODEL_H
#define GEN_MODEL_H

#include <stdint.h>

#include "gen_file.h"

typedef struct gen_opts {
    const char *family; /* "gpt2", "bloom", "llama"; NULL: from the file */
    const char *size;   /* a family's size name: checked against the shapes (and its heads taken) */
    const char *config; /* an HF config.json; NULL: the one next to the model, when there is one */
    int n_head;         /* 0: from the config, the file's metadata, or the family's sizes */
    int n_kv_head;      /* Llama's key/value heads; 0: as n_head */
} gen_opts;

typedef struct gen_model gen_model;
struct gen_model {
    const char *family; /* "gpt2", "bloom", "llama" */
    gen_file f;
    int V, P;        /* vocabulary rows; positions the model can take (its context) */
    char what[6000]; /* for the banner: "3 layers, 4 heads (the file's n_head metadata), n_embd 64" */
    void *impl;      /* the family's */
    /* the cache for up to `positions` (<= P) positions: 0, or -1 when out of memory */
    int (*start)(gen_model *m, int positions);
    /* forgets the cache, runs ids[0..n) and caches their keys and values: host logits [V] of the last */
    int (*prompt)(gen_model *m, const int32_t *ids, int n, float *logits);
    /* token id at the next position: its logits */
    int (*next)(gen_model *m, int32_t id, float *logits);
    /* no cache: the training forward over ids[0..n): the last position's logits */
    int (*full)(gen_model *m, const int32_t *ids, int n, float *logits);
    void (*free_impl)(gen_model *m);
};

/* 0; -1 with a message in err (a file, a family or a size that does not fit, naming what to do);
   -2 when out of memory */
int gen_model_load(const char *path, const gen_opts *o, gen_model *m, char *err, size_t errlen);
void gen_model_free(gen_model *m);

/* the families' loaders, on an opened m->f */
int gpt2_gen_load(gen_model *m, const gen_opts *o, char *err, size_t errlen);
int bloom_gen_load(gen_model *m, const gen_opts *o, char *err, size_t errlen);
int llama_gen_load(gen_model *m, const gen_opts *o, char *err, size_t errlen);

#endif
