/* NCCL's unique id through the store (nccl_id.h). */
#include "pg/nccl_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sr__pg_nccl_id(const sr__pg_setup *s, void *id, size_t len, char *err, size_t errlen) {
    char key[400], missing[400] = "";
    snprintf(key, sizeof key, "%sunique_id", s->prefix);
    const sr__pg_store_ops *st = s->store_ops;
    pthread_mutex_lock(s->store_lock);
    int rc = 0;
    if (s->rank == 0) {
        if (st->set(s->store, key, id, len) != 0) {
            snprintf(err, errlen, "cannot publish the ncclUniqueId: store error: %s", st->error(s->store));
            rc = -1;
        }
    } else {
        const char *k = key;
        void *v = NULL;
        size_t got = 0;
        rc = st->wait(s->store, &k, 1, s->timeout_s, missing, sizeof missing);
        if (rc == 1)
            snprintf(err, errlen, "rank 0's ncclUniqueId did not arrive through the store within %gs (no %s)",
                     s->timeout_s, missing);
        else if (rc != 0 || st->get(s->store, key, &v, &got) != 0)
            snprintf(err, errlen, "cannot read rank 0's ncclUniqueId: store error: %s", st->error(s->store)), rc = -1;
        else if (got != len)
            snprintf(err, errlen, "rank 0's ncclUniqueId at %s is %zu bytes, expected %zu", key, got, len), rc = -1;
        else memcpy(id, v, len);
        free(v);
    }
    pthread_mutex_unlock(s->store_lock);
    return rc ? -1 : 0;
}
