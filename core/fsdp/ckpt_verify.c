/* Verifying a checkpoint's files, index and model before it loads (see ckpt_verify.h). */
#include "fsdp/ckpt_verify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash64.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "fsdp/ckpt_check.h"
#include "fsdp/ckpt_files.h"
#include "fsdp/ckpt_format.h"

/* ---- every file says which checkpoint, step, position and model it belongs to ---------------------- */

typedef struct vfile {
    sr__st_file *f;
    char *name;       /* for messages: the file's name in the folder */
    const char *role; /* what it must say in "file" */
    int pos;          /* its shard number (SHARDED), else -1 */
    const char *id, *digest;
    long long step, world_size, group_size, shard_rank;
} vfile;

static int meta_int(const sr__st_file *f, const char *key, long long *v) {
    const char *s = sr__st_metadata(f, key);
    char *end;
    if (!s || !*s) return -1;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return *end || errno || *v < 0 ? -1 : 0;
}

/* The file's own statements, present and well-formed.  0, or -1 after printing why (-2: another
   format version, which the other files of the folder share). */
static int read_vfile(const char *dir, vfile *v) {
    const char *ver = sr__st_metadata(v->f, "shardrun_checkpoint"), *role = sr__st_metadata(v->f, "file");
    if (!ver) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s/%s was written by an older shardrun without integrity "
                "metadata (no \"shardrun_checkpoint\" key); this version cannot verify it and does not load it",
                dir, v->name);
        return -1;
    }
    if (!strcmp(ver, "2")) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s/%s is checkpoint format 2 (\"shardrun_checkpoint\": \"2\"), "
                "written by an earlier shardrun whose own data hash this one no longer has; this shardrun "
                "reads format " SR__CKPT_FORMAT " (XXH3 hashes) only. To continue that run, resume it with the "
                "shardrun that wrote it; to keep its weights without the optimizer state, start a new run "
                "with init_weights = <a FULL_STATE_DICT checkpoint>/model.safetensors "
                "(docs/checkpoint-format.md, \"Versions\")",
                dir, v->name);
        return -2;
    }
    if (strcmp(ver, SR__CKPT_FORMAT)) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s/%s has checkpoint format %s; this shardrun reads format " SR__CKPT_FORMAT,
                dir, v->name, ver);
        return -2;
    }
    char hex[17];
    const char *ih = sr__st_metadata(v->f, "index_hash");
    size_t nm = sr__st_metadata_count(v->f);
    sr__st_kv *kv = sr__calloc(nm + 1, sizeof *kv);
    if (!kv) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: out of memory for its %zu metadata entries (%zu bytes)",
                dir, v->name, nm, (nm + 1) * sizeof *kv);
        return -1;
    }
    for (size_t i = 0; i < nm; i++) kv[i] = *sr__st_metadata_at(v->f, i);
    sr__hash64_hex(sr__ckpt_index_hash(kv, nm), hex);
    free(kv);
    if (!ih || strcmp(ih, hex)) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s/%s: its metadata does not match its index_hash (%s, "
                "computed %s): the header was changed or damaged after it was written",
                dir, v->name, ih ? ih : "missing", hex);
        return -1;
    }
    if (!role || strcmp(role, v->role)) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s holds a checkpoint's %s file, not its %s file", dir,
                v->name, role ? role : "(unnamed)", v->role);
        return -1;
    }
    const char *miss = NULL;
    v->id = sr__st_metadata(v->f, "checkpoint_id"), v->digest = sr__st_metadata(v->f, "model_digest");
    v->shard_rank = -1;
    if (!v->id) miss = "checkpoint_id";
    else if (!v->digest) miss = "model_digest";
    else if (meta_int(v->f, "global_step", &v->step)) miss = "global_step";
    else if (meta_int(v->f, "world_size", &v->world_size)) miss = "world_size";
    else if (meta_int(v->f, "shard_group_size", &v->group_size)) miss = "shard_group_size";
    else if (v->pos >= 0 && meta_int(v->f, "shard_rank", &v->shard_rank)) miss = "shard_rank";
    if (miss) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: metadata \"%s\" is missing or not valid", dir, v->name,
                miss);
        return -1;
    }
    return 0;
}

