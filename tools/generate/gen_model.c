/* gen model: which family a checkpoint is, and its loader (see gen_model.h). */
#include "gen_model.h"

#include <stdio.h>
#include <string.h>

#include "gen_lora.h"

static const struct {
    const char *family;
    const char *model_types[4]; /* config.json's model_type values */
    const char *embedding;      /* the tensor that names it (with or without "transformer.") */
    int (*load)(gen_model *, const gen_opts *, char *, size_t);
} FAMILIES[] = {
    {"gpt2", {"gpt2", NULL}, "transformer.wte.weight", gpt2_gen_load},
    {"bloom", {"bloom", NULL}, "transformer.word_embeddings.weight", bloom_gen_load},
    {"llama", {"llama", "qwen2", "mistral", NULL}, "model.embed_tokens.weight", llama_gen_load},
};
#define NFAMILIES (sizeof FAMILIES / sizeof FAMILIES[0])

/* the family's index: --family, else config.json's model_type, else the embedding's name; -1 */
static int family_of(const gen_model *m, const gen_opts *o, char *err, size_t errlen) {
    char type[64] = "";
    const char *cfg = o->config ? o->config : m->f.dir;
    if (o->family) {
        for (size_t i = 0; i < NFAMILIES; i++)
            if (!strcmp(o->family, FAMILIES[i].family)) return (int)i;
        snprintf(err, errlen, "--family %s: expected gpt2, bloom or llama (the Llama family: Llama, Qwen2, Mistral)",
                 o->family);
        return -1;
    }
    int64_t shape[4];
    for (size_t i = 0; i < NFAMILIES; i++)
        if (gen_file_shape(&m->f, FAMILIES[i].embedding, shape)) return (int)i;
    if (gen_config_str(cfg, "model_type", type, sizeof type)) {
        for (size_t i = 0; i < NFAMILIES; i++)
            for (const char *const *t = FAMILIES[i].model_types; *t; t++)
                if (!strcmp(type, *t)) return (int)i;
    }
    snprintf(err, errlen,
             "%s is no decoder this generator knows: it has none of transformer.wte.weight (GPT-2), "
             "word_embeddings.weight (BLOOM) or model.embed_tokens.weight (Llama, Qwen2, Mistral)%s%s%s; name a "
             "checkpoint of one of them, or give --family",
             m->f.file, type[0] ? ", and its config.json says model_type \"" : "", type, type[0] ? "\"" : "");
    return -1;
}

int gen_model_load(const char *path, const gen_opts *o, gen_model *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    char lora[4600] = "";
    int rc = gen_lora_adapter_only(path, err, errlen);
    if (!rc) rc = gen_file_open(path, &m->f, err, errlen);
    if (rc) return rc;
    /* a LoRA run's checkpoint: its adapters folded into the weights the family's loader takes */
    int i = (rc = gen_lora_apply(&m->f, lora, sizeof lora, err, errlen)) ? -1 : family_of(m, o, err, errlen);
    if (i < 0 && !rc) rc = -1;
    else if (i >= 0) {
        m->family = FAMILIES[i].family;
        rc = FAMILIES[i].load(m, o, err, errlen);
        size_t n = strlen(m->what);
        if (!rc && lora[0]) snprintf(m->what + n, sizeof m->what - n, "; %s", lora);
    }
    if (rc) gen_model_free(m);
    return rc;
}

void gen_model_free(gen_model *m) {
    if (m->free_impl) m->free_impl(m);
    m->free_impl = NULL, m->impl = NULL;
    gen_file_close(&m->f);
}
