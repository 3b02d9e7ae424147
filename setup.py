"""The build step pyproject.toml cannot declare: the kernels compiled ahead of time.

``pip install .`` and ``pip install -e .`` run build_ext, which compiles the package's
numba kernels for this machine's CPU (cpsvm/compiled/build.py) into extension modules
beside cpsvm/compiled/__init__.py; ``CPSVM_KERNEL_TARGETS=host,x86-64-v3,x86-64-v2``
adds portable variants, for a wheel meant for other machines (each one as long again).
If the build fails (no C compiler, no numba.pycc), the install goes on without them: it
says why on stderr, and index.json records the cause, which the first run's line names;
the kernels are then compiled by numba at their first run.
"""

import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cpsvm.compiled import build as kernels  # noqa: E402  (the source tree's)


class BuildKernels(build_ext):
    """build_ext for the kernels: compiled by cpsvm/compiled/build.py, which writes the
    extension modules and index.json where build_ext puts extensions (first removing
    what an earlier build left there: a failed build never ships a stale one)."""

    def build_extensions(self):
        self.kernel_dir = os.path.dirname(self.get_ext_fullpath(self.extensions[0].name))
        print(
            f"compiling cpsvm's kernels for {', '.join(kernels.targets())} (numba, ahead of "
            "time; a minute or two a target)",
            file=sys.stderr,
            flush=True,
        )
        try:
            kernels.build(self.kernel_dir, kernels.PARTS, log=print)
        except Exception as e:  # recorded in index.json; the kernels compile at their first run
            print(
                f"warning: cpsvm's kernels were not compiled ahead of time: {e}",
                file=sys.stderr,
                flush=True,
            )

    def _index(self):
        return os.path.join(getattr(self, "kernel_dir", ""), "index.json")

    def copy_extensions_to_source(self):
        """In place (pip install -e): index.json beside the extension modules, and no
        module an earlier build left there."""
        package_dir = self.get_finalized_command("build_py").get_package_dir("cpsvm.compiled")
        if os.path.abspath(package_dir) != os.path.abspath(getattr(self, "kernel_dir", "")):
            for name in os.listdir(package_dir):
                if name.startswith("_kernels") and not name.endswith(".py"):
                    os.remove(os.path.join(package_dir, name))
        super().copy_extensions_to_source()
        if os.path.exists(self._index()):
            shutil.copyfile(self._index(), os.path.join(package_dir, "index.json"))

    def get_outputs(self):
        outputs = [p for p in super().get_outputs() if os.path.exists(p)]
        return outputs + ([self._index()] if os.path.exists(self._index()) else [])


setup(
    ext_modules=[
        Extension(f"cpsvm.compiled.{kernels.module_name(part, target)}", sources=[], optional=True)
        for target in kernels.targets()
        for part in range(kernels.PARTS)
    ],
    cmdclass={"build_ext": BuildKernels},
)
