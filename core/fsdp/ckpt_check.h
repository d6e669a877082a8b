/*
 * Verifying a checkpoint's data as it loads: each tensor hashed once, mostly by the rank that
 * copies it.  A warm-cache load is little more than one copy of the data out of the mapped files,
 * so hashing in a pass of its own would read every byte a second time.  Instead each tensor of each
 * file gets one verifying rank (of the first replica): the shard rank that copies the most of it
 * (sr__ckpt_checks_plan, from the layout the copy will follow: the same on every rank).  That rank
 * hashes the bytes it copies in the copy itself (sr__ckpt_copy_checked: base/hash64.h's fused copy)
 * and, as the hash must take a tensor's bytes in order, hashes from the mapped file whatever it does
 * not copy itself (bytes other ranks copy, the units' padding) when it skips ahead and at the end
 * (sr__ckpt_checks_finish).  A tensor no rank copies any of is hashed by sr__ckpt_check_unowned,
 * split over the world.  Every byte of every tensor is so hashed by one rank before the load
 * returns; a mismatch is refused on every rank (sr__engine_agree) before the run takes a step.
 *
 * Lifecycle: plan (after the metadata is verified), check_unowned, copy_checked per copied range,
 * finish; sr__ckpt_source_close frees the plan.  Failures print one message naming the file, the
 * tensor and both hashes.
 */
#ifndef SR__FSDP_CKPT_CHECK_H
#define SR__FSDP_CKPT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/ckpt_source.h"
#include "fsdp/engine_internal.h"

/* 0, or -1 after printing that memory ran out. */
int sr__ckpt_checks_plan(const sr__engine *e, sr__ckpt_source *s);
/* The tensors no rank copies: every one has a "hash:NAME", this rank's share of the bytes match.
   0, or -1 after printing what differs. */
int sr__ckpt_check_unowned(const sr__engine *e, sr__ckpt_source *s);
/* Copies bytes [off, off + n) of tensor t of file f (its data at `data`) to dst, hashing them in the
   same pass when this rank verifies t. */
void sr__ckpt_copy_checked(sr__ckpt_source *s, int f, const sr__st_tensor *t, const void *data, uint64_t off, void *dst,
                           size_t n);
/* After the copies: hashes what this rank verifies but did not copy, and compares.  0, or -1 after
   printing what differs. */
int sr__ckpt_checks_finish(sr__ckpt_source *s);

/* A tensor whose data does not match its hash: one message.  -1. */
int sr__ckpt_hash_mismatch(const char *dir, const char *file, const char *tensor, const char *want, uint64_t got);

#endif
