/* transformer lora: the [task] lora_* keys, the adapters' declarations and PEFT's
   adapter_config.json (see lora.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lora.h"

/* PEFT matches a name against a module's path: equal, or the path ends with "." + name */
static int matches(const char *path, const char *name, size_t n) {
    size_t p = strlen(path);
    if (p == n) return !strncmp(path, name, n);
    return p > n && path[p - n - 1] == '.' && !strncmp(path + p - n, name, n);
}

int tf_lora_configure(sr_ctx *ctx, const char *prefix, const char *const *names, int nlin, const char *blocks, int L,
                      const char *def, int fan_in_fan_out, int first, tf_lora *l) {
    memset(l, 0, sizeof *l);
    long long r;
    if (sr_config_int(ctx, "lora_r", 0, &r) != 0) return -1;
    if (r < 0 || r > 65536) {
        fprintf(stderr, "%s: error: [task] lora_r = %lld is out of range [0, 65536] (0: no LoRA)\n", prefix, r);
        return -1;
    }
    const char *keys[] = {"lora_alpha", "lora_dropout", "lora_target_modules", "init_adapters"};
    if (r == 0) {
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (sr_config(ctx, keys[i])) {
                fprintf(stderr,
                        "%s: error: [task] %s is set but lora_r is 0 (LoRA off); set lora_r = 8 (say) "
                        "to train adapters, or remove %s\n",
                        prefix, keys[i], keys[i]);
                return -1;
            }
        return 0;
    }
    if (L > TF_LORA_MAX_BLOCKS) {
        fprintf(stderr, "%s: error: [task] lora_r: LoRA takes models of up to %d blocks; this one has %d\n", prefix,
                TF_LORA_MAX_BLOCKS, L);
        return -1;
    }
    l->r = (int)r;
    l->L = L;
    if (sr_config_double(ctx, "lora_alpha", 8.0, &l->alpha) != 0 ||
        sr_config_double(ctx, "lora_dropout", 0.0, &l->dropout) != 0)
        return -1;
    if (!(l->alpha > 0) || !isfinite(l->alpha)) {
        fprintf(stderr, "%s: error: [task] lora_alpha = %g must be a positive number (PEFT's default: 8)\n", prefix,
                l->alpha);
        return -1;
    }
    if (!(l->dropout >= 0.0 && l->dropout < 1.0)) {
        fprintf(stderr,
                "%s: error: [task] lora_dropout = %g is out of range [0, 1): it is the probability of dropping each "
                "element of the adapters' input in training (1 would drop them all); set lora_dropout = 0.05, "
                "say, or 0 (PEFT's default) for none\n",
                prefix, l->dropout);
        return -1;
    }
    l->scale = (float)(l->alpha / (double)l->r);
    l->fan_in_fan_out = fan_in_fan_out;
    l->first = first;
    l->names = names;
    l->nlin = nlin < TF_LORA_MAX_LINEARS ? nlin : TF_LORA_MAX_LINEARS;
    const char *list = sr_config(ctx, "lora_target_modules");
    if (!list || !*list) list = def;
    size_t used = 0;
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        size_t n = (size_t)(e - p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        if (n) {
            unsigned hit = 0;
            char path[512];
            for (int b = 0; b < L; b++) /* the full path, as PEFT matches the model's module names */
                for (int k = 0; k < l->nlin; k++) {
                    snprintf(path, sizeof path, "%s.%d.%s", blocks, b, names[k]);
                    if (matches(path, p, n)) l->block_targets[b] |= (unsigned char)(1u << k), hit |= 1u << k;
                }
            if (!hit) {
                char all[512] = "";
                for (int k = 0, u = 0; k < l->nlin; k++)
                    u += snprintf(all + u, sizeof all - (size_t)u, "%s%s", k ? ", " : "", names[k]);
                fprintf(stderr,
                        "%s: error: [task] lora_target_modules: '%.*s' names no linear layer; a block's are %s, "
                        "and block i's full path is %s.<i>.%s (a name matches a layer whose full path is that "
                        "name or ends with \".\" + it, as PEFT's target_modules does: %s every block's, "
                        "%s.0.%s block 0's only)\n",
                        prefix, (int)n, p, all, blocks, names[0], names[0], blocks, names[0]);
                return -1;
            }
            l->targets |= hit;
            if (used + n + 2 >= sizeof l->target_list) {
                fprintf(stderr, "%s: error: [task] lora_target_modules is too long\n", prefix);
                return -1;
            }
            used += (size_t)snprintf(l->target_list + used, sizeof l->target_list - used, "%s%.*s", used ? "," : "",
                                     (int)n, p);
        }
        p = e;
    }
    if (!l->targets) {
        fprintf(stderr, "%s: error: [task] lora_target_modules names no layer; for example: %s\n", prefix, def);
        return -1;
    }
    const char *peft = sr_config_path(ctx, "init_adapters"); /* a PEFT adapter folder to start from */
    return peft && *peft ? tf_lora_check_peft(l, prefix, peft, blocks) : 0;
}

