"""The benchmarks' text corpus: MB megabytes (10^6 bytes) of UTF-8 text from this Debian machine's own
files -- the licences in /usr/share/common-licenses, then /usr/share/doc's copyright files,
changelogs, NEWS, README and .txt files, sorted by path -- cut at blank lines into documents of
about 4 KB, written as JSON Lines {"text": ...}.  The same machine gives the same corpus.

Usage: python3 debian_corpus.py OUT.jsonl MB   (prints: MB of text, documents)"""
import gzip
import json
import os
import re
import sys

KEEP = re.compile(r"(^/usr/share/common-licenses/|/copyright$|/changelog(\.Debian)?\.gz$|/NEWS(\.Debian)?(\.gz)?$"
                  r"|/README(\.Debian)?(\.gz)?$|\.txt$)")


def write_corpus(path, mb):
    """Writes the corpus to path; returns (MB of text, documents)."""
    limit, n, ndocs, docs, files = int(mb) * 10**6, 0, 0, [], []
    for root in ("/usr/share/common-licenses", "/usr/share/doc"):
        for d, _, fs in os.walk(root):
            files += [os.path.join(d, f) for f in fs]
    with open(path, "w") as out:
        for f in sorted(files):
            if n >= limit:
                break
            if os.path.islink(f) or not KEEP.search(f):
                continue
            try:
                b = open(f, "rb").read()
                text = (gzip.decompress(b) if f.endswith(".gz") else b).decode("utf-8")
            except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
                continue
            doc = ""
            for para in re.split(r"(?<=\n)(?=\n)", text):  # blank lines stay in the text
                doc += para
                if len(doc) >= 4000:
                    docs.append(doc)
                    doc = ""
            if doc.strip():
                docs.append(doc)
            while docs and n < limit:
                d = docs.pop(0)
                out.write(json.dumps({"text": d}) + "\n")
                n += len(d.encode())
                ndocs += 1
    return n / 1e6, ndocs


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mb, docs = write_corpus(sys.argv[1], sys.argv[2])
    print(f"{mb:.1f} {docs}")
