"""The python actions the pump's tests run, in-process and black-box: one that ends at once and one that
overstays its 1 s deadline, so that a pumped wait must still stop it."""

OK_AND_HANG = """\
import time
import cronwright

@cronwright.action
def ok() -> str:
    return "fine"

@cronwright.action(timeout="1s")
def hang() -> None:
    time.sleep(60)
"""
