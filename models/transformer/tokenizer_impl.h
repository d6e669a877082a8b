/*
 * The tokenizer's insides, shared by its files (nothing here is for the tasks; they use tokenizer.h):
 *   tokenizer.c           the tables, the tokenizer object, the merge loop, encode/decode/free
 *   tokenizer_pretok.c    the pre-tokenizer: bytes that are not UTF-8, NFC, the Split steps
 *   tokenizer_regex.c     the Split patterns (and GPT-2's) through PCRE2
 *   tokenizer_added.c     added and special tokens found inside a text
 *   tokenizer_eos.c       which token ends a text: config.json's eos_token_id or a special token
 *   tokenizer_cache.c     the cache of encoded pieces a tokenizer shares with its clones
 *   tokenizer_jsonread.c  the JSON cursor both loaders walk their files with (over core/io/json.c)
 *   tokenizer_gpt2files.c tf_tokenizer_load: byte-level, or vocab.json + merges.txt
 *   tokenizer_json.c      tf_tokenizer_load_json: HF tokenizers' tokenizer.json
 *
 * Lifecycle: a loader callocs a tf_tokenizer, fills vocab (tf__vocab_object or by hand), checks it
 * (tf__vocab_check_ids, tf__vocab_bytes), adds merges (tf__merge_add), sets eos and pretok; encode
 * and decode then only read the tables (and fill the caches); tf_tokenizer_free frees everything.
 */
#ifndef TF_TOKENIZER_IMPL_H
#define TF_TOKENIZER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "base/fail.h"   /* core/base/fail.h: sr__fail, header-only */
#include "base/hash64.h" /* core/base/hash64.h: FNV-1a, header-only */
#include "io/json.h"     /* core/io/json.h: linked from shardrun_common (CMakeLists.txt) */
#include "tokenizer.h"

/* The largest tokenizer file read (tokenizer.json, vocab.json, merges.txt): the largest tokenizers
   published are tens of MB (GPT-2's vocab.json is 1 MiB).  A bigger file is refused from its size,
   before a byte is read (a huge or sparse file would take seconds to read and then be refused). */
#define TF__TOKENIZER_FILE_MAX ((size_t)256 << 20)
#define TF__TOKENIZER_FILE_CAP_WHY "the 256 MiB a tokenizer file may have (the largest tokenizers are tens of MB)"

/* ---- tables (tokenizer.c) ------------------------------------------------------------------- */

/* byte string -> (a, b); keys live in one growing buffer */
typedef struct {
    uint32_t off, len; /* key = keys[off, off+len); off == TF__SLOT_FREE: unused slot */
    int32_t a, b;
} tf__str_slot;
typedef struct {
    tf__str_slot *slots;
    size_t cap, n; /* cap: 0 or a power of two, at least twice n */
    char *keys;
    size_t klen, kcap;
} tf__strmap;
#define TF__SLOT_FREE UINT32_MAX

tf__str_slot *tf__strmap_find(const tf__strmap *m, const char *k, size_t n);
/* Adds key k, which must be absent: its slot, or NULL when out of memory. */
tf__str_slot *tf__strmap_add(tf__strmap *m, const char *k, size_t n);

/* (left id, right id) of a merge -> its rank and the id of the merged symbol */
typedef struct {
    uint64_t key; /* left << 32 | right; all bits set: unused slot */
    int32_t rank, id;
} tf__pair_slot;
typedef struct {
    tf__pair_slot *slots;
    size_t cap, n;
} tf__pairmap;

/* FNV-1a (the project's one copy, base/hash64.h) with its high bits folded into the low ones the
   tokenizer's tables index by: the string maps and the shared cache */
static inline uint64_t tf__hash_bytes(const char *s, size_t n) {
    uint64_t h = sr__fnv1a64(SR__FNV1A64_BASIS, s, n);
    return h ^ h >> 29;
}

/* Encoded pieces (piece bytes -> ids) shared by a tokenizer and its clones (tokenizer_cache.c): an
   insert-only open-addressing table over an append-only arena, read and filled by every thread at
   once (C11 atomics: a slot is published with release, read with acquire; one lock, taken with
   trylock, for growing the table, which no reader waits for).  The table doubles when half full,
   up to room for max_entries; it then stops taking pieces.  Entries never move, so a reader needs
   no lock.  Two threads that add the same piece at once may both store it, and a piece added while
   the table grows may be dropped (it is then computed again when it comes back); the ids are the
   same either way. */
