/*
 * Verifying a checkpoint before a value of it is copied, on every rank: every file is of this
 * format (a version-2 file, of an earlier shardrun, is refused with what to do), has an intact
 * index (index_hash), its role, the checkpoint_id and step of trainer_state.json (or, when no file
 * has, trainer_state.json is the one named), shard file R says shard_rank R of as many files as the
 * folder holds; the shard index is well-formed; the model digest and the parameter list match the
 * model being resumed (a checkpoint with parameters the model lacks is refused like one lacking
 * some); then the data of the tensors no rank copies (ckpt_check.h: the rest is verified as it is
 * copied).  Any difference: one message naming the file and what differs, and -1.
 */
#ifndef SR__FSDP_CKPT_VERIFY_H
#define SR__FSDP_CKPT_VERIFY_H

#include "fsdp/ckpt_source.h"
#include "fsdp/engine_internal.h"

/* sid and sstep: the checkpoint_id and global_step trainer_state.json holds.  0, or after printing
   why -2 (the checkpoint holds another model: the job's error) or -1 (a damaged or foreign file). */
int sr__ckpt_verify(const sr__engine *e, sr__ckpt_source *s, const char *sid, long long sstep);

#endif
