/* safetensors writer and reader: round trips, writer misuse, and corrupt files rejected by name.
   With an argument, the round-trip file is written there and kept, for the Python reader
   (tests/interop/read_safetensors.py) to check; see expected_python below. */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "base/hash64.h"
#include "io/safetensors.h"

static char dir[256];

static const char *at(const char *name) {
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

/* A file of `hlen` (the real header length when -1) + header + `datalen` bytes of data. */
static void write_raw(const char *path, const char *header, size_t hsize, int64_t hlen, size_t datalen) {
    size_t n = 8 + hsize + datalen;
    unsigned char *b = calloc(1, n);
    uint64_t l = hlen < 0 ? (uint64_t)hsize : (uint64_t)hlen;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(l >> (8 * i));
    memcpy(b + 8, header, hsize);
    for (size_t i = 0; i < datalen; i++) b[8 + hsize + i] = (unsigned char)i;
    write_bytes(path, b, n);
    free(b);
}

/* The file holding `header` (and `datalen` data bytes) is rejected with a message naming the file
   and containing `want`. */
static void bad_n(const char *header, size_t hsize, size_t datalen, const char *want, int line) {
    char err[512] = "";
    const char *path = at("bad.safetensors");
    write_raw(path, header, hsize, -1, datalen);
    sr__st_file *f = sr__st_open(path, err, sizeof err);
    char what[128];
    snprintf(what, sizeof what, "header %.80s", header);
    check_rejected(f != NULL, err, path, want, what, __FILE__, line, strlen(dir) + 1);
    sr__st_close(f);
}
#define BAD(header, datalen, want) bad_n(header, strlen(header), datalen, want, __LINE__)

/* The file is accepted. */
static sr__st_file *good_n(const char *header, size_t datalen, int line) {
    char err[512] = "";
    const char *path = at("good.safetensors");
    write_raw(path, header, strlen(header), -1, datalen);
    sr__st_file *f = sr__st_open(path, err, sizeof err);
    check_count++;
    if (!f) check_failures++, fprintf(stderr, "%s:%d: header %.80s rejected: %s\n", __FILE__, line, header, err);
    return f;
}
#define GOOD(header, datalen) good_n(header, datalen, __LINE__)

static const char odd_name[] = "odd \"name\"\\with\nescapes\t\x01 \xc3\xa9\xe2\x98\x83/";

/* The round-trip file (also what the Python reader is checked on):
     b BF16 2,2 13.5 1
     (and the odd name: I32 1 42 42, its newline printed raw)
     h F16 4 65503.5 1
     i I32 3 2.14748365e+09 -1
     l I64 2,1 1.09951163e+12 -5
     r I64 1,1,1,1,1,1,1,2 -3 -1
     s F32 - 3.25 3.25
     w F32 2,3 -2.249 0.5
     z F32 0,4 0 -                                                                              */
static void round_trip(const char *path) {
    static const float w[6] = {0.5f, -1.25f, 2.0f, 3.5f, 0.001f, -7.0f};
    static const uint16_t h[4] = {0x3C00, 0xC000, 0x3800, 0x7BFF};  /* 1, -2, 0.5, 65504 */
    static const uint16_t bf[4] = {0x3F80, 0x4040, 0xBF00, 0x4120}; /* 1, 3, -0.5, 10 */
    static const int32_t i32[3] = {-1, 7, 2147483647};
    static const int64_t i64[2] = {-5, (int64_t)1 << 40}, r[2] = {-1, -2};
    static const float s = 3.25f;
    static const int32_t e = 42;
    sr__st_tensor t[9] = {
        {.name = "w", .dtype = SR_FLOAT32, .ndim = 2, .shape = {2, 3}},
        {.name = "h", .dtype = SR_FLOAT16, .ndim = 1, .shape = {4}},
        {.name = "b", .dtype = SR_BFLOAT16, .ndim = 2, .shape = {2, 2}},
        {.name = "i", .dtype = SR_INT32, .ndim = 1, .shape = {3}},
        {.name = "z", .dtype = SR_FLOAT32, .ndim = 2, .shape = {0, 4}},
        {.name = "l", .dtype = SR_INT64, .ndim = 2, .shape = {2, 1}},
        {.name = "s", .dtype = SR_FLOAT32, .ndim = 0},
        {.name = odd_name, .dtype = SR_INT32, .ndim = 1, .shape = {1}},
        {.name = "r", .dtype = SR_INT64, .ndim = 8, .shape = {1, 1, 1, 1, 1, 1, 1, 2}},
    };
    const void *data[9] = {w, h, bf, i32, NULL, i64, &s, &e, r};
    const size_t sizes[9] = {24, 8, 8, 12, 0, 16, 4, 4, 16};
    sr__st_kv meta[3] = {{"format", "pt"}, {"note", "quote\" back\\ nl\n \xc3\xa9"}, {"k\"ey", ""}};
    char err[512] = "";

    sr__st_writer *wr = sr__st_create(path, t, 9, meta, 3, err, sizeof err);
    CHECK(wr != NULL);
    if (!wr) {
        fprintf(stderr, "create: %s\n", err);
        return;
    }
    /* back to front, and w in three pieces out of order */
    for (int k = 8; k >= 1; k--) CHECK(sr__st_write(wr, (size_t)k, 0, data[k], sizes[k], err, sizeof err) == 0);
    CHECK(sr__st_write(wr, 0, 12, (const char *)w + 12, 12, err, sizeof err) == 0);
    CHECK(sr__st_write(wr, 0, 0, w, 4, err, sizeof err) == 0);
    CHECK(sr__st_write(wr, 0, 4, (const char *)w + 4, 8, err, sizeof err) == 0);
    CHECK(sr__st_write(wr, 0, 24, w, 0, err, sizeof err) == 0); /* empty write at the end: fine */
    CHECK(sr__st_finish(wr, err, sizeof err) == 0);

    /* the layout: 8-byte length, header padded with spaces to a multiple of 8, data back to back */
    FILE *fp = fopen(path, "rb");
    unsigned char len8[8];
    CHECK(fp && fread(len8, 1, 8, fp) == 8);
    uint64_t hlen = 0;
    for (int k = 7; k >= 0; k--) hlen = hlen << 8 | len8[k];
    char *hdr = calloc(1, hlen + 1);
    CHECK(fp && fread(hdr, 1, hlen, fp) == hlen);
    if (fp) fclose(fp);
    CHECK(hlen % 8 == 0);
    CHECK(hdr[0] == '{');
    CHECK(strstr(hdr, "\"__metadata__\":{\"format\":\"pt\"") != NULL);
    CHECK(strstr(hdr, "\"odd \\\"name\\\"\\\\with\\nescapes\\t\\u0001 \xc3\xa9\xe2\x98\x83/\"") != NULL);
    CHECK(strstr(hdr, "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[68,72]}") != NULL);
    size_t end = strlen(hdr);
    while (end && hdr[end - 1] == ' ') end--;
    CHECK(hdr[end - 1] == '}' && hlen - end < 8);
    free(hdr);
    CHECK(file_size(path) == 8 + hlen + 92);

    sr__st_file *f = sr__st_open(path, err, sizeof err);
    CHECK(f != NULL);
    if (!f) {
        fprintf(stderr, "open: %s\n", err);
        return;
    }
    CHECK(sr__st_count(f) == 9);
    uint64_t off = 0;
    for (size_t k = 0; k < 9; k++) {
        const sr__st_tensor *g = sr__st_at(f, k);
        const void *d = NULL;
        CHECK_STR(g->name, t[k].name);
        CHECK(sr__st_find(f, t[k].name, &d) == g);
        CHECK(g->dtype == t[k].dtype && g->ndim == t[k].ndim);
        CHECK(!memcmp(g->shape, t[k].shape, sizeof(int64_t) * (size_t)t[k].ndim));
        CHECK(g->offset == off && g->nbytes == sizes[k]);
        CHECK(sizes[k] == 0 || !memcmp(d, data[k], sizes[k]));
        off += sizes[k];
    }
    CHECK(sr__st_at(f, 9) == NULL);
    const void *d = (const void *)1;
    CHECK(sr__st_find(f, "nope", &d) == NULL && d == NULL);
    CHECK(sr__st_find(f, "odd", NULL) == NULL);
    CHECK_STR(sr__st_metadata(f, "format"), "pt");
    CHECK_STR(sr__st_metadata(f, "note"), meta[1].value);
    CHECK_STR(sr__st_metadata(f, "k\"ey"), "");
    CHECK(sr__st_metadata(f, "missing") == NULL);
    sr__st_close(f);
}

/* ~1000 tensors: back-to-back offsets and lookups by name. */
static void many(void) {
    enum { N = 1000 };
    static sr__st_tensor t[N];
    static char names[N][48];
    char err[512] = "";
    const char *path = at("many.safetensors");
    for (int k = 0; k < N; k++) {
        snprintf(names[k], sizeof names[k], "model.layers.%d.mlp.weight", k);
        t[k] = (sr__st_tensor){.name = names[k], .dtype = SR_INT32, .ndim = 1, .shape = {k % 5}};
    }
    sr__st_writer *w = sr__st_create(path, t, N, NULL, 0, err, sizeof err);
    CHECK(w != NULL);
    for (int k = 0; w && k < N; k++) {
        int32_t v[4] = {k, k, k, k};
        CHECK(sr__st_write(w, (size_t)k, 0, v, sizeof(int32_t) * (size_t)(k % 5), err, sizeof err) == 0);
    }
    CHECK(w && sr__st_finish(w, err, sizeof err) == 0);
    sr__st_file *f = sr__st_open(path, err, sizeof err);
    CHECK(f && sr__st_count(f) == N);
    int ok = 1;
    for (int k = N - 1; f && k >= 0; k--) {
        const void *d;
        const sr__st_tensor *g = sr__st_find(f, names[k], &d);
        int32_t v = -1;
        if (g && g->nbytes) memcpy(&v, d, 4);
        ok &= g == sr__st_at(f, (size_t)k) && (k % 5 == 0 || v == k);
    }
    CHECK(ok);
    CHECK(sr__st_metadata(f, "format") == NULL);
    sr__st_close(f);
}

static void writer_errors(void) {
    char err[512] = "";
    const char *path = at("w.safetensors");
    sr__st_tensor t[2] = {{.name = "a", .dtype = SR_FLOAT32, .ndim = 1, .shape = {2}},
                          {.name = "b", .dtype = SR_INT64, .ndim = 1, .shape = {2}}};

    /* finish with a tensor not fully written: the tensor is named, the file removed */
    sr__st_writer *w = sr__st_create(path, t, 2, NULL, 0, err, sizeof err);
    CHECK(w && exists(path));
    float a[2] = {1, 2};
    int64_t b[2] = {3, 4};
    CHECK(sr__st_write(w, 0, 0, a, 8, err, sizeof err) == 0);
    CHECK(sr__st_write(w, 1, 8, &b[1], 8, err, sizeof err) == 0);
    /* out of range: index, past the end, offset overflow */
    CHECK(sr__st_write(w, 2, 0, a, 4, err, sizeof err) == -1);
    CHECK(strstr(err, "no tensor 2 to write (the file has 2)") != NULL);
    CHECK(sr__st_write(w, 0, 4, a, 8, err, sizeof err) == -1);
    CHECK(strstr(err, "tensor \"a\": writing 8 bytes at byte 4 runs past its 8 bytes") != NULL);
    CHECK(sr__st_write(w, 1, UINT64_MAX, a, 2, err, sizeof err) == -1);
    CHECK(strstr(err, "tensor \"b\": writing 2 bytes at byte 18446744073709551615") != NULL);
    CHECK(sr__st_finish(w, err, sizeof err) == -1);
    CHECK_STR(err + strlen(dir) + 1, "w.safetensors: tensor \"b\": only 8 of its 16 bytes were written");
    CHECK(!exists(path));

    /* two incomplete tensors: the first named, the other counted */
    w = sr__st_create(path, t, 2, NULL, 0, err, sizeof err);
    CHECK(w && sr__st_finish(w, err, sizeof err) == -1);
    CHECK(strstr(err, "tensor \"a\": only 0 of its 8 bytes were written (and 1 more tensors not fully written)"));
    CHECK(!exists(path));

    /* abort removes the file */
    w = sr__st_create(path, t, 2, NULL, 0, err, sizeof err);
    CHECK(w && exists(path));
    sr__st_abort(w);
    CHECK(!exists(path));
    sr__st_abort(NULL);

    /* create truncates an existing file */
    write_bytes(path, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 80);
    w = sr__st_create(path, t, 1, NULL, 0, err, sizeof err);
    CHECK(w && sr__st_write(w, 0, 0, a, 8, err, sizeof err) == 0 && sr__st_finish(w, err, sizeof err) == 0);
    sr__st_file *f = sr__st_open(path, err, sizeof err);
    CHECK(f && sr__st_count(f) == 1);
    CHECK(file_size(path) % 8 == 0 && file_size(path) < 80);
    sr__st_close(f);
    unlink(path);

    /* no tensors at all: "{}" and spaces */
    w = sr__st_create(path, NULL, 0, NULL, 0, err, sizeof err);
    CHECK(w && sr__st_finish(w, err, sizeof err) == 0);
    CHECK(file_size(path) == 16);
    f = sr__st_open(path, err, sizeof err);
    CHECK(f && sr__st_count(f) == 0 && sr__st_find(f, "a", NULL) == NULL);
    sr__st_close(f);
    unlink(path);

    /* bad arguments: refused before any file is created */
    struct {
        sr__st_tensor t;
        const char *want;
    } bad[] = {
        {{.name = "", .dtype = SR_FLOAT32}, "tensor 1: name is empty"},
        {{.name = "__metadata__", .dtype = SR_FLOAT32}, "tensor 1: name \"__metadata__\" is reserved"},
        {{.name = "\xff", .dtype = SR_FLOAT32}, "tensor 1: name is not valid UTF-8"},
        {{.name = NULL, .dtype = SR_FLOAT32}, "tensor 1: name is NULL"},
        {{.name = "a", .dtype = SR_FLOAT32}, "tensor \"a\" is given twice"},
        {{.name = "c", .dtype = (sr_dtype)7}, "tensor \"c\": dtype 7 is not"},
        {{.name = "c", .dtype = SR_FLOAT32, .ndim = 9}, "tensor \"c\": 9 dimensions (0 to 8 allowed)"},
        {{.name = "c", .dtype = SR_FLOAT32, .ndim = -1}, "tensor \"c\": -1 dimensions"},
        {{.name = "c", .dtype = SR_FLOAT32, .ndim = 2, .shape = {3, -1}}, "tensor \"c\": shape [3, -1] is invalid"},
        {{.name = "c", .dtype = SR_INT64, .ndim = 2, .shape = {INT64_MAX, 2}}, "shape [9223372036854775807, 2] is"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        sr__st_tensor two[2] = {t[0], bad[k].t};
        err[0] = 0;
        CHECK(sr__st_create(path, two, 2, NULL, 0, err, sizeof err) == NULL);
        if (!strstr(err, bad[k].want)) fprintf(stderr, "bad tensor %zu: got \"%s\"\n", k, err);
        CHECK(strstr(err, bad[k].want) != NULL);
        CHECK(!exists(path));
    }
    sr__st_kv dupmeta[2] = {{"k", "1"}, {"k", "2"}}, nullmeta[1] = {{"k", NULL}};
    CHECK(sr__st_create(path, t, 2, dupmeta, 2, err, sizeof err) == NULL);
    CHECK(strstr(err, "metadata key \"k\" is given twice") != NULL);
    CHECK(sr__st_create(path, t, 2, nullmeta, 1, err, sizeof err) == NULL);
    CHECK(strstr(err, "metadata \"k\": value is NULL") != NULL);
    CHECK(!exists(path));
    CHECK(sr__st_create(at("no/such/dir.safetensors"), t, 2, NULL, 0, err, sizeof err) == NULL);
    CHECK(strstr(err, "no/such/dir.safetensors: cannot create: No such file or directory") != NULL);
}

/* Offsets past 4 GiB on both sides, in a sparse file (skipped where the file system refuses). */
static void large(void) {
    const uint64_t big = (uint64_t)5 << 30;
    char err[512] = "";
    const char *path = at("large.safetensors");
    if (sizeof(size_t) < 8) return;
    sr__st_tensor t[2] = {{.name = "big", .dtype = SR_FLOAT32, .ndim = 1, .shape = {(int64_t)(big / 4)}},
                          {.name = "after", .dtype = SR_INT32, .ndim = 0}};
    sr__st_writer *w = sr__st_create(path, t, 2, NULL, 0, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    int32_t v = 42, tail = 7;
    CHECK(sr__st_write(w, 1, 0, &v, 4, err, sizeof err) == 0);
    CHECK(sr__st_write(w, 0, big - 4, &tail, 4, err, sizeof err) == 0);
    uint64_t size = file_size(path);
    CHECK(size > big + 4 && size % 8 == 4);
    /* a copy of it for the reader (finish will remove the original) */
    const char *copy = at("large2.safetensors");
    if (rename(path, copy) == 0 && link(copy, path) == 0) {
        CHECK(sr__st_finish(w, err, sizeof err) == -1);
        CHECK(strstr(err, "tensor \"big\": only 4 of its 5368709120 bytes were written") != NULL);
        sr__st_file *f = sr__st_open(copy, err, sizeof err);
        CHECK(f != NULL);
        const void *d;
        const sr__st_tensor *g = sr__st_find(f, "after", &d);
        CHECK(g && g->offset == big && !memcmp(d, &v, 4));
        g = sr__st_find(f, "big", &d);
        CHECK(g && g->nbytes == big && !memcmp((const char *)d + big - 4, &tail, 4));
        sr__st_close(f);
        /* cut one byte: the last tensor now runs past the data */
        CHECK(truncate(copy, (off_t)size - 1) == 0);
        CHECK(sr__st_open(copy, err, sizeof err) == NULL);
        CHECK(strstr(err, "tensor \"after\": data_offsets [5368709120, 5368709124] run past the end") != NULL);
        unlink(copy);
    } else {
        sr__st_abort(w);
    }
    CHECK(!exists(path));
}

/* Metadata values set after the data (the checkpoint's hashes): same length only, read back in the
   header's order; the file stays valid. */
static void set_metadata(void) {
    char err[512] = "";
    const char *path = at("meta.safetensors");
    sr__st_tensor t = {.name = "x", .dtype = SR_FLOAT32, .ndim = 1, .shape = {3}};
    sr__st_kv meta[] = {{"first", "1"}, {"hash:x", "0000000000000000"}, {"q\"uote", "ab"}};
    sr__st_writer *w = sr__st_create(path, &t, 1, meta, 3, err, sizeof err);
    float v[3] = {1, 2, 3};
    char hex[17];
    CHECK(w && sr__st_write(w, 0, 0, v, sizeof v, err, sizeof err) == 0);
    CHECK(sr__st_set_metadata(w, "hash:x", sr__hash64_hex(sr__hash64(v, sizeof v, 0), hex), err, sizeof err) == 0);
    CHECK(sr__st_set_metadata(w, "q\"uote", "c\"", err, sizeof err) == -1); /* "c\\"" in JSON: 5 bytes, "ab" 4 */
    CHECK(strstr(err, "metadata \"q\\\"uote\": the new value takes 5 bytes in the header, the placeholder 4"));
    CHECK(sr__st_set_metadata(w, "q\"uote", "cd", err, sizeof err) == 0);
    CHECK(sr__st_set_metadata(w, "first", "12", err, sizeof err) == -1 && strstr(err, "takes 4 bytes in the header, "
                                                                                      "the placeholder 3"));
    CHECK(sr__st_set_metadata(w, "nope", "1", err, sizeof err) == -1 && strstr(err, "no metadata key \"nope\" to set"));
    CHECK(sr__st_set_metadata(w, "first", "\xff", err, sizeof err) == -1 && strstr(err, "is not valid UTF-8"));
    CHECK(sr__st_finish(w, err, sizeof err) == 0);
    sr__st_file *f = sr__st_open(path, err, sizeof err);
    CHECK(f != NULL);
    CHECK_STR(sr__st_metadata(f, "hash:x"), hex);
    CHECK_STR(sr__st_metadata(f, "q\"uote"), "cd");
    CHECK_STR(sr__st_metadata(f, "first"), "1");
    CHECK(sr__st_metadata_count(f) == 3 && sr__st_metadata_at(f, 3) == NULL);
    CHECK(f && !strcmp(sr__st_metadata_at(f, 0)->key, "first") && !strcmp(sr__st_metadata_at(f, 2)->key, "q\"uote"));
    const void *d;
    CHECK(f && sr__st_find(f, "x", &d) &&
          !strcmp(sr__hash64_hex(sr__hash64(d, 12, 0), hex), sr__st_metadata(f, "hash:x")));
    sr__st_close(f);
    unlink(path);
}

/* The checkpoint content hash (base/hash64.h, XXH3): fixed values, every single-bit flip, swapped
   blocks, the length, the seed, and every tail length noticed; FNV-1a's fixed values. */
static void content_hash(void) {
    enum { N = 4096 + 37 };
    unsigned char *b = malloc(N);
    for (size_t i = 0; i < N; i++) b[i] = (unsigned char)(i * 131 + (i >> 7));
    char hex[17];
    /* the value is part of the checkpoint format: XXH3-64, xxHash's published values */
    CHECK_STR(sr__hash64_hex(sr__hash64("", 0, 0), hex), "2d06800538d394c2");
    CHECK_STR(sr__hash64_hex(sr__hash64("a", 1, 0), hex), "e6c632b61e964e1f");
    /* FNV-1a 64 (hash tables): the offset basis, and its published value of "a" */
    CHECK(sr__fnv1a64_str(SR__FNV1A64_BASIS, "") == 0xcbf29ce484222325ull);
    CHECK(sr__fnv1a64_str(SR__FNV1A64_BASIS, "a") == 0xaf63dc4c8601ec8cull);
    CHECK(sr__fnv1a64(SR__FNV1A64_BASIS, "ab", 2) == sr__fnv1a64_str(SR__FNV1A64_BASIS, "ab"));
    uint64_t h = sr__hash64(b, N, 0);
    int same = 0;
    for (size_t i = 0; i < N; i++)
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (unsigned char)(1u << bit);
            same += sr__hash64(b, N, 0) == h;
            b[i] ^= (unsigned char)(1u << bit);
        }
    CHECK(same == 0);
    /* two 64-byte stripes swapped (within one scramble block and across blocks), two words of a
       stripe swapped */
    const size_t pairs[][3] = {{0, 64, 64}, {128, 576, 64}, {0, 2048, 64}, {8, 16, 8}, {4000, 4096, 8}};
    unsigned char tmp[64];
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        size_t x = pairs[k][0], y = pairs[k][1], n = pairs[k][2];
        memcpy(tmp, b + x, n), memcpy(b + x, b + y, n), memcpy(b + y, tmp, n);
        CHECK(memcmp(b + x, b + y, n) == 0 || sr__hash64(b, N, 0) != h);
        memcpy(tmp, b + x, n), memcpy(b + x, b + y, n), memcpy(b + y, tmp, n);
    }
    CHECK(sr__hash64(b, N, 0) == h);
    CHECK(sr__hash64(b, N, 1) != h);
    /* piece by piece (pieces of 0 to 130 bytes, copied or not, across stripes) gives the same value
       and sr__hash64_copy copies exactly */
    for (size_t step = 0; step <= 130; step += 13) {
        sr__hash64_state st;
        unsigned char *c = calloc(N, 1);
        sr__hash64_init(&st, 0);
        for (size_t at = 0, i = 0; at < N; i++) {
            size_t n = (step + i * 7) % 131;
            if (n > N - at) n = N - at;
            if (i % 2) sr__hash64_copy(&st, c + at, b + at, n);
            else sr__hash64_update(&st, b + at, n), memcpy(c + at, b + at, n);
            at += n;
        }
        CHECK(sr__hash64_final(&st) == h);
        CHECK(memcmp(c, b, N) == 0);
        free(c);
    }
    /* the fused copy in pieces larger than its cache-sized chunks, and unaligned */
    {
        enum { BIG = 100003 };
        unsigned char *x = malloc(BIG), *c = calloc(BIG + 1, 1);
        for (size_t i = 0; i < BIG; i++) x[i] = (unsigned char)(i * 7 + (i >> 9));
        sr__hash64_state st;
        sr__hash64_init(&st, 5);
        sr__hash64_copy(&st, c + 1, x, 40000);
        sr__hash64_copy(&st, c + 1 + 40000, x + 40000, 3);
        sr__hash64_copy(&st, c + 1 + 40003, x + 40003, BIG - 40003);
        CHECK(sr__hash64_final(&st) == sr__hash64(x, BIG, 5));
        CHECK(memcmp(c + 1, x, BIG) == 0);
        free(x), free(c);
    }
    /* every length from 0 to 200, and a trailing zero byte, give another value */
    unsigned char z[201] = {0};
    uint64_t seen[201];
    int dup = 0;
    for (size_t n = 0; n <= 200; n++) {
        seen[n] = sr__hash64(z, n, 0);
        for (size_t m = 0; m < n; m++) dup += seen[m] == seen[n];
    }
    CHECK(dup == 0);
    /* unaligned input gives the same value */
    unsigned char *u = malloc(N + 1);
    memcpy(u + 1, b, N);
    CHECK(sr__hash64(u + 1, N, 0) == h);
    free(u), free(b);
}

static void corrupt(void) {
    char err[512];
    const char *path = at("bad.safetensors");
    /* too short, header length beyond the file or absurd */
    write_bytes(path, "", 0);
    CHECK(sr__st_open(path, err, sizeof err) == NULL && strstr(err, "the file is 0 bytes, too short"));
    write_bytes(path, "\x02\0\0\0", 4);
    CHECK(sr__st_open(path, err, sizeof err) == NULL && strstr(err, "the file is 4 bytes, too short"));
    write_raw(path, "{}", 2, 1000, 0);
    CHECK(sr__st_open(path, err, sizeof err) == NULL &&
          strstr(err, "header length 1000 runs past the end of the file (10 bytes)"));
    write_raw(path, "{}", 2, (int64_t)1 << 62, 0);
    CHECK(sr__st_open(path, err, sizeof err) == NULL && strstr(err, "header length 4611686018427387904 is over"));
    CHECK(sr__st_open(at("missing.safetensors"), err, sizeof err) == NULL &&
          strstr(err, "missing.safetensors: No such file or directory"));
    CHECK(sr__st_open(dir, err, sizeof err) == NULL && strstr(err, "not a regular file"));

    /* truncated copies of a good file: in the data, in the header */
    const char *good = at("rt.safetensors");
    FILE *fp = fopen(good, "rb");
    char buf[4096];
    size_t n = fp ? fread(buf, 1, sizeof buf, fp) : 0;
    if (fp) fclose(fp);
    CHECK(n > 100);
    write_bytes(path, buf, n - 3);
    CHECK(sr__st_open(path, err, sizeof err) == NULL);
    CHECK(strstr(err, "tensor \"r\": data_offsets [76, 92] run past the end of the data section (89 bytes") != NULL);
    write_bytes(path, buf, 100);
    CHECK(sr__st_open(path, err, sizeof err) == NULL && strstr(err, "runs past the end of the file (100 bytes)"));

    const char *T = "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]";
    char h[512];
    /* not JSON */
    BAD("", 0, "the header is not valid JSON: expected '{' (the header is a JSON object) at byte 0");
    BAD("[]", 0, "expected '{'");
    snprintf(h, sizeof h, "{\"a\":{%s}", T);
    BAD(h, 4, "expected ',' or '}' at byte 53");
    snprintf(h, sizeof h, "{\"a\":{%s},}", T);
    BAD(h, 4, "not valid JSON: expected a string at byte 54");
    snprintf(h, sizeof h, "{'a':{%s}}", T);
    BAD(h, 4, "not valid JSON: expected a string");
    snprintf(h, sizeof h, "{\"a\":{%s}} x", T);
    BAD(h, 4, "unexpected data after the JSON object at byte 55");
    BAD("{\"a\x01\":{}}", 0, "control character in a string");
    BAD("{\"a\\q\":{}}", 0, "unknown escape in a string");
    BAD("{\"\xff\":{}}", 0, "invalid UTF-8 in a string");
    BAD("{\"\xc0\xae\":{}}", 0, "invalid UTF-8 in a string");     /* overlong '.' */
    BAD("{\"\xed\xa0\x80\":{}}", 0, "invalid UTF-8 in a string"); /* a surrogate in UTF-8 */
    BAD("{\"\\ud800\":{}}", 0, "unpaired surrogate");
    BAD("{\"\\udc00x\":{}}", 0, "unpaired surrogate");
    BAD("{\"\\u12\":{}}", 0, "bad \\u escape");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4, "number with a leading zero");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":tru}}", 4, "expected a value");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1.}}", 4, "bad number");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":[1 2]}}", 4, "expected ',' or ']'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}\"b\":1}", 4, "expected ',' or '}'");
    BAD("{\"a\" {}}", 0, "expected ':'");
    bad_n("{}\0", 3, 0, "unexpected data after the JSON object at byte 2", __LINE__);
    {
        char deep[200] = "{\"a\":{\"x\":";
        for (int k = 0; k < 70; k++) strcat(deep, "[");
        BAD(deep, 0, "nesting too deep");
    }
    /* JSON, but not a valid header */
    BAD("{\"a\":1}", 0, "tensor \"a\": expected an object with dtype, shape and data_offsets");
    BAD("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor \"a\": no dtype");
    BAD("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor \"a\": no shape");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor \"a\": no data_offsets");
    BAD("{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor \"a\": dtype is not a string");
    BAD("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype given twice");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
        "tensor \"a\": shape is not an array of non-negative integers");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4, "shape is not an array");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4, "shape is not an array");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4, "shape is not an array");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
        "tensor \"a\": data_offsets is not [begin, end] with non-negative integers");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}", 8, "data_offsets is not [begin, end]");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1e0,5]}}", 8, "data_offsets is not [begin, end]");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
        "tensor \"a\": 9 dimensions, shardrun supports at most 8");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,4]}}", 4,
        "tensor \"a\": shape [4611686018427387904, 4] is too large");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4,
        "tensor \"a\": data_offsets [4, 0] end before they begin");
    BAD("{\"x\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 16,
        "bad.safetensors: tensor \"x\": data_offsets [0, 12] hold 12 bytes but shape [2, 2] of F32 needs 16");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 7,
        "tensor \"a\": data_offsets [0, 8] run past the end of the data section (7 bytes");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[18446744073709551612,18446744073709551615]}}", 4,
        "hold 3 bytes but shape [1] of F32 needs 4");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"I32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
        24, "tensors \"a\" [0, 16] and \"b\" [8, 24] overlap");
    BAD("{\"z\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]},"
        "\"y\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
        "\"x\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[14,24]}}",
        24, "tensors \"x\" [14, 24] and \"z\" [16, 24] overlap");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
        8, "tensor \"a\" appears twice in the header");
    BAD("{\"d\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
        "tensor \"d\": dtype \"F64\" is not supported by shardrun (it reads F32, F16, BF16, I32 and I64)");
    BAD("{\"u\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 8,
        "tensor \"u\": dtype \"U8\" is not supported");
    BAD("{\"q\\\"\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1]}}", 8,
        "tensor \"q\\\"\": dtype \"BOOL\" is not supported");
    BAD("{\"a\\u0000b\":{}}", 0, "tensor \"a\"...: names must not contain \\u0000");
    BAD("{\"__metadata__\":{\"a\":1}}", 0, "__metadata__ \"a\": the value is not a string");
    BAD("{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}", 0, "__metadata__ \"a\": the value is not a string");
    BAD("{\"__metadata__\":[]}", 0, "__metadata__ is not an object of strings");
    BAD("{\"__metadata__\":{\"k\\u0000\":\"x\"}}", 0, "__metadata__ \"k\"...: keys must not contain \\u0000");
    BAD("{\"__metadata__\":{\"a\":\"x\\u0000\"}}", 0, "__metadata__ \"a\": the value contains \\u0000");
    BAD("{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0, "__metadata__ key \"a\" appears twice");
    BAD("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "__metadata__ given twice");
    /* bytes after the last tensor (HF's reader refuses them too) */
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 9,
        "5 bytes follow the last tensor's data (the data section is 9 bytes, the tensors end at 4)");
    BAD("{}", 1, "1 bytes follow the last tensor's data");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
        "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[2,2]}}",
        12, "4 bytes follow the last tensor's data (the data section is 12 bytes, the tensors end at 8)");
}

