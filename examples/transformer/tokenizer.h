/*
 * gpt2 tokenizer: text -> token ids, with GPT-2's byte-level BPE (HF vocab.json + merges.txt) or,
 * without vocabulary files, a byte-level fallback (id = byte value, <|endoftext|> = 256).
 *
 * Lifecycle: tf_tokenizer_load() once (reads and checks both files) -> tf_tokenizer_encode()
 * and tf_tokenizer_decode() any number of times (they fill caches, so one tokenizer is not to be
 * shared between threads) -> tf_tokenizer_free().
 *
 * Encoding is OpenAI's GPT-2 encoder: the text is split into pre-tokens by GPT-2's pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * and each pre-token's bytes are merged by rank.  \p{L} and \p{N} are the Unicode general
 * categories L* and N* (tables in unicode_classes.h), \s the Unicode White_Space property; bytes that
 * are not valid UTF-8 count as one non-letter, non-number, non-space character each.  The text
 * "<|endoftext|>" inside a text is ordinary text here (HF's tokenizer would make it the special
 * token); the task never puts it in a text.
 */
#ifndef TF_TOKENIZER_H
#define TF_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tf_tokenizer tf_tokenizer;

/* vocab_json and merges_txt both NULL: byte-level fallback (vocab size 257, eos 256).  Both given:
   GPT-2 BPE; merges.txt may start with a "#version" line; vocab size = entries in vocab.json, whose
   ids must be 0..size-1, each once; eos = the id of "<|endoftext|>".  NULL with a message in err on
   failure (the file, the line for syntax errors, and what was expected). */
tf_tokenizer *tf_tokenizer_load(const char *vocab_json, const char *merges_txt, char *err, size_t errlen);
int tf_tokenizer_vocab_size(const tf_tokenizer *t);
int tf_tokenizer_eos(const tf_tokenizer *t);
/* Appends the ids of text[0..len) to *ids (realloc'ed; *n and *cap updated): 0, or -1 when out of
   memory (then *ids, *n, *cap are still consistent). */
int tf_tokenizer_encode(tf_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap);
/* The bytes token `id` stands for (generation turns ids back into text): BPE, vocab.json's symbol
   with each byte symbol turned back into its byte (other characters, as in added tokens, are
   copied as UTF-8); byte-level, the byte, and "<|endoftext|>" for 256.  Writes at most cap bytes to
   out and returns the length (cap 32 always suffices for byte-level; a longer BPE symbol returns its
   full length, and out holds the first cap bytes), or -1 for an id outside the vocabulary or when
   out of memory (the first BPE call builds an id -> symbol index). */
int tf_tokenizer_decode(tf_tokenizer *t, int32_t id, char *out, size_t cap);
void tf_tokenizer_free(tf_tokenizer *t);
/* The end of the pre-token that starts at text[i] (i < len): GPT-2's pattern above, by itself, so
   the tests can compare pre-tokens with a regex engine's. */
size_t tf_tokenizer_pretoken_end(const char *text, size_t len, size_t i);

#endif
