#!/usr/bin/env python3
"""Tokenize COUNT varied strings with a tokenizer.json and with llama-server's
/tokenize, and report how many agree.

Usage: check-tokenizer-against-server.py TOKENIZER_JSON SERVER_URL COUNT [--seed N] [--show K]

Needs: pip install tokenizers==0.23.3 (the server is reached with urllib).

Each string is checked two ways:
  special: server {"add_special": false, "parse_special": true}
           vs tokenizer.encode(s, add_special_tokens=False)   (special tokens parsed)
  literal: server {"add_special": false, "parse_special": false}
           vs the same with tokenizer.encode_special_tokens = True  (special tokens as text)
and the tokenizer's decode(ids) must give back the string (roundtrip), for the strings
whose UTF-8 uses only bytes that have a byte token in the vocab (llama.cpp, and this
tokenizer.json, drop a byte that has none, so those strings cannot round-trip).
Prints `agree N/M` (strings that agree in both ways), the per-way numbers,
and the first disagreements. Exit status 1 if any disagree.

Example (the run recorded for tests/fixtures/tokenizers/smollm2-135m/tokenizer.json):
  /tmp/tokvenv/bin/python scripts/check-tokenizer-against-server.py \
      tests/fixtures/tokenizers/smollm2-135m/tokenizer.json http://127.0.0.1:18080 3000
"""
import argparse
import json
import random
import sys
import urllib.request

from tokenizers import Tokenizer

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<repo_name>", "<file_sep>",
            "<filename>", "<gh_stars>", "<jupyter_code>", "<empty_output>"]
WORDS = ("the cat dog house tree running quickly jumped over lazy fox apple banana "
         "serve benchmark latency throughput token model request response anvil llama "
         "I you he she it we they don't can't won't it's we're they've I'm you'll he'd "
         "Hello World HTTP JSON GPU CPU URL naïve café résumé über façade Zürich").split()
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
WS = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", "\u00a0", "\u2003",
      "\u3000", "\u0085", "\u2028", "\x0b", "\x0c", "        "]
UNICODE_SNIPPETS = [
    "日本語のテキスト", "中文分词测试", "한국어 문장", "Привет, мир!", "Ελληνικά γράμματα",
    "مرحبا بالعالم", "שלום עולם", "हिन्दी पाठ", "ไทยภาษา", "emoji 😀🎉👍🏽", "👨‍👩‍👧‍👦 family",
    "e\u0301 combining", "Ａ全角ＡＢＣ１２３", "½ ¾ ² ³ ٣ ४ Ⅻ ①", "“quotes” ‘single’ — – …",
    "math ∑∫√∞≠≤≥", "€100 £50 ¥30 ₹20", "\u200b zero\u200dwidth\ufeff", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
    "Ǆ ǅ ǆ ß ẞ İ ı", "\U0001F9D1\u200D\U0001F4BB", "\u0000nul", "tab\tsep\tvalues",
]


def rand_ascii(rng, n):
    return "".join(chr(rng.randrange(32, 127)) for _ in range(n))


def rand_bytesy(rng, n):
    # any ASCII incl. control characters
    return "".join(chr(rng.randrange(0, 128)) for _ in range(n))


def rand_unicode(rng, n):
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            cp = rng.randrange(0x80, 0x3000)
        elif r < 0.8:
            cp = rng.randrange(0x3000, 0x10000)
        else:
            cp = rng.randrange(0x10000, 0x110000)
        if 0xD800 <= cp <= 0xDFFF:
            cp = 0x41
        out.append(chr(cp))
    return "".join(out)


def rand_digits(rng):
    k = rng.randrange(6)
    if k == 0:
        return str(rng.randrange(10 ** rng.randrange(1, 20)))
    if k == 1:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randrange(6)}f}"
    if k == 2:
        return " ".join(str(rng.randrange(100000)) for _ in range(rng.randrange(1, 8)))
    if k == 3:
        return f"{rng.randrange(1900, 2100)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}"
    if k == 4:
        return "v" + ".".join(str(rng.randrange(20)) for _ in range(3)) + " x" + str(rng.randrange(1000))
    return "".join(rng.choice("0123456789 ,.") for _ in range(rng.randrange(1, 30)))


