/*
 * The transformer tasks' tokenizer: text -> token ids, with a byte-level BPE read from HF's GPT-2
 * files (vocab.json + merges.txt) or from an HF tokenizers `tokenizer.json` (GPT-2's, BLOOM's,
 * Llama 3's, Qwen's, SmolLM2's), or, without vocabulary files, a byte-level fallback (id = byte
 * value, <|endoftext|> = 256).
 *
 * Lifecycle: tf_tokenizer_load() or tf_tokenizer_load_json() once (reads and checks the files) ->
 * tf_tokenizer_encode() and tf_tokenizer_decode() any number of times (they fill caches, so one
 * tokenizer is not to be shared between threads) -> tf_tokenizer_free().
 *
 * Encoding follows HF's tokenizers library: added and special tokens written in the text
 * ("<|endoftext|>", "<|im_start|>", "</s>") become their ids; between them the text is normalized
 * (NFC, when the file asks for it) and cut into pieces by the pre-tokenizer's Split patterns (GPT-2's
 * pattern for ByteLevel and for vocab.json + merges.txt), run by PCRE2; each piece's bytes are then
 * merged by rank (OpenAI's byte-level BPE).  Bytes that are not valid UTF-8 are one character each,
 * in no class (neither letter, number nor space) -- HF's library never sees such a text.
 * vocab.json + merges.txt have no added tokens: "<|endoftext|>" in such a text is ordinary text.
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
   "pre_tokenizer.pretokenizers[0].type is \"Whitespace\""):
     model          type "BPE" with `vocab` (object symbol -> id) and `merges` (each "left right",
                    or ["left", "right"]; best first); dropout null; continuing_subword_prefix and
                    end_of_word_suffix null or ""; byte_fallback false or absent; ignore_merges
                    any (true: a piece that is a vocabulary symbol as a whole is that symbol, as in
                    Llama 3's); unk_token null or a vocab symbol and fuse_unk any (never used: every
                    byte has a symbol, so no piece has an unknown one)
     added_tokens   each {id, content, special, normalized, single_word/lstrip/rstrip false}: found
                    in a text before anything else (those with normalized true after the
                    normalizer), leftmost-longest, as their id; contents not in vocab join the
                    vocabulary with their ids; a content in vocab must have the same id there
     normalizer     null, or {"type": "NFC"} (Qwen's)
     pre_tokenizer  ByteLevel (add_prefix_space false; use_regex true: GPT-2's pattern), or a
                    Sequence of Split steps ({"Regex": pattern} or {"String": text}, behavior
                    Isolated or Removed, invert false) and Digits (\p{N} apart) ending with that
                    ByteLevel (use_regex true or false): GPT-2's, BLOOM's, Llama 3's, Qwen2's,
                    Qwen3's and SmolLM2's
     post_processor null, ByteLevel, TemplateProcessing or a Sequence of them: ignored (the tasks add
                    eos themselves; HF's encode with add_special_tokens=False gives the same ids)
     decoder        ByteLevel
     version, truncation, padding: ignored (transformers sets truncation and padding per call)
   The vocabulary (vocab plus added tokens) must hold ids 0..size-1, each once, and all 256 byte
   symbols; every merge's two symbols and their concatenation must be in it.  eos: a config.json in
   the same folder names it with eos_token_id (a list: its first), which must be an added token
   marked special; else the first of "</s>" (BLOOM: <unk> 0, <s> 1, </s> 2, <pad> 3),
   "<|endoftext|>" (GPT-2, Qwen, SmolLM) and "<|end_of_text|>" (Llama 3) that added_tokens has with
   "special": true -- never an ordinary model.vocab entry (Qwen's has an ordinary "</s>"); else an
   error (tokenizer_eos.c).  NULL with a message in err on failure. */
tf_tokenizer *tf_tokenizer_load_json(const char *tokenizer_json, char *err, size_t errlen);
/* Another tokenizer for another thread, made in microseconds: it reads t's tables (vocabulary,
   merges, patterns' compiled code; t must outlive it and is freed after it) and, with t and every
   other clone of t, shares one cache of encoded pieces that all of them fill and read at once
   without locks (tokenizer_cache.c).  Each keeps its own scratch and match state, so t and its
   clones encode in parallel, one thread each.  Make the clones before any thread encodes with t.
   NULL with a message in err when out of memory. */
tf_tokenizer *tf_tokenizer_clone(tf_tokenizer *t, char *err, size_t errlen);
int tf_tokenizer_vocab_size(const tf_tokenizer *t);
int tf_tokenizer_eos(const tf_tokenizer *t);
/* Where eos came from, for the tools' output: "\"<|endoftext|>\", a special token of the
   tokenizer.json", "\"<|im_end|>\", eos_token_id of the config.json beside the tokenizer.json",
   "\"<|endoftext|>\" of vocab.json", "<|endoftext|> of the byte-level tokens". */
const char *tf_tokenizer_eos_from(const tf_tokenizer *t);
/* encode's and pieces' failures (both negative; 0 is success) */
#define TF_TOKENIZER_NOMEM (-1) /* out of memory */
/* A Split pattern ran past PCRE2's match limit on the text (it backtracks without end, like
   `(a+)+$` on a run of 'a's that does not end the text): the tokenizer.json is at fault, not the
   memory.  tf_tokenizer_error names the pattern, where it is written, and the limit. */
#define TF_TOKENIZER_PATTERN_LIMIT (-2)
/* Appends the ids of text[0..len) to *ids (realloc'ed; *n and *cap updated): 0, TF_TOKENIZER_NOMEM
   or TF_TOKENIZER_PATTERN_LIMIT (then *ids, *n, *cap are still consistent, the ids of the text
   partly appended). */
int tf_tokenizer_encode(tf_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap);
/* Why the last encode or pieces of t failed, in one line ("out of memory" or the pattern's message). */
const char *tf_tokenizer_error(const tf_tokenizer *t);
/* The bytes token `id` stands for (generation turns ids back into text), as HF's ByteLevel decoder
   gives them: BPE, the symbol's bytes when it is made of byte symbols only (every vocab.json entry
   of GPT-2's and BLOOM's, "<|endoftext|>" and "</s>" too), else its own UTF-8 (an added token like
   "<|a b|>": the space is not a byte symbol); byte-level, the byte, and "<|endoftext|>" for 256.
   Writes at most cap bytes to out and returns the length (cap 32 always suffices for byte-level; a
   longer BPE symbol returns its full length, and out holds the first cap bytes), or -1 for an id
   outside the vocabulary or when out of memory (the first BPE call builds an id -> symbol index). */
int tf_tokenizer_decode(tf_tokenizer *t, int32_t id, char *out, size_t cap);
void tf_tokenizer_free(tf_tokenizer *t);
/* Called by tf_tokenizer_pieces for each piece, in order: id >= 0 for an added token, else a piece
   BPE merges (the byte-level fallback: each byte).  Nonzero stops the walk and is returned. */
typedef int (*tf_tokenizer_piece_fn)(void *ctx, const char *piece, size_t n, int32_t id);
/* The pieces of text[0..len) as encode cuts them: 0, the callback's nonzero value, or encode's
   failures. */
int tf_tokenizer_pieces(tf_tokenizer *t, const char *text, size_t len, tf_tokenizer_piece_fn fn, void *ctx);
/* A tokenizer without a vocabulary, only for tf_tokenizer_pieces with GPT-2's pattern (the tests
   compare its pieces with a regex engine's); NULL with a message. */
tf_tokenizer *tf_tokenizer_gpt2_pattern(char *err, size_t errlen);

#endif
