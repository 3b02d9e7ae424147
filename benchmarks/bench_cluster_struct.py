"""cp_learn's HMM tagging on a Dask cluster against the same command on one machine
(issue 48's goal): ``cp_learn --scheduler local:2 -c 5000 -e 0.5`` on the UD EWT
training set (converted by conllu_to_svmhmm.py) split into 4 shard files at sentence
boundaries, against ``cp_learn -c 5000 -e 0.5`` on the whole file (its default -w, and
-w 3, the method the cluster runs); whole-process wall times, interleaved --repeats
times; the token accuracy of each model on the EWT test set (cp_classify); the models
of local:1, local:2 and of one file on local:2 compared byte for byte.

Usage: .venv/bin/python benchmarks/bench_cluster_struct.py [--data DIR] [--out DIR]
           [-c C] [-e E] [--repeats R]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cpsvm.conventions import TOKEN_LOSS

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def convert(data: Path, out: Path) -> tuple[Path, Path]:
    train, test = out / "ewt.train.hmm", out / "ewt.test.hmm"
    if not train.exists() or not test.exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "conllu_to_svmhmm.py"), "--data",
             str(data), "--out", str(out), "--prefix", "ewt", "--splits", "train,test"],
            check=True,
        )  # fmt: skip
    return train, test


def split(train: Path, parts: int) -> str:
    """``parts`` shard files of whole sentences (a qid's lines never split)."""
    lines = train.read_bytes().splitlines(keepends=True)
    qid = [re.search(rb"qid:(\d+)", line) for line in lines]
    cuts = [0]
    for k in range(1, parts):
        i = len(lines) * k // parts
        while i < len(lines) and qid[i] and qid[i - 1] and qid[i].group(1) == qid[i - 1].group(1):
            i += 1
        cuts.append(i)
    cuts.append(len(lines))
    for k in range(parts):
        (train.parent / f"ewt-part-{k}.hmm").write_bytes(b"".join(lines[cuts[k] : cuts[k + 1]]))
    return str(train.parent / "ewt-part-*.hmm")


def run(args, model):
    t0 = time.perf_counter()
    done = subprocess.run([str(BIN / "cp_learn"), *args, model], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"cp_learn {' '.join(args)}: {done.stderr.strip()}")
    pval = re.search(r"pval=([-0-9.e+]+)", done.stdout)
    its = re.search(r"Number of iterations: (\d+)", done.stdout)
    return seconds, float(pval.group(1)), int(its.group(1))


def accuracy(test, model, out):
    """Token accuracy (%): cp_classify prints an hmm model's "Average loss per token"
    (Hamming: TOKEN_LOSS a wrong tag), not an accuracy line."""
    done = subprocess.run(
        [str(BIN / "cp_classify"), str(test), model, str(out / "predictions")],
        capture_output=True,
        text=True,
        check=True,
    )
    m = re.search(r"Average loss per token: ([0-9.]+)", done.stdout)
    return 100.0 * (1.0 - float(m.group(1)) / TOKEN_LOSS) if m else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/work/shared/data/ud_en_ewt")
    parser.add_argument("--out", default="/work/tools/data/ewt-hmm")
    parser.add_argument("-c", default="5000")
    parser.add_argument("-e", default="0.5")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--no-extra", action="store_true", help="skip the local:1 and one-file comparisons"
    )
    a = parser.parse_args()
    out = Path(a.out)
    train, test = convert(Path(a.data), out)
    shards = split(train, 4)
    common = ["-c", a.c, "-e", a.e]
    configs = {
        "local:2, 4 shards": ["--scheduler", "local:2", *common, shards],
        "one machine -w 3": common + ["-w", "3", str(train)],
        "one machine (default -w)": common + [str(train)],
    }
    times = {name: [] for name in configs}
    figures = {}
    for _ in range(a.repeats):
        for name, args in configs.items():
            model = str(out / f"model-{len(figures)}-{abs(hash(name))}")
            seconds, pval, its = run(args, model)
            times[name].append(seconds)
            figures[name] = (pval, its, model)
            print(f"  ({name}: {seconds:.2f} s, pval {pval:.4f}, {its} iterations)", flush=True)
    extra = {
        "local:1, 4 shards": ["--scheduler", "local:1", *common, shards],
        "local:2, one file": ["--scheduler", "local:2", *common, str(train)],
    }
    if a.no_extra:
        extra = {}
    for name, args in extra.items():
        model = str(out / f"model-extra-{abs(hash(name))}")
        seconds, pval, its = run(args, model)
        times[name] = [seconds]
        figures[name] = (pval, its, model)
        print(f"  ({name}: {seconds:.2f} s, pval {pval:.4f}, {its} iterations)", flush=True)
    reference = statistics.median(times["one machine (default -w)"])
    reference_w3 = statistics.median(times["one machine -w 3"])
    print(f"EWT train: {train} ({train.stat().st_size / 1e6:.1f} MB), -c {a.c} -e {a.e}")
    for name in times:
        pval, its, model = figures[name]
        t = statistics.median(times[name])
        print(
            f"{name:28s} {t:7.2f} s  x{t / reference:5.2f} (x{t / reference_w3:5.2f} of -w 3)  "
            f"pval {pval:.4f}  "
            f"{its:4d} iterations  token accuracy {accuracy(test, model, out):.2f}%"
        )
    base = Path(figures["local:2, 4 shards"][2]).read_bytes()
    for name in extra:
        same = Path(figures[name][2]).read_bytes() == base
        print(f"model of {name} == local:2, 4 shards: {same}")


if __name__ == "__main__":
    main()
