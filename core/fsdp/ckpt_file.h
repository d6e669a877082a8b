/*
 * Writing one safetensors file of a checkpoint: its metadata (a list of entries that owns its
 * strings; the entries every file carries; the index hash and one placeholder per tensor for its
 * data's hash) and the file itself, whose tensors are hashed as they are written, their hashes set
 * in place of the placeholders before the file is finished (no second pass over the data).
 *
 * Lifecycle: sr__ckpt_kv_add ... (the caller's entries after sr__ckpt_add_common, then
 * sr__ckpt_add_hashes), sr__ckpt_out_create, sr__ckpt_out_put once per tensor, sr__ckpt_out_close
 * (finishes, or removes the file when anything failed), sr__ckpt_kv_free.  Failures print (naming
 * the file) and report a full disk to the agent (base/progress.h).
 */
#ifndef SR__FSDP_CKPT_FILE_H
#define SR__FSDP_CKPT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"

/* One save's or load's hashing time, for the debug line ([shardrun] log_level = debug). */
typedef struct sr__ckpt_times {
    double hash_s; /* in hashes of their own */
    long long hash_bytes;
    double copy_s; /* a load's copies that hash what they copy (sr__hash64_copy) */
    long long copy_bytes;
} sr__ckpt_times;

/* What every file of one checkpoint says about itself. */
typedef struct sr__ckpt_meta {
    char id[33];     /* the checkpoint id, 32 hex digits */
    char digest[17]; /* the model digest */
    char frozen[17]; /* SHARDED with frozen parameters: the frozen base's digest (fsdp/ckpt_frozen.h), else "" */
    long long step;
    int world_size, shard_group_size;
} sr__ckpt_meta;

typedef struct sr__ckpt_kvlist {
    sr__st_kv *kv;
    size_t n, cap;
    int oom; /* an entry found no memory (or its value was NULL): sr__ckpt_out_create refuses the list */
} sr__ckpt_kvlist;
/* Appends (key copied, value taken: NULL, from a failed sr__fmt, marks the list oom). */
void sr__ckpt_kv_add(sr__ckpt_kvlist *l, const char *key, char *value /* taken */);
void sr__ckpt_kv_free(sr__ckpt_kvlist *l);
/* shardrun_checkpoint, file (role: shard, model or optimizer), checkpoint_id, global_step,
   world_size, shard_group_size, model_digest. */
void sr__ckpt_add_common(sr__ckpt_kvlist *l, const sr__ckpt_meta *m, const char *role);
/* After every other entry: index_hash, then "hash:NAME" placeholders for the n tensors. */
void sr__ckpt_add_hashes(sr__ckpt_kvlist *l, const sr__st_tensor *t, size_t n);

typedef struct sr__ckpt_out {
    sr__st_writer *w;
    char *path;
    size_t n;
    char **names;
    uint64_t *hash;
    sr__ckpt_times *times;
} sr__ckpt_out;
/* Creates path (taken; NULL, from a failed sr__fmt, is out of memory) with the n tensors' layout and
   l's metadata.  0, or -1 after printing; sr__ckpt_out_close either way. */
int sr__ckpt_out_create(sr__ckpt_out *o, char *path, const sr__st_tensor *t, size_t n, const sr__ckpt_kvlist *l,
                        sr__ckpt_times *times);
/* Writes tensor idx whole, hashing it.  0, or -1 after printing. */
int sr__ckpt_out_put(sr__ckpt_out *o, size_t idx, const void *data, size_t bytes);
/* Sets the hashes and finishes a file written without error (ok), else removes it.  0, or -1
   after printing why.  Safe on a file whose create failed. */
int sr__ckpt_out_close(sr__ckpt_out *o, int ok);

#endif
