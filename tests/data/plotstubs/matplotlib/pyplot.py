"""A stand-in matplotlib.pyplot for the capture tests (see ../README.md): draws nothing."""


class _Axes:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def subplot(*args, **kwargs):
    return _Axes()


def figure(*args, **kwargs):
    return None


def show(*args, **kwargs):
    return None


def savefig(*args, **kwargs):
    return None
