"""Running journaled work on a Ray cluster: join it, place shards on its nodes, keep every
answered call where the driver is, and find each node's model servers.

- :mod:`serving.cluster.connect`: join a cluster by address (``local``, ``auto``, ``HOST:PORT``),
  with a clear error when its head does not answer; the nodes it has.
- :mod:`serving.cluster.keeper`: the journal keeper, an actor on the driver's node that
  records each shard's answered calls as they arrive, so a lost node loses none of them.
- :mod:`serving.cluster.endpoints`: the model servers a shard calls (its node's own, from
  ``LOCALFIN_ENDPOINTS``, else the ones the run names).
- :mod:`serving.cluster.shards`: shards as Ray tasks (placement, retries, progress) or, for
  tests, one after another in this process.

Ray is imported inside the functions that need it (``pip install 'localfin[ray]'``).
"""

from __future__ import annotations

__all__: list[str] = []
