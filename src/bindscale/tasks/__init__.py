"""Task families: seeded generators of compositional tasks."""

from .hyperteacher import Batch, HyperTeacher, Split, make_split

#: Task families by name, with the study that uses them.
TASK_FAMILIES = {
    "hyperteacher": "module combinations of a teacher network (scaling study; tasks.hyperteacher)",
    "multiplication": "long multiplication with computation graphs (subgraphs study; tasks.multiplication)",
    "maxsubseq": "max-sum non-adjacent subsequence, a DP with its graph (subgraphs study; tasks.maxsubseq)",
    "compound": "two subroutines over a symbolic scene, A AND B (modularity study; tasks.compound)",
}

__all__ = ["Batch", "HyperTeacher", "Split", "make_split", "TASK_FAMILIES"]
