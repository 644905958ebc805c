"""The phase engine with fake actions: skip, forget-from, partial seconds, interrupt, until."""

import json
import shutil
import subprocess
import sys
import time

import pytest

from pgolab.phases import (Phase, PhaseEngine, PhaseState, ShownOnceReporter, children_cpu_seconds,
                           live_descendant_ticks)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Recorder:
    """Fake actions: each advances the fake clock by its cost and notes that it ran."""

    def __init__(self, clock: FakeClock):
        self.clock, self.calls, self.fail = clock, [], set()

    def action(self, name: str, seconds: float):
        def run():
            self.clock.now += seconds
            self.calls.append(name)
            if name in self.fail:
                raise KeyboardInterrupt
            return {"figure": name.upper()}
        return run


def chain(rec: Recorder, inputs: dict[str, object] | None = None) -> list[Phase]:
    inputs = inputs or {}
    return [Phase(n, f"the {n} phase", inputs.get(n), rec.action(n, s))
            for n, s in (("configure", 1), ("compile", 10), ("install", 2))]


def engine(tmp_path, clock, cpu=lambda: 0.0) -> PhaseEngine:
    return PhaseEngine(PhaseState(tmp_path / "state.json"), clock=clock, cpu_clock=cpu)


def test_a_second_run_skips_every_phase_and_ends_on_the_same_digest(tmp_path):
    clock = FakeClock()
    rec = Recorder(clock)
    first = engine(tmp_path, clock).run(chain(rec), "base")
    assert rec.calls == ["configure", "compile", "install"] and first.ran == rec.calls
    again = engine(tmp_path, clock).run(chain(rec), "base")     # state re-read from disk
    assert again.ran == [] and again.digest == first.digest and len(rec.calls) == 3
    state = PhaseState(tmp_path / "state.json")
    assert state.phases["compile"]["seconds"] == 10 and state.phases["compile"]["figure"] == "COMPILE"


def test_a_changed_input_reruns_that_phase_and_every_later_one(tmp_path):
    clock = FakeClock()
    rec = Recorder(clock)
    first = engine(tmp_path, clock).run(chain(rec, {"compile": ["-O2"]}), "base")
    rec.calls.clear()
    second = engine(tmp_path, clock).run(chain(rec, {"compile": ["-O3"]}), "base")
    assert rec.calls == ["compile", "install"] and second.digest != first.digest


def test_a_changed_start_digest_reruns_everything(tmp_path):
    clock = FakeClock()
    rec = Recorder(clock)
    engine(tmp_path, clock).run(chain(rec), "base")
    rec.calls.clear()
    engine(tmp_path, clock).run(chain(rec), "other compiler version")
    assert rec.calls == ["configure", "compile", "install"]


def test_an_interrupted_phase_resumes_and_keeps_its_seconds(tmp_path):
    clock = FakeClock()
    rec = Recorder(clock)
    rec.fail.add("compile")
    with pytest.raises(KeyboardInterrupt):
        engine(tmp_path, clock).run(chain(rec), "base")
    state = PhaseState(tmp_path / "state.json")
    assert "configure" in state.phases and "compile" not in state.phases
    rec.fail.clear()
    rec.calls.clear()
    engine(tmp_path, clock).run(chain(rec), "base")
    assert rec.calls == ["compile", "install"]                   # configure was not repeated
    # 10 s before the interrupt plus 10 s of the resumed run
    compile_ = PhaseState(tmp_path / "state.json").phases["compile"]
    assert compile_["seconds"] == 20 and compile_["attempts"] == 2


def test_a_killed_phase_keeps_what_its_checkpoints_wrote(tmp_path):
    """A SIGKILL runs no handler: the time must already be on disk. The action copies the state file
    as a kill would leave it, once a checkpoint has written this attempt's 5 s and 7 CPU-s."""
    clock, cpu = FakeClock(), FakeClock()
    state_file, killed = tmp_path / "state.json", tmp_path / "killed" / "state.json"

    def compile_until_killed():
        clock.now += 5
        cpu.now += 7
        deadline = time.monotonic() + 10
        while json.loads(state_file.read_text()).get("partial", {}).get("compile", {}).get("seconds") != 5:
            assert time.monotonic() < deadline, "no checkpoint written"
            time.sleep(0.01)
        killed.parent.mkdir()
        shutil.copy(state_file, killed)

    def compile_resumed():
        clock.now += 10
        cpu.now += 20

    def phases(action):
        return [Phase("configure", "", None, lambda: None), Phase("compile", "", None, action)]

    PhaseEngine(PhaseState(state_file), clock=clock, cpu_clock=cpu, checkpoint_every=0.01).run(
        phases(compile_until_killed), "base")
    resumed = PhaseState(killed)
    assert "compile" not in resumed.phases
    PhaseEngine(resumed, clock=clock, cpu_clock=cpu).run(phases(compile_resumed), "base")
    compile_ = PhaseState(killed).phases["compile"]
    assert (compile_["seconds"], compile_["cpu_seconds"], compile_["attempts"]) == (15, 27, 2)
    assert "compile" not in PhaseState(killed).data["partial"]


