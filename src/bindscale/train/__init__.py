"""The train wing: training engines every study shares.

Lives here: the sequence trainer's loop (:mod:`.loop`), same-shape trials trained as one stack
(:mod:`.stack`), the stacked AdamW (:mod:`.stacked_adamw`), a trial's result (:mod:`.result`), the
speed settings in one place (:mod:`.speed`: CPU memory and denormals, threads, precision, fused kernels
and host syncs, which a loop enters once as ``speed.training_settings``; :mod:`.threads` holds its measured
thread rule and the watch that re-times it), the transformer / sequence-trainer config sections a
trial config composes (:mod:`.sections`), and the SCAN studies' shared task: SCAN from its grammar, its splits,
file loaders and task section (:mod:`.scan`) and the sequence-task vocabulary, packing, scoring and record
(:mod:`.seqdata`).

May import: :mod:`bindscale.core` and :mod:`bindscale.models`.
"""
