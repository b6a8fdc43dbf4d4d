# setup.py: the pystitch wheel, made by tools/build-wheel.sh: the static
# program (pystitch-static) as the wheel's one script, installed as
# `pystitch` on the PATH of the environment (a venv's bin/), no Python code.
# A static program needs no particular glibc: the platform tag is the
# broadest pip takes for x86_64 Linux with glibc, manylinux_2_17.
import os

from setuptools import setup

try:
    from setuptools.command.build_scripts import build_scripts
except ImportError:  # setuptools < 70: distutils' (setuptools' own copy)
    from distutils.command.build_scripts import build_scripts


class copy_program(build_scripts):
    """The script is an ELF program: copied as it is (setuptools reads
    scripts as Python source to rewrite their #! line)."""

    def run(self):
        self.mkpath(self.build_dir)
        for s in self.scripts:
            self.copy_file(s, os.path.join(self.build_dir,
                                           os.path.basename(s)))


setup(
    name="pystitch",
    version=os.environ["PST_VERSION"],
    description="Sampling profiler for CPython: Python and native frames "
    "of every thread, from outside the process",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    scripts=["pystitch"],
    py_modules=[],
    cmdclass={"build_scripts": copy_program},
    python_requires=">=3",
    classifiers=[
        "Operating System :: POSIX :: Linux",
        "Programming Language :: C",
        "Topic :: Software Development :: Debuggers",
    ],
)