/* Every file belongs to the checkpoint trainer_state.json names (or, when no file does, the files
   agree among themselves and trainer_state.json is the odd one), at its position.  0, or -1 after
   printing one line per file that differs. */
static int check_files(const char *dir, vfile *v, int n, const char *sid, long long sstep) {
    int bad = 0, agree = 0;
    for (int i = 0; i < n; i++) agree += !strcmp(v[i].id, sid) && v[i].step == sstep;
    const char *rid = sid;
    long long rstep = sstep;
    if (!agree) {
        int same = 1;
        for (int i = 1; i < n; i++) same = same && !strcmp(v[i].id, v[0].id) && v[i].step == v[0].step;
        if (same) {
            sr__log(SR_LOG_ERROR,
                    "resume_from_checkpoint: %s/trainer_state.json belongs to another checkpoint: it "
                    "says global_step %lld, checkpoint_id %s; the safetensors files say global_step %lld, "
                    "checkpoint_id %s",
                    dir, sstep, sid, v[0].step, v[0].id);
            return -1;
        }
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s mixes files of several checkpoints; trainer_state.json says "
                "global_step %lld, checkpoint_id %s",
                dir, sstep, sid);
        bad = 1;
    }
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].id, rid) || v[i].step != rstep) {
            sr__log(SR_LOG_ERROR,
                    "resume_from_checkpoint: %s/%s belongs to another checkpoint: it holds global_step "
                    "%lld of checkpoint_id %s, %s holds global_step %lld of checkpoint_id %s",
                    dir, v[i].name, v[i].step, v[i].id,
                    agree ? "trainer_state.json (and the other files)" : "trainer_state.json", rstep, rid);
            bad = 1;
        }
    if (bad) return -1;
    for (int i = 0; i < n; i++) {
        /* the same checkpoint: these agree unless a file was edited by hand */
        if (v[i].world_size != v[0].world_size || v[i].group_size != v[0].group_size ||
            strcmp(v[i].digest, v[0].digest)) {
            sr__log(SR_LOG_ERROR,
                    "resume_from_checkpoint: %s/%s disagrees with %s about world_size, shard_group_size "
                    "or model_digest",
                    dir, v[i].name, v[0].name);
            bad = 1;
        }
        if (v[i].pos < 0) continue;
        if (v[i].shard_rank != v[i].pos)
            sr__log(SR_LOG_ERROR,
                    "resume_from_checkpoint: %s/%s holds shard_rank %lld, not %d: the shard files were "
                    "renamed, swapped or copied over each other",
                    dir, v[i].name, v[i].shard_rank, v[i].pos),
                bad = 1;
        else if (v[i].group_size != n)
            sr__log(SR_LOG_ERROR,
                    "resume_from_checkpoint: %s/%s was written by a shard group of %lld ranks, but the "
                    "folder holds %d shard files",
                    dir, v[i].name, v[i].group_size, n),
                bad = 1;
    }
    return bad ? -1 : 0;
}

/* The checkpoint's parameters (name, shape) against the model's owners: the model digest and the
   lists agree, or one message names what differs.  0, or -1 after printing. */