def sentence(rng):
    n = rng.randrange(1, 15)
    ws = [rng.choice(WORDS) for _ in range(n)]
    s = " ".join(ws)
    if rng.random() < 0.5:
        s = s[0].upper() + s[1:]
    return s + rng.choice([".", "!", "?", "", "...", ",", ":"])


def spaced_words(rng):
    return "".join(" " + rng.choice(WORDS) for _ in range(rng.randrange(1, 10)))


def ws_mix(rng):
    parts = []
    for _ in range(rng.randrange(1, 12)):
        parts.append(rng.choice(WS) if rng.random() < 0.5 else rng.choice(WORDS + PUNCT + ["1", "22", "'s"]))
    return "".join(parts)


def chat(rng):
    roles = ["system", "user", "assistant"]
    out = []
    for _ in range(rng.randrange(1, 4)):
        out.append(f"<|im_start|>{rng.choice(roles)}\n{sentence(rng)}<|im_end|>\n")
    if rng.random() < 0.5:
        out.append("<|im_start|>assistant\n")
    s = "".join(out)
    if rng.random() < 0.3:
        s = s.replace("<|im_start|>", rng.choice(SPECIALS), 1)
    if rng.random() < 0.2:
        s = " " + s + " <|endoftext|>  "
    return s


def special_mix(rng):
    parts = []
    for _ in range(rng.randrange(1, 8)):
        c = rng.random()
        if c < 0.3:
            parts.append(rng.choice(SPECIALS))
        elif c < 0.4:
            sp = rng.choice(SPECIALS)
            parts.append(sp[:rng.randrange(1, len(sp))])  # a broken special
        elif c < 0.6:
            parts.append(rng.choice(WS))
        else:
            parts.append(rng.choice(WORDS + PUNCT))
    return "".join(parts)


def contractions(rng):
    base = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "''", "'", "'x", "’s"]
    return "".join(rng.choice([rng.choice(WORDS), rng.choice(base), " ", rng.choice(PUNCT)]) for _ in range(rng.randrange(1, 10)))


def code(rng):
    snippets = ["fn main() {\n    println!(\"hi {}\", x);\n}\n", "def f(x):\n\treturn x**2  # sq\n",
                "if (a && b || !c) { return -1; }", "<div class=\"x\">&amp;</div>", "SELECT * FROM t WHERE id=42;",
                "    \n\n    indented\n", "x = [1, 2, 3]\ny = {'a': 1}\n", "#!/bin/sh\necho $HOME | grep -v '^#'\n",
                "a==b!=c<=d>=e->f=>g::h", "http://example.com/path?q=1&r=2#frag", "C:\\Users\\x\\file.txt"]
    return "".join(rng.choice(snippets) for _ in range(rng.randrange(1, 4)))


def vocab_mash(rng, tok):
    n = tok.get_vocab_size()
    ids = [rng.randrange(17, n) for _ in range(rng.randrange(1, 12))]
    return tok.decode(ids)


def generate(rng, tok, count):
    fixed = ["", " ", "  ", "\n", "\n\n\n", " \n ", "a", " a", "a ", "Hello world", " Hello world",
             "   leading and trailing   ", "1234567890", " 12 345 ", "<|im_start|>", "<|im_start|><|im_end|>",
             "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", " cat dog house", "don't stop",
             "DON'T", "tab\there", "x\r\ny", "😀", "日本", "\u00a0", "a\u00a0b", "a  b", "a \tb", "a\t b",
             "...", " !!!", "?!", "'''", "<|im_end", "|im_start|>", "<<|im_start|>>", "\x00", "\x7f\x01"]
    gens = [
        lambda: sentence(rng), lambda: sentence(rng) + " " + sentence(rng),
        lambda: rand_ascii(rng, rng.randrange(1, 60)), lambda: rand_bytesy(rng, rng.randrange(1, 30)),
        lambda: rand_digits(rng), lambda: ws_mix(rng), lambda: spaced_words(rng),
        lambda: rng.choice(UNICODE_SNIPPETS) + rng.choice(["", " ", "\n"]) + rng.choice(UNICODE_SNIPPETS),
        lambda: rand_unicode(rng, rng.randrange(1, 20)), lambda: chat(rng), lambda: special_mix(rng),
        lambda: contractions(rng), lambda: code(rng), lambda: vocab_mash(rng, tok),
        lambda: "".join(rng.choice(PUNCT) for _ in range(rng.randrange(1, 20))),
        lambda: "".join(rng.choice(WS) for _ in range(rng.randrange(1, 10))),
        lambda: sentence(rng) + rng.choice(WS) + rand_unicode(rng, 3) + rng.choice(WS) + rand_digits(rng),
    ]
    short_gens = gens[:]
    # long mixed documents (hundreds to a few thousand characters)
    gens.append(lambda: "".join(rng.choice(short_gens)() + rng.choice(WS + [""]) for _ in range(rng.randrange(10, 60))))
    out = fixed[:count]
    while len(out) < count:
        out.append(rng.choice(gens)())
    return out


