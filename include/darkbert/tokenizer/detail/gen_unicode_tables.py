#!/usr/bin/python3
"""Writes unicode_tables.hpp (next to this script): the Unicode data darkbert's tokenizers need, taken from
the Python that produced the golden tokenization files, so the C++ tokenizers match it exactly.

    /usr/bin/python3 include/darkbert/tokenizer/detail/gen_unicode_tables.py

Sources (all from this interpreter, no downloads):
  - unicodedata (Python 3.11: Unicode 14.0): general category, canonical combining class, canonical
    decompositions (NFD), primary composites (NFC) -- what BertTokenizer / tokenization.py see;
  - the `regex` module: the exact sets of \\s, \\p{L}, \\p{N} used by GPT-2's pre-tokenizer pattern
    (the module bundles a newer Unicode than unicodedata, so these are NOT derived from the categories);
  - str.lower(): the full lower-case mapping, and the Final_Sigma context classes measured by asking
    str.lower() itself (cased / case-ignorable, exactly as CPython's handle_capital_sigma uses them);
  - str.isspace(): the separators of str.split() (BERT's whitespace_tokenize).

Layout of the generated header (namespace darkbert::unicode::detail):
  char_records[]        distinct (category, flags) records (flags: the CharFlag bits of unicode.hpp)
  alphabet              91 printable ASCII characters used as digits by the two string-literal tables
  stage1, stage2        two-stage table: code point -> record index. stage1 holds two digits (the block
                        number) per block of 2^block_shift code points; stage2 one digit (record index) per
                        code point of each distinct block. block_shift is chosen to minimise the size.
  lower_runs[]          {first, count, stride, delta}: cp = first + k*stride (k < count) lower-cases to
                        cp + delta (str.lower() results of one code point)
  lower_multi[]         {cp, n, to[3]} for the few whose str.lower() has several code points (U+0130)
  ccc_ranges[]          {first, last, ccc} runs of equal non-zero canonical combining class
  decomp_keys[], decomp_offsets[], decomp_pool[]
                        full canonical decompositions (already canonically ordered); Hangul syllables are
                        algorithmic and not listed
  compose_pairs[]       {first, second, composite}, sorted: primary composites for NFC
The script asserts the properties unicode.hpp relies on (e.g. lower-casing and NFD never create
whitespace; nothing below U+0300 combines).
"""
import os
import sys
import unicodedata

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "unicode_tables.hpp")
MAX_CP = 0x110000
# 91 printable ASCII characters: all of 33..126 except " ? and backslash
ALPHABET = "".join(chr(c) for c in range(33, 127) if chr(c) not in "\"?\\")

CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
              "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"]
CAT_INDEX = {c: i for i, c in enumerate(CATEGORIES)}

# flag bits (keep in sync with unicode.hpp)
RX_SPACE, RX_LETTER, RX_NUMBER, PY_SPACE = 1 << 0, 1 << 1, 1 << 2, 1 << 3
SIGMA_CASED, SIGMA_IGNORABLE, LOWER_CHANGES, NFD_NONTRIVIAL, NFC_NONTRIVIAL = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8

SBASE, LBASE, VBASE, TBASE, LCOUNT, VCOUNT, TCOUNT = 0xAC00, 0x1100, 0x1161, 0x11A7, 19, 21, 28
SCOUNT = LCOUNT * VCOUNT * TCOUNT


def is_surrogate(cp):
    return 0xD800 <= cp <= 0xDFFF