static int check_model(const sr__engine *e, const sr__ckpt_source *s, const char *digest) {
    const sr_model *m = e->model;
    char mine[17];
    sr__ckpt_model_digest(m, mine);
    sr__buf missing = {0}, extra = {0}, shapes = {0};
    int nmiss = 0, nextra = 0, nshape = 0, nmodel = 0, nckpt = 0;
    size_t cnumel = 0;
    char have[160], want[160];
    /* the checkpoint's list: model.safetensors' tensors, or shard 0's "param:NAME" index */
    size_t count = s->full ? sr__st_count(s->model) : s->index.nparams;
    for (size_t k = 0; k < count; k++) {
        const char *name, *shape = have;
        size_t numel = 0;
        if (s->full) {
            const sr__st_tensor *t = sr__st_at(s->model, k);
            name = t->name, numel = t->nbytes / sr_dtype_size(t->dtype);
            sr__st_shape_str(have, sizeof have, t->ndim, t->shape);
        } else {
            const sr__ckpt_param *cp = &s->index.params[k];
            name = cp->name, numel = cp->numel, shape = cp->shape;
        }
        nckpt++, cnumel += numel;
        int i = 0;
        while (i < m->nparams && (m->params[i].tied_to >= 0 || strcmp(m->params[i].name, name))) i++;
        if (i == m->nparams) {
            if (nextra++ < 5) sr__buf_printf(&extra, "%s%s", extra.n ? ", " : "", name);
            continue;
        }
        const sr__param *p = &m->params[i];
        if (strcmp(shape, sr__st_shape_str(want, sizeof want, p->ndim, p->shape)) && nshape++ < 3)
            sr__buf_printf(&shapes, "%s%s %s in the checkpoint, %s in the model", shapes.n ? "; " : "", name, shape,
                           want);
    }
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        if (p->tied_to >= 0) continue;
        nmodel++;
        int found = 0;
        if (s->full) found = sr__st_find(s->model, p->name, NULL) != NULL;
        else found = sr__ckpt_index_find(&s->index, p->name) != NULL;
        if (!found && nmiss++ < 5) sr__buf_printf(&missing, "%s%s", missing.n ? ", " : "", p->name);
    }
    int bad = nmiss || nextra || nshape || strcmp(digest, mine);
    if (bad) {
        sr__buf msg = {0};
        sr__buf_printf(&msg,
                       "resume_from_checkpoint: %s holds another model than the one being resumed (model_digest "
                       "%s, this model's %s): %d parameters of %zu elements in the checkpoint, %d of %zu in the "
                       "model",
                       s->dir, digest, mine, nckpt, cnumel, nmodel, sr__model_numel(m));
        if (nextra) sr__buf_printf(&msg, "; only in the checkpoint (unused): %s%s", extra.s, nextra > 5 ? ", ..." : "");
        if (nmiss) sr__buf_printf(&msg, "; missing from the checkpoint: %s%s", missing.s, nmiss > 5 ? ", ..." : "");
        if (nshape) sr__buf_printf(&msg, "; shapes differ: %s%s", shapes.s, nshape > 3 ? "; ..." : "");
        if (!nextra && !nmiss && !nshape)
            sr__buf_printf(&msg, "; the names and shapes agree, the tied parameters differ");
        sr__buf_printf(&msg, "; a checkpoint resumes only the model that wrote it (init_weights starts from part of "
                             "one, without its optimizer state)");
        sr__log(SR_LOG_ERROR, "%s", msg.s);
        sr__buf_free(&msg);
    }
    sr__buf_free(&missing), sr__buf_free(&extra), sr__buf_free(&shapes);
    return bad ? -2 : 0; /* the job names another model: its configuration, not the files, is wrong */
}

/* Whether the checkpoint saved parameter p frozen: it holds no optimizer state for it (FULL: no
   NAME.exp_avg in optimizer.safetensors; SHARDED: no uU.exp_avg for its saved unit). */
static int saved_frozen(const sr__ckpt_source *s, const sr__param *p) {
    if (s->full) {
        char name[1024];
        snprintf(name, sizeof name, "%s.%s", p->name, sr__ckpt_kind[SR__CKPT_EXP_AVG]);
        return sr__st_find(s->optim, name, NULL) == NULL;
    }
    const sr__ckpt_param *cp = sr__ckpt_index_find(&s->index, p->name);
    char tname[64];
    if (!cp) return 0;
    snprintf(tname, sizeof tname, "u%d.%s", cp->unit, sr__ckpt_kind[SR__CKPT_EXP_AVG]);
    return sr__st_find(s->shards[0], tname, NULL) == NULL;
}

