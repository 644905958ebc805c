"""Progress where stderr is a log file: plain lines, since rich draws no live line into a file."""

import io

from rich.console import Console
from rich.progress import Progress

from pgolab.cli import LogLines, RichReporter, _step_display
from pgolab.schedule import Progress as StepState


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=terminal, width=200), buffer


def test_a_log_gets_a_line_at_once_then_at_most_one_a_minute():
    console, buffer = _console(terminal=False)
    clock = Clock()
    lines = LogLines(console, every=60, clock=clock)
    lines.paced("a")          # the first one is written at once
    clock.t = 30
    lines.paced("b")          # too soon
    clock.t = 61
    lines.paced("c")
    clock.t = 62
    lines.now("d")            # a new step is written whatever the pace
    clock.t = 100
    lines.paced("e")          # 38 s after d
    assert buffer.getvalue().splitlines() == ["a", "c", "d"]


def test_a_terminal_gets_no_plain_lines():
    console, buffer = _console(terminal=True)
    lines = LogLines(console, every=0)
    lines.now("x")
    lines.paced("y")
    assert buffer.getvalue() == ""


def test_a_benchmark_and_a_build_phase_show_progress_in_a_log_while_they_run():
    console, buffer = _console(terminal=False)
    with Progress(console=console) as display:
        on_step = _step_display(display, "bench ")
        on_step(StepState(total=10, done=3, text="cost · point-select · rel_lto"))
        reporter = RichReporter(display)
        clock = Clock()
        reporter.log = LogLines(console, every=60, clock=clock)
        reporter.phase_started("build", "compile optimized build")
        reporter.progress(5, 815)      # a second after the start line: not yet
        clock.t = 60
        reporter.progress(300, 815)
        # checked before the display stops: stopping draws the final state anyway
        during = buffer.getvalue()
    assert "bench 3/10 steps, left ~?: cost · point-select · rel_lto" in during
    assert "… build: compile optimized build" in during
    assert "5/815" not in during
    assert "build: compile optimized build: 300/815" in during
