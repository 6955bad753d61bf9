"""Task families shared by studies: the hyperteacher (module combinations of a teacher network, its
splits and task encodings) and nothing else yet. Generators used by one
study only live in that study's package."""

from .hyperteacher import Batch, HyperTeacher, Split, make_split

__all__ = ["Batch", "HyperTeacher", "Split", "make_split"]
