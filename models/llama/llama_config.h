/*
 * llama config: a Llama-family model's figures -- from a named size, or from an HF config.json
 * (model_type llama, qwen2 or mistral) -- and the rotary embedding's inverse frequencies they imply.
 *
 * Lifecycle: the task's configure() fills one llama_config (llama_size, then llama_config_read for
 * `[task] config`, then the [task] keys that override single figures); the block code reads it for
 * the whole run.
 */
#ifndef LLAMA_CONFIG_H
#define LLAMA_CONFIG_H

typedef struct llama_config {
    int n_layer, n_head, n_kv_head; /* num_hidden_layers, num_attention_heads, num_key_value_heads */
    int hidden, intermediate;       /* hidden_size, intermediate_size */
    int vocab;                      /* vocab_size; 0: the tokenizer's */
    int max_positions;              /* max_position_embeddings: max_length's bound */
    double rope_theta, rms_eps, init_range;
    int tie;                        /* tie_word_embeddings */
    int qkv_bias, o_bias, mlp_bias; /* Llama's attention_bias is q/k/v and o; Qwen2's q/k/v only */
    /* rope_scaling {"rope_type": "llama3", ...}; llama3 = 0: none */
    int llama3;
    double rope_factor, low_freq_factor, high_freq_factor;
    int original_max_positions;
    /* a config.json's fields it lacked, with the HF class defaults they took ("" for none) */
    char defaulted[320];
} llama_config;

/* a named size: HF's figures for the model's config.json, or NULL; *names: the list for messages */
const llama_config *llama_size(const char *name, const char **names);

/* Reads an HF config.json into c: the fields it lacks take the defaults of HF's config class for its
   model_type (LlamaConfig, Qwen2Config, MistralConfig), never the figures c held.  0, or -1 after
   an error naming the file and the field (a field this task does not implement, a value out of
   range or not finite, malformed JSON, a missing model_type) */
int llama_config_read(const char *path, llama_config *c);

/* HF's inverse frequencies of head size hd (hd/2 floats): theta^(-2i/hd), computed as HF computes
   them in float32, then rope_scaling's llama3 rule when set */
void llama_inv_freq(const llama_config *c, int hd, float *inv_freq);

#endif
