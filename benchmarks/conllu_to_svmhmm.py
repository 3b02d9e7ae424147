"""Convert Universal Dependencies CoNLL-U files into SVM-hmm files for part-of-speech tagging.

One line per word, sentences numbered from 1 in each file:

    <tag> qid:<sentence> <index>:1 <index>:1 ... # <word>

Tags are the 17 UPOS tags numbered 1..17 in sorted order (UPOS_TAGS below, the order of
the shared SVMhmm reference files in ../shared/models); the mapping is written beside the
output as <prefix>.tags. Multiword-token ranges (``1-2``) and empty nodes (``1.1``) are
skipped: the words of a range are the tagged units, empty nodes are no words.

Features (binary), as in the tagging experiment of Joachims, Finley & Yu (MLJ 2009):
for the previous, current and next word, the lower-cased word and its prefixes and
suffixes of length 1-4 (only those not longer than the word; before the first and after the
last word one symbol each, <s> and </s>, instead); the current word's length capped at 10;
whether it is capitalised (first character upper case); whether it contains a digit;
whether it contains a hyphen. The dictionary is built on the first split given (train) in
order of first occurrence and written as <prefix>.features (index TAB feature); words of
the other splits keep only features seen there.

Usage: python benchmarks/conllu_to_svmhmm.py [--data DIR] [--out DIR] [--prefix ewt]
           [--splits train,dev,test]
reads DIR/en_ewt-ud-<split>.conllu.gz (or .conllu) and writes OUT/<prefix>.<split>.hmm.
"""

import argparse
import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

UPOS_TAGS = (
    "ADJ",
    "ADP",
    "ADV",
    "AUX",
    "CCONJ",
    "DET",
    "INTJ",
    "NOUN",
    "NUM",
    "PART",
    "PRON",
    "PROPN",
    "PUNCT",
    "SCONJ",
    "SYM",
    "VERB",
    "X",
)
TAG_NUMBER = {t: i + 1 for i, t in enumerate(UPOS_TAGS)}
AFFIX_LENGTHS = (1, 2, 3, 4)
MAX_LENGTH = 10
START, END = "<s>", "</s>"

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "ud_en_ewt"
DEFAULT_OUT = Path(tempfile.gettempdir()) / "cpsvm-bench" / "hmm"


class ConllError(Exception):
    pass


def read_conllu(path):
    """Yield sentences as lists of (form, upos); gzip by magic bytes."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    sentence = []
    with opener(path, "rt", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                if sentence:
                    yield sentence
                    sentence = []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 10:
                raise ConllError(
                    f"{path}:{lineno}: expected 10 tab-separated columns, found {len(cols)}"
                )
            word_id = cols[0]
            if "-" in word_id or "." in word_id:
                continue
            if not word_id.isdigit():
                raise ConllError(f"{path}:{lineno}: expected a word id, found {word_id!r}")
            if cols[3] not in TAG_NUMBER:
                raise ConllError(
                    f"{path}:{lineno}: expected one of the 17 UPOS tags, found {cols[3]!r}"
                )
            sentence.append((cols[1], cols[3]))
    if sentence:
        yield sentence


def word_features(lower, name, out):
    out.append(f"{name}w={lower}")
    n = len(lower)
    for k in AFFIX_LENGTHS:
        if k > n:
            break
        out.append(f"{name}p{k}={lower[:k]}")
        out.append(f"{name}s{k}={lower[-k:]}")


def sentence_features(words):
    """List of feature-name lists, one per word of the sentence."""
    lowers = [w.lower() for w in words]
    per_word = []
    for i, word in enumerate(words):
        f = []
        if i == 0:
            f.append(f"-1w={START}")
        else:
            word_features(lowers[i - 1], "-1", f)
        word_features(lowers[i], "0", f)
        if i + 1 == len(words):
            f.append(f"+1w={END}")
        else:
            word_features(lowers[i + 1], "+1", f)
        f.append(f"len={min(len(word), MAX_LENGTH)}")
        if word[:1].isupper():
            f.append("cap")
        if any(c.isdigit() for c in word):
            f.append("digit")
        if "-" in word:
            f.append("hyphen")
        per_word.append(f)
    return per_word


def convert(src, dst, dictionary, grow):
    """Write src (CoNLL-U) to dst (SVM-hmm); returns (sentences, words, dropped features).
    grow: add unseen features to dictionary (train) or drop them (other splits)."""
    tmp = dst.with_name(dst.name + f".tmp{os.getpid()}")
    try:
        counts = _write(src, tmp, dictionary, grow)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no partial output
        raise
    os.replace(tmp, dst)
    return counts


def _write(src, tmp, dictionary, grow):
    sentences = words = dropped = 0
    with open(tmp, "w", encoding="utf-8") as out:
        for sentence in read_conllu(src):
            sentences += 1
            forms = [form for form, _ in sentence]
            for (form, upos), names in zip(sentence, sentence_features(forms)):
                words += 1
                idx = set()
                for name in names:
                    i = dictionary.get(name)
                    if i is None:
                        if not grow:
                            dropped += 1
                            continue
                        i = dictionary[name] = len(dictionary) + 1
                    idx.add(i)
                feats = " ".join(f"{i}:1" for i in sorted(idx))
                out.write(f"{TAG_NUMBER[upos]} qid:{sentences} {feats} # {form}\n")
    return sentences, words, dropped


def source_file(data, split):
    for name in (f"en_ewt-ud-{split}.conllu.gz", f"en_ewt-ud-{split}.conllu"):
        if (data / name).exists():
            return data / name
    raise ConllError(f"{data}: no en_ewt-ud-{split}.conllu(.gz)")


def write_tables(out, prefix, dictionary):
    with open(out / f"{prefix}.tags", "w", encoding="utf-8") as f:
        for t in UPOS_TAGS:
            f.write(f"{TAG_NUMBER[t]}\t{t}\n")
    with open(out / f"{prefix}.features", "w", encoding="utf-8") as f:
        for name, i in dictionary.items():
            f.write(f"{i}\t{name}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="folder of en_ewt-ud-{train,dev,test}.conllu.gz",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    ap.add_argument("--prefix", default="ewt")
    ap.add_argument(
        "--splits",
        default="train,dev,test",
        help="comma-separated; the first builds the feature dictionary",
    )
    a = ap.parse_args(argv)
    splits = [s for s in a.splits.split(",") if s]
    if not splits:
        ap.error("--splits: at least one split")
    a.out.mkdir(parents=True, exist_ok=True)
    dictionary = {}
    try:
        for k, split in enumerate(splits):
            t = time.perf_counter()
            dst = a.out / f"{a.prefix}.{split}.hmm"
            n, w, dropped = convert(source_file(a.data, split), dst, dictionary, grow=k == 0)
            extra = (
                f", {len(dictionary)} features"
                if k == 0
                else f", {dropped} unseen feature occurrences dropped"
            )
            print(
                f"{dst}: {n} sentences, {w} words{extra} ({time.perf_counter() - t:.1f} s)",
                flush=True,
            )
    except (ConllError, OSError) as e:
        print(f"conllu_to_svmhmm: {e}", file=sys.stderr)
        return 1
    write_tables(a.out, a.prefix, dictionary)
    print(
        f"{a.out / (a.prefix + '.tags')}: tag numbers; "
        f"{a.out / (a.prefix + '.features')}: feature dictionary"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
