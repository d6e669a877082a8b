/* [task] freeze: frozen parameters by name pattern (model_desc.h), applied after the task's
   create() and before the wrap policy builds units. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "fsdp/model_desc.h"

/* Freezes what one glob matches; the count of names it matched. */
static int freeze_one(sr_model *m, const char *glob) {
    int hits = 0;
    for (int i = 0; i < m->nparams; i++) {
        if (fnmatch(glob, m->params[i].name, 0) != 0) continue;
        m->params[sr__param_owner(m, i)].flags |= SR_PARAM_FROZEN;
        hits++;
    }
    return hits;
}

/* A few of the model's names, so that a pattern that matched nothing can be fixed at once. */
static void some_names(const sr_model *m, sr__buf *b) {
    int shown = 0;
    for (int i = 0; i < m->nparams && shown < 4; i++, shown++)
        sr__buf_printf(b, "%s\"%s\"", shown ? ", " : "", m->params[i].name);
    if (m->nparams > shown) sr__buf_printf(b, ", ... (%d in all)", m->nparams);
}

int sr__model_freeze(sr_model *m, const char *patterns, const char *task) {
    int rc = 0;
    for (const char *p = patterns ? patterns : ""; *p;) {
        p += strspn(p, " \t,");
        size_t len = strcspn(p, ",");
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        if (!len) break;
        char *glob = sr__strndup(p, len);
        if (!glob) {
            sr__log(SR_LOG_ERROR, "out of memory for [task] freeze (%zu bytes)", len + 1);
            return -1;
        }
        if (freeze_one(m, glob) == 0) {
            sr__buf names = {0};
            some_names(m, &names);
            sr__log(SR_LOG_ERROR,
                    "[task] freeze = %s: the pattern \"%s\" matches no parameter of task %s's model; patterns are "
                    "fnmatch globs on the full dotted names (such as %s), comma-separated; fix the pattern or "
                    "remove it",
                    patterns, glob, task, names.s ? names.s : "none");
            sr__buf_free(&names);
            rc = -1;
        }
        free(glob);
        p += strcspn(p, ",");
    }
    if (rc == 0 && sr__model_frozen_numel(m) == sr__model_numel(m) && sr__model_numel(m) > 0) {
        if (patterns)
            sr__log(SR_LOG_ERROR,
                    "[task] freeze = %s freezes every parameter of task %s's model: nothing would be trained "
                    "(torch's optimizer refuses an empty parameter list too); leave some parameters out of the "
                    "patterns",
                    patterns, task);
        else
            sr__log(SR_LOG_ERROR,
                    "task %s declares every parameter frozen (SR_PARAM_FROZEN): nothing would be trained; fix the "
                    "task's model description",
                    task);
        rc = -1;
    }
    return rc;
}
