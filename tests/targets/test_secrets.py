"""Secrets: resolved at run time from the environment or a KEY=VALUE file, and masked wherever they echo."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cronwright.core.model import Outcome
from cronwright.targets.attempt import Output
from cronwright.targets.secrets import Masker, SecretMissing, Secrets, parse_env_file

from .conftest import PYTHON, MakeRunner, job, occurrence, write_module

PASSWORD = "hunter2-Zq8!x"

LEAKY = """
    import json, os, sys
    import cronwright

    @cronwright.action(secrets=["SMTP_PASSWORD"])
    def leak(ctx: cronwright.Context) -> dict:
        value = ctx.secret("SMTP_PASSWORD")
        print("the password is", value)
        print(value, file=sys.stderr)
        ctx.log.warning("logged %s", value)
        sys.stdout.write("x" * 40_000 + value + "y" * 40_000 + "\\n")
        return {"echo": value, "quoted": f'"{value}"'}

    @cronwright.action(secrets=["SMTP_PASSWORD"])
    def fail(ctx: cronwright.Context) -> None:
        raise ValueError(f"login refused for {ctx.secret('SMTP_PASSWORD')}")

    @cronwright.action(secrets=["SMTP_PASSWORD"])
    def long(ctx: cronwright.Context) -> str:
        return "a" * 4090 + ctx.secret("SMTP_PASSWORD") + "b" * 10

    @cronwright.action
    def undeclared(ctx: cronwright.Context) -> str:
        return ctx.secret("SMTP_PASSWORD")