typedef struct tf__shared_cache tf__shared_cache;
/* A table of first_slots (a power of two; the smaller of it and the largest is taken), room for
   max_entries pieces of at most max_key bytes: NULL when out of memory. */
tf__shared_cache *tf__shared_cache_new(size_t first_slots, size_t max_entries, size_t max_key);
/* The ids of piece k[0 .. n) (*count of them), or NULL when it is not in the cache. */
const int32_t *tf__shared_cache_find(const tf__shared_cache *c, const char *k, size_t n, uint32_t *count);
/* Adds the piece and its ids (nothing when the cache is full, grows meanwhile, or n > max_key). */
void tf__shared_cache_add(tf__shared_cache *c, const char *k, size_t n, const int32_t *ids, uint32_t count);
void tf__shared_cache_free(tf__shared_cache *c);

/* How encode cuts a text into the pieces BPE merges separately. */
typedef enum {
    TF_PRETOK_BYTES, /* no BPE: one id per byte (the byte-level fallback) */
    TF_PRETOK_SPLIT  /* the Split steps (splits[0..nsplits)), each applied to the pieces of the one before */
} tf__pretok;

/* PCRE2 behind a small interface (tokenizer_regex.c) */
typedef struct tf__regex tf__regex;
/* Compiles an HF tokenizers (Oniguruma) pattern of n bytes: NULL with a message when PCRE2 refuses
   it or it uses what the two engines read differently and is not rewritten (see the file). */
tf__regex *tf__regex_compile(const char *pattern, size_t n, char *err, size_t errlen);
/* The first match in text[start..len) (valid UTF-8; start at a character): 1 with [*ms, *me), 0 for
   none, TF_TOKENIZER_NOMEM when PCRE2 runs out of memory, TF_TOKENIZER_PATTERN_LIMIT when the match
   ran past PCRE2's match, depth or heap limit (a pattern that backtracks without end, `(a+)+$`). */
int tf__regex_find(tf__regex *r, const char *text, size_t len, size_t start, size_t *ms, size_t *me);
/* Which of PCRE2's limits the last TF_TOKENIZER_PATTERN_LIMIT of r ran past, with its value, for a
   message ("PCRE2's match limit (10000000 backtracking steps) ran out"). */
const char *tf__regex_why(const tf__regex *r);
/* Another match state over r's compiled pattern (shared, read only: r must outlive it), for another
   thread: NULL when out of memory. */
tf__regex *tf__regex_clone(const tf__regex *r);
/* Drops the matches found ahead (tf__regex_find returns them while the caller asks from where the
   last one ended): a walk over a new text starts with it. */
void tf__regex_forget(tf__regex *r);
void tf__regex_free(tf__regex *r);

/* What a Split step keeps of its pattern's matches (HF's SplitDelimiterBehavior); the text between
   matches is always a piece of its own. */
typedef enum { TF_SPLIT_ISOLATED, TF_SPLIT_REMOVED } tf__split_behavior;
typedef struct {
    tf__regex *re;
    tf__split_behavior behavior;
    char *where; /* the pattern and where it is written ("FILE:LINE: JSON path \"pattern\""), for messages;
                    a clone's is its base's */
} tf__split;
#define TF__SPLITS_MAX 8

/* An added token (tokenizer.json's added_tokens): found in a text before the pre-tokenizer runs */
typedef struct {
    uint32_t off, len; /* its content: added_text[off, off+len) */
    int32_t id;
    int normalized;      /* matched in the normalized text (after NFC) rather than the text as given */
    int special;         /* "special": true (tokenizer_eos.c takes eos only from these) */
    unsigned char first; /* its first byte */
} tf__added;