def bytes_without_token(tok):
    """Bytes whose GPT-2 byte-level symbol is not in the vocab."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    vocab = tok.get_vocab(with_added_tokens=False)
    return {b for b, c in zip(bs, cs) if chr(c) not in vocab}


def server_tokenize(base, text, parse_special):
    body = json.dumps({"content": text, "add_special": False, "parse_special": parse_special}).encode()
    req = urllib.request.Request(base.rstrip("/") + "/tokenize", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)["tokens"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer_json")
    ap.add_argument("server_url")
    ap.add_argument("count", type=int)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--show", type=int, default=8, help="how many disagreements to print")
    args = ap.parse_args()

    tok = Tokenizer.from_file(args.tokenizer_json)
    lit = Tokenizer.from_file(args.tokenizer_json)
    lit.encode_special_tokens = True
    rng = random.Random(args.seed)
    texts = generate(rng, tok, args.count)

    missing = bytes_without_token(tok)
    agree = agree_special = agree_literal = agree_roundtrip = n_roundtrip = 0
    bad = []
    for i, t in enumerate(texts):
        srv_s = server_tokenize(args.server_url, t, True)
        srv_l = server_tokenize(args.server_url, t, False)
        hf_s = tok.encode(t, add_special_tokens=False).ids
        hf_l = lit.encode(t, add_special_tokens=False).ids
        ok_s, ok_l = srv_s == hf_s, srv_l == hf_l
        can_roundtrip = missing.isdisjoint(t.encode("utf-8"))
        # a string using a byte with no token cannot round-trip (that byte is dropped)
        ok_r = (not can_roundtrip) or tok.decode(hf_l, skip_special_tokens=False) == t
        n_roundtrip += can_roundtrip
        agree_roundtrip += can_roundtrip and ok_r
        agree_special += ok_s
        agree_literal += ok_l
        if ok_s and ok_l:
            agree += 1
        if not (ok_s and ok_l and ok_r):
            bad.append((i, t, ok_s, srv_s, hf_s, ok_l, srv_l, hf_l, ok_r))

    m = len(texts)
    print(f"agree {agree}/{m}")
    print(f"  parse_special=true  vs encode():                          {agree_special}/{m}")
    print(f"  parse_special=false vs encode() with encode_special_tokens: {agree_literal}/{m}")
    print(f"  decode(encode(s)) == s:                                    {agree_roundtrip}/{n_roundtrip}"
          f" (the other {m - n_roundtrip} use a byte with no token: {' '.join(f'0x{b:02x}' for b in sorted(missing))})")
    for (i, t, ok_s, srv_s, hf_s, ok_l, srv_l, hf_l, ok_r) in bad[:args.show]:
        print(f"--- #{i} {t!r}")
        if not ok_s:
            print(f"  special: server {srv_s}\n           hf     {hf_s}")
            print(f"           server pieces {[tok.id_to_token(x) for x in srv_s]}")
            print(f"           hf pieces     {[tok.id_to_token(x) for x in hf_s]}")
        if not ok_l:
            print(f"  literal: server {srv_l}\n           hf     {hf_l}")
            print(f"           server pieces {[tok.id_to_token(x) for x in srv_l]}")
            print(f"           hf pieces     {[tok.id_to_token(x) for x in hf_l]}")
        if not ok_r:
            print(f"  roundtrip: decode gives {tok.decode(hf_l, skip_special_tokens=False)!r}")
    sys.exit(0 if agree == m and agree_roundtrip == n_roundtrip else 1)


if __name__ == "__main__":
    main()
