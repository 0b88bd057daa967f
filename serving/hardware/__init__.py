"""GPUs and where engines run on them: the GPUs a machine or a cluster holds
(:mod:`~serving.hardware.gpus`), the one placement of engines onto them
(:mod:`~serving.hardware.placement`) with the sizes it reads from checkpoints
(:mod:`~serving.hardware.checkpoint_facts`), the layouts of entries opened without a
reproduction config (:mod:`~serving.hardware.spec_layout`), and what a GPU install of vLLM needs
(:mod:`~serving.hardware.gpu_install`)."""

from __future__ import annotations

__all__: list[str] = []