/* Files other writers may produce, accepted. */
static void lenient(void) {
    const void *d;
    /* HuggingFace's own layout for {"a": zeros(2)} with metadata, padded */
    sr__st_file *f = GOOD("{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                          "\"data_offsets\":[0,8]}}    ",
                          8);
    CHECK(f && sr__st_count(f) == 1 && sr__st_find(f, "a", &d) && ((const unsigned char *)d)[7] == 7);
    CHECK_STR(sr__st_metadata(f, "format"), "pt");
    sr__st_close(f);
    /* unpadded, whitespace, fields in another order, an unknown field, null metadata */
    f = GOOD(" {\n \"__metadata__\" : null ,\n\t\"a\" : { \"data_offsets\" : [ 2 , 6 ] , \"x\": {\"y\": [1, -2.5e3, "
             "true, false, null, \"s\"]}, \"shape\":[ ],\"dtype\":\"I32\" } }\r\n",
             6);
    const sr__st_tensor *t = f ? sr__st_find(f, "a", &d) : NULL;
    CHECK(t && t->ndim == 0 && t->offset == 2 && t->nbytes == 4 && ((const unsigned char *)d)[0] == 2);
    sr__st_close(f);
    /* escapes decoded: \/ \u00e9 and a surrogate pair; zero-element tensors anywhere, even at the end
       of the data, and a gap no tensor holds (before an empty tensor that ends the data) */
    f = GOOD("{\"a\\/\\u00e9\\ud83d\\ude00\":{\"dtype\":\"BF16\",\"shape\":[3,0],\"data_offsets\":[8,8]},"
             "\"b\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[10,10]},"
             "\"c\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
             "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[12,12]}}",
             12);
    CHECK(f && sr__st_count(f) == 4);
    CHECK(f && sr__st_find(f, "a/\xc3\xa9\xf0\x9f\x98\x80", NULL) && sr__st_find(f, "e", NULL));
    sr__st_close(f);
    f = GOOD("{}", 0);
    CHECK(f && sr__st_count(f) == 0);
    sr__st_close(f);
}

int main(int argc, char **argv) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/sr_st_test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    CHECK_STR(sr__st_dtype_name(SR_FLOAT32), "F32");
    CHECK_STR(sr__st_dtype_name(SR_FLOAT16), "F16");
    CHECK_STR(sr__st_dtype_name(SR_BFLOAT16), "BF16");
    CHECK_STR(sr__st_dtype_name(SR_INT32), "I32");
    CHECK_STR(sr__st_dtype_name(SR_INT64), "I64");

    set_metadata();
    content_hash();
    round_trip(at("rt.safetensors"));
    if (argc > 1) round_trip(argv[1]);
    many();
    writer_errors();
    large();
    corrupt();
    lenient();

    const char *files[] = {"rt.safetensors", "many.safetensors", "bad.safetensors", "good.safetensors"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) unlink(at(files[k]));
    if (rmdir(dir)) fprintf(stderr, "left behind: %s (%s)\n", dir, strerror(errno));
    return CHECK_DONE();
}
