#include "etcd/request.h"

#include <inttypes.h>
#include <string.h>

#include "etcd/base64.h"

void sr__etcd_add_key(sr__buf *b, const char *key, int prefix) {
    size_t n = strlen(key);
    SR__ETCD_ADD(b, "\"key\":\"");
    if (prefix && n == 0) {
        /* key "\0" to range_end "\0": etcd's way of saying every key */
        SR__ETCD_ADD(b, "AA==\",\"range_end\":\"AA==\"");
        return;
    }
    sr__etcd_b64_add(b, key, n);
    SR__ETCD_ADD(b, "\"");
    if (!prefix) return;
    /* the prefix with its last byte below 0xff incremented, the 0xff bytes after it dropped */
    const unsigned char *k = (const unsigned char *)key;
    size_t end = n;
    while (end > 0 && k[end - 1] == 0xff) end--;
    SR__ETCD_ADD(b, ",\"range_end\":\"");
    if (end == 0) {
        SR__ETCD_ADD(b, "AA==\""); /* all 0xff: every key from the prefix on */
        return;
    }
    unsigned char tail[3];
    /* base64 in whole groups: encode all but the last up-to-3 bytes directly, then the rest */
    size_t head = (end - 1) / 3 * 3;
    sr__etcd_b64_add(b, k, head);
    size_t t = end - head;
    memcpy(tail, k + head, t);
    tail[t - 1]++;
    sr__etcd_b64_add(b, tail, t);
    SR__ETCD_ADD(b, "\"");
}

void sr__etcd_add_int64(sr__buf *b, const char *name, int64_t v) {
    sr__buf_printf(b, ",\"%s\":\"%" PRId64 "\"", name, v);
}
