"""Errors a user can fix. The CLI prints them as one line and exits with code 2."""


class BindscaleError(Exception):
    """Base class of every error caused by user input (config, paths, splits)."""


class ConfigError(BindscaleError):
    """A study file, an override or a CLI option is malformed or out of range."""


class SplitError(BindscaleError):
    """The requested train / held-out split of combinations cannot be built."""
