"""Runs many command lines in one process for tests/e2e/test_hostile_inputs.py: each
case's exit code, its stdout and stderr and whether its output file exists, as JSON on
stdout.

    python hostile_driver.py PLAN.json   # [[command, [args...], output path], ...]
"""

import contextlib
import importlib
import io
import json
import os
import sys
import traceback

MODULES = {
    "cp_learn": "learn",
    "cp_classify": "classify",
    "ocas_learn": "ocas",
    "sampled_learn": "sampled",
    "asset_learn": "asset",
}


def run_case(command, args):
    module = importlib.import_module(f"cpsvm.cli.{MODULES[command]}")
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            module.main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception:  # escaped the command's error handling: reported as exit -1
            code = -1
            err.write(traceback.format_exc())
    return code, out.getvalue(), err.getvalue()


def main():
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    outcomes = []
    for command, args, output in plan:
        code, stdout, stderr = run_case(command, args)
        outcomes.append(
            dict(
                command=command,
                args=args,
                code=code,
                stdout=stdout,
                stderr=stderr,
                output_exists=os.path.exists(output),
            )
        )
    print(json.dumps(outcomes))


if __name__ == "__main__":
    main()
