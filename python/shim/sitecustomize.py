"""scalescope's start-up hook for `scalescope profile` (see docs/profile.md).

`scalescope profile` puts this directory first on PYTHONPATH, so every Python process of the job imports this
module at start-up. It does nothing unless SCALESCOPE_JOB_DIR is set (profile sets it), and nothing until the job
itself imports torch: then `_scalescope_capture` hooks the optimizer's step and DDP's constructor. Any failure
here is swallowed and noted in the job directory: the job must run as it would without scalescope.

A sitecustomize the environment already had (later on sys.path) is imported afterwards, as Python would have.
"""


def _install():
    import os
    import sys

    if os.environ.get("SCALESCOPE_JOB_DIR"):
        try:
            import _scalescope_capture

            _scalescope_capture.watch_for_torch()
        except Exception as e:  # never break the job
            try:
                import _scalescope_capture

                _scalescope_capture.note_failure("start-up hook", e)
            except Exception:
                pass

    # Chain to the sitecustomize this one shadows, if any.
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        import importlib.machinery
        import importlib.util

        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is not None and spec.origin and os.path.dirname(os.path.abspath(spec.origin)) != here:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
    except Exception as e:
        print(f"scalescope: the environment's own sitecustomize failed: {e!r}", file=sys.stderr)


_install()
del _install
