"""A stand-in matplotlib.pyplot for the capture tests (see ../README.md): draws nothing."""


class _Axes:
    """An Axes, a Figure or an array of Axes: every method draws nothing, every index is another."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None

    def __getitem__(self, index):
        return _Axes()


def subplot(*args, **kwargs):
    return _Axes()


def subplots(*args, **kwargs):
    return _Axes(), _Axes()


def close(*args, **kwargs):
    return None


def figure(*args, **kwargs):
    return None


def show(*args, **kwargs):
    return None


def savefig(*args, **kwargs):
    return None