"""


def test_the_environment_wins_then_the_file_is_read(tmp_path: Path) -> None:
    file = tmp_path / "secrets.env"
    file.write_text("# comment\n\nexport A=from-file\nB = 'quoted value'\nC=\"#not a comment\"\nD=x=y\n")
    file.chmod(0o600)
    secrets = Secrets(file, environ={"A": "from-env"})
    assert secrets.resolve(["A", "B", "C", "D"]) == {
        "A": "from-env",
        "B": "quoted value",
        "C": "#not a comment",
        "D": "x=y",
    }


def test_the_secrets_file_is_read_from_the_config_files_folder(tmp_path: Path) -> None:
    from cronwright.config.settings import load

    (tmp_path / "cronwright.toml").write_text('[node]\nsecrets_file = "secrets.env"\n')
    (tmp_path / "secrets.env").write_text("CW_ONLY_IN_FILE=from-file\n")
    secrets = Secrets.from_config(load(str(tmp_path / "cronwright.toml")))
    assert secrets.file == tmp_path / "secrets.env"
    assert secrets.resolve(["CW_ONLY_IN_FILE"]) == {"CW_ONLY_IN_FILE": "from-file"}


def test_a_missing_secret_is_named_without_any_value(tmp_path: Path) -> None:
    secrets = Secrets(tmp_path / "absent.env", environ={"A": "x"})
    with pytest.raises(SecretMissing, match="cannot be read"):
        secrets.resolve(["B"])
    with pytest.raises(SecretMissing, match=r"^secrets B, C not set in the environment; set them there"):
        Secrets(environ={}).resolve(["B", "C"])
    assert Secrets(tmp_path / "absent.env", environ={}).known(["B"]) == {}


def test_a_bad_line_is_named_by_number_and_never_quoted() -> None:
    with pytest.raises(SecretMissing, match=r"^f, line 2: expected NAME=VALUE$"):
        parse_env_file("A=1\nthis line holds sekrit\n", "f")


def test_a_rotated_file_is_read_again(tmp_path: Path) -> None:
    file = tmp_path / "secrets.env"
    file.write_text("TOKEN=old\n")
    secrets = Secrets(file, environ={})
    assert secrets.resolve(["TOKEN"]) == {"TOKEN": "old"}
    file.write_text("TOKEN=newer\n")
    os.utime(file, ns=(9, 9))
    assert secrets.resolve(["TOKEN"]) == {"TOKEN": "newer"}


def test_the_masker_hides_plain_and_json_escaped_forms_longest_first() -> None:
    masker = Masker(['pa"ss', "abc", "abcdef", ""])
    assert masker.mask('x abcdef y abc z pa"ss {"k": "pa\\"ss"}') == 'x *** y *** z *** {"k": "***"}'
    assert not Masker([""])


def test_a_secret_cut_by_truncation_leaves_no_piece_at_either_edge() -> None:
    masker = Masker(["SECRETVALUE"])
    cut = Output(head="start SECRE", tail="TVALUE end", omitted=100)
    assert cut.render(masker) == "start \n[… 100 bytes omitted …]\n end"


def test_a_secret_never_appears_in_a_python_runs_message_or_output(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    write_module(tmp_path / "scripts", "leaky", LEAKY)
    secrets = Secrets(environ={"SMTP_PASSWORD": PASSWORD})
    _, runner = make_runner(
        {"leaky": {"kind": "python", "module": "leaky", "path": ["scripts"]}}, secrets=secrets
    )
    result = runner.run(job("leaky", "leak"), occurrence())
    assert result.outcome is Outcome.OK
    assert result.message == '{"echo": "***", "quoted": "\\"***\\""}'
    assert PASSWORD not in result.output
    assert "the password is ***" in result.output
    assert "logged ***" in result.output
    failed = runner.run(job("leaky", "fail"), occurrence())
    assert failed.message == "ValueError: login refused for ***"
    assert PASSWORD not in failed.output


def test_a_long_message_is_masked_before_it_is_cut(make_runner: MakeRunner, tmp_path: Path) -> None:
    write_module(tmp_path / "scripts", "leaky", LEAKY)
    secrets = Secrets(environ={"SMTP_PASSWORD": PASSWORD})
    _, runner = make_runner(
        {"leaky": {"kind": "python", "module": "leaky", "path": ["scripts"]}}, secrets=secrets
    )
    result = runner.run(job("leaky", "long"), occurrence())
    assert result.message == "a" * 4090 + "***" + "bb…"


def test_an_undeclared_secret_is_refused_inside_the_action(make_runner: MakeRunner, tmp_path: Path) -> None:
    write_module(tmp_path / "scripts", "leaky", LEAKY)
    secrets = Secrets(environ={"SMTP_PASSWORD": PASSWORD})
    _, runner = make_runner(
        {"leaky": {"kind": "python", "module": "leaky", "path": ["scripts"]}}, secrets=secrets
    )
    result = runner.run(job("leaky", "undeclared"), occurrence())
    assert result.outcome is Outcome.ERROR
    assert result.message.startswith(
        "UndeclaredSecret: secret 'SMTP_PASSWORD' is not declared by this action"
    )


def test_a_secret_never_appears_in_a_commands_message_or_output(make_runner: MakeRunner) -> None:
    script = "import os, sys; v = os.environ['BACKUP_KEY']; print('key', v, file=sys.stderr); print(v)"
    target = {
        "kind": "command",
        "actions": {"go": {"argv": [PYTHON, "-c", script], "secrets": ["BACKUP_KEY"]}},
    }
    _, runner = make_runner({"cmd": target}, secrets=Secrets(environ={"BACKUP_KEY": PASSWORD}))
    result = runner.run(job("cmd", "go"), occurrence())
    assert (result.outcome, result.message) == (Outcome.OK, "***")
    assert result.output == "[stdout]\n***\n\n[stderr]\nkey ***\n"


def test_another_targets_secret_is_masked_too(
    make_runner: MakeRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The command lists a variable in `env` that happens to be another target's secret: still masked.
    script = "import os; print(os.environ['HOOK_SECRET'])"
    targets = {
        "cmd": {
            "kind": "command",
            "env": ["HOOK_SECRET"],
            "actions": {"go": {"argv": [PYTHON, "-c", script]}},
        },
        "hook": {
            "kind": "http",
            "url": "http://127.0.0.1:9/",
            "signing_secret": "HOOK_SECRET",
            "actions": {"p": {}},
        },
    }
    monkeypatch.setenv("HOOK_SECRET", PASSWORD)
    _, runner = make_runner(targets, secrets=Secrets())
    result = runner.run(job("cmd", "go"), occurrence())
    assert (result.message, result.output) == ("***", "***\n")
