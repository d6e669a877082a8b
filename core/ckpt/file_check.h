/*
 * The task's files a FULL checkpoint lists (a tokenizer's files, config.json): model.safetensors'
 * metadata has "file:NAME" = XXH3-64 of the file's bytes (16 hex digits) for each.  A reader of the
 * checkpoint (a resume, shardrun_generate) checks them here; the engine writes them
 * (fsdp/ckpt_files.h).  Needs no engine: the hash and the safetensors reader only.
 */
#ifndef SR__CKPT_FILE_CHECK_H
#define SR__CKPT_FILE_CHECK_H

#include <stddef.h>

#include "io/safetensors.h"

#define SR__CKPT_FILE_KEY "file:" /* metadata key prefix: "file:tokenizer.json" */

/* Every "file:NAME" that model.safetensors (f) of folder dir lists: dir/NAME exists and has that
   hash.  0, or -1 with why (naming the file, the hashes and what to do). */
int sr__ckpt_check_files(const sr__st_file *f, const char *dir, char *why, size_t len);

#endif
