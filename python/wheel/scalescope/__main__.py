"""`python -m scalescope ARGS`: runs the installed scalescope CLI with ARGS, in place of this interpreter.

Same as running the CLI itself (`scalescope ARGS`): its output, its exit status. When the CLI cannot be found
(see scalescope.executable()) it prints why to stderr and exits with status 127, like a shell's command not found.
"""
import os
import sys

from scalescope import executable


def main():
    """Replaces this process with the CLI (os.execv); returns only on failure, with the exit status."""
    try:
        exe = executable()
    except FileNotFoundError as e:
        print("scalescope: " + str(e), file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe] + sys.argv[1:])
    return 127  # not reached: execv raises OSError on failure


if __name__ == "__main__":
    sys.exit(main())
