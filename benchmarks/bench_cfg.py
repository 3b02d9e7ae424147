"""Benchmark parsing (cp_learn --problem cfg) on the Penn Treebank sample: the structural
SVM against the maximum-likelihood PCFG, the constraint cache, threads, 1-slack against
n-slack.

Data: ../shared/data/ptb_sample (--ptb, or $CPSVM_PTB_DIR), files wsj_0001-wsj_0159 for training and
wsj_0160-wsj_0199 for testing, concatenated into --out (never into the repository);
sentences of at most --max-length words (15, as the paper) in both.

0. round trip: every tree of the sample (all lengths) preprocessed (function tags and
   -NONE- removed, chains joined, Markovised binarisation) and debinarised must give the
   tree with function tags and -NONE- removed back; reported as a count, for each
   --unary/--markov setting checked.
1. accuracy: `cp_learn --baseline pcfg` and `cp_learn -c C -e E [-l L] --features F` for
   each --markov of --markovs, C of --cs, L of --losses ("default": no -l) and F of
   --feature-sets (spans, the default, and rules, SVMcfg's rule counts), all classified
   by cp_classify on the test file: labelled F1 and exact match as cp_classify prints
   them (evalb's conventions), F1 minus the PCFG's of the same --markov, training wall
   time (and its ratio to --features rules at the same settings, the runs one after the
   other), iterations, CKY calls and the oracle's share of the time as cp_learn prints
   them. Goal: the defaults (--features spans, -l 1, --markov 0) at least 1.5 points of
   F1 above the PCFG.
2. cache: -w 3 against -w 4 at the same C, E (loss --cache-loss): iterations, CKY calls,
   primal objective, time. Goal: -w 4 several times fewer CKY calls at the same
   objective (the objectives agree within C*E, the guarantee of both).
3. n-slack: -w 0 (the paper's Table 2) beside the 1-slack runs of 2.
4. threads: -w 3 (whose time is nearly all CKY; -w 4's is mostly the cache's Python)
   with --threads 1 and 2, interleaved (--rounds pairs), wall-time ratio.
   The machine may be shared: ratios within one run, never absolute times across runs.
5. select (not run by default): how the defaults were chosen, without the test files:
   4-fold cross-validation over the training files (dev folds wsj_0001-0040, 0041-0080,
   0081-0119, 0120-0159, each model trained on the other three), `--baseline pcfg` and
   `-c C -e E [-l L] --features F` for the first C of --cs and each --markov, L, F as
   in 1; F1 and exact match pooled over the four dev folds (brackets summed).

Usage: .venv/bin/python benchmarks/bench_cfg.py [--ptb DIR] [--out DIR] [--cs 20000]
       [-e 0.1] [--losses default,0] [--feature-sets spans,rules] [--markovs 0,1]
       [--cache-loss 0] [--cache-c 10000] [--cache-e 1] [--rounds 2]
       [--parts roundtrip,accuracy,cache,threads,select]
"""

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO))


def default_ptb():
    """$CPSVM_PTB_DIR, else ../shared/data/ptb_sample beside the checkout (or beside its
    parent, for a worktree)."""
    if os.environ.get("CPSVM_PTB_DIR"):
        return Path(os.environ["CPSVM_PTB_DIR"])
    for up in (REPO.parent, REPO.parent.parent):
        if (up / "shared" / "data" / "ptb_sample").is_dir():
            return up / "shared" / "data" / "ptb_sample"
    return REPO.parent / "shared" / "data" / "ptb_sample"


def load():
    return os.getloadavg()[0]


def run(cmd):
    t = time.perf_counter()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode:
        sys.exit(f"failed ({p.returncode}): {' '.join(map(str, cmd))}\n{p.stderr}")
    return wall, p.stdout + p.stderr


def grab(pattern, text, kind=float):
    m = re.search(pattern, text)
    return kind(m.group(1)) if m else None


