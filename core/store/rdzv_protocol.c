/* The rendezvous's keys and values (store/rdzv_protocol.h), and the failure a report or a verdict
   records (store/rdzv_internal.h). */
#include "store/rdzv_protocol.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/rand.h"
#include "store/rdzv_internal.h"

char *sr__rdzv_key(char *buf, size_t len, const char *fmt, int a, int b) {
    snprintf(buf, len, fmt, a, b);
    return buf;
}

int sr__rdzv_message_format(char *v, size_t vlen, int node, char kind, const char *what) {
    int n = snprintf(v, vlen, "%d:%c:%s", node, kind, what);
    if (n < 0) return 0;
    return (size_t)n >= vlen ? (int)vlen - 1 : n;
}

void sr__rdzv_message_parse(const char *v, size_t len, int *node, char *kind, char *msg, size_t mlen) {
    char *end = NULL;
    long n = strtol(v, &end, 10);
    const char *m = v;
    *kind = 'f';
    if (end && end + 3 <= v + len && end[0] == ':' && end[2] == ':') *kind = end[1], m = end + 3;
    else n = -1;
    *node = (int)n;
    snprintf(msg, mlen, "%.*s", (int)(v + len - m), m);
}

sr__rdzv_phase sr__rdzv_verdict_phase(sr__rdzv_verdict v) {
    switch (v) {
    case SR__VERDICT_SUCCEEDED: return SR__RDZV_SUCCEEDED;
    case SR__VERDICT_RESTART:
    case SR__VERDICT_REFORM:
    case SR__VERDICT_RESHAPE: return SR__RDZV_RESTART;
    case SR__VERDICT_PREEMPTED: return SR__RDZV_PREEMPTED;
    case SR__VERDICT_FAILED:
    case SR__VERDICT_CONFIG: break;
    }
    return SR__RDZV_FAILED; /* also a letter this version does not know */
}

void sr__rdzv_set_failure(sr__rdzv *r, int node, int config, const char *what) {
    snprintf(r->failed_elsewhere, sizeof r->failed_elsewhere, "%s", what);
    r->failed_node = node;
    r->failed_config = config;
}

const char *sr__rdzv_host_gone_note(const sr__rdzv *r) {
    if (r->etcd) return "; the other nodes elect another leader in etcd and go on from the newest checkpoint";
    return r->elastic
               ? ": node 0's shardrun hosts an elastic job's rendezvous with the built-in store, the one node the "
                 "job cannot lose (rdzv_backend = etcd survives the loss of any node: docs/elastic.md); the "
                 "newest checkpoint in output_dir holds the run's state: start the job again with --set "
                 "task.resume_from_checkpoint=latest to continue"
               : "";
}

const char *sr__rdzv_host_silent_note(const sr__rdzv *r) {
    /* silent is not gone: when this node's own link failed, the others see it silent and go on */
    if (r->etcd)
        return "; this node asks etcd for the job's leader again: the job goes on with this node at its next "
               "change of nodes if it is this node's link that failed, or under another leader if the leader is lost";
    return r->elastic ? "; the other nodes may go on without this one if it is this node's link that failed (an "
                        "elastic job): then nothing is lost.  If node 0 itself is lost, the job ended: node 0's "
                        "shardrun hosts an elastic job's rendezvous with the built-in store, the one node the job "
                        "cannot lose (docs/elastic.md); start the job again with --set "
                        "task.resume_from_checkpoint=latest to continue"
                      : "";
}

void sr__rdzv_random_token(char *out, size_t len) {
    unsigned char b[16];
    char hex[33];
    sr__random_bytes(b, sizeof b);
    for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", b[i]);
    snprintf(out, len, "%s", hex);
}
