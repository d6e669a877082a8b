/*
 * What the checkpoint format fixes (docs/checkpoint-format.md is its specification): the version,
 * the file and tensor names, the metadata every file carries, and the two digests computed from
 * names rather than data -- the index hash over a file's metadata and the model digest over the
 * parameters' names, shapes and ties.  Pure functions; nothing here prints.
 */
#ifndef SR__FSDP_CKPT_FORMAT_H
#define SR__FSDP_CKPT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/model_desc.h"
#include "io/safetensors.h"

/* "shardrun_checkpoint" in every file's metadata.  3: XXH3 hashes; 2: shardrun's own earlier hash
   (refused: docs/checkpoint-format.md "Versions"); none: before the integrity metadata (refused). */
#define SR__CKPT_FORMAT "3"
#define SR__CKPT_HASH_PLACEHOLDER "0000000000000000" /* a "hash:NAME" value until the tensor is written */

/* The three fp32 arrays saved per parameter, and their names in tensor names ("u3.exp_avg"). */
enum { SR__CKPT_PARAM = 0, SR__CKPT_EXP_AVG, SR__CKPT_EXP_AVG_SQ, SR__CKPT_KINDS };
extern const char *const sr__ckpt_kind[SR__CKPT_KINDS];
/* The engine's shard of a unit (fsdp/engine_internal.h) that a kind is saved from and loaded into;
   NULL for the moments of a frozen unit, which has none (and saves none). */
struct sr__uslot;
float *sr__ckpt_kind_shard(struct sr__uslot *s, int kind);

/* "shard-RRRRR-of-SSSSS.safetensors" into buf; returns buf. */
char *sr__ckpt_shard_name(char *buf, size_t len, int rank, int nshards);
/* Whether name is a shard file's name: 1 with *rank and *nshards (as written, unchecked), else 0. */
int sr__ckpt_shard_name_parse(const char *name, int *rank, int *nshards);

/* A metadata key the index hash leaves out: "hash:TENSOR" and "index_hash" itself. */
int sr__ckpt_is_hash_key(const char *key);
/* XXH3-64 of every other entry's key and value, each with its NUL, in the header's order. */
uint64_t sr__ckpt_index_hash(const sr__st_kv *kv, size_t n);
/* The model digest, 16 hex digits: the sum of XXH3-64("NAME\nSHAPE\nTIED_TO") over the parameters
   (independent of declaration order, world size and wrap policy). */
void sr__ckpt_model_digest(const sr_model *m, char out[17]);

#endif
