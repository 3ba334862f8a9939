#!/usr/bin/env python3
"""Builds the seed corpus of every fuzz target from ../shared (golden fixtures and data) into --out.

Multi-file inputs are the files joined by SEP, as tests/fuzz/fuzz_support.hpp splits them. Seeds are small
slices of the real files (a few rows, sentences or lexical units) so that the fuzzer mutates formats, not
megabytes of content. Generated at build time, never committed."""
import argparse, glob, hashlib, json, os, re

SEP = b"\n=#=next file=#=\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    g, d = os.path.join(a.shared, "golden"), os.path.join(a.shared, "data")
    seeds = {}

    def add(target, data):
        seeds.setdefault(target, []).append(data)

    def read(p):
        with open(p, "rb") as f:
            return f.read()

    models = sorted(glob.glob(os.path.join(g, "models", "*")))
    for m in models:
        cfg = os.path.join(m, "config.json")
        add("config", read(cfg))
        single = os.path.join(m, "model.safetensors")
        if os.path.exists(single):
            st = read(single)
            if len(st) < 300_000:
                add("safetensors", st)
                add("checkpoint_forward", read(cfg) + SEP + st + SEP + bytes([1, 5, 7, 2, 9]))
        index = os.path.join(m, "model.safetensors.index.json")
        if os.path.exists(index):
            shards = sorted(glob.glob(os.path.join(m, "model-*.safetensors")))
            add("checkpoint_index", SEP.join([read(index)] + [read(s) for s in shards]))
            for s in shards:
                add("safetensors", read(s))
    for c in sorted(glob.glob(os.path.join(g, "cases", "*.json"))):
        add("cases", read(c))
    for n in sorted(glob.glob(os.path.join(g, "expected", "*", "*.npy")))[:40]:
        if os.path.getsize(n) < 20_000:
            add("npy", read(n))

    # Tokenizers: texts from the golden tokenization files and GLUE; vocabularies cut down to a few
    # hundred entries so that loading stays fast.
    texts = []
    for t in sorted(glob.glob(os.path.join(g, "tokenization", "*.jsonl"))):
        with open(t, encoding="utf-8") as f:
            for line in f:
                j = json.loads(line)
                for k in ("text", "text_a", "text_b"):
                    if isinstance(j.get(k), str):
                        texts.append(j[k])
    texts = sorted(set(texts))[:400]
    for t in texts:
        add("tokenizer_text", t.encode("utf-8"))
    bert_vocab = read(os.path.join(d, "vocab", "bert-base-uncased", "vocab.txt")).split(b"\n")
    small = b"\n".join(bert_vocab[:120] + bert_vocab[1000:1400] + [b"##s", b"##ing", b"un", b"##aff", b"##able"])
    for t in texts[:60]:
        add("tokenizer_vocab", small + SEP + t.encode("utf-8"))
    byte_vocab = json.loads(read(os.path.join(d, "vocab", "gpt2", "vocab.json")))
    merges = read(os.path.join(d, "vocab", "gpt2", "merges.txt")).decode("utf-8").split("\n")[1:301]
    inv = sorted(byte_vocab.items(), key=lambda kv: kv[1])
    keep = [tok for tok, i in inv[:256]]
    for m in merges:
        if m:
            keep.append(m.replace(" ", ""))
    keep = list(dict.fromkeys(keep)) + ["<|endoftext|>"]
    vocab_json = json.dumps({tok: i for i, tok in enumerate(keep)}, ensure_ascii=False).encode("utf-8")
    merges_txt = ("#version: 0.2\n" + "\n".join(m for m in merges if m) + "\n").encode("utf-8")
    for t in texts[:60]:
        add("tokenizer_vocab", vocab_json + SEP + merges_txt + SEP + t.encode("utf-8"))

    for tsv in sorted(glob.glob(os.path.join(d, "glue", "*", "*.tsv"))):
        lines = read(tsv).split(b"\n")
        add("glue", b"\n".join(lines[:12]) + b"\n")
    for conllu in sorted(glob.glob(os.path.join(d, "ud", "*.conllu"))):
        blocks = read(conllu).split(b"\n\n")
        for k in range(0, 60, 6):
            add("conllu", b"\n\n".join(blocks[k:k + 3]) + b"\n\n")

    fn = sorted(glob.glob(os.path.join(d, "framenet", "sample", "*")))
    if fn:
        root = fn[-1]
        for lu in sorted(glob.glob(os.path.join(root, "lu", "*.xml")))[:40]:
            text = read(lu)
            m = re.search(rb'frame="([^"]+)"', text)
            frame = os.path.join(root, "frame", (m.group(1).decode() if m else "") + ".xml")
            if m and os.path.exists(frame) and len(text) < 60_000:
                add("framenet", read(frame) + SEP + text)

    for target, items in seeds.items():
        out = os.path.join(a.out, target)
        os.makedirs(out, exist_ok=True)
        for data in items:
            name = hashlib.sha1(data).hexdigest()
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(items)} seeds")


if __name__ == "__main__":
    main()
