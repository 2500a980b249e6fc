"""`cronwright import`'s pure half: each format's text (or loaded values) in, a `Batch` out, which holds
the targets, the seeds and a report row for every entry (DESIGN semantic 44). No file, database or clock
is read here: fronts/cli/importing.py reads the input and writes or sends the result."""
