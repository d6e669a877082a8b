#include "store/fingerprint.h"

#include <stdio.h>
#include <string.h>

#include "base/hash64.h"

char *sr__fingerprint_digest(const char *fp, uint64_t seed, char hex[17]) {
    sr__hash64_state h;
    sr__hash64_init(&h, seed);
    for (const char *l = fp ? fp : ""; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
        if (*l != '#') sr__hash64_update(&h, l, len);
        l += len;
    }
    return sr__hash64_hex(sr__hash64_final(&h), hex);
}

/* The value of line `name` ("name=value") in a fingerprint, or NULL; *len its length. */
static const char *fp_value(const char *fp, const char *name, size_t nlen, size_t *len) {
    for (const char *p = fp; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t l = eol ? (size_t)(eol - p) : strlen(p);
        if (l > nlen && !strncmp(p, name, nlen) && p[nlen] == '=') {
            *len = l - nlen - 1;
            return p + nlen + 1;
        }
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

/* Names the first line on which two fingerprints differ (in either one's order), or returns 0. */
int sr__fingerprint_differ(const char *mine, const char *theirs, char *why, size_t wlen) {
    const char *sides[2] = {mine, theirs};
    for (int s = 0; s < 2; s++)
        for (const char *p = sides[s]; p && *p;) {
            const char *eol = strchr(p, '\n'), *eq = strchr(p, '=');
            size_t l = eol ? (size_t)(eol - p) : strlen(p);
            if (*p != '#' && eq && eq < p + l) {
                size_t nlen = (size_t)(eq - p), la = 0, lb = 0;
                const char *a = fp_value(mine, p, nlen, &la), *b = fp_value(theirs, p, nlen, &lb);
                if (!a || !b || la != lb || memcmp(a, b, la)) {
                    size_t hl = 0, nl = 0, mhl = 0;
                    const char *host = fp_value(theirs, "#host", 5, &hl), *node = fp_value(theirs, "#node", 5, &nl);
                    const char *myhost = fp_value(mine, "#host", 5, &mhl);
                    snprintf(why, wlen,
                             "the agents were started with different jobs: %.*s is \"%.*s\" on node 0 (host %.*s) "
                             "but \"%.*s\" on node %.*s (host %.*s); start every node with the same job file, flags "
                             "and environment",
                             (int)nlen, p, a ? (int)la : 7, a ? a : "(unset)", (int)mhl, myhost ? myhost : "?",
                             b ? (int)lb : 7, b ? b : "(unset)", node ? (int)nl : 1, node ? node : "?",
                             host ? (int)hl : 1, host ? host : "?");
                    return 1;
                }
            }
            p = eol ? eol + 1 : NULL;
        }
    return 0;
}
