"""The pure engine of one job's decisions. No I/O and no clock: every function takes `now`.

Callers write `from cronwright.core import engine` and `engine.tend(...)`: this package gives them the
names below, each from the module that owns it:

- `decision`: the `Rules` and `Decision` every function shares, and `claim`, which starts an occurrence;
- `arming`: when a job is next due (`arm`, `upcoming`, `ahead`, `schedule_problem`);
- `tending`: what a pass does to a job (`tend`): the misfire walk, calendars and the overlap policies;
- `finishing`: an attempt ends (`finish`, `run_of`), a dead node's attempts (`interrupt`), a claim given
  back (`release`);
- `verbs`: the operator's verbs (`pause`, `resume`, `run_now`, `hand_off`, `take`, `check_updatable`,
  `renew`).

The modules import in that order, never back up it.
"""

from cronwright.core.engine.arming import Planned, ahead, arm, schedule_problem, upcoming
from cronwright.core.engine.decision import Decision, Rules, claim, occurrence_of
from cronwright.core.engine.finishing import finish, interrupt, release, release_all, run_of
from cronwright.core.engine.tending import MISSED_COUNT_CAP, held_elsewhere, tend
from cronwright.core.engine.verbs import (
    check_updatable,
    hand_off,
    pause,
    renew,
    resume,
    run_now,
    take,
)

__all__ = [
    "MISSED_COUNT_CAP",
    "Decision",
    "Planned",
    "Rules",
    "ahead",
    "arm",
    "check_updatable",
    "claim",
    "finish",
    "hand_off",
    "held_elsewhere",
    "interrupt",
    "occurrence_of",
    "pause",
    "release",
    "release_all",
    "renew",
    "resume",
    "run_now",
    "run_of",
    "schedule_problem",
    "take",
    "tend",
    "upcoming",
]
