/* The index of a SHARDED checkpoint (fsdp/ckpt_index.h), parsed once from a real safetensors file's
   metadata: a well-formed index read back entry by entry, and each kind of malformed entry refused
   with a message quoting it (before, one reader skipped such an entry where another reported it). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "fsdp/ckpt_index.h"

static char path[256];

/* A file whose metadata is the n entries kv (one small tensor): open, or NULL. */
static sr__st_file *file_with(const sr__st_kv *kv, size_t n) {
    char err[512];
    sr__st_tensor t = {.name = "u0.param", .dtype = SR_FLOAT32, .ndim = 1, .shape = {2}};
    float v[2] = {1, 2};
    sr__st_writer *w = sr__st_create(path, &t, 1, kv, n, err, sizeof err);
    if (!w || sr__st_write(w, 0, 0, v, sizeof v, err, sizeof err) || sr__st_finish(w, err, sizeof err)) {
        fprintf(stderr, "writing %s: %s\n", path, err);
        return NULL;
    }
    sr__st_file *f = sr__st_open(path, err, sizeof err);
    if (!f) fprintf(stderr, "reading %s: %s\n", path, err);
    return f;
}

static void good(void) {
    const sr__st_kv kv[] = {{"format", "shardrun-sharded-2"}, {"unit:0", "10 12 6"},    {"unit:1", "4 4 2"},
                            {"param:a", "0 0 6 [2, 3]"},      {"param:b", "0 6 4 [4]"}, {"param:c", "1 0 4 [2, 2]"}};
    sr__st_file *f = file_with(kv, sizeof kv / sizeof *kv);
    sr__ckpt_index ix;
    char why[256] = "";
    CHECK(f && sr__ckpt_index_parse(f, &ix, why, sizeof why) == 0);
    if (!f) return;
    CHECK(ix.nunits == 2 && ix.nparams == 3);
    CHECK(ix.units[0].numel == 10 && ix.units[0].padded == 12 && ix.units[0].shard == 6);
    CHECK(ix.units[1].numel == 4 && ix.units[1].shard == 2);
    const sr__ckpt_param *b = sr__ckpt_index_find(&ix, "b");
    CHECK(b && b->unit == 0 && b->offset == 6 && b->numel == 4);
    CHECK_STR(b ? b->shape : NULL, "[4]");
    const sr__ckpt_param *c = sr__ckpt_index_find(&ix, "c");
    CHECK(c && c->unit == 1 && c->numel == 4);
    CHECK_STR(c ? c->shape : NULL, "[2, 2]");
    CHECK(sr__ckpt_index_find(&ix, "d") == NULL);
    sr__ckpt_index_free(&ix);
    sr__st_close(f);
}

/* one malformed entry beside good ones: refused, the message quoting it */
static void bad(const char *key, const char *value, const char *what) {
    const sr__st_kv kv[] = {{"unit:0", "10 12 6"}, {"param:a", "0 0 6 [2, 3]"}, {key, value}};
    sr__st_file *f = file_with(kv, 3);
    sr__ckpt_index ix;
    char why[256] = "", want[128];
    snprintf(want, sizeof want, "\"%s\" = \"%s\"", key, value);
    int rc = f ? sr__ckpt_index_parse(f, &ix, why, sizeof why) : 0;
    check_rejected(rc == 0, why, "\"", want, what, __FILE__, __LINE__, 0);
    if (f) sr__st_close(f);
}

int main(void) {
    snprintf(path, sizeof path, "/tmp/shardrun-unit-ckpt-index-%ld.safetensors", (long)getpid());
    good();
    bad("param:b", "0 x 4 [4]", "an offset that is not a number");
    bad("param:b", "0 6 4", "no shape");
    bad("param:b", "3 0 4 [4]", "a unit without an entry");
    bad("param:b", "0 8 4 [4]", "a range past its unit's numel");
    bad("param:b", "-1 0 4 [4]", "a negative unit");
    bad("unit:1", "4 4 0", "a unit of shard 0");
    bad("unit:1", "8 4 2", "a unit whose numel exceeds padded");
    bad("unit:1", "4 4 2 9", "a unit with a fourth field");
    bad("unit:x", "4 4 2", "a unit number that is not a number");
    unlink(path);
    return CHECK_DONE();
}
