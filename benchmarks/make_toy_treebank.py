"""Write a small synthetic treebank (data/samples/toy.train.mrg, toy.test.mrg) for the
README's quick start and `make demo`: sentences drawn from a hand-written probabilistic
grammar with Penn-Treebank-like labels, function tags (NP-SBJ, PP-TMP, ADVP-MNR),
-NONE- elements (a deleted complementiser), unary chains and punctuation, so that every
preprocessing step of cp_learn --problem cfg has something to do. Prepositional phrases
attach to a noun or to the verb, so the tags alone leave the parser real choices.

Deterministic (numpy Generator, --seed). Usage:
    .venv/bin/python benchmarks/make_toy_treebank.py [--train 300] [--test 100] [--seed 0]
"""

import argparse
from pathlib import Path

import numpy as np

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"

WORDS = {
    "DT": ["the", "a", "every", "this"],
    "JJ": ["old", "red", "quiet", "large", "new"],
    "NN": ["dog", "park", "man", "report", "city", "market", "house"],
    "NNS": ["dogs", "reports", "prices", "people"],
    "NNP": ["Ann", "Boston", "Smith"],
    "PRP": ["she", "it", "they"],
    "VBD": ["saw", "left", "said", "found", "sold"],
    "VB": ["see", "leave", "sell"],
    "MD": ["will", "may"],
    "IN": ["in", "with", "near", "after", "that"],
    "RB": ["quickly", "again", "slowly"],
    "CC": ["and", "but"],
}

# label -> [(probability, children)]; a child is a tag (terminal) or a label
RULES = {
    "S": [
        (0.7, ["NP-SBJ", "VP", "."]),
        (0.15, ["PP-TMP", ",", "NP-SBJ", "VP", "."]),
        (0.15, ["NP-SBJ", "VP", "CC", "VP", "."]),
    ],
    "S-IN": [(1.0, ["NP-SBJ", "VP"])],
    "NP-SBJ": [
        (0.35, ["DT", "NN"]),
        (0.2, ["PRP"]),
        (0.15, ["NNP"]),
        (0.15, ["DT", "JJ", "NN"]),
        (0.15, ["NP", "PP"]),
    ],
    "NP": [
        (0.35, ["DT", "NN"]),
        (0.15, ["DT", "JJ", "NN"]),
        (0.15, ["NNS"]),
        (0.1, ["NNP"]),
        (0.25, ["NP", "PP"]),
    ],
    "VP": [
        (0.3, ["VBD", "NP"]),
        (0.2, ["VBD", "NP", "PP"]),
        (0.1, ["VBD"]),
        (0.15, ["VBD", "SBAR"]),
        (0.1, ["MD", "VP-INF"]),
        (0.15, ["VBD", "NP", "ADVP-MNR"]),
    ],
    "VP-INF": [(0.6, ["VB", "NP"]), (0.4, ["VB"])],
    "PP": [(1.0, ["IN", "NP"])],
    "PP-TMP": [(1.0, ["IN", "NP"])],
    "SBAR": [(0.5, ["IN", "S-IN"]), (0.5, ["-NONE-", "S-IN"])],
    "ADVP-MNR": [(1.0, ["RB"])],
}
LABEL = {"S-IN": "S", "VP-INF": "VP"}  # grammar-internal names as written
RECURSIVE = {"NP": ["NP", "PP"], "VP": ["VBD", "SBAR"]}


def grow(label, rng, depth):
    if label in (".", ","):
        return f"({label} {label})"
    if label == "-NONE-":
        return "(-NONE- 0)"
    if label in WORDS:
        words = WORDS[label]
        return f"({label} {words[rng.integers(len(words))]})"
    choices = RULES[label]
    if depth >= 4:  # keep the trees short: no more recursion this deep
        choices = [
            c
            for c in choices
            if c[1] != RECURSIVE.get(label) and "SBAR" not in c[1] and "NP" not in c[1][:1]
        ] or choices[:1]
    p = np.array([c[0] for c in choices])
    children = choices[rng.choice(len(choices), p=p / p.sum())][1]
    inner = " ".join(grow(c, rng, depth + 1) for c in children)
    name = LABEL.get(label, label)
    if name == "NP" and len(children) == 1 and children[0] == "NNS" and rng.random() < 0.3:
        return f"(NP (NP {inner}))"  # a unary chain NP over NP
    return f"({name} {inner})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=300)
    ap.add_argument("--test", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=SAMPLES)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    for name, n in (("toy.train.mrg", args.train), ("toy.test.mrg", args.test)):
        lines = [f"( {grow('S', rng, 0)} )" for _ in range(n)]
        (args.out / name).write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out / name}: {n} trees")


if __name__ == "__main__":
    main()