/* The frozen parameters (SR_PARAM_FROZEN, [task] freeze) must be the ones the checkpoint saved
   frozen: a parameter trainable now but frozen then has no optimizer state to resume, and one frozen
   now but trained then would drop its state.  0, or -1 after printing the first few that differ. */
static int check_frozen(const sr__engine *e, const sr__ckpt_source *s) {
    const sr_model *m = e->model;
    sr__buf now_frozen = {0}, now_trained = {0};
    int nf = 0, nt = 0;
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        if (p->tied_to >= 0) continue;
        int was = saved_frozen(s, p), is = sr__param_frozen(m, i);
        if (was == is) continue;
        sr__buf *b = is ? &now_frozen : &now_trained;
        int *n = is ? &nf : &nt;
        if ((*n)++ < 3) sr__buf_printf(b, "%s%s", b->n ? ", " : "", p->name);
    }
    if (nf || nt) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s was trained with other frozen parameters than this run's: %d frozen now "
                "but trained in the checkpoint%s%s%s%s, %d trained now but frozen in the checkpoint (no optimizer "
                "state saved)%s%s%s%s.  A resume continues the same training: keep [task] freeze (and the task's "
                "SR_PARAM_FROZEN flags) as they were, or start a new run from the checkpoint's model.safetensors "
                "with init_weights (FULL_STATE_DICT), without its optimizer state",
                s->dir, nf, nf ? " (" : "", nf && now_frozen.s ? now_frozen.s : "", nf > 3 ? ", ..." : "",
                nf ? ")" : "", nt, nt ? " (" : "", nt && now_trained.s ? now_trained.s : "", nt > 3 ? ", ..." : "",
                nt ? ")" : "");
    }
    sr__buf_free(&now_frozen), sr__buf_free(&now_trained);
    return nf || nt ? -1 : 0;
}

/* SHARDED: shard 0's index, once its index_hash is verified.  0, or -1 after printing why. */
static int parse_index(sr__ckpt_source *s) {
    char why[600], name[64];
    if (s->full || sr__ckpt_index_parse(s->shards[0], &s->index, why, sizeof why) == 0) return 0;
    sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: the shard index is damaged: %s", s->dir,
            sr__ckpt_shard_name(name, sizeof name, 0, s->nshards), why);
    return -1;
}

int sr__ckpt_verify(const sr__engine *e, sr__ckpt_source *s, const char *sid, long long sstep) {
    int n = sr__ckpt_source_nfiles(s), bad = 0;
    vfile *v = sr__calloc((size_t)n, sizeof *v);
    if (!v) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: out of memory for the check of its %d files", s->dir, n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char name[64];
        sr__ckpt_source_file_name(s, i, name, sizeof name);
        v[i].f = sr__ckpt_source_file(s, i), v[i].name = sr__strdup(name);
        if (!v[i].name) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: out of memory for the check of %s", s->dir, name);
            bad = 1;
            break;
        }
        v[i].role = s->full ? (i ? "optimizer" : "model") : "shard", v[i].pos = s->full ? -1 : i;
        int rc = read_vfile(s->dir, &v[i]);
        bad |= rc != 0;
        if (rc == -2) break; /* another version: said once for the folder */
    }
    if (!bad) bad = check_files(s->dir, v, n, sid, sstep) != 0;
    if (!bad) bad = parse_index(s) != 0;
    if (!bad && s->full) { /* the task's files model.safetensors lists (tokenizer, config.json) */
        char why[8600];
        if (sr__ckpt_check_files(s->model, s->dir, why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s", why);
            bad = 1;
        }
    }
    int another = !bad && check_model(e, s, v[0].digest) != 0;
    bad |= another;
    if (!bad) bad = check_frozen(e, s) != 0;
    if (!bad) bad = sr__ckpt_checks_plan(e, s) != 0;
    if (!bad) bad = sr__ckpt_check_unowned(e, s) != 0;
    for (int i = 0; i < n; i++) free(v[i].name);
    free(v);
    return another ? -2 : bad ? -1 : 0;
}
