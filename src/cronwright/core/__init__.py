"""The pure core: values, timetables, calendars, and every decision; no I/O, clock, threads or pydantic."""
