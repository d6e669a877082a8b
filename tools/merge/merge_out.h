/*
 * Where shardrun merge writes: never through a symbolic link.  A checkpoint folder may come from
 * elsewhere, and a link in it (merged/ or merged/model.safetensors pointing out of it) must not make
 * merge replace a file the user did not name; -o is held to the same rule.
 *
 *   - the destination must be a regular file or nothing yet, not a link (refused, exit 2);
 *   - the default destination's folder, CHECKPOINT_DIR/merged, must be a real folder or nothing yet
 *     (then created when the merged weights are ready, and removed again if writing fails);
 *   - the file is written as a temporary beside the destination, created with O_EXCL | O_NOFOLLOW
 *     (a link planted under its name is never opened), synced, then renamed over the destination:
 *     a reader sees the old file or the whole new one, and a failure leaves the old one.
 */
#ifndef SR__MERGE_OUT_H
#define SR__MERGE_OUT_H

#include <stddef.h>

#include "io/safetensors.h"

typedef struct sr__merge_dest {
    const char *path;   /* the file */
    const char *folder; /* the folder merge creates if missing (the default destination), or NULL */
} sr__merge_dest;

/* Before any work: 0, or -1 with why[] (the destination is a link, a folder, not writable, or one
   of inputs[0 .. n)). */
int sr__merge_dest_check(const sr__merge_dest *d, const char *const *inputs, int n, char *why, size_t len);
/* Writes the tensors t[i] (fp32) with values vals[i] to the destination.  0, or -1 with why[] and
   nothing left behind. */
int sr__merge_dest_write(const sr__merge_dest *d, const sr__st_tensor *t, float *const *vals, size_t n, char *why,
                         size_t len);

#endif
