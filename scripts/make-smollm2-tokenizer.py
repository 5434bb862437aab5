#!/usr/bin/env python3
# Builds a Hugging Face `tokenizer.json` for SmolLM2-135M-Instruct offline, from
# the GGUF file's own vocabulary (tokenizer.ggml.tokens / merges / token_type),
# so that it tokenizes exactly as llama.cpp does for `tokenizer.ggml.pre` = "smollm".
#
# Needs (in a venv, not system-wide):  pip install gguf==0.19.0 tokenizers==0.23.3
# (numpy 2.4.6 comes with gguf). Nothing is downloaded. Reads the GGUF, and llama.cpp's
# own Unicode category table (src/unicode-data.cpp of the llama.cpp that serves the
# GGUF; by default looked for at <gguf dir>/../src/src/unicode-data.cpp, which is where
# scripts/llama-server.sh puts llama.cpp's source next to the model).
#
# The fixture tests/fixtures/tokenizers/smollm2-135m/tokenizer.json was made with:
#   python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install gguf==0.19.0 tokenizers==0.23.3
#   /tmp/tokvenv/bin/python scripts/make-smollm2-tokenizer.py \
#       ~/.cache/anvil/llama.cpp-0.3.36/models/SmolLM2-135M-Instruct.Q4_1.gguf \
#       tests/fixtures/tokenizers/smollm2-135m/tokenizer.json
# (GGUF and llama.cpp source from scripts/llama-server.sh, llama-cpp-python 0.3.36's vendored
# llama.cpp; GGUF sha256 b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53)
# and checked with scripts/check-tokenizer-against-server.py against llama-server /tokenize.
#
# What llama.cpp does for pre type "smollm" (src/llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_SMOLLM,
# same case as STARCODER/REFACT/COMMAND_R), reproduced here:
#   1. split every \p{N} codepoint off on its own          -> Split(N, Isolated)
#   2. GPT-2 regex 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
#      (run by unicode.cpp's hand-written unicode_regex_split_custom_gpt2, which also
#      falls back to \s+, hence a trailing |\s+ here)      -> Split(regex, Isolated)
#   3. GPT-2 byte-to-unicode mapping, no prefix space       -> ByteLevel(use_regex=False)
#      then each byte symbol that has no token, on its own  -> Split([those], Isolated)
#   4. byte-level BPE by merge rank, no unk                  -> BPE(vocab, merges)
# \p{L}, \p{N} and \s are written out as explicit [\x{..}-\x{..}] classes taken from
# llama.cpp's table (Unicode 15.1 in llama.cpp 0.3.36), not left to the regex engine:
# the Oniguruma in tokenizers 0.23.3 knows Unicode 16.0, and with \p{L} 4382 codepoints
# new in 16.0 (U+13460..U+143FA, U+105C0.., ...) split differently from llama-server.
# Byte symbols missing from the vocab are dropped, as llama.cpp drops them (see unk_token below).
# Tokens of type CONTROL (3) become special added tokens (parsed out of the text first,
# as llama.cpp does with parse_special). tokenizer.ggml.add_bos_token is false, so no
# post-processor template adds BOS/EOS.
"""Build tokenizer.json for SmolLM2-135M from its GGUF (see header comment)."""
import argparse
import os
import re
import sys

from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

TOKEN_TYPE_CONTROL = 3
TOKEN_TYPE_USER_DEFINED = 4
# unicode.h: unicode_cpt_flags
FLAG_NUMBER = 0x0002
FLAG_LETTER = 0x0004
FLAG_MASK_CATEGORIES = 0x00FF


def bytes_to_unicode():
    """GPT-2's byte -> printable-codepoint table (what ByteLevel uses)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def llama_unicode_classes(path):
    """(letter ranges, number ranges, whitespace ranges) from llama.cpp's unicode-data.cpp."""
    src = open(path, encoding="utf-8").read()

    def table(name):
        i = src.index(name)
        return src[src.index("{", i) + 1:src.index("};", i)]

    starts = [(int(a, 16), int(f, 16))
              for a, f in re.findall(r"\{0x([0-9A-Fa-f]+),\s*0x([0-9A-Fa-f]+)\}", table("unicode_ranges_flags"))]
    if not starts or starts[0][0] != 0 or starts[-1][0] != 0x110000:
        sys.exit(f"{path}: unicode_ranges_flags not as expected")

    def ranges_with(flag):
        out = []
        for (a, f), (nxt, _) in zip(starts, starts[1:]):
            if (f & FLAG_MASK_CATEGORIES) == flag:
                if out and out[-1][1] + 1 == a:
                    out[-1][1] = nxt - 1
                else:
                    out.append([a, nxt - 1])
        return out

    ws = sorted(int(x, 16) for x in re.findall(r"0x([0-9A-Fa-f]+)", table("unicode_set_whitespace")))
    ws_ranges = []
    for c in ws:
        if ws_ranges and ws_ranges[-1][1] + 1 == c:
            ws_ranges[-1][1] = c
        else:
            ws_ranges.append([c, c])
    return ranges_with(FLAG_LETTER), ranges_with(FLAG_NUMBER), ws_ranges


