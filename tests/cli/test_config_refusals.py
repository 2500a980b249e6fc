"""A config's mistakes, as `check` tells them (issue 35, defect 9): in the file's own words and keys, with
the file named, the key meant for a typo, and what to write instead; never pydantic's names of its types,
nor an empty key."""

from __future__ import annotations

import re
from pathlib import Path

from cronwright.config.settings import SEED_KEYS, SEED_SCHEDULE_KEYS
from cronwright.declare.job_fields import AtSpec, CronSpec, EveryMsSpec, EverySpec, JobSpec

from .blackbox import Cronwright

DOCS = Path(__file__).parents[2] / "docs"
INTERNALS = ("constrained-str", "Input should", "String should", "valid list", ": : ", "(and ")


def refusal(cw: Cronwright, addition: str) -> str:
    cw.config.write_text(cw.config.read_text(encoding="utf-8") + addition, encoding="utf-8")
    checked = cw.run("check")
    assert checked.rc == 2 and checked.stdout == "", checked
    said = checked.stderr.strip()
    assert said.startswith(f"cronwright: error: {cw.config}: "), said
    assert not [word for word in INTERNALS if word in said], said
    return said.removeprefix(f"cronwright: error: {cw.config}: ")


def test_a_seed_s_typo_is_named_as_the_file_names_it_with_the_key_meant(cw: Cronwright) -> None:
    seed = '\n[[seed]]\ndedupe_key = "ping"\nnmae = "ping"\ntarget = "sh"\naction = "log"\n'
    said = refusal(cw, seed + 'schedule = { cron = "0 7 * * *" }\n')

    assert said.startswith("[[seed]] #1 (ping) has no field 'nmae'; did you mean 'name'?"), said


def test_a_typo_inside_a_seed_s_schedule_is_named_with_the_key_meant(cw: Cronwright) -> None:
    seed = '\n[[seed]]\ndedupe_key = "ping"\nname = "ping"\ntarget = "sh"\naction = "log"\n'
    said = refusal(cw, seed + 'schedule = { corn = "0 7 * * *" }\n')

    assert said.startswith("[[seed]] #1 (ping): 'schedule' has an unknown key 'corn' (did you mean 'cron'?)")


def test_a_seed_the_service_refuses_is_told_with_its_file(cw: Cronwright) -> None:
    seed = '\n[[seed]]\ndedupe_key = "ping"\nname = "ping"\ntarget = "sh"\naction = "log"\n'
    said = refusal(cw, seed + 'schedule = { cron = "61 * * * *" }\n')

    assert said == "[[seed]] #1 (ping) is invalid: minute field '61' is out of range 0-59", said


def test_a_digest_that_is_not_one_says_what_a_digest_is_and_how_to_get_one(cw: Cronwright) -> None:
    said = refusal(cw, '\n[sources.agent]\ntoken_sha256 = "test"\ntargets = ["sh.*"]\n')

    assert said.startswith("sources.agent.token_sha256: must be the SHA-256 digest of a token"), said
    assert "cronwright token new SOURCE" in said


def test_an_argv_written_as_a_command_line_is_shown_as_a_list(cw: Cronwright) -> None:
    said = refusal(
        cw, '\n[targets.tools]\nkind = "command"\n[targets.tools.actions.hi]\nargv = "echo \'hi there\'"\n'
    )

    assert said.startswith("targets.tools.actions.hi.argv: must be a list of strings, one per argument"), said
    assert said.endswith(': argv = ["echo", "hi there"]'), said


def test_the_alert_rules_of_alerts_md_name_their_rule_when_a_channel_is_missing(cw: Cronwright) -> None:
    rules = re.search(
        r"### Rules: `\[\[alert\]\]`\n\n```toml\n(.*?)```", (DOCS / "alerts.md").read_text(), re.S
    )
    assert rules is not None
    webhook = (
        '\n[notify.ops]\nkind = "webhook"\nurl = "https://alerts.example.invalid/x"\nsigning_secret = "S"\n'
    )
    said = refusal(cw, webhook + rules.group(1))

    assert said == "[[alert]] #1 notifies mail, not a [notify.NAME] channel; configured: ops", said


def test_the_seed_keys_a_config_knows_are_the_request_model_s() -> None:
    specs = (CronSpec, EverySpec, EveryMsSpec, AtSpec)
    assert set(JobSpec.model_fields) == SEED_KEYS
    assert {name for spec in specs for name in spec.model_fields} == SEED_SCHEDULE_KEYS
