"""Task families: seeded generators of compositional tasks."""

from .hyperteacher import Batch, HyperTeacher, Split, make_split

TASK_FAMILIES = {"hyperteacher": HyperTeacher}

__all__ = ["Batch", "HyperTeacher", "Split", "make_split", "TASK_FAMILIES"]
