"""The demo datafile shipped inside the package, for trying the library before a project of one's own."""
from __future__ import annotations

from importlib import resources

_NAME = "demo.json"


def demo_datafile() -> str:
    """The text of the demo datafile shipped with the package: an Optimizely v4 datafile (the repository's
    ``examples/datafiles/demo.json``) with the flags ``checkout_redesign``, ``free_shipping``,
    ``search_ranking`` and ``dark_mode``, the A/B test ``checkout_redesign_ab`` (experiment id ``3001``) and
    the events ``purchase`` and ``add_to_cart``. The README's quick starts use it::

        client = experiment.Client(datafile=experiment.demo_datafile())

    It lets the examples run from any directory; a real program passes its own project's datafile or
    ``sdk_key``. Raises OSError only when the package was installed without its data files."""
    return resources.files(__package__ or "experiment").joinpath(_NAME).read_text(encoding="utf-8")
