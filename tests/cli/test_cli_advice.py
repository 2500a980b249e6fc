"""A refusal's advice names the CLI verb to type, black-box (issue 35, defect 8): the protocol's
`name_taken` says to `delete` the job first, and the CLI's verb for that is `remove`."""

from __future__ import annotations

from .blackbox import Cronwright


def test_name_taken_tells_the_operator_to_remove_the_job_first(cw: Cronwright) -> None:
    cw.ok("add", "report", "--target", "sh", "--action", "log", "--every", "1h")

    again = cw.run("add", "report", "--target", "sh", "--action", "log", "--every", "1h")

    assert again.rc == 1
    assert "a job named 'report' exists; choose another name, or `remove` it first" in again.stderr
    assert "`delete`" not in again.stderr
    cw.ok("remove", "report")  # the advice works as written
    cw.ok("add", "report", "--target", "sh", "--action", "log", "--every", "1h")


def with_seed(cw: Cronwright, *schedule: str) -> None:
    with cw.config.open("a", encoding="utf-8") as config:
        config.write(
            '\n[[seed]]\ndedupe_key = "hello"\nname = "hello"\ntarget = "sh"\naction = "log"\n'
            + "\n".join(schedule)
        )


def test_removing_a_recurring_seed_says_that_the_next_boot_brings_it_back(cw: Cronwright) -> None:
    with_seed(cw, 'schedule = { every = "1h" }\n')
    cw.json("tick")  # boots: the seed is created

    removed = cw.ok("remove", "hello").stdout
    cw.json("tick")  # boots again: the seed is back, as the note said

    assert removed.startswith("removed hello: ")
    assert f"note: it is a [[seed]] of {cw.config}: the next boot (serve, tick) creates it again" in removed
    assert cw.json("show", "hello")["job"]["state"] == "active"


def test_removing_a_schedule_that_is_no_seed_says_nothing_of_boots(cw: Cronwright) -> None:
    with_seed(cw, 'schedule = { every = "1h" }\n')
    cw.ok("add", "other", "--target", "sh", "--action", "log", "--every", "1h")

    assert "[[seed]]" not in cw.ok("remove", "other").stdout
