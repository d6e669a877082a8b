/*
 * transformer lm_task: the files FULL checkpoints hold beside the weights (lm_state.h,
 * tf__lm_declare_files), so a checkpoint folder loads as HF's save_pretrained folders do
 * (AutoTokenizer.from_pretrained, AutoModelForCausalLM.from_pretrained) and shardrun_generate, a
 * fine-tune (init_weights) and a resume find the tokenizer that trained the model without being told.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_state.h"

/* s as the inside of a JSON string into out */
static void json_str(const char *s, size_t n, char *out, size_t len) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 7 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') out[k++] = '\\', out[k++] = (char)c;
        else if (c < 0x20) k += (size_t)snprintf(out + k, len - k, "\\u%04x", c);
        else out[k++] = (char)c;
    }
    out[k] = 0;
}

/* HF's tokenizer_config.json for the tokenizer files: the class that reads them
   (PreTrainedTokenizerFast for any tokenizer.json; GPT2Tokenizer for vocab.json and merges.txt, whose
   model_type alone would not say so for BLOOM or Llama) and the end of text */
static int tokenizer_config(tf_lm *g, sr_model *model, const char *eos) {
    char text[2048];
    int gpt2 = g->tok_src.kind == TF_SAVED_GPT2;
    int n = snprintf(text, sizeof text,
                     "{\n  \"tokenizer_class\": \"%s\",\n  \"bos_token\": \"%s\",\n  \"eos_token\": \"%s\",\n%s"
                     "  \"model_max_length\": %d\n}\n",
                     gpt2 ? "GPT2Tokenizer" : "PreTrainedTokenizerFast", eos, eos,
                     gpt2 ? "  \"add_prefix_space\": false,\n" : "", g->d.P);
    if (n < 0 || (size_t)n >= sizeof text) {
        tf__lm_error(g, "the end-of-text token is too long for tokenizer_config.json\n");
        return -1;
    }
    return sr_model_file_data(model, "tokenizer_config.json", text, (size_t)n);
}

int tf__lm_declare_files(tf_lm *g, sr_model *model) {
    const tf_saved_tok *t = &g->tok_src;
    if ((t->kind == TF_SAVED_JSON && sr_model_file(model, "tokenizer.json", t->json) != 0) ||
        (t->kind == TF_SAVED_GPT2 &&
         (sr_model_file(model, "vocab.json", t->vocab) != 0 || sr_model_file(model, "merges.txt", t->merges) != 0)))
        return -1;
    int eos = tf_tokenizer_eos(g->tok);
    char tok[512] = "", eos_json[1024];
    int n = tf_tokenizer_decode(g->tok, eos, tok, sizeof tok);
    json_str(tok, n > 0 && n < (int)sizeof tok ? (size_t)n : 0, eos_json, sizeof eos_json);
    if (t->kind != TF_SAVED_BYTES && tokenizer_config(g, model, eos_json) != 0) return -1;
    if (!g->arch->hf_config) return 0;
    size_t cap = 8192;
    char *text = malloc(cap);
    if (!text) return -1;
    int k = snprintf(text, cap, "{\n  ");
    int m = g->arch->hf_config(&g->d, text + k, cap - (size_t)k);
    if (m < 0 || (size_t)(k + m) >= cap) {
        free(text);
        tf__lm_error(g, "the model's config.json does not fit in %zu bytes\n", cap);
        return -1;
    }
    k += m;
    k += snprintf(text + k, cap - (size_t)k,
                  ",\n  \"vocab_size\": %d,\n  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,\n"
                  "  \"torch_dtype\": \"float32\",\n  \"" TF_SAVED_KEY "\": \"%s\"\n}\n",
                  g->d.V, eos, eos,
                  t->kind == TF_SAVED_JSON   ? TF_SAVED_JSON_NAME
                  : t->kind == TF_SAVED_GPT2 ? TF_SAVED_GPT2_NAME
                                             : TF_SAVED_BYTES_NAME);
    int rc = (size_t)k < cap ? sr_model_file_data(model, "config.json", text, (size_t)k) : -1;
    free(text);
    return rc;
}
