"""The phase engine with fake actions: skip, forget-from, partial seconds, interrupt, until."""

import pytest

from pgolab.phases import Phase, PhaseEngine, PhaseState


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
    assert PhaseState(tmp_path / "state.json").phases["compile"]["seconds"] == 20


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
