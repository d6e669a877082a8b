#include "etcd/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void sr__etcd_b64_add(sr__buf *b, const void *data, size_t n) {
    const unsigned char *p = data;
    char quad[4];
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n) v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        quad[0] = alphabet[v >> 18 & 63];
        quad[1] = alphabet[v >> 12 & 63];
        quad[2] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
        quad[3] = i + 2 < n ? alphabet[v & 63] : '=';
        sr__buf_add(b, quad, 4);
    }
}

static int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

long long sr__etcd_b64_decode(const char *text, size_t n, unsigned char *out) {
    if (n % 4) return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int last = i + 4 == n;
        /* '=' only at the end: "xx==" or "xxx=" */
        int pad = last && text[i + 3] == '=' ? (text[i + 2] == '=' ? 2 : 1) : 0;
        unsigned v = 0;
        for (int k = 0; k < 4; k++) {
            int s = k >= 4 - pad ? 0 : sextet(text[i + k]);
            if (s < 0) return -1;
            v = v << 6 | (unsigned)s;
        }
        out[o++] = (unsigned char)(v >> 16);
        if (pad < 2) out[o++] = (unsigned char)(v >> 8);
        if (pad < 1) out[o++] = (unsigned char)v;
    }
    return (long long)o;
}
