"""Model registry: what each model key means, where its weights are, and how to serve it.

Keys are ours (``qwen3-4b``), never hub ids: a key maps to a local directory (GPU backbones, which
the user downloads once), a pip package converted once into the cache (the CPU default), or a
directory built at test time (tiny random models). Nothing is fetched at run time.

:func:`default_registry` holds, in this order (a later entry with the same key replaces an
earlier one only where said):

1. localfin's own entries (the GPU backbones, the CPU default, the tiny test models);
2. the entries of installed plugins: entry points of the group ``localfin.models``
   (:mod:`localfin.plugins`), each loading a :class:`ModelSpec`, an iterable of them or a
   callable returning either; a plugin may not reuse a key;
3. the user's models files (``LOCALFIN_MODELS_FILE``, default ``$LOCALFIN_HOME/models.toml``;
   ``localfin --models-file FILE``): ``[[models]]`` tables of :class:`ModelSpec` fields
   (:func:`parse_models`), which add models or replace an entry of the same key.
"""

from __future__ import annotations

from serving.models.model_specs import (
    ARCHS,
    MAX_IMAGES,
    SOURCES,
    TINY_KEYS,
    ModelSpec,
    Registry,
    cpu_stand_in,
    packaged_specs,
    spec_for_folder,
)
from serving.models.user_models import with_plugins_and_files

__all__ = [
    "ModelSpec",
    "Registry",
    "default_registry",
    "cpu_stand_in",
    "packaged_specs",
    "spec_for_folder",
    "SOURCES",
    "ARCHS",
    "MAX_IMAGES",
    "TINY_KEYS",
]


def default_registry() -> Registry:
    """A fresh registry: localfin's own models, the installed plugins' and the user's models
    files (see the module docstring; :mod:`serving.models.user_models` reads the last two)."""
    return with_plugins_and_files(Registry(packaged_specs()))
