"""The scaling study's task family: the hyperteacher (module combinations of a teacher network), its
splits and task encodings."""

from .hyperteacher import Batch, HyperTeacher, Split, make_split

__all__ = ["Batch", "HyperTeacher", "Split", "make_split"]
