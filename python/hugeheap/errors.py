"""The one exception the harness raises for problems it can name."""


class HarnessError(Exception):
    """Bad input or a machine that cannot do what was asked: the message says
    which and what to do; the command line prints it on one line."""
