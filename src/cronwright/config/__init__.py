"""cronwright.toml as typed settings, where it is found, and the loaders of calendars."""
