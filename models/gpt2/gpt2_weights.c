/* gpt2 weights: a GPT-2's tensors from an opened model file, read for generation (see gpt2_weights.h). */
#include "gpt2_weights.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fail.h"
#include "gpt2_sizes.h"

#define FAMILY "GPT-2 LM model (HF's GPT2LMHeadModel names)"

static const char *const BLOCK_NAMES[GPT2_BLOCK_PARAMS] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
    "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias",
};

/* HF's attention mask buffers, which older files carry */
static int ignorable(const char *name) {
    size_t n = strlen(name);
    return gen_layer_of(name) >= 0 && ((n > 10 && !strcmp(name + n - 10, ".attn.bias")) ||
                                       (n > 17 && !strcmp(name + n - 17, ".attn.masked_bias")));
}

static int pick_heads(gpt2_weights *w, const gen_opts *o, const gen_file *f, char *err, size_t errlen) {
    const char *recorded_from = NULL;
    int recorded = gen_recorded_heads(f, o->config, &recorded_from);
    if (o->n_head > 0) {
        w->NH = o->n_head;
        snprintf(w->heads_from, sizeof w->heads_from, "--n-head");
    } else if (o->size) {
        const gpt2_size *s = gpt2_size_named(o->size);
        if (s) w->NH = s->n_head;
        snprintf(w->heads_from, sizeof w->heads_from, "--size %s", o->size);
    } else if (recorded > 0) {
        w->NH = recorded;
        snprintf(w->heads_from, sizeof w->heads_from, "%s", recorded_from);
    } else {
        for (int i = 0; i < GPT2_NSIZES; i++)
            if (GPT2_SIZES[i].n_embd == w->C) {
                w->NH = GPT2_SIZES[i].n_head;
                snprintf(w->heads_from, sizeof w->heads_from, "GPT-2's for n_embd %d; --n-head to change", w->C);
            }
        if (!w->NH)
            return sr__fail(err, errlen,
                            "%s: n_embd is %d, which is no GPT-2 size's, and nothing says how many attention "
                            "heads the model has (no n_head metadata, no config.json); give --n-head N",
                            f->file, w->C);
    }
    if (w->C % w->NH)
        return sr__fail(err, errlen,
                        "%s: n_embd %d is not a multiple of n_head %d (from %s); give the n_head the model "
                        "was trained with (--n-head N)",
                        f->file, w->C, w->NH, w->heads_from);
    return 0;
}

/* --size against the shapes: every figure that differs, in one message */
static int check_size(const gpt2_weights *w, const gen_file *f, const char *size, char *err, size_t errlen) {
    const gpt2_size *s = gpt2_size_named(size);
    if (!s)
        return sr__fail(err, errlen,
                        "--size %s is not a GPT-2 size; use tiny, gpt2, gpt2-medium, gpt2-large or gpt2-xl, "
                        "or leave it out to take the file's shapes",
                        size);
    char diff[512] = "";
    size_t n = 0;
#define DIFF(what, want, have)                                                                                         \
    if ((want) && (want) != (have))                                                                                    \
    n += (size_t)snprintf(diff + n, sizeof diff - n, "%s%s %d in --size, %d in the file", n ? "; " : "", what, want,   \
                          have)
    DIFF("n_layer", s->n_layer, w->L);
    DIFF("n_embd", s->n_embd, w->C);
    DIFF("n_positions (context)", s->n_positions, w->P);
    DIFF("vocab_size", s->vocab_size, w->V);
#undef DIFF
    if (n)
        return sr__fail(err, errlen,
                        "%s is not a %s model: %s. Leave --size out to take the file's shapes, or name "
                        "the checkpoint of that size",
                        f->file, size, diff);
    return 0;
}

static int read_all(gen_file *f, const gen_opts *o, gpt2_weights *w, char *err, size_t errlen) {
    int64_t wte[4], wpe[4];
    if (gen_file_shape(f, "transformer.wte.weight", wte) != 2 ||
        gen_file_shape(f, "transformer.wpe.weight", wpe) != 2 || wte[1] != wpe[1])
        return sr__fail(err, errlen,
                        "%s has no transformer.wte.weight [vocab, n_embd] and transformer.wpe.weight [context, "
                        "n_embd] (with or without the \"transformer.\" prefix): not a GPT-2 model",
                        f->file);
    w->V = (int)wte[0], w->C = (int)wte[1], w->P = (int)wpe[0];
    for (size_t i = 0; gen_file_name(f, i); i++) {
        int l = gen_layer_of(gen_file_name(f, i));
        if (l + 1 > w->L) w->L = l + 1;
    }
    if (w->L == 0) return sr__fail(err, errlen, "%s has no transformer.h.0.* tensors: not a GPT-2 model", f->file);
    if (o->size && check_size(w, f, o->size, err, errlen) != 0) return -1;
    if (pick_heads(w, o, f, err, errlen) != 0) return -1;
    if (!(w->block = calloc((size_t)w->L * GPT2_BLOCK_PARAMS, sizeof *w->block)))
        return sr__fail(err, errlen, "out of memory"), -2;
    const int C = w->C;
    const int64_t dims[GPT2_BLOCK_PARAMS][2] = {{C, 0}, {C, 0}, {C, 3 * C}, {3 * C, 0}, {C, C},     {C, 0},
                                                {C, 0}, {C, 0}, {C, 4 * C}, {4 * C, 0}, {4 * C, C}, {C, 0}};
    char model[160];
    snprintf(model, sizeof model, "a GPT-2 with n_embd %d, vocab %d, context %d", w->C, w->V, w->P);
#define TAKE(name, d0, d1, dst) gen_file_take(f, name, d0, d1, dst, model, FAMILY, err, errlen)
    int r = TAKE("transformer.wte.weight", w->V, C, &w->wte);
    if (!r) r = TAKE("transformer.wpe.weight", w->P, C, &w->wpe);
    for (int l = 0; !r && l < w->L; l++)
        for (int p = 0; !r && p < GPT2_BLOCK_PARAMS; p++) {
            char name[128];
            snprintf(name, sizeof name, "transformer.h.%d.%s", l, BLOCK_NAMES[p]);
            r = TAKE(name, dims[p][0], dims[p][1], &w->block[l * GPT2_BLOCK_PARAMS + p]);
        }
    if (!r) r = TAKE("transformer.ln_f.weight", C, 0, &w->lnf_w);
    if (!r) r = TAKE("transformer.ln_f.bias", C, 0, &w->lnf_b);
    w->head = w->wte;
    int64_t hs[4];
    if (!r && gen_file_shape(f, "lm_head.weight", hs)) r = TAKE("lm_head.weight", w->V, C, &w->head);
#undef TAKE
    if (r) return r;
    return gen_file_check_used(f, ignorable, "GPT-2", "GPT-2 LM model", err, errlen);
}

int gpt2_weights_read(gen_file *f, const gen_opts *o, gpt2_weights *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    int rc = read_all(f, o, w, err, errlen);
    if (rc) gpt2_weights_free(w);
    return rc;
}

void gpt2_weights_free(gpt2_weights *w) {
    free(w->block);
    w->block = NULL;
}