struct tf_tokenizer {
    /* a clone (tf_tokenizer_clone): base's; the tables below are base's, read only, not freed here */
    const tf_tokenizer *base;
    tf__shared_cache *shared; /* the cache of base and its clones (base owns it), or NULL: `cache` */
    int vocab_size, eos;
    char eos_from[160]; /* where eos came from, for tf_tokenizer_eos_from */
    char error[640];    /* why the last encode failed (tf_tokenizer_error) */
    tf__pretok pretok;
    int32_t byte_id[256];
    tf__strmap vocab; /* symbol as the file spells it (UTF-8 of byte symbols) -> a = id, b = byte offset of
                         its entry in the file (for messages) */
    tf__pairmap merges;
    tf__strmap cache; /* piece bytes -> a = offset in cache_ids, b = count */
    int32_t *cache_ids;
    size_t cache_n, cache_cap;
    /* scratch of the merge loop, for pieces of up to scratch_cap bytes */
    int32_t *sym, *next, *prev;
    uint64_t *heap, *pending;
    size_t scratch_cap;
    const tf__str_slot **by_id; /* decode: id -> its vocab entry, built on first use */
    /* tokenizer.json's options (tokenizer_json.c); vocab.json + merges.txt: GPT-2's pattern only */
    tf__split splits[TF__SPLITS_MAX];
    int nsplits;
    int nfc;           /* normalizer NFC */
    int ignore_merges; /* a piece that is a vocabulary symbol as a whole is that symbol, unmerged */
    tf__added *added;  /* sorted by first byte, then longest first (tf__added_index) */
    size_t nadded;
    char *added_text;
    size_t added_len;
    uint32_t added_at[257]; /* added[added_at[b] .. added_at[b+1]): the tokens that start with byte b */
    int added_normalized;   /* some token has `normalized` (and there is a normalizer) */
    /* scratch of encode: the text with its bad bytes replaced, NFC, a piece as byte symbols */
    char *clean, *norm, *symbols;
    size_t clean_cap, norm_cap, symbols_cap;
};

/* The UTF-8 of byte b's symbol in OpenAI's bytes_to_unicode (at most 2 bytes): its length. */
size_t tf__byte_symbol(int b, char *out);

/* The 1-based line of text[off]. */
int tf__line_at(const char *text, size_t off);

/* After t->vocab is filled (each entry's b = its byte offset in `text`, the file at `path`): ids
   must be 0..n-1, each once; sets vocab_size.  `have` names what was counted in the message ("the
   file has").  Then every byte's symbol must be in it; sets byte_id.  0, or -1 with a message. */
int tf__vocab_check_ids(tf_tokenizer *t, const char *path, const char *text, const char *have, char *err,
                        size_t errlen);
int tf__vocab_bytes(tf_tokenizer *t, const char *path, char *err, size_t errlen);

/* Adds the merge (left, right) with the given rank; both and their concatenation must be vocabulary
   symbols.  buf and cap: a scratch buffer the caller frees.  0; 1, 2 or 3 when the left symbol, the
   right one or the merged one is not in the vocabulary; -1 when out of memory. */
int tf__merge_add(tf_tokenizer *t, const char *left, size_t ll, const char *right, size_t rl, int32_t rank, char **buf,
                  size_t *cap);

/* ---- pre-tokenizer and added tokens (tokenizer_pretok.c, tokenizer_added.c) ------------------- */

/* GPT-2's pattern (ByteLevel's use_regex) */
extern const char tf__gpt2_pattern[];
/* Adds a Split step of `pattern` to t: 0, or -1 with a message naming `what` (a JSON path). */
int tf__split_add(tf_tokenizer *t, const char *pattern, size_t n, tf__split_behavior behavior, const char *what,
                  char *err, size_t errlen);
/* Called for each piece of a text, in order: id >= 0 for an added token (the piece is its content),
   else a piece for BPE.  Nonzero stops the walk and is returned. */
typedef int (*tf__piece_fn)(void *ctx, tf_tokenizer *t, const char *piece, size_t n, int32_t id);
/* Walks text[0..len) as encode does: added tokens, NFC, the Split steps.  0, the callback's nonzero
   value, TF_TOKENIZER_NOMEM, or TF_TOKENIZER_PATTERN_LIMIT (t->error says which pattern). */
int tf__pieces(tf_tokenizer *t, const char *text, size_t len, tf__piece_fn fn, void *ctx);

