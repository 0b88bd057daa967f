"""GPU rehearsal on the CPU (``localfin reproduce rehearse``): a config's GPU settings on tiny
random stand-ins of its backbones, through the in-process engine and ``vllm serve``, checked
from the journals, with the real-data prompt sizes. Entry point:
:func:`agent.reproduce.rehearse.rehearsal.rehearse`."""
