/*
 * gen file: the model file a generator reads -- a HuggingFace model.safetensors or a shardrun
 * FULL_STATE_DICT checkpoint folder (whose model.safetensors is one) -- opened, checked and handed
 * out tensor by tensor as fp32, for every family's loader (models/gpt2/gpt2_weights.c,
 * models/bloom/bloom_infer.c, models/llama/llama_infer.c).
 *
 * Lifecycle: gen_file_open() resolves the path (a folder: its model.safetensors; a SHARDED or DCP
 * folder, a shard file or an optimizer file is refused saying what to do), maps the file, checks a
 * shardrun checkpoint's hashes (or touches every page of another file, so the first token does not
 * pay for the page faults) -> gen_file_take() per tensor (F32 used in place, F16/BF16 converted;
 * each one taken is marked used) -> gen_file_check_used() refuses a tensor nobody took ->
 * gen_file_close() (the pointers handed out die with it).
 *
 * Names: a name starting with "transformer." is also looked up without it (HF's Hub files of
 * GPT-2 and BLOOM are saved from the base model, without the prefix).
 */
#ifndef GEN_FILE_H
#define GEN_FILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct gen_file {
    char file[4096]; /* the safetensors file read */
    char dir[4096];  /* its folder (where config.json and the tokenizer's files may be) */
    long long step;  /* the checkpoint's global_step, -1 when the file is no shardrun checkpoint */
    void *st;        /* the mapped file (sr__st_file) */
    int *used;       /* per tensor: taken */
    float **owned;   /* converted (non-F32) tensors */
    int nowned;
    float **merged; /* per tensor: its values with a LoRA checkpoint's adapters merged in (gen_lora.h), or
                       NULL; gen_file_take hands these out instead, gen_file_close frees them */
} gen_file;

/* 0; -1 with a message in err naming the file and what to do; -2 when out of memory */
int gen_file_open(const char *path, gen_file *f, char *err, size_t errlen);
/* the tensor's shape (ndim, dims into shape[4]) when the file has it (see Names), else 0 */
int gen_file_shape(const gen_file *f, const char *name, int64_t shape[4]);
/* a metadata value of the file, or NULL */
const char *gen_file_meta(const gen_file *f, const char *key);
/* each tensor's name in turn (i < count), NULL past the end */
const char *gen_file_name(const gen_file *f, size_t i);
/* Points *dst at tensor name's fp32 data ([d0] when d1 is 0, else [d0, d1]).  model: what the file
   should be, for the messages ("a GPT-2 with n_embd 64, vocab 257, context 96"); family: the
   family's model name ("GPT-2 LM model (HF's GPT2LMHeadModel names)").  0, -1 with a message, -2
   when out of memory. */
int gen_file_take(gen_file *f, const char *name, int64_t d0, int64_t d1, const float **dst, const char *model,
                  const char *family, char *err, size_t errlen);
/* -1 with a message naming the first tensor not taken that ignorable (NULL: none) does not excuse;
   family_short: "GPT-2" in "has a tensor GPT-2 does not" */
int gen_file_check_used(const gen_file *f, int (*ignorable)(const char *name), const char *family_short,
                        const char *family, char *err, size_t errlen);
void gen_file_close(gen_file *f);

/* An HF config.json member in dir/config.json (or the file itself when dir is a .json file): its
   integer value (0 when absent, unreadable or not a positive integer below 100000), or, with
   str, its string value copied into str (returns 1 when found). */
int gen_config_int(const char *dir, const char *key);
/* The attention heads the model itself records: the file's n_head metadata, else config.json's
   (next to the file, or `config`); 0 when neither says.  *from: which, for messages. */
int gen_recorded_heads(const gen_file *f, const char *config, const char **from);
/* "h.<i>." (after an optional "transformer.") -> i, else -1: the layer of a GPT-2 or BLOOM tensor */
int gen_layer_of(const char *name);
int gen_config_str(const char *dir, const char *key, char *str, size_t len);

#endif
