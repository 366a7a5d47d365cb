"""A module beside the script: its check fails."""


def check(total: float) -> None:
    if total != 0.0:
        raise ValueError(f"expected nothing, got {total:g}")
