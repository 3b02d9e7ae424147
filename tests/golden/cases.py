"""The golden runs: commands whose output files must stay byte-identical across a
refactor (model files, prediction files) and whose printed output must stay the same
once the figures that depend on the clock are masked.

Each case is (name, console script, arguments). ``{samples}`` is data/samples,
``{fixtures}`` tests/fixtures and ``{out}`` the directory the outputs go to; an argument
``{out}/NAME`` names an output file that is compared. Later cases may read the models
written by earlier ones.
"""

from __future__ import annotations

A9A = "{samples}/a9a3k.train"
A9A_TEST = "{samples}/a9a2k.test"
DNA = "{samples}/dna1k.train"
DNA_TEST = "{samples}/dna500.test"
SAT = "{samples}/satimage500.train"
EWT = "{samples}/ewt60.hmm.train"
EWT_TEST = "{samples}/ewt30.hmm.test"
TOY = "{samples}/toy.train.mrg"
TOY_TEST = "{samples}/toy.test.mrg"
RANK = "{samples}/toy.rank.train"
RANK_TEST = "{samples}/toy.rank.test"
HEART = "{fixtures}/heart_scale"


def _classify(name, test, model, *extra):
    return (
        f"classify.{name}",
        "cp_classify",
        [*extra, test, f"{{out}}/{model}", f"{{out}}/{name}.pred"],
    )


