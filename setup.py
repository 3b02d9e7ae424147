"""The build step pyproject.toml cannot declare: the kernels compiled ahead of time.

``pip install .`` and ``pip install -e .`` run build_ext, which compiles the package's
numba kernels for this machine's CPU (cpsvm/compiled/build.py) into extension modules
beside cpsvm/compiled/__init__.py. If that fails (no C compiler, say), the install goes
on without them and the kernels are compiled by numba at their first run instead, which
says so on stderr.
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
    extension modules and index.json where build_ext puts extensions."""

    def build_extensions(self):
        self.kernel_dir = os.path.dirname(self.get_ext_fullpath(self.extensions[0].name))
        os.makedirs(self.kernel_dir, exist_ok=True)
        print(
            "compiling cpsvm's kernels for this CPU (numba, ahead of time; a minute or two)",
            file=sys.stderr,
            flush=True,
        )
        try:
            kernels.build(self.kernel_dir, len(self.extensions), log=print)
        except Exception as e:  # the kernels then compile at their first run
            print(f"warning: cpsvm's kernels were not compiled ahead of time: {e}", file=sys.stderr)

    def _index(self):
        return os.path.join(getattr(self, "kernel_dir", ""), "index.json")

    def copy_extensions_to_source(self):
        """In place (pip install -e): index.json beside the extension modules."""
        super().copy_extensions_to_source()
        if os.path.exists(self._index()):
            package_dir = self.get_finalized_command("build_py").get_package_dir("cpsvm.compiled")
            shutil.copyfile(self._index(), os.path.join(package_dir, "index.json"))

    def get_outputs(self):
        outputs = [p for p in super().get_outputs() if os.path.exists(p)]
        return outputs + ([self._index()] if os.path.exists(self._index()) else [])


setup(
    ext_modules=[
        Extension(f"cpsvm.compiled.{kernels.module_name(part)}", sources=[], optional=True)
        for part in range(kernels.PARTS)
    ],
    cmdclass={"build_ext": BuildKernels},
)
