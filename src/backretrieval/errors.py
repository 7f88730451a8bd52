"""Exceptions with messages meant for users (the CLI prints them in one line, exit 2)."""


class BackretrievalError(Exception):
    """Base class: a problem the user can fix (bad input, missing model, bad config)."""


class InputError(BackretrievalError):
    """A file or field does not have the expected content. Name the file/field in the message."""


class ConfigError(BackretrievalError):
    """params.yaml (or a named config) is invalid."""


class ModelUnavailableError(BackretrievalError):
    """A model's weights cannot be obtained (e.g. offline). Message says how to provide them."""


class DeviceUnavailableError(ConfigError, ValueError):
    """A CUDA device is configured (or passed) where torch sees none. Also a ValueError, the
    error of an invalid argument for callers of the library functions."""


class OutputError(BackretrievalError):
    """An artifact cannot be written (disk full, quota exceeded). Names the path being written."""