CASES = [
    # make demo's runs
    ("perf", "cp_learn", ["-c", "30", A9A, "{out}/perf.model"]),
    _classify("perf", A9A_TEST, "perf.model"),
    ("roc", "cp_learn", ["-c", "20", "-l", "10", A9A, "{out}/roc.model"]),
    _classify("roc", A9A_TEST, "roc.model", "--perf-measures"),
    ("dna", "cp_learn", ["-c", "1000", DNA, "{out}/dna.model"]),
    _classify("dna", DNA_TEST, "dna.model"),
    ("ewt", "cp_learn", ["-c", "1000", "-e", "0.5", EWT, "{out}/ewt.model"]),
    _classify("ewt", EWT_TEST, "ewt.model"),
    ("toy", "cp_learn", ["-c", "100", "-e", "1", TOY, "{out}/toy.model"]),
    _classify("toy", TOY_TEST, "toy.model"),
    ("rank", "cp_learn", ["-c", "20", RANK, "{out}/rank.model"]),
    _classify("rank", RANK_TEST, "rank.model"),
    (
        "asset",
        "asset_learn",
        ["-c", "1000", "-t", "2", "-g", "0.001", "--k", "200", A9A, "{out}/asset.model"],
    ),
    _classify("asset", A9A_TEST, "asset.model"),
    # cp_learn: the algorithms, rescalings, losses and representations
    ("perf.w0", "cp_learn", ["-c", "30", "-w", "0", HEART, "{out}/perf.w0.model"]),
    ("perf.w2", "cp_learn", ["-c", "30", "-w", "2", A9A, "{out}/perf.w2.model"]),
    ("perf.w3", "cp_learn", ["-c", "30", "-w", "3", "--b", "0", A9A, "{out}/perf.w3.model"]),
    (
        "perf.w4.o1",
        "cp_learn",
        ["-c", "30", "-w", "4", "-o", "1", "-#", "15", A9A, "{out}/perf.w4.o1.model"],
    ),
    ("f1", "cp_learn", ["-c", "30", "-l", "1", "-w", "3", A9A, "{out}/f1.model"]),
    ("prbep", "cp_learn", ["-c", "30", "-l", "3", A9A, "{out}/prbep.model"]),
    ("preck", "cp_learn", ["-c", "30", "-l", "4", "--p", "0.3", A9A, "{out}/preck.model"]),
    _classify("preck", A9A_TEST, "preck.model"),
    ("reck", "cp_learn", ["-c", "30", "-l", "5", A9A, "{out}/reck.model"]),
    (
        "zeroone",
        "cp_learn",
        ["-c", "30", "-l", "0", "-w", "3", "-#", "20", A9A, "{out}/zeroone.model"],
    ),
    ("rbf", "cp_learn", ["-c", "30", "-t", "2", "-g", "0.05", "-#", "5", A9A, "{out}/rbf.model"]),
    _classify("rbf", A9A_TEST, "rbf.model"),
    _classify("rbf.f0", A9A_TEST, "rbf.model", "-f", "0", "--double"),
    (
        "poly",
        "cp_learn",
        ["-c", "3", "-t", "1", "-d", "2", "-s", "0.1", "-#", "5", A9A, "{out}/poly.model"],
    ),
    (
        "cpny",
        "cp_learn",
        ["-c", "30", "-t", "2", "-g", "0.05", "--t", "1", "--k", "50", A9A, "{out}/cpny.model"],
    ),
    _classify("cpny", A9A_TEST, "cpny.model"),
    ("dna.w3", "cp_learn", ["-c", "1000", "-w", "3", DNA, "{out}/dna.w3.model"]),
    ("dna.w4", "cp_learn", ["-c", "1000", "-w", "4", DNA, "{out}/dna.w4.model"]),
    ("dna.w0", "cp_learn", ["-c", "10", "-w", "0", "-#", "3", DNA, "{out}/dna.w0.model"]),
    ("sat", "cp_learn", ["-c", "100", SAT, "{out}/sat.model"]),
    ("sat.w9", "cp_learn", ["-c", "100", "-w", "9", SAT, "{out}/sat.w9.model"]),
    (
        "ewt.t2e1",
        "cp_learn",
        ["-c", "100", "-e", "0.5", "--t", "2", "--e", "1", EWT, "{out}/ewt.t2e1.model"],
    ),
    _classify("ewt.t2e1", EWT_TEST, "ewt.t2e1.model"),
    (
        "ewt.o1",
        "cp_learn",
        ["-c", "100", "-e", "0.5", "-o", "1", "-l", "0", EWT, "{out}/ewt.o1.model"],
    ),
    _classify("ewt.beam", EWT_TEST, "ewt.model", "--b", "3"),
    ("toy.w0", "cp_learn", ["-c", "100", "-e", "1", "-w", "0", TOY, "{out}/toy.w0.model"]),
    (
        "toy.rules",
        "cp_learn",
        [
            "-c",
            "100",
            "-e",
            "1",
            "-l",
            "0",
            "--features",
            "rules",
            "--markov",
            "1",
            TOY,
            "{out}/toy.rules.model",
        ],
    ),
    _classify("toy.rules", TOY_TEST, "toy.rules.model", "--max-length", "8"),
    ("toy.pcfg", "cp_learn", ["--baseline", "pcfg", TOY, "{out}/toy.pcfg.model"]),
    _classify("toy.pcfg", TOY_TEST, "toy.pcfg.model"),
    ("rank.l2", "cp_learn", ["-c", "20", "-l", "2", "-w", "4", RANK, "{out}/rank.l2.model"]),
    (
        "ordinal",
        "cp_learn",
        [
            "-c",
            "100",
            "-#",
            "12",
            "--problem",
            "ordinal:OrdinalRegression",
            DNA,
            "{out}/ordinal.model",
        ],
    ),
    _classify("ordinal", DNA_TEST, "ordinal.model"),
    # ocas_learn
    ("ocas", "ocas_learn", [A9A, "{out}/ocas.model"]),
    _classify("ocas", A9A_TEST, "ocas.model"),
    ("ocas.b1", "ocas_learn", ["-c", "10", "-b", "1", "-r", "0.001", A9A, "{out}/ocas.b1.model"]),
    ("ocas.m0", "ocas_learn", ["-m", "0", "-#", "50", A9A, "{out}/ocas.m0.model"]),
    ("ocas.dna", "ocas_learn", ["-c", "10", DNA, "{out}/ocas.dna.model"]),
    _classify("ocas.dna", DNA_TEST, "ocas.dna.model"),
    ("ocas.sat", "ocas_learn", ["-c", "1", "-n", "300", SAT, "{out}/ocas.sat.model"]),
    (
        "ocas.sat.m1",
        "ocas_learn",
        ["-c", "1", "-m", "1", "-n", "300", SAT, "{out}/ocas.sat.m1.model"],
    ),
    ("ocas.a9a.m2", "ocas_learn", ["-c", "1", "-m", "2", A9A, "{out}/ocas.a9a.m2.model"]),
    # sampled_learn
    (
        "sampled",
        "sampled_learn",
        ["-c", "30", "-t", "2", "-g", "0.05", "-#", "10", A9A, "{out}/sampled.model"],
    ),
    (
        "sampled.const",
        "sampled_learn",
        [
            "-c",
            "30",
            "-t",
            "2",
            "-g",
            "0.05",
            "--algorithm",
            "const",
            "--r",
            "100",
            "-#",
            "10",
            A9A,
            "{out}/sampled.const.model",
        ],
    ),
    _classify("sampled.const", A9A_TEST, "sampled.const.model"),
    # asset_learn
    (
        "rff",
        "asset_learn",
        [
            "-c",
            "1000",
            "-t",
            "2",
            "-g",
            "0.001",
            "--approx",
            "rff",
            "--k",
            "50",
            "--epochs",
            "3",
            A9A,
            "{out}/rff.model",
        ],
    ),
    _classify("rff", A9A_TEST, "rff.model"),
    (
        "pegasos",
        "asset_learn",
        [
            "-c",
            "10",
            "--approx",
            "none",
            "--star",
            "-k",
            "10",
            "--epochs",
            "3",
            A9A,
            "{out}/pegasos.model",
        ],
    ),
    (
        "huber",
        "asset_learn",
        [
            "-c",
            "10",
            "--approx",
            "none",
            "--method",
            "gd",
            "--loss",
            "huber",
            "-e",
            "1e-3",
            A9A,
            "{out}/huber.model",
        ],
    ),
    (
        "svr",
        "asset_learn",
        [
            "-z",
            "r",
            "-c",
            "10",
            "-t",
            "2",
            "-g",
            "0.01",
            "--k",
            "50",
            "--epochs",
            "3",
            SAT,
            "{out}/svr.model",
        ],
    ),
    _classify("svr", SAT, "svr.model"),
    (
        "asset.poly",
        "asset_learn",
        [
            "-l",
            "0.001",
            "-t",
            "1",
            "-d",
            "2",
            "--k",
            "40",
            "--epochs",
            "2",
            "--validate",
            A9A_TEST,
            A9A,
            "{out}/asset.poly.model",
        ],
    ),
]
