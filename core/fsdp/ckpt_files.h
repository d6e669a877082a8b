/*
 * The task's files in a FULL checkpoint (shardrun/model.h, sr_model_file: a tokenizer's files,
 * config.json): written into the checkpoint's folder before trainer_state.json marks it complete,
 * and listed in model.safetensors' metadata as "file:NAME" = XXH3-64 of the file's bytes (16 hex
 * digits), which the index hash covers.  A reader of the checkpoint (a resume, shardrun_generate)
 * hashes each listed file and refuses a missing or changed one (ckpt/file_check.h,
 * docs/checkpoint-format.md).
 */
#ifndef SR__FSDP_CKPT_FILES_H
#define SR__FSDP_CKPT_FILES_H

#include <stddef.h>

#include "ckpt/file_check.h" /* SR__CKPT_FILE_KEY, sr__ckpt_check_files: the reader's side */
#include "fsdp/ckpt_file.h"
#include "fsdp/model_desc.h"
#include "io/safetensors.h"

/* The model's files' "file:NAME" entries, in declaration order. */
void sr__ckpt_add_file_hashes(sr__ckpt_kvlist *l, const sr_model *m);
/* Writes the model's files into dir.  0, or -1 after logging why (a partial file removed). */
int sr__ckpt_write_files(const sr_model *m, const char *dir);

#endif
