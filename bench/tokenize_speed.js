// The reference tokenizers of bench/tokenize_speed.sh, all with GPT-2's vocabulary, on the same
// JSON Lines corpus: each document's ids, <|endoftext|> (50256) first, as the prepare command writes
// them.  Usage: node tokenize_speed.js LIB CORPUS.jsonl VOCAB.json MERGES.txt [IDS_OUT]
//   LIB: hf-native (HF tokenizers' Rust library through its N-API binding, batch encode on a rayon
//        pool: RAYON_NUM_THREADS sets its threads), tiktoken-wasm (OpenAI's tiktoken, Rust compiled to
//        WebAssembly, one thread), js-tiktoken (tiktoken's pure JavaScript port, one thread)
// Prints one line: "LIB docs D bytes B tokens T encode_s S" (only the encoding is timed: reading and
// JSON parsing the corpus are not).  IDS_OUT: the ids as little-endian uint16 (to compare).
"use strict";
const fs = require("fs");
const [lib, corpus, vocab, merges, idsOut] = process.argv.slice(2);
const docs = fs.readFileSync(corpus, "utf8").split("\n").filter((l) => l.length).map((l) => JSON.parse(l).text);
const bytes = docs.reduce((s, d) => s + Buffer.byteLength(d, "utf8"), 0);
const EOT = 50256;

async function encoder() {
  if (lib === "hf-native") {
    const hf = require("tokenizers");
    const tok = new hf.Tokenizer(await hf.BPE.fromFile(vocab, merges));
    tok.setPreTokenizer(hf.byteLevelPreTokenizer(false, true));
    return async (ds) => (await tok.encodeBatch(ds, { addSpecialTokens: false })).map((e) => e.getIds());
  }
  if (lib === "tiktoken-wasm") {
    const enc = require("tiktoken").get_encoding("gpt2");
    return async (ds) => ds.map((d) => enc.encode_ordinary(d));
  }
  if (lib === "js-tiktoken") {
    const enc = require("js-tiktoken").getEncoding("gpt2");
    return async (ds) => ds.map((d) => enc.encode(d, [], []));
  }
  throw new Error("unknown library " + lib);
}

(async () => {
  const encode = await encoder();
  const t0 = process.hrtime.bigint();
  const out = [];
  for (let i = 0; i < docs.length; i += 1024) out.push(...(await encode(docs.slice(i, i + 1024))));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  let tokens = 0;
  for (const ids of out) tokens += ids.length + 1;
  if (idsOut) {
    const buf = new Uint16Array(tokens);
    let k = 0;
    for (const ids of out) {
      buf[k++] = EOT;
      for (const id of ids) buf[k++] = id;
    }
    fs.writeFileSync(idsOut, Buffer.from(buf.buffer));
  }
  console.log(`${lib} docs ${docs.length} bytes ${bytes} tokens ${tokens} encode_s ${s.toFixed(3)}`);
})();