double tf_lora_total_params(const tf_lora *l) {
    double n = 0;
    for (int b = 0; l && l->r && b < l->L; b++)
        for (int k = 0; k < l->nlin; k++)
            if (l->block_targets[b] & (1u << k)) n += (double)l->r * (l->in[k] + l->out[k]);
    return n;
}

int tf_lora_declare(const tf_lora *l, sr_model *m, const char *module, int block) {
    if (!l || !l->r || block < 0 || block >= l->L) return 0;
    char n[256];
    for (int k = 0; k < l->nlin; k++) {
        if (!(l->block_targets[block] & (1u << k))) continue;
        const int I = l->in[k], O = l->out[k];
        /* kaiming_uniform_(a = sqrt(5)) on [r, I]: gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / I) = 1/sqrt(I) */
        snprintf(n, sizeof n, "%s.%s.lora_A.weight", module, l->names[k]);
        if (sr_model_param(m, n, 2, (int64_t[]){l->r, I}, SR_UNIFORM(1.0f / sqrtf((float)I)), SR_PARAM_ADAPTER) != 0)
            return -1;
        snprintf(n, sizeof n, "%s.%s.lora_B.weight", module, l->names[k]);
        if (sr_model_param(m, n, 2, (int64_t[]){O, l->r}, SR_ZEROS, SR_PARAM_ADAPTER) != 0) return -1;
    }
    return 0;
}

/* v as Python's json.dumps writes a float: the shortest digits that read back as v, with ".0" when
   they have no point or exponent (0.05 stays 0.05, 0 is 0.0) */
static void json_float(char *out, size_t len, double v) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v) break;
    }
    size_t n = strlen(out);
    if (!strpbrk(out, ".eEn") && n + 3 <= len) memcpy(out + n, ".0", 3);
}

char *tf_lora_adapter_json(const tf_lora *l, const char *base) {
    char targets[600] = "", *t = targets;
    size_t left = sizeof targets;
    for (const char *p = l->target_list; *p;) { /* "a,b" -> "\"a\", \"b\"" */
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int w = snprintf(t, left, "%s\"%.*s\"", t == targets ? "" : ", ", (int)n, p);
        if (w < 0 || (size_t)w >= left) return NULL;
        t += w, left -= (size_t)w;
        p += n + (e ? 1 : 0);
    }
    char alpha[32], dropout[32], basejson[1100];
    json_float(dropout, sizeof dropout, l->dropout);
    if (l->alpha == floor(l->alpha) && l->alpha < 1e9) snprintf(alpha, sizeof alpha, "%.0f", l->alpha);
    else snprintf(alpha, sizeof alpha, "%.17g", l->alpha);
    if (!base) {
        snprintf(basejson, sizeof basejson, "null");
    } else { /* a JSON string: escape what a path may hold */
        char *o = basejson;
        *o++ = '"';
        for (const char *p = base; *p && o < basejson + sizeof basejson - 8; p++) {
            if (*p == '"' || *p == '\\') *o++ = '\\', *o++ = *p;
            else if ((unsigned char)*p < 0x20) o += sprintf(o, "\\u%04x", (unsigned char)*p);
            else *o++ = *p;
        }
        *o++ = '"', *o = 0;
    }
    const char *fmt = "{\n"
                      "  \"alpha_pattern\": {},\n"
                      "  \"auto_mapping\": null,\n"
                      "  \"base_model_name_or_path\": %s,\n"
                      "  \"bias\": \"none\",\n"
                      "  \"fan_in_fan_out\": %s,\n"
                      "  \"inference_mode\": true,\n"
                      "  \"init_lora_weights\": true,\n"
                      "  \"layers_pattern\": null,\n"
                      "  \"layers_to_transform\": null,\n"
                      "  \"lora_alpha\": %s,\n"
                      "  \"lora_dropout\": %s,\n"
                      "  \"modules_to_save\": null,\n"
                      "  \"peft_type\": \"LORA\",\n"
                      "  \"r\": %d,\n"
                      "  \"rank_pattern\": {},\n"
                      "  \"revision\": null,\n"
                      "  \"target_modules\": [%s],\n"
                      "  \"task_type\": \"CAUSAL_LM\",\n"
                      "  \"use_dora\": false,\n"
                      "  \"use_rslora\": false\n"
                      "}\n";
    size_t cap = strlen(fmt) + strlen(basejson) + strlen(targets) + 128;
    char *out = malloc(cap);
    if (out) snprintf(out, cap, fmt, basejson, l->fan_in_fan_out ? "true" : "false", alpha, dropout, l->r, targets);
    return out;
}