def learn_figures(text):
    return dict(
        iterations=grab(r"Number of iterations: (\d+)", text, int),
        cky=grab(r"find_most_violated_constraint': (\d+)", text, int),
        pval=grab(r"pval=([-\d.e+]+)", text),
        runtime=grab(r"Runtime in cpu-seconds: ([\d.]+)", text),
        oracle_share=grab(r"([\d.]+)% for the oracle", text),
    )


def classify(model, test, max_length):
    _, text = run(
        [
            BIN / "cp_classify",
            "-v",
            "1",
            "--max-length",
            max_length,
            test,
            model,
            Path(model).with_suffix(".parses"),
        ]
    )
    counts = re.search(r"\((\d+) matched, (\d+) predicted, (\d+) gold\)", text)
    return dict(
        f1=grab(r"F1 ([\d.]+)%", text),
        exact=grab(
            r"Exact match on test set: "
            r"([\d.]+)%",
            text,
        ),
        precision=grab(r"precision ([\d.]+)%", text),
        recall=grab(r"recall ([\d.]+)%", text),
        counts=[int(v) for v in counts.groups()]
        + [
            grab(r"\((\d+) of \d+ sentences\)", text, int),
            grab(r"of (\d+) sentences\)", text, int),
        ],
    )


def concatenate(ptb, path, ranges):
    """The wsj_0NNN.mrg files of the (first, last) number ranges, one after another."""
    names = sorted(ptb.glob("wsj_0*.mrg"))
    chosen = [p for p in names if any(lo <= int(p.stem[4:]) <= hi for lo, hi in ranges)]
    path.write_bytes(b"".join(p.read_bytes() for p in chosen))
    return path


def files(ptb, out):
    return (
        concatenate(ptb, out / "ptb.train.mrg", [(1, 159)]),
        concatenate(ptb, out / "ptb.test.mrg", [(160, 199)]),
    )


DEV_FOLDS = ((1, 40), (41, 80), (81, 119), (120, 159))


def select(args, ml):
    """Part 5: the settings of part 1 by 4-fold cross-validation on the training files."""
    c = args.cs.split(",")[0]
    names = ", ".join(f"{lo:04d}-{hi:04d}" for lo, hi in DEV_FOLDS)
    print(
        f"\n== select: 4-fold cross-validation over wsj_0001-0159 (dev folds {names}), "
        f"-c {c} -e {args.e}, F1 and exact match pooled over the dev folds"
    )
    print("model\tmarkov\tF1\texact\tF1_per_fold\tload")
    folds = []
    for k, (lo, hi) in enumerate(DEV_FOLDS):
        rest = [(a, b) for a, b in DEV_FOLDS if (a, b) != (lo, hi)]
        folds.append(
            (
                concatenate(args.ptb, args.out / f"fold{k}.train.mrg", rest),
                concatenate(args.ptb, args.out / f"fold{k}.dev.mrg", [(lo, hi)]),
            )
        )
    settings = [("pcfg", ["--baseline", "pcfg"])]
    for loss in args.losses.split(","):
        for features in args.feature_sets.split(","):
            flags = ["-c", c, "-e", args.e] + ([] if loss == "default" else ["-l", loss])
            settings.append(
                (f"svm {' '.join(flags)} --features {features}", flags + ["--features", features])
            )
    for markov in args.markovs.split(","):
        for name, flags in settings:
            total, per_fold = [0, 0, 0, 0, 0], []
            for k, (train, dev) in enumerate(folds):
                model = args.out / f"fold{k}.model"
                run(
                    [
                        BIN / "cp_learn",
                        "-v",
                        "0",
                        *flags,
                        "--markov",
                        markov,
                        "--max-length",
                        ml,
                        train,
                        model,
                    ]
                )
                f = classify(model, dev, ml)
                total = [a + b for a, b in zip(total, f["counts"])]
                per_fold.append(f"{f['f1']:.2f}")
            matched, predicted, gold, exact, n = total
            p, r = matched / predicted, matched / gold
            print(
                f"{name}\t{markov}\t{200 * p * r / (p + r):.2f}\t{100 * exact / n:.2f}\t"
                f"{' '.join(per_fold)}\t{load():.1f}"
            )