def class_body(ranges):
    return "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges)


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is not None:
            return default
        sys.exit(f"GGUF has no {key}")
    return f.contents()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("gguf", help="path to SmolLM2-135M-Instruct*.gguf")
    ap.add_argument("output", help="where to write tokenizer.json")
    ap.add_argument("--unicode-data", help="llama.cpp's src/unicode-data.cpp "
                    "(default: <gguf dir>/../src/src/unicode-data.cpp)")
    args = ap.parse_args()
    unicode_data = args.unicode_data or os.path.join(
        os.path.dirname(os.path.abspath(args.gguf)), "..", "src", "src", "unicode-data.cpp")
    if not os.path.isfile(unicode_data):
        sys.exit(f"no {unicode_data}; pass --unicode-data PATH (llama.cpp's src/unicode-data.cpp)")

    r = GGUFReader(args.gguf)
    model = field(r, "tokenizer.ggml.model")
    pre = field(r, "tokenizer.ggml.pre")
    if model != "gpt2" or pre != "smollm":
        sys.exit(f"expected tokenizer.ggml.model=gpt2, pre=smollm; got model={model!r} pre={pre!r}")
    if field(r, "tokenizer.ggml.add_bos_token", False) or field(r, "tokenizer.ggml.add_eos_token", False):
        sys.exit("GGUF asks for BOS/EOS to be added; this script does not build that post-processor")

    tokens = field(r, "tokenizer.ggml.tokens")
    types = field(r, "tokenizer.ggml.token_type")
    merges_raw = field(r, "tokenizer.ggml.merges")
    assert len(tokens) == len(types)

    vocab = {}
    for i, t in enumerate(tokens):
        if t in vocab:
            sys.exit(f"duplicate token {t!r} at {vocab[t]} and {i}")
        vocab[t] = i

    byte_sym = bytes_to_unicode()
    missing_bytes = [b for b in range(256) if byte_sym[b] not in vocab]
    missing_syms = {byte_sym[b] for b in missing_bytes}

    merges = []
    for m in merges_raw:
        parts = m.split(" ")
        if len(parts) != 2 or parts[0] not in vocab or parts[1] not in vocab or parts[0] + parts[1] not in vocab:
            sys.exit(f"bad merge {m!r}")
        merges.append((parts[0], parts[1]))
    if any(missing_syms & set(t) for t in vocab):
        sys.exit("a token holds a byte symbol that has no token of its own; isolating those would be wrong")

    # \p{L}, \p{N}, \s exactly as llama.cpp classifies codepoints.
    letters, numbers, spaces = llama_unicode_classes(unicode_data)
    L, N, S = class_body(letters), class_body(numbers), class_body(spaces)
    digit_regex = f"[{N}]"
    gpt2_regex = (f"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+"
                  f"|[{S}]+(?![^{S}])|[{S}]+")

    bpe = models.BPE(
        vocab=vocab,
        merges=merges,
        # No unk token, on purpose: some of the 256 byte symbols are not in this vocab
        # (bytes 0x04 0x06 0x13 0x14 0x16 0x1d 0xc0 0xc1 0xf1 0xf2 0xf5-0xff), and llama.cpp
        # silently drops such a byte (llm_tokenizer_bpe_session::tokenize finds no token
        # for it), where BPE with an unk_token would emit tokenizer.ggml.unknown_token_id
        # (<|endoftext|>). BPE without unk_token drops it too.
        unk_token=None,
        fuse_unk=False,
        byte_fallback=False,
    )
    tok = Tokenizer(bpe)
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(digit_regex), behavior="isolated", invert=False),
        pre_tokenizers.Split(Regex(gpt2_regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ] + ([
        # A byte symbol with no token is a barrier in llama.cpp's BPE (no merge takes it, as
        # checked above) and is dropped on output. Isolating it keeps its neighbours from
        # merging across it; BPE without unk_token then drops the lone symbol.
        pre_tokenizers.Split(Regex("[" + "".join(byte_sym[b] for b in missing_bytes) + "]"),
                             behavior="isolated", invert=False),
    ] if missing_bytes else []))
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)

    specials = [i for i, ty in enumerate(types) if ty in (TOKEN_TYPE_CONTROL, TOKEN_TYPE_USER_DEFINED)]
    tok.add_special_tokens([
        AddedToken(tokens[i], single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
        for i in specials
    ])
    for i in specials:  # they must keep their GGUF ids
        assert tok.token_to_id(tokens[i]) == i, (i, tokens[i], tok.token_to_id(tokens[i]))
    assert tok.get_vocab_size(with_added_tokens=True) == len(tokens)

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    tok.save(args.output, pretty=False)
    # Re-load as a check that the file parses.
    Tokenizer.from_file(args.output)
    print(f"wrote {args.output}: {len(tokens)} tokens, {len(merges)} merges, "
          f"{len(specials)} special ({', '.join(tokens[i] for i in specials[:3])}, ...), "
          f"pre={pre}, {os.path.getsize(args.output)} bytes")
    print(f"classes from {unicode_data}: letter {len(letters)} ranges, number {len(numbers)}, "
          f"whitespace {len(spaces)}; gpt2 regex {len(gpt2_regex)} chars")
    print(f"byte symbols not in the vocab (dropped, as llama.cpp does): "
          f"{' '.join(f'0x{b:02x}' for b in missing_bytes) or 'none'}")


if __name__ == "__main__":
    main()