/* Adds an added token (content of n bytes): 0, or -1 when out of memory. */
int tf__added_add(tf_tokenizer *t, const char *content, size_t n, int32_t id, int normalized, int special);
/* After the last tf__added_add: sorts them and builds added_at.  0, or -1 when out of memory. */
int tf__added_index(tf_tokenizer *t);
/* The leftmost-longest added token in s[from..n) with normalized == `normalized` (HF's
   AddedVocabulary): its start in *at and the token, or NULL when there is none. */
const tf__added *tf__added_find(const tf_tokenizer *t, const char *s, size_t n, size_t from, int normalized,
                                size_t *at);

/* Sets t->eos (and eos_from) for the tokenizer.json at path, after its added tokens are in
   (tokenizer_eos.c has the rule): 0, or -1 with a message. */
int tf__eos_choose(tf_tokenizer *t, const char *path, char *err, size_t errlen);

/* ---- the JSON cursor (tokenizer_jsonread.c) --------------------------------------------------- */

/* A cursor over one JSON file held in memory, walked with core/io/json.c's reader (libshardrun's
   one JSON reader, linked from shardrun_common), which the loaders can move back to a
   value they noted (tf__json_seek: tokenizer.json's members come in any order).  Strings are decoded
   into str (UTF-8, not NUL-terminated, overwritten by the next string).  Lines are counted from byte
   offsets, only where a message or a mark needs one.  Errors: "<path>:<line>: expected <what>, found
   <what is at the cursor> (byte offset <i>)" in err.
   Lifecycle: tf__json_init (the text stays the caller's) -> walk, seek -> tf__json_free. */
typedef struct {
    const char *s, *path; /* the whole file */
    size_t n;
    char *err;
    size_t errlen;
    const char *str; /* the last string read */
    size_t slen;
    size_t key_at; /* the byte offset of the last object key read by tf__json_more (its '"') */
    /* the cursor's own */
    sr__json r; /* core/io/json.c, reading s[base ..] */
    size_t base;
    char *arena;    /* n + 1 bytes for the reader's decoded strings, reused after every seek */
    size_t line_at; /* the line of byte offset line_at is line (lines are counted from the last one asked) */
    int line;
} tf__json;

/* Over text[0 .. n), starting at byte `start` (3 after a UTF-8 byte order mark): 0, or -1 when out
   of memory (with a message). */
int tf__json_init(tf__json *j, const char *text, size_t n, size_t start, const char *path, char *err, size_t errlen);
void tf__json_free(tf__json *j);
/* The byte offset of the cursor (after tf__json_space: of the next value), and the line of offset
   `at`. */
size_t tf__json_offset(const tf__json *j);
int tf__json_line(tf__json *j, size_t at);
/* Moves the cursor to byte `at`, where a value starts that was noted before; only that value is
   read from there (the containers around it are not reopened). */
void tf__json_seek(tf__json *j, size_t at);

int tf__json_fail(tf__json *j, const char *expected);
void tf__json_space(tf__json *j);
/* The next byte after whitespace (the cursor stays on it), or -1 at the end. */
int tf__json_peek(tf__json *j);
/* A string at the cursor (which must be at '"', after whitespace) into j->str. */
int tf__json_string(tf__json *j);
/* A non-negative integer id below 2^31 at the cursor. */
int tf__json_id(tf__json *j, int32_t *out);
/* true, false (*out 1/0) or null (*out -1); -1 with "expected <what>" for anything else. */
int tf__json_literal(tf__json *j, int *out, const char *what);
/* Any value, checked and discarded (at most 64 containers deep). */
int tf__json_skip(tf__json *j);
/* Containers: tf__json_open reads `open` ('{' or '['), else fails with "expected <what>".
   tf__json_more then returns 1 when an item follows (for objects: its key has been read into
   j->str, and the ':'), 0 when the container closed, -1 on an error; *count counts the items. */
int tf__json_open(tf__json *j, char open, const char *what);
int tf__json_more(tf__json *j, char close, int *count);
/* Whitespace, then the end of the text. */
int tf__json_end(tf__json *j);
/* j->str is `want` */
int tf__json_str_is(const tf__json *j, const char *want);

/* The object of "symbol": id at the cursor into t->vocab (entry b = the byte offset of its key);
   `what` names it in messages ("vocab.json", "model.vocab").  A key given twice is refused. */
int tf__vocab_object(tf_tokenizer *t, tf__json *j, const char *what);

#endif