def round_trip(ptb):
    from cpsvm.decoding.trees import (
        TreeOptions,
        debinarise,
        drop_none,
        format_tree,
        preprocess,
        strip_functions,
        with_root,
    )
    from cpsvm.io.trees import parse_trees

    trees = []
    for p in sorted(ptb.glob("wsj_0*.mrg")):
        trees += parse_trees(p.read_bytes(), str(p))
    for unary, markov in ((0, 1), (0, 0), (0, -1), (2, 1)):
        options = TreeOptions(unary=unary, markov=markov)
        same = 0
        for tree in trees:
            top = preprocess(tree, options)
            expected = drop_none(strip_functions(tree))
            back = with_root(debinarise(top)) if top is not None else None
            same += (back is None and expected is None) or (
                back is not None and format_tree(back) == format_tree(expected)
            )
        print(
            f"round trip --unary {unary} --markov {markov}: {same} of {len(trees)} trees "
            "give their tree back"
        )


def main():
    sys.stdout.reconfigure(line_buffering=True)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ptb", type=Path, default=default_ptb())
    ap.add_argument("--out", type=Path, default=Path("/tmp/cpsvm-bench-cfg"))
    ap.add_argument("--max-length", default="15")
    ap.add_argument("--cs", default="20000")
    ap.add_argument("-e", default="0.1")
    ap.add_argument("--losses", default="default,0")
    ap.add_argument("--feature-sets", default="spans,rules")
    ap.add_argument("--markovs", default="0,1")
    ap.add_argument("--cache-loss", default="0")
    ap.add_argument("--cache-c", default="10000")
    ap.add_argument("--cache-e", default="1")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--parts", default="roundtrip,accuracy,cache,threads")
    args = ap.parse_args()
    parts = args.parts.split(",")
    if not args.ptb.is_dir():
        sys.exit(f"no Penn Treebank sample at {args.ptb} (--ptb)")
    args.out.mkdir(parents=True, exist_ok=True)
    train, test = files(args.ptb, args.out)
    ml = args.max_length
    print(
        f"train {train.name}: wsj_0001-0159, test {test.name}: wsj_0160-0199, sentences "
        f"<= {ml} words; load average {load():.2f} (the machine may be shared)"
    )
    # numba's cache, warmed on the training file (a 1-iteration run)
    run(
        [
            BIN / "cp_learn",
            "-v",
            "0",
            "-c",
            "1",
            "-#",
            "1",
            "--max-length",
            ml,
            train,
            args.out / "warm.model",
        ]
    )
    if "roundtrip" in parts:
        round_trip(args.ptb)

    if "accuracy" in parts:
        print("\n== accuracy (test F1 and exact match by cp_classify)")
        print(
            "model\tmarkov\tF1\texact\tP\tR\tF1-pcfg\ttrain_wall_s\t/rules\titerations\t"
            "CKY_calls\toracle_share%\tload"
        )
        for markov in args.markovs.split(","):
            pcfg = args.out / f"pcfg.m{markov}.model"
            wall, _ = run(
                [
                    BIN / "cp_learn",
                    "--baseline",
                    "pcfg",
                    "--markov",
                    markov,
                    "--max-length",
                    ml,
                    train,
                    pcfg,
                ]
            )
            base = classify(pcfg, test, ml)
            print(
                f"pcfg\t{markov}\t{base['f1']}\t{base['exact']}\t{base['precision']}\t"
                f"{base['recall']}\t0\t{wall:.1f}\t-\t-\t-\t-\t{load():.1f}"
            )
            for c in args.cs.split(","):
                for loss in args.losses.split(","):
                    walls = {}
                    # rules first: the others' time is given as a ratio to its
                    for features in sorted(
                        args.feature_sets.split(","), key=lambda name: name != "rules"
                    ):
                        svm = args.out / f"svm.m{markov}.c{c}.l{loss}.{features}.model"
                        flags = ["-c", c, "-e", args.e] + (
                            [] if loss == "default" else ["-l", loss]
                        )
                        wall, text = run(
                            [
                                BIN / "cp_learn",
                                *flags,
                                "--features",
                                features,
                                "--markov",
                                markov,
                                "--max-length",
                                ml,
                                train,
                                svm,
                            ]
                        )
                        walls[features] = wall
                        g, f = learn_figures(text), classify(svm, test, ml)
                        ratio = f"{wall / walls['rules']:.2f}" if "rules" in walls else "-"
                        print(
                            f"svm {' '.join(flags)} --features {features}\t{markov}\t"
                            f"{f['f1']}\t{f['exact']}\t{f['precision']}\t{f['recall']}\t"
                            f"{f['f1'] - base['f1']:+.2f}\t{wall:.1f}\t{ratio}\t"
                            f"{g['iterations']}\t{g['cky']}\t{g['oracle_share']}\t"
                            f"{load():.1f}"
                        )

    if "select" in parts:
        select(args, ml)

    if "cache" in parts:
        print(
            f"\n== -w 3 / -w 4 / -w 0 at -c {args.cache_c} -e {args.cache_e} -l "
            f"{args.cache_loss} (load {load():.2f})"
        )
        print("w\titerations\tCKY_calls\tpval\ttrain_wall_s\toracle_share%\ttest_F1")
        rows = {}
        for w in ("4", "3", "0"):
            model = args.out / f"w{w}.model"
            wall, text = run(
                [
                    BIN / "cp_learn",
                    "-c",
                    args.cache_c,
                    "-e",
                    args.cache_e,
                    "-l",
                    args.cache_loss,
                    "-w",
                    w,
                    "--max-length",
                    ml,
                    train,
                    model,
                ]
            )
            g, f = learn_figures(text), classify(model, test, ml)
            rows[w] = (g, wall)
            print(
                f"{w}\t{g['iterations']}\t{g['cky']}\t{g['pval']:.4f}\t{wall:.1f}\t"
                f"{g['oracle_share']}\t{f['f1']}"
            )
        g3, g4 = rows["3"][0], rows["4"][0]
        print(
            f"-w 3 / -w 4 CKY calls: {g3['cky'] / g4['cky']:.2f}x; objectives differ by "
            f"{abs(g3['pval'] - g4['pval']):.4f} (C*eps = "
            f"{float(args.cache_c) * float(args.cache_e):g}); time ratio "
            f"{rows['3'][1] / rows['4'][1]:.2f}"
        )
        g0 = rows["0"][0]
        print(
            f"-w 0 (n-slack) / -w 3 (1-slack): iterations (passes vs cuts) "
            f"{g0['iterations']} vs {g3['iterations']}, CKY calls "
            f"{g0['cky'] / g3['cky']:.2f}x, time {rows['0'][1] / rows['3'][1]:.2f}x"
        )

    if "threads" in parts:
        print(
            f"\n== --threads 1 vs 2, -w 3 -c {args.cache_c} -e {args.cache_e} -l "
            f"{args.cache_loss}, interleaved, {args.rounds} rounds"
        )
        ratios = []
        for r in range(args.rounds):
            times = {}
            for threads in ("1", "2") if r % 2 == 0 else ("2", "1"):
                wall, text = run(
                    [
                        BIN / "cp_learn",
                        "--threads",
                        threads,
                        "-c",
                        args.cache_c,
                        "-e",
                        args.cache_e,
                        "-l",
                        args.cache_loss,
                        "-w",
                        "3",
                        "--max-length",
                        ml,
                        train,
                        args.out / "t.model",
                    ]
                )
                times[threads] = (wall, learn_figures(text)["runtime"])
            ratios.append(times["1"][0] / times["2"][0])
            print(
                f"round {r + 1}: wall 1 thread {times['1'][0]:.1f} s, 2 threads "
                f"{times['2'][0]:.1f} s, speedup {ratios[-1]:.2f}x (load {load():.2f})"
            )
        print(f"median speedup of --threads 2: {sorted(ratios)[len(ratios) // 2]:.2f}x")


if __name__ == "__main__":
    main()
