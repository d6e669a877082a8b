/*
 * safetensors files (https://github.com/huggingface/safetensors format): the FULL_STATE_DICT
 * checkpoint, the per-rank files of a SHARDED_STATE_DICT checkpoint, and weights a run starts from.
 *
 * Layout: 8-byte little-endian header length N, N bytes of JSON
 *   {"__metadata__": {"k": "v", ...}, "name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...}
 * padded with spaces to a multiple of 8, then the data; offsets are relative to the data start.
 *
 * Writing: sr__st_create(path, tensors) computes every offset and writes the header; the data is
 * then written tensor by tensor (or piece by piece, at any offset) with sr__st_write; values known
 * only at the end (a hash of the data) replace same-length placeholders with sr__st_set_metadata;
 * sr__st_finish checks every byte was written, fsyncs and closes.  The writer writes `path` itself: callers
 * that need atomicity write to a temporary name and rename.  Reading: sr__st_open maps the file
 * and validates the header (JSON, dtypes, shapes vs. offsets, bounds, no overlap) and that the file
 * ends where its last tensor does (no trailing bytes: HF's reader refuses them too).
 */
#ifndef SR__CORE_SAFETENSORS_H
#define SR__CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/dtype.h"

#define SR__ST_MAX_DIMS 8

typedef struct sr__st_tensor {
    const char *name;
    sr_dtype dtype; /* F32, F16, BF16, I32, I64 */
    int ndim;
    int64_t shape[SR__ST_MAX_DIMS];
    uint64_t offset; /* from the start of the data section (filled in by create/open) */
    uint64_t nbytes; /* filled in by create/open */
} sr__st_tensor;

typedef struct sr__st_kv {
    const char *key, *value;
} sr__st_kv;

typedef struct sr__st_writer sr__st_writer;

/* Creates `path` (truncating) and writes the header: tensors in the given order, back to back.
   NULL with a message in err. */
sr__st_writer *sr__st_create(const char *path, const sr__st_tensor *tensors, size_t ntensors, const sr__st_kv *meta,
                             size_t nmeta, char *err, size_t errlen);
/* Writes `bytes` bytes at byte `offset` within tensor `index`.  0, or -1 with a message in err. */
int sr__st_write(sr__st_writer *w, size_t index, uint64_t offset, const void *data, size_t bytes, char *err,
                 size_t errlen);
/* Replaces the value of metadata `key` (given to sr__st_create) in the written header: the new
   value must take as many bytes as the old one (a placeholder of the same length, e.g. a hash of
   fixed width written as 16 zeros), so nothing moves.  Any time before sr__st_finish.  0 or -1. */
int sr__st_set_metadata(sr__st_writer *w, const char *key, const char *value, char *err, size_t errlen);
/* Checks every tensor was fully written, fsyncs, closes, frees.  0 or -1 (the file is removed). */
int sr__st_finish(sr__st_writer *w, char *err, size_t errlen);
/* Closes, removes the file, frees. */
void sr__st_abort(sr__st_writer *w);

typedef struct sr__st_file sr__st_file;

/* Maps and validates `path`; NULL with a message naming the file and the problem. */
sr__st_file *sr__st_open(const char *path, char *err, size_t errlen);
size_t sr__st_count(const sr__st_file *f);
const sr__st_tensor *sr__st_at(const sr__st_file *f, size_t i);
/* The tensor called `name` and its data, or NULL. */
const sr__st_tensor *sr__st_find(const sr__st_file *f, const char *name, const void **data);
/* A __metadata__ value, or NULL. */
const char *sr__st_metadata(const sr__st_file *f, const char *key);
/* The __metadata__ entries in the header's order: how many, and entry i (NULL past the end). */
size_t sr__st_metadata_count(const sr__st_file *f);
const sr__st_kv *sr__st_metadata_at(const sr__st_file *f, size_t i);
void sr__st_close(sr__st_file *f);

/* Elements [first, first + n) of a floating-point tensor (F32, BF16, F16) as fp32.  0, or -1 for
   an integer tensor. */
int sr__st_to_f32(const sr__st_tensor *t, const void *data, size_t first, size_t n, float *dst);

/* "F32", "F16", "BF16", "I32", "I64" */
const char *sr__st_dtype_name(sr_dtype dtype);
/* A shape for messages, "[2, 3]" ("[]" for a scalar), in buf; returns buf. */
const char *sr__st_shape_str(char *buf, size_t len, int ndim, const int64_t *shape);

#endif
