"""AutoGraph's log (tf.autograph.set_verbosity): which calls were converted and, eagerflow's
addition, what each converted statement became and why (`if x > 0`: converted to ef.cond
(x > 0 is a tensor bool[])). Written to stderr (and stdout with alsologtostdout), at trace time
only: converted code runs when ef.function traces, never on the calls that replay a trace.

Levels: 0 nothing (the default; AUTOGRAPH_VERBOSITY or EF_LOG_LEVEL=verbose/debug set another),
1 converted calls and statements turned into graph control flow, 2 also statements that ran as
Python and calls left unconverted (library code, no source)."""
import os
import sys

_state = {"level": None, "stdout": False}


def _default_level():
    env = os.environ.get("AUTOGRAPH_VERBOSITY")
    if env is not None and env.strip().lstrip("-").isdigit():
        return int(env)
    return 1 if os.environ.get("EF_LOG_LEVEL", "").lower() in ("verbose", "debug") else 0


def set_verbosity(level, alsologtostdout=False):
    """tf.autograph.set_verbosity: 0 silent; 1 and up log conversions (see the module's doc)."""
    _state["level"] = int(level)
    _state["stdout"] = bool(alsologtostdout)


def get_verbosity():
    if _state["level"] is None:
        _state["level"] = _default_level()
    return _state["level"]


def log(level, text):
    if get_verbosity() < level:
        return
    line = "[autograph] " + text + "\n"
    sys.stderr.write(line)
    if _state["stdout"]:
        sys.stdout.write(line)


class Where:
    """A converted statement's place and source, for the log and for error messages."""

    __slots__ = ("function", "line", "kind", "test")

    def __init__(self, function, line, kind, test):
        self.function, self.line, self.kind, self.test = function, line, kind, test

    @property
    def head(self):
        return f"{self.function} line {self.line}: `{self.kind} {self.test}`"


def statement(where, what, why):
    converted = what.startswith("converted")
    log(1 if converted else 2, f"{where.head}: {what} ({why})")
