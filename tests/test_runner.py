import pytest

from pgolab.errors import PgolabError
from pgolab.runner import Runner


def test_every_command_is_logged_with_argv_env_and_status(tmp_path):
    log = tmp_path / "phase.log"
    runner = Runner(log)
    result = runner.run(["sh", "-c", "echo hello $PGOLAB_X", "arg with space"], env={"PGOLAB_X": "world"},
                        cwd=tmp_path)
    assert result.returncode == 0 and "hello world" in result.output
    text = log.read_text()
    assert f"cd {tmp_path} && PGOLAB_X=world sh -c 'echo hello $PGOLAB_X' 'arg with space'" in text
    assert "### exit 0" in text


def test_failure_shows_the_last_lines_and_the_log(tmp_path):
    runner = Runner(tmp_path / "fail.log")
    with pytest.raises(PgolabError) as err:
        runner.run(["sh", "-c", "for i in $(seq 1 100); do echo line$i; done; exit 3"], what="compile")
    message = str(err.value)
    assert "compile failed (exit 3)" in message
    assert "line100" in message and "line60" not in message   # the last 40 lines only
    assert str(tmp_path / "fail.log") in message


def test_missing_program_names_doctor(tmp_path):
    with pytest.raises(PgolabError, match="pgolab doctor"):
        Runner(tmp_path / "x.log").run(["no-such-program-pgolab"])
