# make demo: set up .venv, install, train and classify on data/samples/, print the results.
# make test: set up .venv with the test extras, check the code with ruff (lint and format),
# run the whole suite (two pytest workers, a test file each at a time: its module fixtures
# are made once).
# Installing compiles the numba kernels ahead of time for this CPU (setup.py); after an
# edit of a module holding kernels, both targets compile them again first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO := build/demo
KERNELS := cpsvm/compiled/index.json
# The files the compiled kernels' digest covers (one list: the build's own).
KERNEL_SOURCES := $(shell $(PYTHON) cpsvm/compiled/build.py --sources)

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Stamps re-install when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[plot]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed

# The install compiles the kernels; this rule, after a kernel's source changed (the targets
# that need it install first).
$(KERNELS): $(KERNEL_SOURCES) | $(BIN)/python
	$(BIN)/python -m cpsvm.compiled.build

demo: $(VENV)/.installed $(KERNELS)
	@mkdir -p $(DEMO)
	@echo "== binary (SVMperf): cp_learn on data/samples/a9a3k.train, cp_classify on a9a2k.test"
	$(BIN)/cp_learn -v 0 -c 30 data/samples/a9a3k.train $(DEMO)/a9a.model
	$(BIN)/cp_classify -v 1 data/samples/a9a2k.test $(DEMO)/a9a.model $(DEMO)/a9a.predictions
	@echo "== ROC area (SVMperf -l 10): cp_learn on data/samples/a9a3k.train, cp_classify on a9a2k.test"
	$(BIN)/cp_learn -v 0 -c 20 -l 10 data/samples/a9a3k.train $(DEMO)/a9a.roc.model
	$(BIN)/cp_classify -v 1 --perf-measures data/samples/a9a2k.test $(DEMO)/a9a.roc.model $(DEMO)/a9a.roc.predictions
	@echo "== multiclass (SVMmulticlass): cp_learn on data/samples/dna1k.train, cp_classify on dna500.test"
	$(BIN)/cp_learn -v 0 -c 1000 data/samples/dna1k.train $(DEMO)/dna.model
	$(BIN)/cp_classify -v 1 data/samples/dna500.test $(DEMO)/dna.model $(DEMO)/dna.predictions
	@echo "== sequence tagging (SVMhmm): cp_learn on data/samples/ewt60.hmm.train, cp_classify on ewt30.hmm.test"
	$(BIN)/cp_learn -v 0 -c 1000 -e 0.5 data/samples/ewt60.hmm.train $(DEMO)/ewt.model
	$(BIN)/cp_classify -v 1 data/samples/ewt30.hmm.test $(DEMO)/ewt.model $(DEMO)/ewt.predictions
	@echo "== parsing (SVMcfg): cp_learn on data/samples/toy.train.mrg (synthetic treebank), cp_classify on toy.test.mrg"
	$(BIN)/cp_learn -v 0 -c 100 -e 1 data/samples/toy.train.mrg $(DEMO)/toy.model
	$(BIN)/cp_classify -v 1 data/samples/toy.test.mrg $(DEMO)/toy.model $(DEMO)/toy.parses
	@echo "== ranking (SVMrank): cp_learn on data/samples/toy.rank.train (synthetic, qid + relevance 0..4), cp_classify on toy.rank.test"
	$(BIN)/cp_learn -v 0 -c 20 data/samples/toy.rank.train $(DEMO)/rank.model
	$(BIN)/cp_classify -v 1 data/samples/toy.rank.test $(DEMO)/rank.model $(DEMO)/rank.scores
	@echo "== RBF kernel by ASSET (Nystrom, s = 200): asset_learn on data/samples/a9a3k.train, cp_classify on a9a2k.test"
	$(BIN)/asset_learn -v 0 -c 1000 -t 2 -g 0.001 --k 200 data/samples/a9a3k.train $(DEMO)/asset.model
	$(BIN)/cp_classify -v 1 data/samples/a9a2k.test $(DEMO)/asset.model $(DEMO)/asset.predictions
	@echo "== choosing C: ocas_learn --cv 5 along 7 values of C (warm path) on data/samples/a9a3k.train, the path drawn to $(DEMO)/a9a.cv.png, cp_classify on a9a2k.test"
	$(BIN)/ocas_learn --cv 5 --c-path 1e-3:1e3:7 --plot $(DEMO)/a9a.cv.png data/samples/a9a3k.train $(DEMO)/a9a.cv.model | sed -n '/^Cross-validation/,/^Best C/p'
	$(BIN)/cp_classify -v 1 data/samples/a9a2k.test $(DEMO)/a9a.cv.model $(DEMO)/a9a.cv.predictions

test: $(VENV)/.installed-test $(KERNELS)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -q -n 2 --dist loadfile

bench: $(VENV)/.installed-test $(KERNELS)
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf build .pytest_cache
