"""Benchmark sequence tagging (cp_learn --problem hmm) against SVMhmm V3.10 on UD English EWT.

Data: the SVM-hmm files of benchmarks/conllu_to_svmhmm.py (UPOS tags 1..17, binary word,
affix and shape features of the previous, current and next word); made in --data if absent.

1. compare: in one run, interleaved (--rounds times, medians reported), on the train split
   (first --quick-n sentences with --quick): `svm_hmm_learn -c C -e E` and
   `cp_learn --problem hmm -c C -e E -w W` for each W of --algorithms (SVMhmm's C
   convention: 1/2|w|^2 + (C/n) sum_i xi_i over n sentences). For each: whole-process wall
   and CPU time (file reading included), the runtime the tool prints, iterations, calls of
   the separation oracle (one Viterbi per sentence and call), the objective each tool prints
   and the objective recomputed here from the written model with an independent reader
   (scikit-learn's load_svmlight_file) and a numpy loss-augmented Viterbi (first-order
   transitions and order-0 emissions only, SVMhmm's defaults); then the test split
   classified by svm_hmm_classify and cp_classify, the token accuracy counted here from the
   prediction file against the gold tags, beside the `Average loss per token` each prints.
   Goal (issue 14): cp_learn's accuracy >= SVMhmm's in <= 0.5x its time; -w 4 fewer oracle
   calls than -w 3 at the same objective.
2. scale: cp_learn (-w --scale-w) training time against the number of training sentences
   (first N sentences of train, --sizes), with SVMhmm beside it unless --no-scale-svmhmm;
   least-squares log-log slopes of whole-process wall time and of the runtime the tools
   print (the paper's Figure 1, middle).

numba's compile cache is warmed (cp_learn and cp_classify on a tiny set) before timing.
SVMhmm is found through CPSVM_SVMSTRUCT_DIR (svm_hmm_learn, svm_hmm_classify) and skipped,
saying so, when it is unset. The 1-minute load average is recorded beside every run.
Tables are printed and written as TSV (compare.tsv, scale.tsv) and summary.txt in --out;
scale.png too when matplotlib is installed.

Usage: .venv/bin/python benchmarks/bench_hmm.py [--parts compare,scale] [--quick]
       [--data DIR] [--out DIR] [-c 5000] [-e 0.5] [--algorithms 3,4,9] [--rounds 1]
       [--sizes 1000,2000,4000,8000,12544] [--scale-w 9] [--no-scale-svmhmm]
       [--threads N] [--cap 1800]
"""

import argparse
import importlib.util
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import conllu_to_svmhmm  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WORK = Path(tempfile.gettempdir()) / "cpsvm-bench"
BIN = Path(sys.executable).parent
SAMPLE = REPO / "data" / "samples" / "ewt60.hmm.train"

FIELDS = (
    "part",
    "tool",
    "w",
    "round",
    "sentences",
    "tokens",
    "wall_s",
    "cpu_s",
    "runtime_s",
    "iterations",
    "oracle_calls",
    "pval",
    "dval",
    "objective",
    "acc_own",
    "acc_other",
    "loss_per_token_own",
    "classify_wall_s",
    "load_before",
    "load_after",
    "status",
)


# ---------------------------------------------------------------- processes


