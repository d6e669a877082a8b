/*
 * The wrap policy: which modules form one FSDP unit (one flat buffer, gathered and reduced as a
 * whole), and each unit's flat layout padded to a multiple of the shard-group size.
 * Built once per run, after the task described its model and before any shard exists.
 */
#ifndef SR__FSDP_UNITS_H
#define SR__FSDP_UNITS_H

#include <stddef.h>

#include "config/fsdp_settings.h"
#include "fsdp/model_desc.h"

typedef struct sr__unit {
    int root;  /* the unit of everything no wrap claimed: gathered for the whole step */
    int *mods; /* its modules, in forward order */
    int nmods;
    int *params; /* owned parameters, in flat-buffer order */
    int nparams;
    size_t numel;  /* parameters */
    size_t padded; /* numel rounded up to a multiple of the shard-group size */
    size_t shard;  /* padded / shard-group size: elements each rank keeps */
    char *label;   /* the first module's name, or "(root)" */
    /* Frozen parameters (SR_PARAM_FROZEN).  A unit is uniformly frozen or trainable: the frozen
       parameters of a wrap unit that also trains some (FSDP_USE_ORIG_PARAMS) go to a companion unit,
       which has no modules of its own and is gathered, released and kept with it (the root's
       companion is a root too).  A frozen unit has no gradient, no optimizer state, no reduction. */
    int frozen;
    int companion; /* the frozen companion's index, or -1 */
    int owner;     /* a companion: the unit it belongs to; else -1 */
} sr__unit;

typedef struct sr__units {
    sr__unit *u;
    int n;
    int root; /* index of the root unit, or -1 when every module is wrapped */
} sr__units;

/* The part of parameter p's flat range [offset, offset + numel) that lies in [lo, lo + n) of its
   unit's flat buffer (a rank's shard, or the piece being filled): [*a, *b), in flat positions.
   0 when they do not meet. */
static inline int sr__param_in_range(const sr__param *p, size_t lo, size_t n, size_t *a, size_t *b) {
    size_t end = p->offset + p->numel, hi = lo + n;
    *a = p->offset > lo ? p->offset : lo;
    *b = end < hi ? end : hi;
    return *a < *b;
}

/* Applies the policy; every unknown class name, cross-unit tie and (FSDP_USE_ORIG_PARAMS=false) unit
   mixing frozen and trainable parameters is reported.  0 or -1. */
int sr__units_build(sr_model *m, const sr__fsdp_config *c, int shard_size, sr__units *out);
void sr__units_free(sr__units *us);

#endif
