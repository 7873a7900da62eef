"""``tiersweep sensitivity``: the indices of a sampled design, printed (and saved as CSV)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import TiersweepError
from ..core.safe_files import write_atomic
from ..sweep.paths import output_file
from .sensitivity import analyse, compare_rankings

__all__ = ["sensitivity_command"]


def sensitivity_command(
    root: str,
    metrics: Sequence[str] | None = None,
    *,
    second_order: bool = False,
    resamples: int = 1000,
    screening: str | None = None,
    csv: str | None = None,
) -> int:
    """Print the indices of the design in ``root`` (:func:`~.sensitivity.analyse`); with
    ``screening`` (a Morris screening's results folder), whether its ranking of the parameters
    holds in ``root``; with ``csv``, also write every index to that file."""
    if csv is not None:
        output_file(csv, "--csv", (".csv",))  # (refused before the work, not after it)
    try:
        result = analyse(root, metrics, second_order=second_order, resamples=resamples)
    except FileNotFoundError as error:  # (no stored runs: said as one line, as the report says it)
        raise TiersweepError(str(error)) from None
    print(result.text())
    if screening is not None:
        try:
            screened = analyse(screening, [m.metric for m in result.metrics], resamples=resamples)
        except FileNotFoundError as error:
            raise TiersweepError(f"--screening: {error}") from None
        print(f"\nscreening {screening} against {root}:")
        for full in result.metrics:
            match = [m for m in screened.metrics if m.metric == full.metric and m.group == full.group]
            if not match:
                where = ", ".join(f"{k}={v}" for k, v in full.group.items())
                print(f"{full.metric}{' at ' + where if where else ''}: no screening of that point")
                continue
            print(compare_rankings(match[0], full).text())
    if csv is not None:
        write_atomic(csv, result.frame().to_csv(index=False))
        print(f"\nindices: {csv}")
    return 0
