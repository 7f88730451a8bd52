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


def did_you_mean(word: str, known: list[str] | tuple[str, ...]) -> str:
    """`` (did you mean 'x'?)`` with the known name closest to a misspelt ``word`` (difflib),
    or "" when none is close: the hint of an error that refuses an unknown name."""
    import difflib

    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
