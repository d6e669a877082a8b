/*
 * The transformer tasks' tokenizer: text -> token ids, with a byte-level BPE read from HF's GPT-2
 * files (vocab.json + merges.txt) or from an HF tokenizers `tokenizer.json` (GPT-2's, BLOOM's), or,
 * without vocabulary files, a byte-level fallback (id = byte value, <|endoftext|> = 256).
 *
 * Lifecycle: tf_tokenizer_load() or tf_tokenizer_load_json() once (reads and checks the files) ->
 * tf_tokenizer_encode() and tf_tokenizer_decode() any number of times (they fill caches, so one
 * tokenizer is not to be shared between threads) -> tf_tokenizer_free().
 *
 * Encoding cuts the text into pieces with a pre-tokenizer, then merges each piece's bytes by rank
 * (OpenAI's byte-level BPE).  Two pre-tokenizers, both written by hand (no regex engine):
 *  - GPT-2's pattern
 *      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *    \p{L} and \p{N} are the Unicode general categories L* and N* (tables in unicode_classes.h), \s
 *    the Unicode White_Space property.
 *  - BLOOM's Split of ` ?[^(\s|[.,!?…。，、।۔،])]+` with behavior Isolated: a piece is an optional
 *    space and a run of characters that are none of ( ) | . , ! ? … 。 ， 、 । ۔ ، and no White_Space
 *    (Oniguruma reads the inner [...] as a class nested in the negated one; its Unicode \s is the same
 *    code points as White_Space), or a stretch of text between two such matches.
 * Bytes that are not valid UTF-8 count as one character each, in no class (neither letter, number
 * nor space, nor BLOOM punctuation).  Added and special tokens ("<|endoftext|>", "</s>") inside a
 * text are ordinary text here (HF's tokenizer would give the token's id); the tasks never put them
 * in a text, they append eos themselves.
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
/* A tokenizer.json as HF's tokenizers library saves it.  Accepted, and anything else refused with
   "not supported yet", the file, its line and the JSON path of what was found (e.g.
   "pre_tokenizer.pretokenizers[0].type is \"Digits\""):
     model          type "BPE" with `vocab` (object symbol -> id) and `merges` (each "left right",
                    or ["left", "right"]; best first); dropout, continuing_subword_prefix and
                    end_of_word_suffix null; byte_fallback and ignore_merges false or absent;
                    unk_token null or a vocab symbol and fuse_unk any (never used: every byte has
                    a symbol, so no piece has an unknown one)
     added_tokens   each {id, content, ...}: ids of contents not in vocab join the vocabulary
                    (decoded as their text); a content in vocab must have the same id there
     normalizer     null
     pre_tokenizer  {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true (or absent)}:
                    GPT-2's pattern; or exactly BLOOM's
                    {"type": "Sequence", "pretokenizers": [
                       {"type": "Split", "pattern": {"Regex": " ?[^(\\s|[.,!?…。，、।۔،])]+"},
                        "behavior": "Isolated", "invert": false},
                       {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}
                    (trim_offsets anywhere: offsets only, ignored)
     post_processor null or ByteLevel (offsets only)
     decoder        ByteLevel
     version, truncation, padding: ignored (transformers sets truncation and padding per call)
   The vocabulary (vocab plus added tokens) must hold ids 0..size-1, each once, and all 256 byte
   symbols; every merge's two symbols and their concatenation must be in it.  eos = the id of
   "</s>" when the vocabulary has it (BLOOM: <unk> 0, <s> 1, </s> 2, <pad> 3), else of
   "<|endoftext|>" (GPT-2), else an error.  NULL with a message in err on failure. */
tf_tokenizer *tf_tokenizer_load_json(const char *tokenizer_json, char *err, size_t errlen);
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
/* The end of the piece that starts at text[i] (i < len) under t's pre-tokenizer (byte-level: i + 1). */
size_t tf_tokenizer_piece_end(const tf_tokenizer *t, const char *text, size_t len, size_t i);

#endif
