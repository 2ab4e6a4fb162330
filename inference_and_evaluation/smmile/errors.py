"""Errors that mean "the user asked for something we cannot do" (exit status 2, one line, no traceback)."""


class UserError(Exception):
    exit_code = 2


class MissingDependency(UserError):
    """An optional package is needed for what was asked. The message says what to install."""

    def __init__(self, package: str, extra: str | None = None, why: str = ""):
        hint = f"pip install {package}" if not extra else f"pip install {package}  (or: pip install -e '.[{extra}]')"
        super().__init__(f"{why + ': ' if why else ''}the package '{package}' is required; install it with: {hint}")