def main():
    rx_s, rx_l, rx_n = regex.compile(r"\s"), regex.compile(r"\p{L}"), regex.compile(r"\p{N}")

    # ---- primary composites (for NFC) and the code points that can be the second of a pair
    compose = {}
    for cp in range(MAX_CP):
        if is_surrogate(cp):
            continue
        d = unicodedata.decomposition(chr(cp))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            compose[(parts[0], parts[1])] = cp
    seconds = {b for (_, b) in compose}
    seconds |= set(range(VBASE, VBASE + VCOUNT)) | set(range(TBASE + 1, TBASE + TCOUNT))

    records, record_index, cp_record = [], {}, []
    lower_single, lower_multi, decomps = [], [], []
    ccc_list = []
    for cp in range(MAX_CP):
        c = chr(cp)
        cat = unicodedata.category(c)
        flags = 0
        if not is_surrogate(cp):
            if rx_s.match(c):
                flags |= RX_SPACE
            if rx_l.match(c):
                flags |= RX_LETTER
            if rx_n.match(c):
                flags |= RX_NUMBER
            if c.isspace():
                flags |= PY_SPACE
            # Final_Sigma context classes, measured: a preceding 'c' makes a final sigma iff c is cased and
            # not case-ignorable; 'A' c Σ is final iff c is cased or case-ignorable (skipped).
            t_cased = (c + "\u03a3").lower()[-1] == "\u03c2"
            t_cased_or_skip = ("A" + c + "\u03a3").lower()[-1] == "\u03c2"
            assert not (t_cased and not t_cased_or_skip), hex(cp)
            if t_cased:
                flags |= SIGMA_CASED
            elif t_cased_or_skip:
                flags |= SIGMA_IGNORABLE
            # forward direction must agree with the same three classes
            fwd_final = ("A\u03a3" + c).lower()[1] == "\u03c2"
            assert fwd_final == (not t_cased), hex(cp)
            fwd_final2 = ("A\u03a3" + c + "B").lower()[1] == "\u03c2"
            assert fwd_final2 == (not t_cased and not t_cased_or_skip), hex(cp)
            low = c.lower()
            if low != c:
                flags |= LOWER_CHANGES
                if len(low) == 1:
                    lower_single.append((cp, ord(low)))
                else:
                    assert len(low) <= 3
                    lower_multi.append((cp, [ord(x) for x in low]))
            ccc = unicodedata.combining(c)
            if ccc:
                ccc_list.append((cp, ccc))
            nfd = unicodedata.normalize("NFD", c)
            is_hangul = SBASE <= cp < SBASE + SCOUNT
            if nfd != c and not is_hangul:
                decomps.append((cp, [ord(x) for x in nfd]))
            if nfd != c or ccc:
                flags |= NFD_NONTRIVIAL
            if unicodedata.normalize("NFC", c) != c or ccc or cp in seconds:
                flags |= NFC_NONTRIVIAL
        rec = (CAT_INDEX[cat], flags)
        if rec not in record_index:
            record_index[rec] = len(records)
            records.append(rec)
        cp_record.append(record_index[rec])

    # Invariants the C++ code relies on.
    for cp in range(MAX_CP):  # lowering, NFD and dropping marks never create str.split() separators
        if is_surrogate(cp):
            continue
        c = chr(cp)
        if not c.isspace():
            assert not any(x.isspace() for x in c.lower() + unicodedata.normalize("NFD", c)), hex(cp)

    # unicode.hpp skips table lookups below U+0300 for combining classes and the NFC quick check
    assert all(unicodedata.combining(chr(cp)) == 0 and not records[cp_record[cp]][1] & NFC_NONTRIVIAL
               for cp in range(0x300))

    # ---- two-stage table, both stages as string literals over a 91-character alphabet
    best = None
    for shift in range(5, 10):
        bs = 1 << shift
        blocks, block_index, stage1 = [], {}, []
        for start in range(0, MAX_CP, bs):
            blk = tuple(cp_record[start:start + bs])
            if blk not in block_index:
                block_index[blk] = len(blocks)
                blocks.append(blk)
            stage1.append(block_index[blk])
        size = 2 * len(stage1) + bs * len(blocks)
        if best is None or size < best[0]:
            best = (size, shift, blocks, stage1)
    _, shift, blocks, stage1 = best
    assert len(records) <= len(ALPHABET) and len(blocks) <= len(ALPHABET) ** 2

    # ---- ccc runs
    ccc_runs = []
    for cp, ccc in ccc_list:
        if ccc_runs and ccc_runs[-1][1] == cp - 1 and ccc_runs[-1][2] == ccc:
            ccc_runs[-1][1] = cp
        else:
            ccc_runs.append([cp, cp, ccc])

    # ---- lower-case runs: {first, count, stride, delta}: cp = first + k*stride (k < count) -> cp + delta
    lower_runs = []
    for cp, low in lower_single:
        delta = low - cp
        if lower_runs:
            first, count, stride, d = lower_runs[-1]
            last = first + (count - 1) * stride
            if d == delta and count == 1 and cp - first in (1, 2):
                lower_runs[-1] = [first, 2, cp - first, d]
                continue
            if d == delta and count > 1 and cp - last == stride:
                lower_runs[-1][1] += 1
                continue
        lower_runs.append([cp, 1, 1, delta])
    check = {}
    for first, count, stride, d in lower_runs:
        for k in range(count):
            check[first + k * stride] = first + k * stride + d
    assert check == dict(lower_single)

    # ---- decompositions
    pool, dkeys, doffsets = [], [], []
    for cp, seq in decomps:
        dkeys.append(cp)
        doffsets.append(len(pool))
        pool.extend(seq)
    doffsets.append(len(pool))
    assert len(pool) < (1 << 16)

    pairs = sorted((a, b, cp) for (a, b), cp in compose.items())

    # ---- write
    def wrap(items, per_line=40, sep=","):
        lines = []
        for i in range(0, len(items), per_line):
            lines.append("  " + sep.join(items[i:i + per_line]) + sep)
        return "\n".join(lines)

    def enc1(v):
        return ALPHABET[v]

    def enc2(v):
        return ALPHABET[v // len(ALPHABET)] + ALPHABET[v % len(ALPHABET)]

    out = []
    w = out.append
    w("#pragma once")
    w("// GENERATED by gen_unicode_tables.py (same folder) -- do not edit. Regenerate with:")
    w("//   /usr/bin/python3 include/darkbert/tokenizer/detail/gen_unicode_tables.py")
    w(f"// Python {sys.version.split()[0]}, unicodedata {unicodedata.unidata_version}, regex {regex.__version__}.")
    w("// Layout and meaning: see the docstring of the generator.")
    w("// clang-format off")
    w("")
    w("#include <cstdint>  // std::uint8_t, std::uint16_t, std::uint32_t")
    w("")
    w("namespace darkbert::unicode::detail {")
    w("")
    w(f'inline constexpr const char* unicode_data_version = "{unicodedata.unidata_version}";')
    w(f'inline constexpr const char* regex_module_version = "{regex.__version__}";')
    w("")
    w("// Digits of the string-literal tables: value = position of the character in this alphabet.")
    w(f'inline constexpr const char alphabet[] = "{ALPHABET}";')
    w(f"inline constexpr int block_shift = {shift};")
    w("")
    w("struct CharRecord {")
    w("  std::uint8_t category;  // index into unicode::Category (Unicode order Lu..Cn)")
    w("  std::uint16_t flags;    // unicode::CharFlag bits")
    w("};")
    w(f"inline constexpr CharRecord char_records[{len(records)}] = {{")
    w(wrap([f"{{{c},{f}}}" for c, f in records], 20))
    w("};")
    w("")
    w(f"// {len(stage1)} blocks, two alphabet digits each (block number, most significant first).")
    w("inline constexpr const char stage1[] =")
    s1 = "".join(enc2(v) for v in stage1)
    for i in range(0, len(s1), 200):
        w('  "' + s1[i:i + 200] + '"')
    w(";")
    w(f"// {len(blocks)} distinct blocks of {1 << shift} code points, one alphabet digit (record index) each.")
    w("inline constexpr const char stage2[] =")
    for blk in blocks:
        w('  "' + "".join(enc1(r) for r in blk) + '"')
    w(";")
    w("")
    w("// cp = first + k * stride (k < count) lower-cases to cp + delta.")
    w("struct LowerRun { std::uint32_t first; std::uint16_t count; std::uint8_t stride; std::int32_t delta; };")
    w(f"inline constexpr LowerRun lower_runs[{len(lower_runs)}] = {{")
    w(wrap([f"{{{a},{b},{c},{d}}}" for a, b, c, d in lower_runs], 16))
    w("};")
    w("struct LowerMulti { std::uint32_t cp; std::uint32_t n; std::uint32_t to[3]; };")
    w(f"inline constexpr LowerMulti lower_multi[{len(lower_multi)}] = {{")
    w(wrap([f"{{{a},{len(xs)},{{" + ",".join(str(x) for x in xs) + "}}" for a, xs in lower_multi], 4))
    w("};")
    w("")
    w("struct CccRange { std::uint32_t first, last; std::uint8_t ccc; };")
    w(f"inline constexpr CccRange ccc_ranges[{len(ccc_runs)}] = {{")
    w(wrap([f"{{{a},{b},{c}}}" for a, b, c in ccc_runs], 16))
    w("};")
    w("")
    w("// decomp_keys[i] decomposes to decomp_pool[decomp_offsets[i] .. decomp_offsets[i + 1]).")
    w(f"inline constexpr std::uint32_t decomp_keys[{len(dkeys)}] = {{")
    w(wrap([str(x) for x in dkeys]))
    w("};")
    w(f"inline constexpr std::uint16_t decomp_offsets[{len(doffsets)}] = {{")
    w(wrap([str(x) for x in doffsets]))
    w("};")
    w(f"inline constexpr std::uint32_t decomp_pool[{len(pool)}] = {{")
    w(wrap([str(x) for x in pool]))
    w("};")
    w("")
    w("struct Composition { std::uint32_t first, second, composite; };  // sorted by (first, second)")
    w(f"inline constexpr Composition compose_pairs[{len(pairs)}] = {{")
    w(wrap([f"{{{a},{b},{c}}}" for a, b, c in pairs], 16))
    w("};")
    w("")
    w("}  // namespace darkbert::unicode::detail")
    text = "\n".join(out) + "\n"
    with open(OUT, "w", encoding="ascii") as f:
        f.write(text)
    print(f"{OUT}: {len(text)} bytes; {len(records)} records, block shift {shift}, {len(blocks)} blocks, "
          f"{len(lower_runs)} lower runs (+{len(lower_multi)} multi), {len(ccc_runs)} ccc runs, "
          f"{len(dkeys)} decompositions, {len(pairs)} composition pairs")


if __name__ == "__main__":
    main()
