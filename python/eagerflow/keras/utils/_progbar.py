"""keras.utils.Progbar: Keras' progress bar for loops a program writes itself."""
import math
import os
import sys
import time

import numpy as np

from ._misc import print_msg


def _per_unit(seconds, unit):
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit}"
    return f" {seconds * 1e6:.0f}us/{unit}"


def _average(entry):
    total, count = entry
    if not isinstance(total, float):
        total = np.mean(total)
    return total / max(1, count)


class Progbar:
    """Progbar(target, width=20, verbose=1, interval=0.05, stateful_metrics=None,
    stateless_metrics=None, unit_name="step"): update(current, values) shows the step count, a
    bar, the time left and each value's mean over the steps seen (the last value for names in
    stateful_metrics), as Keras; verbose=2 prints one line when the target is reached."""

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None, stateless_metrics=None,
                 unit_name="step"):
        if stateful_metrics is not None and stateless_metrics is not None:
            raise ValueError("Only one of `stateful_metrics` or `stateless_metrics` can be provided.")
        self.target, self.width, self.verbose = target, width, verbose
        self.interval, self.unit_name = interval, unit_name
        if stateless_metrics is not None:
            self.stateful_metrics, self.stateless_metrics = None, set(stateless_metrics)
        else:
            self.stateful_metrics = set(stateful_metrics or ())
            self.stateless_metrics = None
        # Redraw in place (\r) where the output is a terminal or notebook; else one line per update.
        self._dynamic_display = ((hasattr(sys.stdout, "isatty") and sys.stdout.isatty()) or "ipykernel" in sys.modules
                                 or "posix" in sys.modules or "PYCHARM_HOSTED" in os.environ)
        self._seen_so_far = 0
        self._values = {}
        self._values_order = []
        self._start = time.time()
        self._last_update = 0
        self._time_after_first_step = None
        self._prev_total_width = 0

    def _is_stateless(self, name):
        if self.stateful_metrics is not None:
            return name not in self.stateful_metrics
        return name in self.stateless_metrics

    def update(self, current, values=None, finalize=None):
        """Moves the bar to step `current`; values: [(name, value), ...]."""
        if finalize is None:
            finalize = False if self.target is None else current >= self.target
        for name, v in values or []:
            if name not in self._values_order:
                self._values_order.append(name)
            if self._is_stateless(name) and not finalize:
                weight = max(current - self._seen_so_far, 1)  # a mean weighted by the steps since the last update
                if name in self._values:
                    self._values[name][0] += v * weight
                    self._values[name][1] += weight
                else:
                    self._values[name] = [v * weight, weight]
            else:
                self._values[name] = [v, 1]
        self._seen_so_far = current
        now = time.time()
        per_unit = self._step_time(current, now)
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            self._draw(current, now, per_unit, finalize)
        elif self.verbose == 2 and finalize and self.target is not None and self.target > 0:
            digits = int(math.log10(self.target)) + 1
            line = f"%{digits}d/%d" % (current, self.target) + f" - {now - self._start:.0f}s -"
            line += _per_unit(per_unit, self.unit_name)
            for name in self._values_order:
                avg = _average(self._values[name])
                line += f" - {name}: " + (f"{avg:.4f}" if avg > 1e-3 else f"{avg:.4e}")
            print_msg(line + "\n", line_break=False)
        self._last_update = now

    def _draw(self, current, now, per_unit, finalize):
        message = ("\b" * self._prev_total_width + "\r") if self._dynamic_display else "\n"
        hidden = 0  # the escape codes' characters, which take no room on screen
        if self.target is not None and self.target > 0:
            digits = int(math.log10(self.target)) + 1
            bar = "\x1b[1m" + f"%{digits}d/%d" % (current, self.target) + "\x1b[0m "
            hidden += 8
            done = int(self.width * float(current) / self.target)
            if done > 0:
                bar += "\33[32m" + "━" * done + "\x1b[0m"
                hidden += 9
            bar += "\33[37m" + "━" * (self.width - done) + "\x1b[0m"
            hidden += 9
        else:
            bar = "%7d/Unknown" % current
        if self.target is not None and self.target > 0 and not finalize:
            eta = per_unit * (self.target - current)
            if eta > 3600:
                shown = "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
            elif eta > 60:
                shown = "%d:%02d" % (eta // 60, eta % 60)
            else:
                shown = "%ds" % eta
        else:
            shown = f"{now - self._start:.0f}s"
        info = f" \x1b[1m{shown}\x1b[0m" + _per_unit(per_unit, self.unit_name)
        hidden += 8
        for name in self._values_order:
            avg = _average(self._values[name])
            info += f" - {name}: " + (f"{avg:.4f}" if abs(avg) > 1e-3 else f"{avg:.4e}")
        width = len(bar) + len(info) - hidden
        message += bar + info + " " * max(0, self._prev_total_width - width) + ("\n" if finalize else "")
        print_msg(message, line_break=False)
        self._prev_total_width = width

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)

    def _step_time(self, current, now):
        # The first step (tracing, warm-up) is left out of the rate once a second one is seen.
        if not current:
            return 0
        if self._time_after_first_step is not None and current > 1:
            rate = (now - self._time_after_first_step) / (current - 1)
        else:
            rate = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return rate