def run(cmd, cap, log):
    """Run cmd with stdout+stderr into log; (wall, cpu, exit status, text). At cap seconds
    the process gets SIGINT (cp_learn then writes its current model), 30 s later SIGKILL."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:
            rc = p.wait(timeout=cap)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            try:
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
            rc = f"cap{rc}"
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rc, Path(log).read_text(errors="replace")


def grab(pattern, text, cast=float):
    m = re.findall(pattern, text)
    return cast(m[-1]) if m else None


def learn_figures(text):
    return dict(
        iterations=grab(r"Number of iterations:\s*(\d+)", text, int),
        oracle_calls=grab(
            r"Number of calls to 'find_most_violated_constraint':\s*(\d+)", text, int
        ),
        pval=grab(r"Primal objective value: pval=([-+0-9.eE]+)", text),
        dval=grab(r"Dual objective value: dval=([-+0-9.eE]+)", text),
        runtime_s=grab(r"Runtime in cpu-seconds:\s*([0-9.]+)", text),
    )


def load1():
    return round(os.getloadavg()[0], 2)


# ---------------------------------------------------------------- data


def ensure_data(data):
    if not all((data / f"ewt.{s}.hmm").exists() for s in ("train", "test")):
        print(f"converting UD EWT into {data}", flush=True)
        if conllu_to_svmhmm.main(["--out", str(data)]) != 0:
            sys.exit("bench_hmm: conversion failed")


def first_sentences(src, dst, n):
    """Write the first n sentences of the SVM-hmm file src to dst; (sentences, tokens)."""
    seen, last, tokens = 0, None, 0
    with open(src) as f, open(dst, "w") as out:
        for line in f:
            qid = line.split(None, 2)[1]
            if qid != last:
                seen += 1
                last = qid
                if seen > n:
                    break
            out.write(line)
            tokens += 1
    return min(seen, n), tokens


class Split:
    """An SVM-hmm file read independently of cpsvm (scikit-learn's reader)."""

    def __init__(self, path=None, X=None, y=None, starts=None):
        if path is not None:
            X, y, qid = load_svmlight_file(
                str(path), zero_based=False, query_id=True, dtype=np.float64
            )
            X, y = X.tocsr(), y.astype(np.int64)
            starts = np.concatenate(([0], np.flatnonzero(np.diff(qid)) + 1)).astype(np.int64)
        self.X, self.y, self.starts = X, y, starts
        self.lengths = np.diff(np.concatenate((self.starts, [len(y)])))

    def head(self, n):
        """The first n sentences (as first_sentences writes them)."""
        if n >= self.n:
            return self
        end = int(self.starts[n])
        return Split(X=self.X[:end], y=self.y[:end], starts=self.starts[:n])

    @property
    def n(self):
        return len(self.starts)


def accuracy(pred_file, gold):
    try:
        pred = np.loadtxt(pred_file, dtype=np.int64, usecols=0, ndmin=1)
    except (OSError, ValueError):
        return None
    if len(pred) != len(gold):
        return None
    return float(np.mean(pred == gold))


# ---------------------------------------------------------------- objective


def read_hmm_model(path):
    """(header dict, dense w indexed by SVMhmm's feature numbers) of an SVM-HMM V3.10 model."""
    head, w = {}, None
    with open(path) as f:
        if not f.readline().startswith("SVM-HMM Version"):
            return None
        for _ in range(13):
            value, _, comment = f.readline().partition("#")
            head[comment.strip()] = value.strip()
        f.readline()  # threshold b
        K = int(head["number of classes"])
        F = int(head["number of emission features"])
        size = max(int(head["highest feature index"]), K + K * K + F * (K + 1)) + 1
        w = np.zeros(size)
        for line in f:
            body = line.split("#", 1)[0].split()
            if not body:
                continue
            alpha = float(body[0])
            for tok in body[1:]:
                i, v = tok.split(":")
                w[int(i)] += alpha * float(v)
    return head, w


def hmm_objective(model_path, split, C):
    """1/2|w|^2 + (C/n) sum_i max_y [Hamming(y_i, y) + s(x_i, y) - s(x_i, y_i)] for a
    first-order, order-0-emission model; None for other orders."""
    m = read_hmm_model(model_path)
    if m is None:
        return None
    head, w = m
    if head["HMM order of transitions"] != "1" or head["HMM order of emissions"] != "0":
        return None
    K = int(head["number of classes"])
    F = int(head["number of emission features"])
    # SVMhmm's layout: w[c + p*K] is the transition p -> c (tags 1..K), emissions of tag c
    # for feature f at w[f + base + F*c] with base = K + K*K + 1.
    tags = np.arange(1, K + 1)
    T = w[tags[None, :] + tags[:, None] * K]
    base = K + K * K + 1
    E = np.zeros((split.X.shape[1], K))
    rows = min(F, split.X.shape[1])
    for c in tags:
        E[:rows, c - 1] = w[base + F * c + 1 : base + F * c + 1 + rows]
    S = np.asarray(split.X @ E)  # token x tag scores
    y0 = split.y - 1
    if y0.max() >= K:
        return None
    gold = S[np.arange(len(y0)), y0]
    same = np.ones(len(y0), bool)
    same[split.starts] = False  # first token: no transition
    idx = np.flatnonzero(same)
    gold_sum = np.add.reduceat(gold, split.starts) + np.bincount(
        np.searchsorted(split.starts, idx, side="right") - 1,
        weights=T[y0[idx - 1], y0[idx]],
        minlength=split.n,
    )
    U = S + 1.0  # Hamming: +1 on wrong tags
    U[np.arange(len(y0)), y0] -= 1.0
    order = np.argsort(-split.lengths, kind="stable")  # longest first
    starts, lengths = split.starts[order], split.lengths[order]
    delta = U[starts].copy()
    best_in = np.empty_like(delta)
    step = np.empty_like(delta)
    for t in range(1, int(lengths.max())):
        m_t = int(np.searchsorted(-lengths, -t, side="left"))  # sentences longer than t
        d, b, s = delta[:m_t], best_in[:m_t], step[:m_t]
        np.add(d[:, :1], T[0], out=b)
        for p in range(1, K):  # max over the previous tag, without a (m, K, K) array
            np.add(d[:, p : p + 1], T[p], out=s)
            np.maximum(b, s, out=b)
        np.add(b, U[starts[:m_t] + t], out=d)
    best = np.empty(split.n)
    best[order] = delta.max(axis=1)
    xi = np.maximum(best - gold_sum, 0.0)
    return 0.5 * float(w @ w) + C * float(xi.mean())


# ---------------------------------------------------------------- one configuration


class Bench:
    def __init__(self, a):
        self.a = a
        self.out = a.out
        self.logs = a.out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        d = os.environ.get("CPSVM_SVMSTRUCT_DIR")
        self.svmhmm = None
        if d and (Path(d) / "svm_hmm_learn").exists() and (Path(d) / "svm_hmm_classify").exists():
            self.svmhmm = (str(Path(d) / "svm_hmm_learn"), str(Path(d) / "svm_hmm_classify"))
        self.cp_learn = shutil.which("cp_learn", path=str(BIN)) or str(REPO / "bin" / "cp_learn")
        self.cp_classify = shutil.which("cp_classify", path=str(BIN)) or str(
            REPO / "bin" / "cp_classify"
        )
        self.rows = []
        self._train = None

    def train_split(self):
        """The training sentences the parts use (only the first ones with --quick)."""
        if self._train is None:
            src = self.a.data / "ewt.train.hmm"
            if self.a.quick:
                src = self.out / f"ewt.train.first{self.a.most}.hmm"
                first_sentences(self.a.data / "ewt.train.hmm", src, self.a.most)
            self._train = Split(src)
        return self._train

    def learn_cmd(self, tool, w, train, model, trace):
        a = self.a
        if tool == "svmhmm":
            return [self.svmhmm[0], "-c", f"{a.c:g}", "-e", f"{a.e:g}", str(train), str(model)]
        cmd = [
            self.cp_learn,
            "--problem",
            "hmm",
            "-c",
            f"{a.c:g}",
            "-e",
            f"{a.e:g}",
            "-w",
            str(w),
            "-v",
            "1",
            "--trace",
            str(trace),
        ]
        if a.threads:
            cmd += ["--threads", str(a.threads)]
        return cmd + [str(train), str(model)]

    def classify(self, which, test, model, pred):
        exe = self.svmhmm[1] if which == "svmhmm" else self.cp_classify
        if exe is None:
            return None, None, None
        log = pred.with_suffix(".log")
        wall, _, rc, text = run([exe, str(test), str(model), str(pred)], self.a.cap, log)
        if rc != 0:
            return None, None, wall
        acc = accuracy(pred, self.test.y)
        return acc, grab(r"Average loss per token:\s*([0-9.]+)", text), wall

    def one(self, part, tool, w, rnd, train, split, tag, classify=True):
        name = f"{part}-{tool}{'' if w is None else '-w' + str(w)}-{tag}-r{rnd}"
        model = self.logs / f"{name}.model"
        trace = self.logs / f"{name}.trace.tsv"
        lb = load1()
        wall, cpu, rc, text = run(
            self.learn_cmd(tool, w, train, model, trace),
            self.a.cap,
            self.logs / f"{name}.learn.log",
        )
        row = dict(
            part=part,
            tool="svm_hmm_learn" if tool == "svmhmm" else "cp_learn",
            w="" if w is None else w,
            round=rnd,
            sentences=split.n,
            tokens=len(split.y),
            wall_s=wall,
            cpu_s=cpu,
            load_before=lb,
            load_after=load1(),
            status=rc,
        )
        row.update(learn_figures(text))
        if row["oracle_calls"] is None and trace.exists():
            lines = trace.read_text().splitlines()
            if len(lines) > 1:
                head, last = lines[0].split("\t"), lines[-1].split("\t")
                if "oracle_calls" in head:
                    row["oracle_calls"] = int(float(last[head.index("oracle_calls")]))
                if row["iterations"] is None and "iteration" in head:
                    row["iterations"] = int(float(last[head.index("iteration")]))
        ok = model.exists() and rc in (0, "cap130", 130)
        row["ok"] = ok
        if not ok:
            tail = " | ".join(text.strip().splitlines()[-2:])
            print(f"  {name}: exit {rc}: {tail}", flush=True)
        row["objective"] = hmm_objective(model, split, self.a.c) if ok else None
        if ok and classify:
            own = "svmhmm" if tool == "svmhmm" else "cp"
            other = "cp" if own == "svmhmm" else "svmhmm"
            acc, lpt, cwall = self.classify(
                own, self.a.data / "ewt.test.hmm", model, self.logs / f"{name}.{own}.pred"
            )
            row.update(acc_own=acc, loss_per_token_own=lpt, classify_wall_s=cwall)
            if other == "cp" or self.svmhmm:
                row["acc_other"] = self.classify(
                    other, self.a.data / "ewt.test.hmm", model, self.logs / f"{name}.{other}.pred"
                )[0]
        self.rows.append(row)
        print("  " + fmt_row(row), flush=True)
        return row

    def warm(self):
        """numba's cache: compile what the timed runs use on a tiny set first."""
        t = time.perf_counter()
        for w in sorted(set(self.a.algorithms) | {self.a.scale_w}):
            m = self.logs / f"warm-w{w}.model"
            _, _, rc, text = run(
                [self.cp_learn, "--problem", "hmm", "-c", "1", "-w", str(w), str(SAMPLE), str(m)],
                self.a.cap,
                self.logs / "warm.log",
            )
            if rc == 0:
                run(
                    [self.cp_classify, str(SAMPLE), str(m), str(self.logs / "warm.pred")],
                    self.a.cap,
                    self.logs / "warm.classify.log",
                )
            else:
                print(
                    f"warm-up: cp_learn -w {w} failed (exit {rc}): "
                    f"{text.strip().splitlines()[-1] if text.strip() else ''}"
                )
        print(f"warm-up (numba cache) {time.perf_counter() - t:.1f} s", flush=True)


def cell(v, spec):
    width = re.match(r"\d*", spec).group()
    if v is None or v == "":
        return "-".rjust(int(width or 0))
    return format(v, spec) if isinstance(v, (int, float)) else str(v)


def fmt_row(r):
    tool = r["tool"] + (f" -w {r['w']}" if r["w"] != "" else "")
    return (
        f"{tool:18s} n={r['sentences']:<6d} wall {cell(r['wall_s'], '8.2f')} s  "
        f"cpu {cell(r['cpu_s'], '8.2f')} s  iter {cell(r['iterations'], '5d')}  "
        f"calls {cell(r['oracle_calls'], '9d')}  pval {cell(r['pval'], '12.3f')}  "
        f"obj {cell(r['objective'], '12.3f')}  acc {cell(r.get('acc_own'), '.4f')}"
        f" (other {cell(r.get('acc_other'), '.4f')})  load {r['load_before']}"
    )


def write_tsv(path, rows):
    with open(path, "w") as f:
        f.write("\t".join(FIELDS) + "\n")
        for r in rows:
            f.write(
                "\t".join(
                    ""
                    if r.get(k) is None
                    else (f"{r[k]:.6g}" if isinstance(r[k], float) else str(r[k]))
                    for k in FIELDS
                )
                + "\n"
            )


def slope(ns, ts):
    ok = [(n, t) for n, t in zip(ns, ts) if t and t > 0]
    if len(ok) < 2:
        return None
    x, y = np.log([n for n, _ in ok]), np.log([t for _, t in ok])
    return float(np.polyfit(x, y, 1)[0])


def med(rows, key):
    v = [r[key] for r in rows if r["ok"] and isinstance(r.get(key), (int, float))]
    return statistics.median(v) if v else None


# ---------------------------------------------------------------- parts


def compare(b, summary):
    a = b.a
    train = a.data / "ewt.train.hmm"
    if a.quick:
        train = b.out / f"ewt.train.first{a.quick_n}.hmm"
        first_sentences(a.data / "ewt.train.hmm", train, a.quick_n)
    split = b.train_split().head(a.quick_n) if a.quick else b.train_split()
    configs = ([("svmhmm", None)] if b.svmhmm else []) + [("cp", w) for w in a.algorithms]
    print(
        f"\n== compare: {split.n} sentences, {len(split.y)} tokens, C={a.c:g}, e={a.e:g}"
        f"{'' if b.svmhmm else ' (SVMhmm skipped: CPSVM_SVMSTRUCT_DIR unset)'}",
        flush=True,
    )
    for rnd in range(1, a.rounds + 1):
        for tool, w in configs:
            b.one("compare", tool, w, rnd, train, split, f"n{split.n}")
    rows = [r for r in b.rows if r["part"] == "compare"]
    by = {}
    for r in rows:
        by.setdefault((r["tool"], r["w"]), []).append(r)
    print(
        f"\n{'medians':18s} {'wall s':>8s} {'cpu s':>8s} {'runtime':>8s} {'iter':>6s} "
        f"{'calls':>9s} {'objective':>13s} {'acc':>7s} {'t/t_ref':>8s} {'cpu/ref':>8s} "
        f"{'obj/ref':>8s}"
    )
    ref = by.get(("svm_hmm_learn", ""))
    ref_wall = med(ref, "wall_s") if ref else None
    ref_cpu = med(ref, "cpu_s") if ref else None
    ref_obj = med(ref, "objective") if ref else None
    ref_acc = med(ref, "acc_own") if ref else None
    for (tool, w), rs in by.items():
        wall, obj, acc = med(rs, "wall_s"), med(rs, "objective"), med(rs, "acc_own")
        ratio = wall / ref_wall if (ref_wall and wall) else None
        cpu = med(rs, "cpu_s")
        cratio = cpu / ref_cpu if (ref_cpu and cpu) else None
        oratio = obj / ref_obj if (ref_obj and obj) else None
        label = tool + (f" -w {w}" if w != "" else "")
        print(
            f"{label:18s} {cell(wall, '8.2f')} {cell(med(rs, 'cpu_s'), '8.2f')} "
            f"{cell(med(rs, 'runtime_s'), '8.2f')} {cell(med(rs, 'iterations'), '6.0f')} "
            f"{cell(med(rs, 'oracle_calls'), '9.0f')} {cell(obj, '13.3f')} "
            f"{cell(acc, '7.4f')} {cell(ratio, '8.3f')} {cell(cratio, '8.3f')} "
            f"{cell(oratio, '8.5f')}"
        )
        if tool == "cp_learn" and ref:
            goal = (
                acc is not None
                and ref_acc is not None
                and acc >= ref_acc
                and ratio is not None
                and ratio <= 0.5
            )
            summary.append(
                f"compare: cp_learn -w {w}: wall {cell(wall, '.2f')} s = "
                f"{cell(ratio, '.3f')}x SVMhmm's {cell(ref_wall, '.2f')} s (CPU "
                f"{cell(cratio, '.3f')}x); token "
                f"accuracy {cell(acc, '.4f')} vs {cell(ref_acc, '.4f')}; objective "
                f"{cell(oratio, '.5f')}x SVMhmm's; goal (acc >= ref, time <= 0.5x) "
                f"{'met' if goal else 'NOT met'}"
            )
    if ref:
        summary.insert(
            0,
            f"compare: svm_hmm_learn -c {a.c:g} -e {a.e:g} on {split.n} "
            f"sentences: wall {cell(ref_wall, '.2f')} s, token accuracy "
            f"{cell(ref_acc, '.4f')}, objective {cell(ref_obj, '.3f')}, "
            f"load before {ref[0]['load_before']}",
        )
    w3, w4 = by.get(("cp_learn", 3)), by.get(("cp_learn", 4))
    if w3 and w4:
        c3, c4 = med(w3, "oracle_calls"), med(w4, "oracle_calls")
        o3, o4 = med(w3, "objective"), med(w4, "objective")
        if c3 and c4 and o3 and o4:
            summary.append(
                f"compare: -w 4 / -w 3 oracle calls {c4:.0f} / {c3:.0f} = "
                f"{c4 / c3:.3f}; objectives {o4:.3f} vs {o3:.3f} (rel. diff "
                f"{(o4 - o3) / o3:+.2e})"
            )
    write_tsv(b.out / "compare.tsv", rows)


def scale(b, summary):
    a = b.a
    sizes = a.sizes
    tools = [("cp", a.scale_w)] + ([("svmhmm", None)] if (b.svmhmm and a.scale_svmhmm) else [])
    print(
        f"\n== scale: sizes {','.join(map(str, sizes))}, C={a.c:g}, e={a.e:g}, "
        f"cp_learn -w {a.scale_w}"
        f"{'' if b.svmhmm else ' (SVMhmm skipped: CPSVM_SVMSTRUCT_DIR unset)'}",
        flush=True,
    )
    done = {
        (r["tool"], r["w"], r["sentences"]): r
        for r in b.rows
        if r["part"] == "compare" and r["round"] == 1
    }
    for n in sizes:
        train = b.out / f"ewt.train.first{n}.hmm"
        got, _ = first_sentences(a.data / "ewt.train.hmm", train, n)
        split = b.train_split().head(n)
        for tool, w in tools:
            key = (
                "svm_hmm_learn" if tool == "svmhmm" else "cp_learn",
                "" if w is None else w,
                split.n,
            )
            if key in done:  # the same run as in compare: not repeated
                row = dict(done[key], part="scale")
                b.rows.append(row)
                print("  " + fmt_row(row) + "  (compare's run)", flush=True)
                continue
            b.one("scale", tool, w, 1, train, split, f"n{got}", classify=not a.no_classify)
    rows = [r for r in b.rows if r["part"] == "scale"]
    write_tsv(b.out / "scale.tsv", rows)
    for tool in ("cp_learn", "svm_hmm_learn"):
        rs = [r for r in rows if r["tool"] == tool and r["ok"]]
        if not rs:
            continue
        ns = [r["sentences"] for r in rs]
        s_wall = slope(ns, [r["wall_s"] for r in rs])
        s_run = slope(ns, [r["runtime_s"] for r in rs])
        s_cpu = slope(ns, [r["cpu_s"] for r in rs])
        summary.append(
            f"scale: {tool} log-log slope of time vs sentences "
            f"({ns[0]}..{ns[-1]}): wall {cell(s_wall, '.3f')}, "
            f"cpu {cell(s_cpu, '.3f')}, printed runtime {cell(s_run, '.3f')}"
        )
    if importlib.util.find_spec("matplotlib") is None:  # optional, never a dependency
        print("scale.png not drawn: matplotlib is not installed")
        return
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for tool in ("cp_learn", "svm_hmm_learn"):
        rs = [r for r in rows if r["tool"] == tool and r["ok"]]
        if rs:
            ax.loglog([r["sentences"] for r in rs], [r["wall_s"] for r in rs], "o-", label=tool)
    ax.set_xlabel("training sentences")
    ax.set_ylabel("training time, whole process (s)")
    ax.legend()
    fig.savefig(b.out / "scale.png", dpi=120, bbox_inches="tight")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="compare,scale")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="compare on the first --quick-n sentences, scale on --quick-sizes",
    )
    ap.add_argument("--quick-n", type=int, default=1000)
    ap.add_argument("--quick-sizes", default="250,500,1000,2000")
    ap.add_argument(
        "--data",
        type=Path,
        default=WORK / "hmm",
        help="folder of ewt.{train,test}.hmm (made there if absent)",
    )
    ap.add_argument("--out", type=Path, default=WORK / "hmm-results")
    ap.add_argument("-c", type=float, default=5000.0)
    ap.add_argument("-e", type=float, default=0.5)
    ap.add_argument("--algorithms", default="3,4,9", help="cp_learn -w values to compare")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--sizes", default="1000,2000,4000,8000,12544")
    ap.add_argument(
        "--scale-w", type=int, default=9, help="cp_learn -w of the scale part (9: its default)"
    )
    ap.add_argument("--no-scale-svmhmm", dest="scale_svmhmm", action="store_false")
    ap.add_argument("--no-classify", action="store_true", help="scale: skip test accuracy")
    ap.add_argument("--threads", type=int, default=0, help="cp_learn --threads (0: its default)")
    ap.add_argument("--cap", type=float, default=1800.0, help="seconds per process")
    a = ap.parse_args()
    a.algorithms = [int(w) for w in a.algorithms.split(",") if w]
    a.sizes = [int(n) for n in (a.quick_sizes if a.quick else a.sizes).split(",") if n]
    a.most = max(a.sizes + [a.quick_n])
    parts = set(a.parts.split(","))
    if not parts <= {"compare", "scale"}:
        ap.error("--parts: compare and/or scale")
    if a.out.resolve().is_relative_to(REPO):
        ap.error("--out: expected a folder outside the repository")
    a.out.mkdir(parents=True, exist_ok=True)
    ensure_data(a.data)
    b = Bench(a)
    print(
        f"bench_hmm {time.strftime('%Y-%m-%d %H:%M:%S %Z')}: load {os.getloadavg()}, "
        f"{os.cpu_count()} cores; cp_learn {b.cp_learn}; SVMhmm "
        f"{b.svmhmm[0] if b.svmhmm else 'skipped (CPSVM_SVMSTRUCT_DIR unset)'}",
        flush=True,
    )
    b.test = Split(a.data / "ewt.test.hmm")
    b.warm()
    summary = []
    if "compare" in parts:
        compare(b, summary)
    if "scale" in parts:
        scale(b, summary)
    summary.append(f"load average at the end: {os.getloadavg()}")
    print("\n" + "\n".join(summary))
    (a.out / "summary.txt").write_text("\n".join(summary) + "\n")
    print(f"\nTSV and logs in {a.out}")


if __name__ == "__main__":
    main()
