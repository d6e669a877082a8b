// The ids HF's tokenizers library (Rust, through its Node binding, npm package tokenizers) gives
// each FILE with TOKENIZER_JSON: encode(text, add_special_tokens = false), each file one text, all
// ids one per line, files in the order given.  Run by expected_ids.sh.
//   node expected_ids.js TOKENIZER_JSON FILE...
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

async function main() {
    const [json, ...files] = process.argv.slice(2);
    const tok = Tokenizer.fromFile(json);
    const out = [];
    for (const f of files) {
        const enc = await tok.encode(fs.readFileSync(f, "utf8"), null, { addSpecialTokens: false });
        for (const id of enc.getIds()) out.push(id);
    }
    process.stdout.write(out.join("\n") + (out.length ? "\n" : ""));
}
main().catch((e) => {
    console.error(e);
    process.exit(1);
});
