"""A save's write set and its answer (store/base.py): the answer is asked of the job written, never by
position, so no caller slices a list of outcomes."""

from __future__ import annotations

import pytest
from test_store_contract import job

from cronwright.store.base import Saved, Write, WriteSet


def test_an_answer_is_read_by_the_job_written_whatever_the_order() -> None:
    fresh, stale, claim = job("fresh").evolve(id=1), job("stale").evolve(id=2), job("claim").evolve(id=3)
    writes = WriteSet([fresh, stale], claims=[claim])

    saved = Saved.pair(writes.writes, [Write.DURABLE, Write.LOST, Write.UNKNOWN])

    assert (saved.of(claim), saved.of(stale), saved.of(fresh)) == (Write.UNKNOWN, Write.LOST, Write.DURABLE)
    assert saved.map(lambda outcome: outcome is Write.DURABLE).of(fresh) is True


def test_a_job_given_twice_is_answered_for_each_of_its_values() -> None:
    stored = job().evolve(id=7, version=3)
    first, second = stored.evolve(occurrences=1), stored.evolve(occurrences=2)

    saved = Saved.pair([first, second], [True, False])

    assert (saved.of(first), saved.of(second)) == (True, False)


def test_a_job_the_save_was_not_given_has_no_answer() -> None:
    saved = Saved.pair([job().evolve(id=1)], [True])

    with pytest.raises(KeyError, match="job 2"):
        saved.of(job().evolve(id=2))
    with pytest.raises(KeyError):
        saved.of(job().evolve(id=1, occurrences=5))  # another value of that job


def test_a_write_set_keeps_what_it_was_given_even_if_the_caller_changes_its_lists() -> None:
    jobs = [job().evolve(id=1)]
    writes = WriteSet(jobs)
    jobs.append(job("later").evolve(id=2))

    assert [written.id for written in writes.writes] == [1]
