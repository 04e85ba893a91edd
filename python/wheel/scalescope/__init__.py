"""scalescope's Python package, as the wheel of scripts/wheel.sh installs it.

The wheel puts the scalescope CLI in the environment's bin/ (e.g. a virtual environment's, beside torchrun) and its
GPU module, NCCL profiler plugin and profile's Python shim under the environment's prefix (lib/scalescope/,
share/scalescope/python/), where the CLI finds them relative to its own executable. This package only locates
that CLI:

    import scalescope
    scalescope.__version__      # the project's version (scripts/wheel.sh writes it into the wheel's copy)
    scalescope.executable()     # absolute path of the installed CLI

`python -m scalescope ARGS` runs the CLI with ARGS (scalescope/__main__.py).
"""
import os
import sysconfig

__all__ = ["__version__", "executable"]

__version__ = "0+unknown"  # scripts/wheel.sh replaces this line with the project's version (CMakeLists.txt)


def executable():
    """The installed scalescope CLI's absolute path.

    Looked for first among the files pip recorded for this distribution (the wheel's .data/scripts/scalescope,
    wherever the install scheme put it: a virtual environment's bin/, ~/.local/bin, /usr/local/bin ...), then in
    this interpreter's scripts directory. Raises FileNotFoundError, saying where it looked, when neither holds an
    executable scalescope (e.g. the package was copied without its CLI: reinstall the wheel).
    """
    tried = []
    try:
        from importlib import metadata
        for f in metadata.files("scalescope") or []:
            if f.name == "scalescope" and f.parent.name == "bin":
                tried.append(str(f.locate()))
    except Exception:  # not installed as a distribution (a source checkout): only the scripts directory is left
        pass
    tried.append(os.path.join(sysconfig.get_path("scripts"), "scalescope"))
    for path in tried:
        path = os.path.abspath(path)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("the scalescope CLI is not installed beside this package (looked for "
                            + ", ".join(tried) + "): reinstall the wheel (pip install scalescope-*.whl)")
