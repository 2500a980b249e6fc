"""One exception root. Each refusal carries its protocol code and a message that says how to fix it."""

from __future__ import annotations

from typing import Any, ClassVar


class CronwrightError(Exception):
    """Root of every error cronwright raises on purpose."""


class Refusal(CronwrightError):
    """A request that was refused and changed nothing. `code` is the protocol's error code."""

    code: ClassVar[str] = "invalid"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def reply(self) -> dict[str, Any]:
        return {"ok": False, "error": self.code, "message": self.message, **self.details}


class Invalid(Refusal):
    """A field's value is wrong. `field` names it."""

    code = "invalid"

    def __init__(self, field: str, message: str, **details: Any) -> None:
        super().__init__(message, field=field, **details)
        self.field = field


class UnknownAction(Refusal):
    code = "unknown_action"


class RunAtPassed(Invalid):
    """A new one-shot's instant is more than the misfire grace in the past (semantic 4)."""

    def __init__(self, message: str) -> None:
        super().__init__("run_at", message)


class InvalidJson(Refusal):
    code = "invalid_json"


class MessageTooLarge(Refusal):
    code = "message_too_large"


class NotFound(Refusal):
    code = "not_found"


class NameTaken(Refusal):
    code = "name_taken"


class TargetNotAllowed(Refusal):
    code = "target_not_allowed"


class ArgsInvalid(Refusal):
    code = "args_invalid"


class ImmutableField(Refusal):
    code = "immutable_field"


class _StateRefusal(Refusal):
    def __init__(self, message: str, state: str, **details: Any) -> None:
        super().__init__(message, state=state, **details)


class JobRunning(_StateRefusal):
    code = "job_running"


class JobNotPaused(_StateRefusal):
    code = "job_not_paused"


class JobNotActive(_StateRefusal):
    code = "job_not_active"


class JobNotPending(_StateRefusal):
    code = "job_not_pending"


class JobTerminal(_StateRefusal):
    code = "job_terminal"


class AtMaxConcurrency(Refusal):
    code = "at_max_concurrency"


class QuotaExceeded(Refusal):
    code = "quota_exceeded"


class RateLimited(Refusal):
    """A source made more changes than its `max_mutations_per_minute`; `retry_after` says when to retry."""

    code = "rate_limited"


class PeriodTooShort(Refusal):
    code = "period_too_short"


class LifetimeTooLong(Refusal):
    code = "lifetime_too_long"


class ConfigError(CronwrightError):
    """The config (or a seed in it) is wrong; the node must not boot."""


class StoreError(CronwrightError):
    """The store could not do what was asked (I/O, corruption). The driver's error is `__cause__`."""


class DoubleRun(StoreError):
    """A save would record a second, different run of one attempt (job, fire_id, attempt): nothing of
    it was written. `keys` names the attempts. The same record again is no double: it is written once."""

    def __init__(self, message: str, keys: list[tuple[int, str, int]]) -> None:
        super().__init__(message)
        self.keys = keys

    @classmethod
    def of(cls, keys: list[tuple[int, str, int]]) -> DoubleRun:
        named = ", ".join(f"job {job_id} {fire_id!r} attempt {attempt}" for job_id, fire_id, attempt in keys)
        return cls(
            f"{named} was recorded already, differently: recording it again would be a double run, so"
            " nothing of this save was written",
            keys,
        )


class OutcomeUnknown(StoreError):
    """A write was sent, the store stopped answering, and no read back could tell whether it landed
    (semantic 29). Never "nothing changed": the message says how to find out what happened."""


class StoreCorrupt(StoreError):
    """The store file is not a cronwright store, or is damaged. It is left untouched."""