def test_partial_seconds_of_a_different_input_are_not_added(tmp_path):
    clock = FakeClock()
    rec = Recorder(clock)
    rec.fail.add("compile")
    with pytest.raises(KeyboardInterrupt):
        engine(tmp_path, clock).run(chain(rec, {"compile": "a"}), "base")
    rec.fail.clear()
    engine(tmp_path, clock).run(chain(rec, {"compile": "b"}), "base")
    assert PhaseState(tmp_path / "state.json").phases["compile"]["seconds"] == 10


def test_until_stops_after_the_named_phase_and_a_full_run_continues(tmp_path):
    clock = FakeClock()
    rec = Recorder(clock)
    engine(tmp_path, clock).run(chain(rec), "base", until="compile")
    assert rec.calls == ["configure", "compile"]
    rec.calls.clear()
    engine(tmp_path, clock).run(chain(rec), "base")
    assert rec.calls == ["install"]



class Lines:
    """A reporter that keeps the lines a terminal would show."""

    def __init__(self):
        self.lines = []

    def phase_started(self, name, description): self.lines.append(f"start {name}")
    def phase_skipped(self, name, description): self.lines.append(f"skip {name}")
    def phase_finished(self, name, seconds): self.lines.append(f"done {name}")
    def progress(self, done, total): pass
    def message(self, text): self.lines.append(text)


def test_a_build_run_in_two_calls_shows_each_phase_once(tmp_path):
    """matrix --profiles runs a build's training first, then the whole build: the second call walks
    the first call's phases again as up to date, which the reporter does not show twice."""
    clock, shown = FakeClock(), Lines()
    rec, reporter = Recorder(clock), ShownOnceReporter(shown)
    PhaseEngine(PhaseState(tmp_path / "state.json"), reporter, clock=clock, cpu_clock=lambda: 0.0) \
        .run(chain(rec), "base", until="compile")
    PhaseEngine(PhaseState(tmp_path / "state.json"), reporter, clock=clock, cpu_clock=lambda: 0.0).run(chain(rec), "base")
    assert shown.lines == ["start configure", "done configure", "start compile", "done compile",
                           "start install", "done install"]
    # A phase up to date from an earlier session is shown once, as skipped.
    again = Lines()
    PhaseEngine(PhaseState(tmp_path / "state.json"), ShownOnceReporter(again), clock=clock, cpu_clock=lambda: 0.0) \
        .run(chain(rec), "base")
    assert again.lines == ["skip configure", "skip compile", "skip install"]

def test_a_callable_input_is_read_when_its_phase_is_reached(tmp_path):
    clock = FakeClock()
    rec = Recorder(clock)
    profile = {"digest": "p1"}
    phases = chain(rec)
    phases[2].inputs = lambda: profile["digest"]
    engine(tmp_path, clock).run(phases, "base")
    profile["digest"] = "p2"
    rec.calls.clear()
    engine(tmp_path, clock).run(phases, "base")
    assert rec.calls == ["install"]


def test_cpu_seconds_are_those_of_the_phase(tmp_path):
    clock = FakeClock()
    rec = Recorder(clock)
    cpu = iter([0.0, 3.0, 3.0, 50.0, 50.0, 51.0])
    engine(tmp_path, clock, cpu=lambda: next(cpu)).run(chain(rec), "base")
    phases = PhaseState(tmp_path / "state.json").phases
    assert [phases[n]["cpu_seconds"] for n in ("configure", "compile", "install")] == [3.0, 47.0, 1.0]


def test_live_descendants_count_with_their_reaped_children_and_strangers_do_not():
    stats = {10: (1, 5), 11: (10, 100), 12: (11, 30), 13: (10, 2), 20: (1, 999), 21: (20, 999)}
    assert live_descendant_ticks(stats, 10) == 132
    assert live_descendant_ticks(stats, 12) == 0


def test_cpu_of_a_child_still_running_is_counted():
    """What a checkpoint during a long ninja run relies on: getrusage alone sees a child only once
    it has been waited for."""
    before = children_cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        deadline = time.monotonic() + 20
        while children_cpu_seconds() - before < 0.3:
            assert time.monotonic() < deadline, "the running child's CPU was not counted"
            time.sleep(0.05)
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()
